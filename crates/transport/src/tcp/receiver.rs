//! The receiving half: cumulative ACK, out-of-order queue, SACK blocks (RFC 2018) and
//! D-SACK (RFC 2883), the advertised window (free receive buffer, scaled per RFC 7323), when to
//! acknowledge (delayed_ack.rs) and the timestamp to echo (RFC 7323 §4.3). By default the application consumes
//! in-order bytes at once, so the buffer only holds out-of-order data; an application-paced
//! receiver (a splitting proxy relaying at the pace of its other side) keeps in-order bytes
//! in the buffer until it reads them, and they shrink the advertised window.

use std::ops::Range;

use millinet_wire::accecn::AccEcnOption;
use millinet_wire::{TcpFlags, TcpOptions};

use super::delayed_ack::{AckClock, AckTiming, Arrival, DelayedAck};
use super::ecn::{EcnAgreed, EcnEcho};
use super::ranges::{RangeSet, Span};
use super::wrap::unwrap32;

/// RFC 2018 §3: at most 4 blocks fit in the option space.
const MAX_REMEMBERED_BLOCKS: usize = 4;

#[derive(Debug)]
pub(crate) struct Receiver {
    /// Sequence number of stream offset 0 (IRS + 1), unwrapped.
    data_start: u64,
    rcv_nxt: u64,
    ooo: RangeSet,
    /// The out-of-order blocks most recently added to, newest first, each named by a sequence
    /// number inside it: RFC 2018 §4 reports the block of the latest segment first, then the
    /// most recently reported others (Linux's `selective_acks`).
    recent: [u64; MAX_REMEMBERED_BLOCKS],
    recent_len: usize,
    /// RFC 2883 D-SACK: the duplicate data of the latest segment, reported as the first SACK
    /// block of the next ACK only (as Linux does with `tcp_dsack` on, its default).
    duplicate: Option<Range<u64>>,
    /// Sequence number of the peer's FIN once seen.
    fin_seq: Option<u64>,
    rcv_buf_bytes: u64,
    /// A cap on the advertised window set from outside (MP-TCP's data-level window).
    window_cap_bytes: u64,
    wscale: u8,
    /// The right edge of the window last advertised: it never moves left (RFC 9293 §3.8.6.2.2).
    adv_right_edge: u64,
    /// Stream offset up to which the application has read.
    read_bytes: u64,
    /// In-order bytes occupy the buffer until read (else they are read at once).
    app_paced: bool,
    acks: AckClock,
    /// What the ACKs feed back of the ECN field of what arrives (ecn.rs).
    ecn: EcnEcho,
    mss_bytes: u64,
    /// RFC 7323 §4.3 TS.Recent and Last.ACK.sent.
    ts_recent: u32,
    last_ack_sent: u64,
}

impl Receiver {
    pub fn new(rcv_buf_bytes: u64, app_paced: bool, delayed_ack: DelayedAck, delayed_ack_timeout_ns: u64) -> Receiver {
        Receiver {
            data_start: 0,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            recent: [0; MAX_REMEMBERED_BLOCKS],
            recent_len: 0,
            duplicate: None,
            fin_seq: None,
            rcv_buf_bytes,
            window_cap_bytes: u64::MAX,
            wscale: 0,
            adv_right_edge: 0,
            read_bytes: 0,
            app_paced,
            acks: AckClock::new(delayed_ack, delayed_ack_timeout_ns),
            ecn: EcnEcho::default(),
            mss_bytes: 1,
            ts_recent: 0,
            last_ack_sent: 0,
        }
    }

    /// The peer's SYN was received: IRS and its TSval are known.
    pub fn on_syn(&mut self, irs: u32, tsval: Option<u32>) {
        // The unwrapped sequence space starts 2^32 above zero: a segment that starts up to
        // 2^31 before the stream (an old duplicate, garbage) then unwraps below RCV.NXT
        // rather than below zero.
        self.rcv_nxt = (1 << 32) + irs as u64 + 1;
        self.data_start = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        self.ts_recent = tsval.unwrap_or(0);
        // RFC 7323 §2.2: the window of a SYN is never scaled.
        self.adv_right_edge = self.rcv_nxt + self.syn_window() as u64;
    }

    /// The handshake completed with this agreement.
    pub fn establish(&mut self, mss_bytes: u64, wscale: u8, sack: bool) {
        self.mss_bytes = mss_bytes;
        self.acks.establish(mss_bytes, sack);
        self.wscale = wscale;
        if wscale == 0 {
            // Without scaling the window field caps what can ever be buffered usefully.
            self.rcv_buf_bytes = self.rcv_buf_bytes.min(u16::MAX as u64);
        }
    }

    /// The handshake agreed `agreed` ECN feedback; a client passes the SYN-ACK's IP-ECN field;
    /// `echo_every_mark` as `CongestionControl::echoes_every_mark`.
    pub fn establish_ecn(&mut self, agreed: EcnAgreed, syn_ack_ecn: Option<u8>, echo_every_mark: bool) {
        self.ecn.establish(agreed, syn_ack_ecn, echo_every_mark);
    }

    /// A segment arrived after the handshake with the IP-ECN field `ecn` (ecn.rs): counted, and
    /// acknowledged at once where the feedback asks for it.
    #[inline]
    pub fn on_ecn(&mut self, ecn: u8, payload_bytes: u32, flags: TcpFlags) {
        if self.ecn.on_segment(ecn, payload_bytes, flags) {
            self.acks.request();
        }
    }

    /// The ECN flags of a segment sent now.
    #[inline]
    pub fn ecn_flags(&self) -> TcpFlags {
        self.ecn.flags()
    }

    /// The AccECN option of a segment sent now, where Accurate ECN was agreed.
    #[inline]
    pub fn accecn_option(&self) -> Option<AccEcnOption> {
        self.ecn.option()
    }

    pub fn syn_window(&self) -> u16 {
        self.rcv_buf_bytes.min(self.window_cap_bytes).min(u16::MAX as u64) as u16
    }

    /// Caps the window advertised from now on; the right edge already advertised stays
    /// (RFC 9293 §3.8.6.2.2: it never moves left).
    pub fn set_window_cap_bytes(&mut self, cap_bytes: u64) {
        self.window_cap_bytes = cap_bytes;
    }

    pub fn ack_number(&self) -> u32 {
        self.rcv_nxt as u32
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn ts_recent(&self) -> u32 {
        self.ts_recent
    }

    /// The right edge we may accept data up to.
    fn right_edge(&self) -> u64 {
        (self.rcv_nxt + self.free_bytes()).max(self.adv_right_edge)
    }

    /// Buffer space not taken by out-of-order data or, when application-paced, unread data.
    fn free_bytes(&self) -> u64 {
        let unread = if self.app_paced { self.delivered_bytes() - self.read_bytes } else { 0 };
        self.rcv_buf_bytes.saturating_sub(self.ooo.covered_bytes() + unread).min(self.window_cap_bytes)
    }

    /// The 16-bit window field: free buffer space, scaled (RFC 7323 §2.3).
    pub fn window_field(&self) -> u16 {
        ((self.right_edge() - self.rcv_nxt) >> self.wscale).min(u16::MAX as u64) as u16
    }

    /// The peer's FIN has been consumed (everything before it was received).
    pub fn fin_received(&self) -> bool {
        self.fin_seq.is_some_and(|f| self.rcv_nxt > f)
    }

    /// A segment arrived. Returns true when it made the peer's FIN consumable now.
    pub fn on_segment(
        &mut self,
        now_ns: u64,
        seq: u32,
        payload_bytes: u32,
        fin: bool,
        tsval: Option<u32>,
        timing: impl Fn() -> AckTiming,
    ) -> bool {
        let start = unwrap32(self.rcv_nxt, seq);
        let had_fin = self.fin_received();
        // RFC 7323 §4.3: remember the TSval of the segment at the left window edge (the
        // wrap-aware comparison keeps TS.Recent monotone).
        if let Some(tsval) = tsval {
            if start <= self.last_ack_sent && (tsval.wrapping_sub(self.ts_recent) as i32) >= 0 {
                self.ts_recent = tsval;
            }
        }
        let seg_end = start + payload_bytes as u64;
        if payload_bytes == 0 && !fin {
            // RFC 9293 §3.10.7.4: an old zero-length segment (a window probe) gets an ACK.
            if start < self.rcv_nxt {
                self.acks.request();
            }
            return false;
        }
        // Data beyond the window is dropped (RFC 9293 §3.10.7.4 trims to the window).
        let edge = self.right_edge();
        let end = seg_end.min(edge);
        // The FIN has one place in the stream: not before bytes already received in order,
        // and not moved by a later FIN (a peer's mistake would otherwise shrink the stream
        // the application has read).
        if fin && seg_end <= edge && seg_end >= self.rcv_nxt && self.fin_seq.is_none() {
            self.fin_seq = Some(seg_end);
        }
        if start < self.rcv_nxt && start < end {
            // RFC 2883 §4: data received before (all of it, or its start) is reported.
            self.duplicate = Some(start..end.min(self.rcv_nxt));
        }
        if end <= self.rcv_nxt {
            // A duplicate: ACK at once (RFC 5681 §4.2).
            self.on_arrival(now_ns, Arrival::Duplicate, timing);
        } else if start >= edge {
            // Outside the window: ACK at once (RFC 9293 §3.10.7.4).
            self.acks.request();
        } else if start <= self.rcv_nxt {
            let filled_gap = !self.ooo.is_empty();
            let bytes = end - self.rcv_nxt;
            self.rcv_nxt = end;
            while let Some(span) = self.ooo.pop_first_if_reaches(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(span.end);
            }
            let short = (payload_bytes as u64) < self.mss_bytes;
            self.on_arrival(now_ns, Arrival::InOrder { bytes, short, filled_gap }, timing);
        } else {
            if self.ooo.containing(start).is_some_and(|span| span.end >= end) {
                // RFC 2883 §4.2: a duplicate of data held out of order.
                self.duplicate = Some(start..end);
            }
            let (block, _) = self.ooo.insert(start, end);
            let sack_block_rank = if self.acks.ranks_sack_blocks() { self.sack_block_rank(block) } else { 0 };
            self.remember_block(start, block);
            self.on_arrival(now_ns, Arrival::OutOfOrder { sack_block_rank }, timing);
        }
        if self.fin_seq == Some(self.rcv_nxt) {
            // The FIN occupies one sequence number and is acknowledged at once.
            self.rcv_nxt += 1;
            self.acks.request();
        }
        !had_fin && self.fin_received()
    }

    fn on_arrival(&mut self, now_ns: u64, arrival: Arrival, timing: impl Fn() -> AckTiming) {
        let advertised_bytes = self.adv_right_edge - self.last_ack_sent;
        self.acks.on_arrival(now_ns, arrival, self.rcv_nxt, advertised_bytes, timing);
    }

    /// Where `block`, which a segment just joined or started, stood among the most recent
    /// blocks (0: the latest), or their number if it is new (Linux's tcp_sack_new_ofo_skb).
    fn sack_block_rank(&self, block: Span) -> usize {
        // The entries name distinct blocks (`remember_block`); delivered ones name none.
        let mut rank = 0;
        for span in self.recent[..self.recent_len].iter().filter_map(|&s| self.ooo.containing(s)) {
            if span.start == block.start {
                return rank;
            }
            rank += 1;
        }
        rank
    }

    /// `block`, holding `seq` just received out of order, becomes the most recent; entries it
    /// absorbed and entries no longer held out of order (delivered) leave the list.
    fn remember_block(&mut self, seq: u64, block: Span) {
        let mut kept = [0; MAX_REMEMBERED_BLOCKS - 1];
        let mut n = 0;
        for &other in &self.recent[..self.recent_len] {
            // Data below RCV.NXT was delivered: out-of-order data leaves the set no other way.
            if n < kept.len() && !(block.start..block.end).contains(&other) && other >= self.rcv_nxt {
                kept[n] = other;
                n += 1;
            }
        }
        self.recent[0] = seq;
        self.recent[1..=n].copy_from_slice(&kept[..n]);
        self.recent_len = n + 1;
    }

    /// Asks for an immediate ACK (e.g. a retransmitted SYN after the handshake).
    pub fn request_ack(&mut self) {
        self.acks.request();
    }

    pub fn wants_ack_now(&self) -> bool {
        self.acks.wants_ack_now()
    }

    pub fn ack_deadline_ns(&self) -> Option<u64> {
        self.acks.deadline_ns()
    }

    /// The delayed-ACK timer fired (checked against the deadline by the caller).
    pub fn on_ack_timer(&mut self) {
        self.acks.request();
    }

    /// A segment carrying our current ACK went out.
    pub fn ack_sent(&mut self) {
        self.acks.ack_sent();
        self.ecn.ack_sent();
        self.duplicate = None;
        self.last_ack_sent = self.rcv_nxt;
        self.adv_right_edge = self.adv_right_edge.max(self.rcv_nxt + ((self.window_field() as u64) << self.wscale));
    }

    /// RFC 2883 §4: a D-SACK block first, if a duplicate arrived since the last ACK; then
    /// RFC 2018 §4: the block holding the latest out-of-order segment, then the other
    /// recently reported blocks, then any others, as many as the option space allows.
    pub fn fill_sack_blocks(&self, opts: &mut TcpOptions) {
        if let Some(dup) = &self.duplicate {
            opts.push_sack(millinet_wire::SackBlock { left: dup.start as u32, right: dup.end as u32 });
        }
        if self.ooo.is_empty() {
            // In order, as nearly every segment is: no block to report.
            return;
        }
        let mut emitted = [u64::MAX; MAX_REMEMBERED_BLOCKS];
        let mut count = 0;
        let recent = self.recent[..self.recent_len].iter().copied().filter_map(|seq| self.ooo.containing(seq));
        let highest = (0..MAX_REMEMBERED_BLOCKS).filter_map(|k| self.ooo.nth_from_top(k));
        for span in recent.chain(highest) {
            if emitted[..count].contains(&span.start) {
                continue;
            }
            let block = millinet_wire::SackBlock { left: span.start as u32, right: span.end as u32 };
            if !opts.push_sack(block) {
                break;
            }
            emitted[count] = span.start;
            count += 1;
        }
    }

    /// The application reads up to `max_bytes` of the in-order stream: the stream offsets
    /// read (the FIN is not data).
    pub fn read(&mut self, max_bytes: u64) -> Range<u64> {
        let end = self.delivered_bytes().min(self.read_bytes.saturating_add(max_bytes));
        let range = self.read_bytes..end.max(self.read_bytes);
        self.read_bytes = range.end;
        range
    }

    /// RFC 9293 §3.8.6.2.2 (receiver-side silly window syndrome avoidance): a window
    /// update is worth sending once the right edge can move by min(buffer / 2, MSS).
    pub fn window_update_due(&self) -> bool {
        self.rcv_nxt + self.free_bytes() >= self.adv_right_edge + (self.rcv_buf_bytes / 2).min(self.mss_bytes)
    }

    /// Bytes delivered in order to the application so far.
    pub fn delivered_bytes(&self) -> u64 {
        (self.rcv_nxt - self.fin_received() as u64).saturating_sub(self.data_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 100;
    const TIMING: AckTiming = AckTiming { rto_ns: 1_000_000_000, srtt_ns: 0 };

    fn receiver(delayed: DelayedAck) -> Receiver {
        let mut r = Receiver::new(10_000, false, delayed, 40);
        r.on_syn(u32::MAX - 150, None);
        r.establish(MSS as u64, 0, true);
        r
    }

    fn seq(r: &Receiver, offset: u64) -> u32 {
        (r.data_start + offset) as u32
    }

    #[test]
    fn in_order_out_of_order_and_hole_filling_across_wrap() {
        let mut r = receiver(DelayedAck::Off);
        r.on_segment(0, seq(&r, 0), MSS, false, None, || TIMING);
        assert_eq!(r.read(u64::MAX), 0..100);
        r.on_segment(0, seq(&r, 200), MSS, false, None, || TIMING);
        r.on_segment(0, seq(&r, 400), MSS, false, None, || TIMING);
        let mut opts = TcpOptions::default();
        r.fill_sack_blocks(&mut opts);
        let blocks: Vec<(u32, u32)> = opts.sack().iter().map(|b| (b.left, b.right)).collect();
        assert_eq!(blocks, vec![(seq(&r, 400), seq(&r, 500)), (seq(&r, 200), seq(&r, 300))], "latest block first");
        // 200 bytes buffered out of order, but the advertised right edge does not move left.
        assert_eq!(r.window_field(), 9_900);
        r.on_segment(0, seq(&r, 100), MSS, false, None, || TIMING);
        assert!(r.wants_ack_now(), "filling a hole is ACKed at once");
        assert_eq!(r.read(u64::MAX), 100..300);
        r.on_segment(0, seq(&r, 300), MSS, false, None, || TIMING);
        assert_eq!(r.read(u64::MAX), 300..500);
        assert!(r.on_segment(0, seq(&r, 500), 0, true, None, || TIMING), "a FIN alone is consumed");
        assert_eq!(r.read(u64::MAX), 500..500);
        assert_eq!(r.ack_number(), seq(&r, 501));
    }

    #[test]
    fn a_segments_sack_block_rank_counts_the_more_recent_blocks() {
        let mut r = receiver(DelayedAck::Off);
        let mut ranks = Vec::new();
        // Three new blocks, then one extending the oldest, then one extending the one that was
        // the latest before it.
        for offset in [200, 400, 600, 100, 700] {
            let start = r.data_start + offset;
            let (block, _) = r.ooo.insert(start, start + MSS as u64);
            ranks.push(r.sack_block_rank(block));
            r.remember_block(start, block);
        }
        assert_eq!(ranks, vec![0, 1, 2, 2, 1]);
    }

    #[test]
    fn an_application_paced_receiver_advertises_only_the_unread_free_space() {
        let mut r = Receiver::new(1_000, true, DelayedAck::Off, 40);
        r.on_syn(7, None);
        r.establish(MSS as u64, 0, true);
        for k in 0..6 {
            r.on_segment(0, seq(&r, k * 100), MSS, false, None, || TIMING);
        }
        r.ack_sent();
        assert_eq!(r.window_field(), 400, "600 unread bytes occupy the buffer");
        assert_eq!(r.read(50), 0..50);
        assert!(!r.window_update_due(), "50 bytes freed: less than one MSS, no update (SWS avoidance)");
        assert_eq!(r.read(150), 50..200);
        assert!(r.window_update_due());
        r.ack_sent();
        assert_eq!(r.window_field(), 600);
        // Data beyond the advertised window is not accepted.
        for k in 6..13 {
            r.on_segment(0, seq(&r, k * 100), MSS, false, None, || TIMING);
        }
        assert_eq!(r.delivered_bytes(), 1_200, "only up to the right edge");
        assert_eq!(r.read(u64::MAX), 200..1_200);
    }

    #[test]
    fn delayed_ack_every_second_full_segment_or_timer() {
        let mut r = receiver(DelayedAck::Rfc5681);
        r.on_segment(1000, seq(&r, 0), MSS, false, None, || TIMING);
        assert!(!r.wants_ack_now());
        assert_eq!(r.ack_deadline_ns(), Some(1040));
        r.on_segment(1010, seq(&r, 100), MSS, false, None, || TIMING);
        assert!(r.wants_ack_now());
        r.ack_sent();
        assert_eq!(r.ack_deadline_ns(), None);
        r.on_segment(1020, seq(&r, 300), MSS, false, None, || TIMING);
        assert!(r.wants_ack_now(), "out-of-order data is ACKed at once");
    }

    fn blocks(r: &Receiver) -> Vec<(u32, u32)> {
        let mut opts = TcpOptions::default();
        r.fill_sack_blocks(&mut opts);
        opts.sack().iter().map(|b| (b.left, b.right)).collect()
    }

    #[test]
    fn duplicates_are_reported_once_as_a_first_dsack_block() {
        let mut r = receiver(DelayedAck::Off);
        r.on_segment(0, seq(&r, 0), MSS, false, None, || TIMING);
        r.ack_sent();
        // RFC 2883 §4.1.1: a duplicate below the cumulative ACK.
        r.on_segment(0, seq(&r, 0), MSS, false, None, || TIMING);
        assert!(r.wants_ack_now());
        assert_eq!(blocks(&r), vec![(seq(&r, 0), seq(&r, 100))]);
        r.ack_sent();
        assert_eq!(blocks(&r), vec![], "only in the first ACK after it");
        // RFC 2883 §4.1.3: a duplicate of data held out of order, then the block holding it.
        r.on_segment(0, seq(&r, 300), MSS, false, None, || TIMING);
        r.ack_sent();
        r.on_segment(0, seq(&r, 300), MSS, false, None, || TIMING);
        assert_eq!(blocks(&r), vec![(seq(&r, 300), seq(&r, 400)), (seq(&r, 300), seq(&r, 400))]);
        r.ack_sent();
        // A segment that starts below RCV.NXT: its old part is the duplicate.
        r.on_segment(0, seq(&r, 50), 2 * MSS, false, None, || TIMING);
        assert_eq!(blocks(&r)[0], (seq(&r, 50), seq(&r, 100)));
        assert_eq!(r.ack_number(), seq(&r, 250));
    }
}
