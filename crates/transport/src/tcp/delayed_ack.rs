//! When the receiver's ACK goes out: at once, delayed (RFC 5681 §4.2), or as Linux's receiver
//! decides (Linux 6.18, net/ipv4/tcp_input.c `tcp_event_data_recv` and `__tcp_ack_snd_check`,
//! tcp_timer.c's compressed-ACK timer). The receiver reports what arrived; this state machine
//! answers "ACK now", "ACK by this deadline" or nothing yet (docs/models/transport.md §2).

use crate::deadline::earliest_ns;

/// Which receiver's rules decide when in-order data is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayedAck {
    /// Every segment is acknowledged at once.
    Off,
    /// RFC 5681 §4.2: at least every second full-sized segment, else when the delayed-ACK
    /// timer fires; out-of-order data, a filled gap and duplicates at once.
    Rfc5681,
    /// Linux's receiver: a quick-ACK mode (an ACK per segment) for the first segments, after
    /// an idle period longer than the RTO and after a duplicate; otherwise an ACK once more than
    /// one full segment is unacknowledged, for a short segment, or by the timer; out of order,
    /// three ACKs per hole at once and then SACK compression.
    Linux,
}

/// Linux's `TCP_MAX_QUICKACKS`: the most ACKs a quick-ACK mode sends one per segment.
const MAX_QUICK_ACKS: u32 = 16;
/// Linux's `TCP_FASTRETRANS_THRESH`: ACKs sent at once for one hole before compression, so a
/// sender counting duplicate ACKs still sees three.
const IMMEDIATE_DUPLICATE_ACKS: u32 = 3;
/// `net.ipv4.tcp_comp_sack_nr`'s default: ACKs one compressed ACK may stand for.
const MAX_COMPRESSED_ACKS: u32 = 44;
/// `net.ipv4.tcp_comp_sack_delay_ns`'s default: the longest a compressed ACK waits.
const MAX_COMPRESSION_DELAY_NS: u64 = 1_000_000;
/// Linux's `TCP_SACK_BLOCKS_EXPECTED`: a block beyond the two most recent could fall out of a
/// SACK option (three blocks fit beside timestamps, and an ACK may be lost), so a segment that
/// touches one sends the compressed ACK at once (tcp_sack_new_ofo_skb).
const SACK_BLOCKS_EXPECTED: usize = 2;

/// What the endpoint's own timing tells the receiver (its sender's estimator).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckTiming {
    /// An in-order arrival more than one RTO after the previous one restarts quick ACKs
    /// (the sender "failed to restart its window", tcp_event_data_recv).
    pub rto_ns: u64,
    /// The smoothed RTT (0 before a sample): a compressed ACK waits 5% of it.
    pub srtt_ns: u64,
}

/// What one arriving segment was, as far as ACK timing is concerned.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arrival {
    /// In-order data (`bytes` of it, a full segment or not), filling (part of) a gap when data
    /// was held out of order.
    InOrder { bytes: u64, short: bool, filled_gap: bool },
    /// Data beyond a gap, in the SACK block that was the `sack_block_rank`-th most recently
    /// reported (0: the latest), or starting a new block when that is the number of blocks.
    OutOfOrder { sack_block_rank: usize },
    /// Data received before (a retransmission the receiver did not need).
    Duplicate,
}

#[derive(Debug)]
pub(crate) struct AckClock {
    mode: DelayedAck,
    timeout_ns: u64,
    mss_bytes: u64,
    /// SACK was negotiated: out-of-order ACKs may be compressed.
    sack: bool,
    /// In-order bytes not yet acknowledged (Linux's rcv_nxt − rcv_wup).
    unacked_bytes: u64,
    /// Data (of any kind) arrived since the last ACK (Linux's ICSK_ACK_SCHED).
    scheduled: bool,
    deadline_ns: Option<u64>,
    now: bool,
    /// Linux: ACKs still to send one per segment.
    quick_acks: u32,
    /// Linux: when in-order data last arrived (none yet: the first arrival starts quick ACKs).
    last_in_order_ns: Option<u64>,
    /// Linux's ICSK_ACK_PUSHED: a short in-order segment waits for its ACK.
    pushed: bool,
    /// Linux's dup_ack_counter, compressed_ack and compressed_ack_rcv_nxt.
    duplicate_acks: u32,
    compressed_acks: u32,
    compressed_at_rcv_nxt: u64,
}

impl AckClock {
    pub fn new(mode: DelayedAck, timeout_ns: u64) -> AckClock {
        AckClock {
            mode,
            timeout_ns,
            mss_bytes: 1,
            sack: false,
            unacked_bytes: 0,
            scheduled: false,
            deadline_ns: None,
            now: false,
            quick_acks: 0,
            last_in_order_ns: None,
            pushed: false,
            duplicate_acks: 0,
            compressed_acks: 0,
            compressed_at_rcv_nxt: 0,
        }
    }

    pub fn establish(&mut self, mss_bytes: u64, sack: bool) {
        self.mss_bytes = mss_bytes;
        self.sack = sack;
    }

    /// A segment arrived; `rcv_nxt` is the cumulative ACK after it and `window_bytes` the
    /// window last advertised (Linux's rcv_wnd).
    ///
    /// The receiving application is taken to read what arrives at once, as Linux's rules
    /// assume of a bulk receiver: Linux holds back the ACK of data an application has not read
    /// while that data shrinks the window, and sends it when the application reads
    /// (tcp_cleanup_rbuf). The one application-paced receiver of the scenarios, the split
    /// proxy's, stands for a relay that reads at once into its own buffer.
    #[inline]
    pub fn on_arrival(&mut self, now_ns: u64, arrival: Arrival, rcv_nxt: u64, window_bytes: u64, timing: impl Fn() -> AckTiming) {
        self.scheduled = true;
        let out_of_order = match arrival {
            Arrival::InOrder { bytes, short, filled_gap } => {
                self.unacked_bytes += bytes;
                if self.mode == DelayedAck::Linux {
                    // tcp_event_data_recv: the first data, or data after a pause longer than
                    // the RTO, is acknowledged segment by segment for a while.
                    if self.last_in_order_ns.is_none_or(|t| now_ns - t > timing().rto_ns) {
                        self.start_quick_acks(window_bytes);
                    }
                    self.last_in_order_ns = Some(now_ns);
                    // tcp_measure_rcv_mss: a segment shorter than the peer's MSS is "pushed";
                    // the read that empties the buffer ACKs it at once (tcp_cleanup_rbuf).
                    self.pushed |= short;
                }
                if filled_gap {
                    // RFC 5681 §4.2: at once when (part of) a gap is filled. Linux does the
                    // same: ICSK_ACK_NOW when the gap closes, else a new cumulative ACK point
                    // restarts its three immediate out-of-order ACKs.
                    self.now = true;
                    return;
                }
                false
            }
            Arrival::OutOfOrder { sack_block_rank } => {
                if self.mode == DelayedAck::Linux && sack_block_rank >= SACK_BLOCKS_EXPECTED && self.compressed_acks > 0 {
                    // Linux sends the held ACK before this segment's block could push an
                    // older one out of the option; one ACK here carries both.
                    self.now = true;
                    return;
                }
                true
            }
            Arrival::Duplicate => {
                // RFC 5681 §4.2 / Linux tcp_data_queue: a retransmission we did not need is
                // acknowledged at once, and Linux enters quick-ACK mode (its ACK was lost).
                if self.mode == DelayedAck::Linux {
                    self.start_quick_acks(window_bytes);
                }
                self.now = true;
                return;
            }
        };
        match self.mode {
            DelayedAck::Off => self.now = true,
            DelayedAck::Rfc5681 => {
                // RFC 5681 §4.2: out-of-order data at once; in order, every second full segment.
                if out_of_order || self.unacked_bytes >= 2 * self.mss_bytes {
                    self.now = true;
                } else {
                    self.arm(now_ns + self.timeout_ns);
                }
            }
            DelayedAck::Linux => self.linux_ack_check(now_ns, out_of_order, rcv_nxt, timing),
        }
    }

    /// `__tcp_ack_snd_check`.
    fn linux_ack_check(&mut self, now_ns: u64, out_of_order: bool, rcv_nxt: u64, timing: impl Fn() -> AckTiming) {
        if self.unacked_bytes > self.mss_bytes || self.quick_acks > 0 {
            self.now = true;
        } else if !out_of_order {
            // A short segment read at once; else the delayed-ACK timer (TCP_ATO_MIN, 40 ms,
            // where bulk data keeps Linux's ato).
            if self.pushed {
                self.now = true;
            } else {
                self.arm(now_ns + self.timeout_ns);
            }
        } else if !self.sack || self.compressed_acks >= MAX_COMPRESSED_ACKS {
            self.now = true;
        } else {
            if self.compressed_at_rcv_nxt != rcv_nxt {
                self.compressed_at_rcv_nxt = rcv_nxt;
                self.duplicate_acks = 0;
            }
            if self.duplicate_acks < IMMEDIATE_DUPLICATE_ACKS {
                self.duplicate_acks += 1;
                self.now = true;
            } else {
                // SACK compression: 5% of the RTT, at most 1 ms.
                self.compressed_acks += 1;
                let srtt_ns = match timing().srtt_ns {
                    0 => u64::MAX,
                    srtt_ns => srtt_ns,
                };
                self.arm(now_ns + MAX_COMPRESSION_DELAY_NS.min(srtt_ns / 20));
            }
        }
    }

    /// tcp_incr_quickack: as many quick ACKs as half the window holds full segments, 2 to 16.
    fn start_quick_acks(&mut self, window_bytes: u64) {
        let quick = (window_bytes / (2 * self.mss_bytes)).clamp(2, MAX_QUICK_ACKS as u64) as u32;
        self.quick_acks = self.quick_acks.max(quick);
    }

    fn arm(&mut self, deadline_ns: u64) {
        self.deadline_ns = earliest_ns(self.deadline_ns, Some(deadline_ns));
    }

    /// Whether out-of-order arrivals need their SACK block's rank (only Linux's rules read it).
    pub fn ranks_sack_blocks(&self) -> bool {
        self.mode == DelayedAck::Linux
    }

    /// Asks for an ACK at once (a FIN, a window probe, a window update, the handshake, the
    /// delayed-ACK or compression timer).
    pub fn request(&mut self) {
        self.now = true;
    }

    pub fn wants_ack_now(&self) -> bool {
        self.now
    }

    pub fn deadline_ns(&self) -> Option<u64> {
        self.deadline_ns
    }

    /// A segment carrying the current ACK went out (tcp_event_ack_sent).
    pub fn ack_sent(&mut self) {
        if self.scheduled && self.quick_acks > 0 {
            // tcp_dec_quickack_mode: each ACK of newly received data uses one.
            self.quick_acks -= 1;
        }
        self.unacked_bytes = 0;
        self.scheduled = false;
        self.deadline_ns = None;
        self.now = false;
        self.pushed = false;
        self.compressed_acks = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const TIMING: AckTiming = AckTiming { rto_ns: 300_000_000, srtt_ns: 10_000_000 };
    /// A window for 16 quick ACKs or more.
    const WINDOW: u64 = 100 * MSS;

    fn clock(mode: DelayedAck) -> AckClock {
        let mut c = AckClock::new(mode, 40_000_000);
        c.establish(MSS, true);
        c
    }

    fn full(c: &mut AckClock, now_ns: u64) {
        c.on_arrival(now_ns, Arrival::InOrder { bytes: MSS, short: false, filled_gap: false }, 0, WINDOW, || TIMING);
    }

    /// Feeds `n` full in-order segments 1 µs apart from `start_ns`, sending each ACK the clock
    /// asks for at once: the segments after which an ACK went out (1-based).
    fn acked_after(c: &mut AckClock, start_ns: u64, n: u64) -> Vec<u64> {
        let mut acked = Vec::new();
        for k in 1..=n {
            full(c, start_ns + k * 1000);
            if c.wants_ack_now() {
                c.ack_sent();
                acked.push(k);
            }
        }
        acked
    }

    #[test]
    fn linux_acks_the_first_sixteen_segments_one_by_one_then_every_second() {
        let mut c = clock(DelayedAck::Linux);
        let acked = acked_after(&mut c, 0, 24);
        let expected: Vec<u64> = (1..=16).chain([18, 20, 22, 24]).collect();
        assert_eq!(acked, expected);
    }

    #[test]
    fn a_small_window_starts_fewer_quick_acks() {
        // tcp_incr_quickack: window / (2 MSS) = 3.
        let mut c = clock(DelayedAck::Linux);
        for k in 1..=5u64 {
            c.on_arrival(k, Arrival::InOrder { bytes: MSS, short: false, filled_gap: false }, 0, 7 * MSS, || TIMING);
            if c.wants_ack_now() {
                c.ack_sent();
            } else {
                assert_eq!(k, 4, "three quick ACKs, then the fourth segment waits for the fifth");
            }
        }
    }

    #[test]
    fn a_lone_full_segment_waits_for_the_timer_and_a_short_one_does_not() {
        let mut c = clock(DelayedAck::Linux);
        acked_after(&mut c, 0, 20);
        full(&mut c, 1_000_000);
        assert!(!c.wants_ack_now());
        assert_eq!(c.deadline_ns(), Some(41_000_000), "TCP_ATO_MIN after the arrival");
        c.request();
        assert!(c.wants_ack_now());
        c.ack_sent();
        c.on_arrival(2_000_000, Arrival::InOrder { bytes: 300, short: true, filled_gap: false }, 0, WINDOW, || TIMING);
        assert!(c.wants_ack_now(), "a short segment read at once is acknowledged at once");
    }

    #[test]
    fn a_pause_longer_than_the_rto_restarts_quick_acks() {
        let mut c = clock(DelayedAck::Linux);
        assert_eq!(acked_after(&mut c, 0, 18).len(), 17);
        // A pause of exactly the RTO does not; one beyond it does.
        let last_ns = 18_000;
        assert_eq!(acked_after(&mut c, last_ns + TIMING.rto_ns - 1000, 2), vec![2]);
        let last_ns = last_ns + TIMING.rto_ns + 1000;
        assert_eq!(acked_after(&mut c, last_ns + TIMING.rto_ns, 4), vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_duplicate_is_acknowledged_at_once_and_restarts_quick_acks() {
        let mut c = clock(DelayedAck::Linux);
        acked_after(&mut c, 0, 20);
        c.on_arrival(30_000, Arrival::Duplicate, 0, WINDOW, || TIMING);
        assert!(c.wants_ack_now());
        c.ack_sent();
        assert_eq!(acked_after(&mut c, 40_000, 3), vec![1, 2, 3]);
    }

    #[test]
    fn out_of_order_linux_sends_three_acks_per_hole_then_compresses() {
        let mut c = clock(DelayedAck::Linux);
        acked_after(&mut c, 0, 20);
        let mut at_once = 0;
        for k in 0..10u64 {
            c.on_arrival(100_000 + k, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || TIMING);
            if c.wants_ack_now() {
                at_once += 1;
                c.ack_sent();
            }
        }
        assert_eq!(at_once, 3, "TCP_FASTRETRANS_THRESH ACKs at once");
        // The fourth arrival armed the timer: 5% of the 10 ms SRTT is 500 µs.
        assert_eq!(c.deadline_ns(), Some(100_003 + 500_000));
        // A new cumulative ACK point (a partly filled hole) gets three immediate ACKs again.
        c.on_arrival(200_000, Arrival::OutOfOrder { sack_block_rank: 0 }, 9, WINDOW, || TIMING);
        assert!(c.wants_ack_now());
    }

    #[test]
    fn a_held_ack_goes_before_a_third_sack_block() {
        let mut c = clock(DelayedAck::Linux);
        acked_after(&mut c, 0, 20);
        for k in 0..3 {
            c.on_arrival(100_000 + k, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || TIMING);
            c.ack_sent();
        }
        // Held: more of the latest block, then a second block.
        c.on_arrival(100_010, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || TIMING);
        c.on_arrival(100_020, Arrival::OutOfOrder { sack_block_rank: 1 }, 7, WINDOW, || TIMING);
        assert!(!c.wants_ack_now());
        // A third block: the held ACK goes now.
        c.on_arrival(100_030, Arrival::OutOfOrder { sack_block_rank: 2 }, 7, WINDOW, || TIMING);
        assert!(c.wants_ack_now());
        c.ack_sent();
        // With nothing held, a third block waits like any other.
        c.on_arrival(100_040, Arrival::OutOfOrder { sack_block_rank: 2 }, 7, WINDOW, || TIMING);
        assert!(!c.wants_ack_now());
    }

    #[test]
    fn compression_waits_at_most_a_millisecond_and_44_acks() {
        let mut c = clock(DelayedAck::Linux);
        acked_after(&mut c, 0, 20);
        let slow = AckTiming { rto_ns: TIMING.rto_ns, srtt_ns: 100_000_000 };
        for k in 0..3 {
            c.on_arrival(100_000 + k, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || slow);
            c.ack_sent();
        }
        for k in 0..MAX_COMPRESSED_ACKS as u64 {
            c.on_arrival(100_010 + k, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || slow);
            assert!(!c.wants_ack_now());
        }
        assert_eq!(c.deadline_ns(), Some(100_010 + 1_000_000), "min(5% of 100 ms, 1 ms)");
        c.on_arrival(100_100, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || slow);
        assert!(c.wants_ack_now(), "the 45th compressed arrival sends");
    }

    #[test]
    fn without_sack_out_of_order_data_is_acknowledged_at_once() {
        let mut c = AckClock::new(DelayedAck::Linux, 40_000_000);
        c.establish(MSS, false);
        acked_after(&mut c, 0, 20);
        for k in 0..6 {
            c.on_arrival(100_000 + k, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || TIMING);
            assert!(c.wants_ack_now());
            c.ack_sent();
        }
    }

    #[test]
    fn rfc5681_and_off() {
        let mut c = clock(DelayedAck::Rfc5681);
        assert_eq!(acked_after(&mut c, 0, 6), vec![2, 4, 6], "no quick-ACK start");
        c.on_arrival(10_000, Arrival::OutOfOrder { sack_block_rank: 0 }, 7, WINDOW, || TIMING);
        assert!(c.wants_ack_now());
        let mut c = clock(DelayedAck::Off);
        assert_eq!(acked_after(&mut c, 0, 3), vec![1, 2, 3]);
    }
}
