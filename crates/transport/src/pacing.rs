//! The pacing quantum of Linux 6.18: how much a paced sender sends back to back at each
//! release (`tcp_tso_autosize` in net/ipv4/tcp_output.c, with the minimum and cap of
//! `bbr_tso_segs_goal` in tcp_bbr.c). Linux builds one TSO/GSO packet of this many segments
//! and sends it whole; the next one leaves when the pacing rate has paid for it. BBR also
//! budgets cwnd for three of them.

/// `sk_pacing_shift` = 10: a burst holds 1/1024 s of data at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER` (320 bytes on x86-64): the largest burst.
const MAX_BURST_BYTES: u64 = 65_536 - 1 - 320;
/// `bbr_min_tso_rate`: below 1.2 Mbit/s a burst is one segment, else at least two.
const MIN_TWO_SEGMENT_RATE_BPS: u64 = 1_200_000;
/// `bbr_tso_segs_goal` caps the burst at 0x7F segments.
const MAX_BURST_SEGMENTS: u64 = 0x7F;

/// Segments per burst at `pacing_rate_bps` (payload bytes per second × 8, as the pacing
/// rate is kept) with segments of `mss_bytes`.
pub fn burst_segments(pacing_rate_bps: u64, mss_bytes: u64) -> u64 {
    let rate_bytes_per_s = pacing_rate_bps / 8;
    let bytes = (rate_bytes_per_s >> PACING_SHIFT).min(MAX_BURST_BYTES);
    let min_segments = if rate_bytes_per_s < MIN_TWO_SEGMENT_RATE_BPS / 8 { 1 } else { 2 };
    (bytes / mss_bytes.max(1)).max(min_segments).min(MAX_BURST_SEGMENTS)
}

#[cfg(test)]
mod tests {
    use super::burst_segments;

    #[test]
    fn a_burst_is_a_millisecond_of_data_between_two_segments_and_64_kilobytes() {
        // 1 Mbit/s: 125 000 B/s >> 10 = 122 bytes, below the 1.2 Mbit/s two-segment rate.
        assert_eq!(burst_segments(1_000_000, 1448), 1);
        // 10 Mbit/s: 1220 bytes, less than a segment, but at least two.
        assert_eq!(burst_segments(10_000_000, 1448), 2);
        // 120 Mbit/s: 15 000 000 >> 10 = 14 648 bytes = 10 segments of 1448.
        assert_eq!(burst_segments(120_000_000, 1448), 10);
        // 2 Gbit/s: capped at 65 215 bytes = 45 segments of 1448, 4 of 14 000.
        assert_eq!(burst_segments(2_000_000_000, 1448), 45);
        assert_eq!(burst_segments(2_000_000_000, 14_000), 4);
        // Small segments at a high rate: at most 0x7F of them.
        assert_eq!(burst_segments(100_000_000_000, 100), 0x7F);
    }
}
