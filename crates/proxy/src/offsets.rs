//! Server sequence numbers as 64-bit stream offsets (0 = the byte after the server's SYN), so
//! the buffer and logs never deal with 32-bit wrap-around (RFC 9293 §3.4).

#[derive(Clone, Copy, Debug)]
pub struct SeqSpace {
    /// Wire sequence number of offset 0 (the server's ISN + 1).
    base: u32,
}

impl SeqSpace {
    pub fn from_isn(isn: u32) -> SeqSpace {
        SeqSpace { base: isn.wrapping_add(1) }
    }

    /// The offset of `seq` closest to `near` (within ±2^31), None if it falls before the stream.
    #[inline]
    pub fn offset(&self, seq: u32, near: u64) -> Option<u64> {
        let delta = seq.wrapping_sub(self.wire(near)) as i32 as i64;
        u64::try_from(near as i64 + delta).ok()
    }

    #[inline]
    pub fn wire(&self, offset: u64) -> u32 {
        self.base.wrapping_add(offset as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        let s = SeqSpace::from_isn(u32::MAX - 10);
        assert_eq!(s.wire(0), u32::MAX - 9);
        assert_eq!(s.offset(5, 0), Some(15));
        assert_eq!(s.offset(u32::MAX - 10, 0), None);
        let far = (1u64 << 32) + 100;
        assert_eq!(s.offset(s.wire(far + 7), far), Some(far + 7));
    }
}
