//! Unwrapping the 32-bit counters of the wire (sequence numbers, RFC 9293 §3.4; timestamps,
//! RFC 7323 §3) into 64-bit values, so that the state machine compares plain integers.
//! A wire value is taken as the one closest to a 64-bit reference the connection knows
//! (SND.UNA, RCV.NXT, the current millisecond): valid values lie within ±2^31 of it.

/// The u64 whose low 32 bits are `wire` and which lies within ±2^31 of `reference`.
#[inline]
pub(crate) fn unwrap32(reference: u64, wire: u32) -> u64 {
    let delta = wire.wrapping_sub(reference as u32) as i32;
    reference.wrapping_add(delta as i64 as u64)
}

/// RFC 7323 §5.4: TSval is a 1 ms clock; the model's clock is the simulation time.
#[inline]
pub(crate) fn ts_now_ms(now_ns: u64) -> u64 {
    now_ns / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_across_the_32_bit_boundary() {
        let base = (1u64 << 32) - 10;
        assert_eq!(unwrap32(base, 5), (1 << 32) + 5);
        assert_eq!(unwrap32(base, u32::MAX - 20), base - 11);
        assert_eq!(unwrap32((1 << 32) + 3, u32::MAX), (1 << 32) - 1);
        assert_eq!(unwrap32(100, 90), 90);
    }
}
