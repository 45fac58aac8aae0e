//! An independent check of what a TCP receiver's application gets.

use std::ops::Range;

use millinet_wire::{Packet, TcpFlags};

/// Watches the segments that reach a receiver and the ranges its application reads, and
/// fails the test unless the application gets the stream in order, exactly once, and only
/// bytes that arrived in data segments.
///
/// Stream offsets are taken modulo 2^32 from the peer's ISN (learned from its SYN), so a
/// check covers the first 4 GiB of a stream.
#[derive(Debug, Default)]
pub struct StreamCheck {
    peer_isn: Option<u32>,
    /// Stream ranges carried by data segments that arrived (sorted, disjoint, not touching).
    received: Vec<Range<u64>>,
    delivered_bytes: u64,
}

impl StreamCheck {
    pub fn new() -> StreamCheck {
        StreamCheck::default()
    }

    /// A segment reached the receiver (call before the receiver processes it).
    pub fn on_arrival(&mut self, packet: &Packet) {
        let Some(h) = packet.tcp_header() else { return };
        if h.flags.contains(TcpFlags::SYN) {
            self.peer_isn = Some(h.seq);
            return;
        }
        let Some(isn) = self.peer_isn.filter(|_| packet.payload_bytes > 0) else { return };
        let start = u64::from(h.seq.wrapping_sub(isn.wrapping_add(1)));
        let end = start + u64::from(packet.payload_bytes);
        // A segment that starts before the stream (an old duplicate overlapping its first
        // bytes) wraps past 2^32 here: its end is at the stream's start again.
        let modulus = 1u64 << 32;
        if end > modulus {
            self.note_received(start..modulus);
            self.note_received(0..end - modulus);
        } else {
            self.note_received(start..end);
        }
    }

    fn note_received(&mut self, mut range: Range<u64>) {
        // Test code: a linear merge is fine.
        self.received.retain(|r| {
            let apart = r.end < range.start || r.start > range.end;
            if !apart {
                range = r.start.min(range.start)..r.end.max(range.end);
            }
            apart
        });
        let at = self.received.partition_point(|r| r.start < range.start);
        self.received.insert(at, range);
    }

    /// The application read `range` of the stream.
    pub fn on_delivery(&mut self, range: Range<u64>) {
        assert_eq!(range.start, self.delivered_bytes, "delivery must continue where it stopped");
        if range.is_empty() {
            return;
        }
        assert!(
            self.received.iter().any(|r| r.start <= range.start && range.end <= r.end),
            "delivered {range:?} but the receiver only received {:?}",
            self.received
        );
        self.delivered_bytes = range.end;
    }

    /// Bytes the application has read so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::{TcpHeader, TcpOptions};

    use super::*;

    const ISN: u32 = u32::MAX - 100; // the offsets cross the sequence-number wrap

    fn segment(flags: TcpFlags, offset: u32, len: u32) -> Packet {
        let seq = if flags.contains(TcpFlags::SYN) { ISN } else { ISN.wrapping_add(1).wrapping_add(offset) };
        let h = TcpHeader { src_port: 80, dst_port: 4000, seq, ack: 0, flags, window: 0, options: TcpOptions::default() };
        Packet::tcp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), h, len)
    }

    fn check_with(arrived: &[(u32, u32)]) -> StreamCheck {
        let mut c = StreamCheck::new();
        c.on_arrival(&segment(TcpFlags::SYN | TcpFlags::ACK, 0, 0));
        for &(offset, len) in arrived {
            c.on_arrival(&segment(TcpFlags::ACK, offset, len));
        }
        c
    }

    #[test]
    fn in_order_delivery_of_arrived_bytes_passes() {
        // Out of order and overlapping arrivals merge into one range.
        let mut c = check_with(&[(100, 100), (0, 100), (150, 100)]);
        c.on_delivery(0..0);
        c.on_delivery(0..120);
        c.on_delivery(120..250);
        assert_eq!(c.delivered_bytes(), 250);
    }

    #[test]
    #[should_panic(expected = "only received")]
    fn bytes_that_never_arrived_fail() {
        check_with(&[(0, 100), (200, 100)]).on_delivery(0..300);
    }

    #[test]
    #[should_panic(expected = "continue where it stopped")]
    fn a_gap_or_repeat_fails() {
        let mut c = check_with(&[(0, 300)]);
        c.on_delivery(0..100);
        c.on_delivery(50..150);
    }

    /// Found by the tcp_receiver fuzz target: an old duplicate that starts 16 bytes before
    /// the stream and runs into it carries the stream's first bytes.
    #[test]
    fn a_segment_straddling_the_stream_start_counts_from_offset_0() {
        let mut c = check_with(&[(u32::MAX - 15, 116)]);
        c.on_delivery(0..100);
    }

    #[test]
    #[should_panic(expected = "only received")]
    fn data_before_the_peers_syn_does_not_count() {
        let mut c = StreamCheck::new();
        c.on_arrival(&segment(TcpFlags::ACK, 0, 100));
        c.on_delivery(0..100);
    }
}
