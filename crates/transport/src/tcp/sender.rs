//! The sending half: what to send next and when, ACK processing, loss recovery and the
//! retransmission and persist timers.
//!
//! - Usable window = min(cwnd, peer's window) − pipe (RFC 5681 §3, RFC 6675 §5).
//! - Loss recovery with SACK: RFC 6675 (NextSeg, pipe — see `scoreboard`), with losses
//!   found by RACK and tail losses probed by TLP (RFC 8985, `rack` and `tlp`) or, with
//!   `LossDetection::Rfc6675`, by RFC 6675's IsLost. Without SACK: fast retransmit on
//!   DupThresh duplicate ACKs and NewReno partial ACKs (RFC 6582), with the classic cwnd inflation kept here as `inflation_bytes` so that the
//!   congestion control only ever deals with the real window.
//! - RTO per RFC 6298 with go-back-N retransmission over the kept SACK scoreboard (RFC 6675
//!   §5.1); spurious timeouts detected with the Eifel test (RFC 3522), counted, and undone
//!   when configured (`undo_spurious_rto`, as Linux does).
//! - Zero-window probing (RFC 9293 §3.8.6.1), optional pacing, delivery-rate sampling.
//!
//! Segment boundaries are fixed when data is first sent: a retransmission resends the same
//! segment. The MSS is the payload size; options do not reduce it (kept simple on purpose:
//! header bytes still count on the wire through `Packet::wire_bytes`).

use std::net::Ipv4Addr;

use millinet_wire::{seq, Packet, TcpFlags, TcpHeader};

use crate::cc::{AckSample, CcFactory, CcInit, CongestionControl, CongestionEvent, Window};
use crate::deadline::earliest_ns;
use crate::pacing;

use super::ecn::EcnFeedback;
use super::options::Negotiated;
use super::prr::Prr;
use super::rack::Rack;
use super::rate::DeliveryRate;
use super::rtt::RttEstimator;
use super::scoreboard::{CumAck, Scoreboard, Segment, DUP_THRESH};
use super::tlp::{ProbeAck, ProbeOutcome, TailLossProbe};
use super::wrap::{ts_now_ms, unwrap32};
use super::{CwndGrowth, LimitedBy, LossDetection, NewRenoVariant, TcpConfig, TcpStats};

/// The header fields shared by every segment sent in one call (addresses, ports, ACK
/// number, window, timestamps and SACK options); the sender fills in sequence number,
/// extra flags and payload length.
pub(crate) struct Template {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub header: TcpHeader,
}

impl Template {
    pub fn packet(&self, seq: u64, flags: TcpFlags, payload_bytes: u32) -> Packet {
        let header = TcpHeader { seq: seq as u32, flags: self.header.flags | flags, ..self.header };
        Packet::tcp(self.src, self.dst, header, payload_bytes)
    }
}

/// What the send loop may do next.
enum Next {
    Retransmit(usize),
    New { payload_bytes: u32, fin: bool },
    Blocked(LimitedBy),
}

pub(crate) struct Sender {
    cc: Box<dyn CongestionControl>,
    cc_factory: CcFactory,
    /// What `cc` was built from; rebuilt with the negotiated MSS at establishment.
    cc_init: CcInit,
    variant: NewRenoVariant,
    growth: CwndGrowth,
    max_rto_ns: u64,
    mss_bytes: u64,
    sack: bool,
    timestamps: bool,
    snd_wscale: u8,
    /// Sequence number of stream offset 0 (ISS + 1). Sequence numbers are unwrapped.
    data_start: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// Sequence number just after the last byte the application wrote (u64::MAX: unlimited).
    data_end: u64,
    fin_requested: bool,
    /// Peer's window (scaled), the largest it offered, the last one seen and SND.WL1/WL2.
    snd_wnd: u64,
    max_snd_wnd: u64,
    last_adv_wnd: u64,
    snd_wl1: u32,
    snd_wl2: u64,
    sb: Scoreboard,
    loss_detection: LossDetection,
    /// RACK and TLP (RFC 8985) when `loss_detection` asks for them and SACK was agreed.
    rack: Option<Rack>,
    tlp: Option<TailLossProbe>,
    /// RACK's reordering timer: when a segment sent before the latest delivered one will
    /// have waited long enough to be deemed lost.
    rack_deadline_ns: Option<u64>,
    rate: DeliveryRate,
    rtt: RttEstimator,
    dupacks: u64,
    in_recovery: bool,
    /// RFC 6675 RecoveryPoint / RFC 6582 "recover": no new recovery before SND.UNA reaches it.
    recovery_point: u64,
    /// RFC 6582 / RFC 5681 §3.2 cwnd inflation without SACK (may go negative on deflation).
    inflation_bytes: i64,
    /// Proportional Rate Reduction (RFC 9937) is applied in SACK recovery (`TcpConfig::prr`).
    prr_enabled: bool,
    /// Its state while in such a recovery.
    prr: Option<Prr>,
    partial_acks: u64,
    rto_deadline_ns: Option<u64>,
    persist_deadline_ns: Option<u64>,
    persist_backoff: u32,
    pacing_release_ns: u64,
    /// TSval (ms) of the first retransmission of the current timeout series (RFC 3522).
    eifel_tsval_ms: Option<u64>,
    undo_spurious_rto: bool,
    /// The window the current timeout series reduced, while the Eifel test may still find
    /// it spurious and `undo_spurious_rto` is set.
    window_before_rto: Option<Window>,
    /// When cwnd and ssthresh were last lowered (recovery, RTO, lost retransmission, ECN).
    window_reduced_ns: u64,
    /// ECN: the codepoint of new data and what the ACKs feed back (ecn.rs).
    ecn: EcnFeedback,
    /// SND.NXT at the last reduction for ECN: the window is being reduced while SND.UNA is
    /// below it (Linux's CWR state), and no other reduction comes before an ACK covers data
    /// sent after it (RFC 3168 §6.1.2: the ACK of the segment that carried CWR).
    cwr_point: Option<u64>,
    ecn_reductions: u64,
    /// Payload bytes the peer reported as having arrived CE-marked.
    ce_bytes: u64,
    /// Linux `tcp_cwnd_validate`: per window of data, the largest pipe and whether cwnd
    /// was filled.
    cwnd_usage_end: u64,
    max_pipe_in_window: u64,
    cwnd_limited_in_window: bool,
    limited_by: LimitedBy,
    retransmitted_segments: u64,
    fast_retransmits: u64,
    rtos: u64,
    spurious_rtos: u64,
    /// The latest delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation), what
    /// Linux reports as tcpi_delivery_rate: its bytes and interval, divided only when read.
    last_rate_sample: (u64, u64),
}

impl Sender {
    pub fn new(cfg: &TcpConfig, cc_factory: CcFactory) -> Sender {
        let data_start = cfg.iss as u64 + 1;
        let mss_bytes = cfg.mss_bytes as u64;
        let initial_window_segments = cfg.initial_window_segments.max(1) as u64;
        let cc_init = CcInit { mss_bytes, initial_cwnd_bytes: initial_window_segments * mss_bytes, hystart: cfg.hystart, cubic: cfg.cubic };
        Sender {
            cc: cc_factory.build(&cc_init),
            cc_factory,
            cc_init,
            variant: cfg.newreno_variant,
            growth: cfg.cwnd_growth,
            max_rto_ns: cfg.max_rto_ns,
            mss_bytes,
            sack: false,
            timestamps: false,
            snd_wscale: 0,
            data_start,
            snd_una: data_start,
            snd_nxt: data_start,
            data_end: data_start,
            fin_requested: false,
            snd_wnd: 0,
            max_snd_wnd: 0,
            last_adv_wnd: 0,
            snd_wl1: 0,
            snd_wl2: data_start,
            sb: Scoreboard::new(data_start),
            loss_detection: cfg.loss_detection,
            rack: None,
            tlp: None,
            rack_deadline_ns: None,
            rate: DeliveryRate::default(),
            rtt: RttEstimator::new(cfg.initial_rto_ns, cfg.min_rto_ns, cfg.max_rto_ns),
            dupacks: 0,
            in_recovery: false,
            recovery_point: data_start,
            inflation_bytes: 0,
            prr_enabled: cfg.prr,
            prr: None,
            partial_acks: 0,
            rto_deadline_ns: None,
            persist_deadline_ns: None,
            persist_backoff: 0,
            pacing_release_ns: 0,
            eifel_tsval_ms: None,
            undo_spurious_rto: cfg.undo_spurious_rto,
            window_before_rto: None,
            window_reduced_ns: 0,
            ecn: EcnFeedback::default(),
            cwr_point: None,
            ecn_reductions: 0,
            ce_bytes: 0,
            cwnd_usage_end: data_start,
            max_pipe_in_window: 0,
            cwnd_limited_in_window: false,
            limited_by: LimitedBy::App,
            retransmitted_segments: 0,
            fast_retransmits: 0,
            rtos: 0,
            spurious_rtos: 0,
            last_rate_sample: (0, 0),
        }
    }

    /// The handshake completed: adopt the agreement and the peer's SYN window (never
    /// scaled, RFC 7323 §2.2); the congestion control starts with the effective MSS.
    /// `passive`: we answered the SYN, and the segment being processed completes the handshake.
    pub fn establish(&mut self, neg: &Negotiated, peer_window: u16, peer_seq: u32, passive: bool) {
        self.mss_bytes = neg.mss_bytes;
        self.sack = neg.sack;
        self.timestamps = neg.timestamps;
        // RACK and TLP need SACK (as in Linux, where a connection without it counts
        // duplicate ACKs).
        if self.sack && self.loss_detection == LossDetection::RackTlp {
            self.rack = Some(Rack::default());
            self.tlp = Some(TailLossProbe::default());
        }
        self.snd_wscale = neg.snd_wscale;
        let initial_window_segments = self.cc_init.initial_cwnd_bytes / self.cc_init.mss_bytes;
        self.cc_init = CcInit { mss_bytes: self.mss_bytes, initial_cwnd_bytes: initial_window_segments * self.mss_bytes, ..self.cc_init };
        self.cc = self.cc_factory.build(&self.cc_init);
        self.ecn.establish(neg.ecn, self.cc.l4s(), passive);
        self.snd_wnd = peer_window as u64;
        self.max_snd_wnd = self.snd_wnd;
        self.last_adv_wnd = self.snd_wnd;
        self.snd_wl1 = peer_seq;
        self.snd_wl2 = self.snd_una;
    }

    /// RTT of the SYN exchange (RFC 6298 §2 allows it); without one after a SYN timeout
    /// the data starts with RTO = 3 s (RFC 6298 §5.7).
    pub fn on_handshake_rtt(&mut self, sample_ns: Option<u64>) {
        match sample_ns {
            Some(rtt_ns) => {
                self.rtt.on_sample(rtt_ns);
                self.rtt.reset_backoff();
            }
            None => self.rtt.after_syn_timeout_without_sample(),
        }
    }

    /// As `CongestionControl::echoes_every_mark` of its congestion control.
    pub fn echoes_every_mark(&self) -> bool {
        self.cc.echoes_every_mark()
    }

    pub fn rtt(&mut self) -> &mut RttEstimator {
        &mut self.rtt
    }

    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    pub fn limited_by(&self) -> LimitedBy {
        self.limited_by
    }

    pub fn scoreboard_steps(&self) -> u64 {
        self.sb.steps()
    }

    pub fn send(&mut self, bytes: u64) {
        self.data_end = if bytes == u64::MAX { u64::MAX } else { self.data_end.saturating_add(bytes) };
    }

    pub fn close(&mut self) {
        self.fin_requested = true;
    }

    pub fn fin_requested(&self) -> bool {
        self.fin_requested
    }

    /// Our FIN (at sequence number `data_end`) has been acknowledged.
    pub fn fin_acked(&self) -> bool {
        self.fin_requested && self.data_end != u64::MAX && self.snd_una > self.data_end
    }

    /// The window the sender fills: `cwnd_bytes` (PRR's window in a recovery that runs it)
    /// plus the NewReno inflation (only without SACK, so never beside PRR); never below one
    /// segment.
    fn effective_cwnd(&self) -> u64 {
        (self.cwnd_bytes() as i64 + self.inflation_bytes).max(self.mss_bytes as i64) as u64
    }

    pub fn next_deadline_ns(&self) -> Option<u64> {
        let pacing = (self.limited_by == LimitedBy::Pacing).then_some(self.pacing_release_ns);
        let probe = self.tlp.as_ref().and_then(|t| t.deadline_ns());
        let loss_detection = earliest_ns(self.rack_deadline_ns, probe);
        earliest_ns(earliest_ns(self.rto_deadline_ns, self.persist_deadline_ns), earliest_ns(pacing, loss_detection))
    }

    /// RFC 9293 §3.10.7.4 window update, guarded by SND.WL1/SND.WL2 against old segments.
    /// Returns whether the advertised window differs from the previous ACK's.
    fn update_window(&mut self, hdr: &TcpHeader, ack: u64) -> bool {
        let wnd = (hdr.window as u64) << self.snd_wscale;
        let changed = wnd != self.last_adv_wnd;
        self.last_adv_wnd = wnd;
        if seq::lt(self.snd_wl1, hdr.seq) || (self.snd_wl1 == hdr.seq && self.snd_wl2 <= ack) {
            self.snd_wnd = wnd;
            self.max_snd_wnd = self.max_snd_wnd.max(wnd);
            self.snd_wl1 = hdr.seq;
            self.snd_wl2 = ack;
        }
        changed
    }

    /// RFC 7323 §4.1: RTT from the echoed timestamp (a 1 ms clock), in ns.
    fn ts_rtt_ns(now_ns: u64, tsecr: u32) -> u64 {
        let sent_ms = unwrap32(ts_now_ms(now_ns), tsecr);
        // An echo of a time never sent (before time 0 or from the future) must not overflow.
        now_ns.saturating_sub(sent_ms.saturating_mul(1_000_000))
    }

    /// RTT sample of the SYN exchange from its echoed timestamp.
    pub fn handshake_ts_rtt_ns(now_ns: u64, tsecr: u32) -> u64 {
        Sender::ts_rtt_ns(now_ns, tsecr)
    }

    /// Processes the acknowledgment part of an incoming segment.
    pub fn on_ack(&mut self, now_ns: u64, hdr: &TcpHeader, payload_bytes: u32) {
        let ack = unwrap32(self.snd_una, hdr.ack);
        if ack > self.snd_nxt || ack < self.snd_una {
            // RFC 9293 §3.10.7.4: an ACK of unsent data, or an old one, is ignored.
            return;
        }
        let window_changed = self.update_window(hdr, ack);
        let lost_marked_before = self.sb.lost_marked_bytes();
        let newly_acked = ack - self.snd_una;
        let was_in_recovery = self.in_recovery;
        let mut cum = CumAck::default();
        if newly_acked > 0 {
            cum = self.sb.on_cumulative_ack(ack, &mut self.rate, now_ns);
            self.snd_una = ack;
        }
        let (newly_sacked, dsack_end) = self.process_sack(now_ns, hdr);
        // Linux's congestion-control RTT (`tcp_clean_rtx_queue`): the newest SACKed segment's,
        // else the highest cumulatively acknowledged one's, never from retransmitted data.
        let ca_sent_ns = match self.sb.take_newest_sacked_sent_ns() {
            Some(sent_ns) => Some(sent_ns),
            None if newly_acked > 0 && !cum.retransmitted => Some(cum.last_sent_ns),
            None => None,
        };
        let tsecr = if self.timestamps { hdr.options.timestamps.map(|t| t.tsecr) } else { None };
        let mut rtt_sample = None;
        if newly_acked > 0 {
            rtt_sample = match tsecr {
                Some(ecr) => Some(Sender::ts_rtt_ns(now_ns, ecr)),
                // RFC 6298 §3 (Karn): no sample from an ACK covering retransmitted data.
                None if !cum.retransmitted => Some(now_ns - cum.last_sent_ns),
                None => None,
            };
            if let Some(rtt_ns) = rtt_sample {
                self.rtt.on_sample(rtt_ns);
                // RFC 6298 §5: only a new RTT measurement collapses a backed-off RTO (as
                // Linux's tcp_ack_update_rtt); Karn's rule gives none from the ACK of a
                // retransmission without timestamps.
                self.rtt.reset_backoff();
            }
            // RFC 3522 §3.2: the timeout was spurious if the first ACK after it echoes a
            // timestamp older than the retransmission (the original segment was ACKed).
            let window_before_rto = self.window_before_rto.take();
            if let (Some(rtx_ms), Some(ecr)) = (self.eifel_tsval_ms.take(), tsecr) {
                if unwrap32(rtx_ms, ecr) < rtx_ms {
                    self.spurious_rtos += 1;
                    if let Some(prior) = window_before_rto {
                        self.undo_timeout(prior);
                    }
                }
            }
        }
        if newly_acked > 0 || newly_sacked > 0 || dsack_end.is_some() {
            // The echo is TS.Recent, the timestamp of the segment that advanced the left edge
            // (RFC 7323 §4.3): it tells which transmission arrived only for ACKs that advance it.
            let echoed_ms = tsecr.filter(|_| newly_acked > 0).map(|ecr| unwrap32(ts_now_ms(now_ns), ecr));
            // Linux looks for losses only on a "dubious" ACK (`tcp_ack_is_dubious`): one that
            // SACKs, D-SACKs, or comes while SACKed data is held or a loss is being recovered.
            // A plain cumulative ACK in order cannot reveal one: every segment still out was
            // sent after the data it acknowledges.
            let dubious = newly_sacked > 0 || dsack_end.is_some() || self.sb.sacked_bytes() > 0 || self.recovering();
            self.rack_on_ack(now_ns, dsack_end.is_some(), echoed_ms, dubious);
        }
        let outstanding = self.snd_una < self.snd_nxt;
        // RFC 5681 §2 duplicate ACK; with SACK, RFC 6675 §2: it must SACK new data.
        let is_dup = newly_acked == 0
            && outstanding
            && payload_bytes == 0
            && !hdr.flags.contains(TcpFlags::SYN)
            && !hdr.flags.contains(TcpFlags::FIN)
            && if self.sack { newly_sacked > 0 } else { !window_changed };
        if newly_acked > 0 {
            self.dupacks = 0;
        } else if is_dup {
            self.dupacks += 1;
        }
        self.recovery_step(now_ns, ack, newly_acked, is_dup, was_in_recovery);
        if let Some(tlp) = &mut self.tlp {
            let delivered = newly_acked > 0 || newly_sacked > 0;
            if tlp.on_ack(&ProbeAck { ack, dsack_end, delivered }) == ProbeOutcome::RepairedLoss {
                self.on_probe_repaired_loss(now_ns);
            }
        }
        let delivered_bytes = newly_acked + newly_sacked;
        if !self.in_recovery && self.cwr_point.is_some_and(|p| self.snd_una >= p) {
            // Linux's `tcp_end_cwnd_reduction`: the reduction's round is over, cwnd = ssthresh
            // (the congestion control's window since the reduction).
            self.prr = None;
        }
        let ecn = self.ecn.on_ack(hdr, delivered_bytes, self.mss_bytes);
        self.ce_bytes += ecn.ce_bytes;
        if ecn.congestion {
            self.on_ecn_congestion(now_ns);
        }
        if let Some(prr) = &mut self.prr {
            // RFC 9937: every ACK of the recovery, from the one that starts it; a safe ACK
            // advances SND.UNA and reveals no new loss.
            let safe = newly_acked > 0 && self.sb.lost_marked_bytes() == lost_marked_before;
            prr.on_ack(newly_acked + newly_sacked, self.sb.pipe_bytes(), self.cc.ssthresh_bytes(), safe, self.mss_bytes);
        }
        self.restart_rto_after_ack(now_ns, newly_acked, was_in_recovery);
        if newly_acked > 0 {
            self.schedule_probe(now_ns, true);
        }
        let rate = self.rate.take_sample(self.rtt.min_rtt_ns());
        if let Some(r) = &rate {
            self.last_rate_sample = (r.delivered_bytes, r.interval_ns);
        }
        if newly_acked > 0 || newly_sacked > 0 {
            let cwnd_limited = self.growth == CwndGrowth::Always || self.is_cwnd_limited();
            self.cc.on_ack(&AckSample {
                now_ns,
                acked_bytes: newly_acked,
                rtt_ns: rtt_sample,
                srtt_ns: self.rtt.srtt_ns(),
                min_rtt_ns: self.rtt.min_rtt_ns(),
                bytes_in_flight: self.sb.pipe_bytes(),
                lost_bytes: self.sb.lost_marked_bytes() - lost_marked_before,
                cwnd_limited,
                in_recovery: was_in_recovery || self.in_recovery || self.cwr_point.is_some_and(|p| self.snd_una < p),
                delivered_total_bytes: self.rate.delivered_bytes(),
                rate,
                ca_rtt_ns: ca_sent_ns.map(|sent_ns| now_ns - sent_ns),
                snd_una: self.snd_una,
                snd_nxt: self.snd_nxt,
                ce_bytes: ecn.ce_bytes,
            });
        }
    }

    /// Applies the SACK blocks (RFC 2018), clipped to the outstanding data, then, without
    /// RACK, IsLost. Returns the bytes newly SACKed and the end of a D-SACK block (RFC 2883
    /// §4: a first block below the cumulative ACK or inside the second block), if any.
    fn process_sack(&mut self, now_ns: u64, hdr: &TcpHeader) -> (u64, Option<u64>) {
        if !self.sack {
            return (0, None);
        }
        let blocks = hdr.options.sack();
        let unwrapped = |b: &millinet_wire::SackBlock| (unwrap32(self.snd_una, b.left), unwrap32(self.snd_una, b.right));
        let dsack_end = blocks.first().map(unwrapped).and_then(|(left, right)| {
            let inside_second = blocks.get(1).map(unwrapped).is_some_and(|(l2, r2)| l2 <= left && right <= r2);
            (right <= self.snd_una || inside_second).then_some(right)
        });
        let mut newly_sacked = 0;
        for block in blocks {
            let (left, right) = unwrapped(block);
            newly_sacked += self.sb.on_sack_block(left.max(self.snd_una), right.min(self.snd_nxt), &mut self.rate, now_ns);
        }
        if newly_sacked > 0 && self.rack.is_none() {
            self.sb.update_losses(self.mss_bytes);
            if let Some(sent_ns) = self.sb.detect_lost_retransmissions(self.mss_bytes) {
                self.on_lost_retransmission(now_ns, sent_ns);
            }
        }
        (newly_sacked, dsack_end)
    }

    /// RFC 8985 §6.2 on an ACK that delivered data or reported a duplicate: RACK learns the
    /// latest delivered transmission and any reordering, widens its window on a D-SACK, and,
    /// if the ACK is `dubious`, marks the segments sent before that have waited long enough.
    fn rack_on_ack(&mut self, now_ns: u64, dsack: bool, echoed_ms: Option<u64>, dubious: bool) {
        let Some(rack) = &mut self.rack else { return };
        let min_rtt_ns = self.rtt.min_rtt_ns();
        let delivered = self.sb.take_deliveries();
        for (tx, retransmitted) in [(delivered.latest_original, false), (delivered.latest_retransmission, true)] {
            if let Some(tx) = tx {
                rack.on_delivered(tx, retransmitted, now_ns, min_rtt_ns, echoed_ms);
            }
        }
        if delivered.reordering {
            rack.on_reordering();
        }
        if dsack {
            rack.on_dsack(self.snd_una, self.snd_nxt);
        }
        if dubious {
            self.rack_detect_losses(now_ns);
        }
    }

    /// RFC 8985 §6.2 step 5 with the current reordering window; sets the reordering timer.
    fn rack_detect_losses(&mut self, now_ns: u64) {
        let Some(rack) = &self.rack else { return };
        // Linux counts SACKed segments against its reordering degree (3 by default).
        let dupthresh_sacked = self.sb.sacked_bytes() >= DUP_THRESH * self.mss_bytes;
        let reo_wnd_ns = rack.reo_wnd_ns(self.recovering(), dupthresh_sacked, self.rtt.min_rtt_ns(), self.rtt.srtt_ns());
        self.rack_deadline_ns = None;
        let Some((latest, wait_ns)) = rack.threshold(reo_wnd_ns) else { return };
        let found = self.sb.rack_detect_losses(latest, wait_ns, now_ns);
        self.rack_deadline_ns = found.recheck_ns;
        if let Some(sent_ns) = found.lost_retransmission_sent_ns {
            self.on_lost_retransmission(now_ns, sent_ns);
        }
    }

    /// In fast recovery, or after a timeout until the data sent before it is acknowledged
    /// (Linux's Recovery and Loss states).
    fn recovering(&self) -> bool {
        self.snd_una < self.recovery_point
    }

    /// RFC 8985 §7.2: (re)arms the PTO after new data was sent or acknowledged, while data is
    /// outstanding and no loss is being recovered; `acked` when an ACK of new data restarts it
    /// (the RTO restarts too, so it caps the PTO in full).
    fn schedule_probe(&mut self, now_ns: u64, acked: bool) {
        let recovering = self.recovering();
        let Some(tlp) = &mut self.tlp else { return };
        if recovering || self.snd_una == self.snd_nxt {
            tlp.cancel();
            return;
        }
        let rto_left_ns = match self.rto_deadline_ns {
            Some(deadline_ns) if !acked => deadline_ns.saturating_sub(now_ns),
            _ => self.rtt.rto_ns(),
        };
        let srtt_ns = (self.rtt.samples() > 0).then(|| self.rtt.srtt_ns());
        let single = self.sb.outstanding_segments() == 1;
        tlp.schedule(now_ns, TailLossProbe::pto_ns(srtt_ns, single, self.rtt.min_rto_ns(), rto_left_ns));
    }

    /// RFC 8985 §7.4.2: the probe's retransmission was the only copy to arrive, so a segment
    /// was lost; the window is reduced as for a recovery that ends at once (Linux: CWR).
    fn on_probe_repaired_loss(&mut self, now_ns: u64) {
        self.cc.on_congestion_event(CongestionEvent::FastRetransmit, now_ns, self.reduction_flight_size());
        self.cc.on_recovery_exit(now_ns);
        self.window_reduced_ns = now_ns;
    }

    /// RFC 3168 §6.1.2: ECN feedback reported congestion. The window is reduced as for a loss,
    /// at most once per window of data and not while a loss is being recovered (that reduction
    /// answers the same congestion), and the next new segment says so with CWR. As Linux's CWR
    /// state does (`tcp_enter_cwr`), PRR spreads the reduction over the round trip where it
    /// would in a recovery, starting from the data in flight; without PRR the window drops at
    /// once, as RFC 3168 writes it.
    fn on_ecn_congestion(&mut self, now_ns: u64) {
        if self.recovering() || self.cwr_point.is_some_and(|p| self.snd_una <= p) {
            return;
        }
        self.cc.on_congestion_event(CongestionEvent::EcnEcho, now_ns, self.reduction_flight_size());
        if self.sack && self.prr_enabled && !self.cc.sets_recovery_window() {
            self.prr = Some(Prr::starting_at(self.snd_nxt - self.snd_una, self.sb.pipe_bytes()));
        }
        self.cwr_point = Some(self.snd_nxt);
        self.window_reduced_ns = now_ns;
        self.ecn.reduced();
        self.ecn_reductions += 1;
    }

    /// RFC 5681 §4.3: the loss of a retransmission is a second indication of congestion,
    /// so cwnd and ssthresh are lowered again (RFC 8985 §9.3 requires this response of a
    /// sender that detects lost retransmissions) — once per reduction: only a
    /// retransmission sent after the last reduction counts, so the retransmissions sent
    /// under the lowered window decide whether it was enough. Data sent so far belongs to
    /// this episode (RecoveryPoint = HighData). Without it, a recovery window above the
    /// path's capacity (HighSpeed's b(w) = 0.22 after a slow-start overshoot) kept losing
    /// a share of every round's retransmissions until the episode ended.
    fn on_lost_retransmission(&mut self, now_ns: u64, sent_ns: u64) {
        if sent_ns < self.window_reduced_ns {
            return;
        }
        self.cc.on_congestion_event(CongestionEvent::FastRetransmit, now_ns, self.reduction_flight_size());
        self.window_reduced_ns = now_ns;
        self.recovery_point = self.snd_nxt;
    }

    /// Entering, continuing and leaving fast recovery.
    fn recovery_step(&mut self, now_ns: u64, ack: u64, newly_acked: u64, is_dup: bool, was_in_recovery: bool) {
        if was_in_recovery {
            if ack >= self.recovery_point {
                // RFC 6582 §3.2 step 3 full ACK / RFC 6675 §5: recovery ends.
                self.in_recovery = false;
                self.inflation_bytes = 0;
                self.prr = None;
                self.cc.on_recovery_exit(now_ns);
                if let Some(rack) = &mut self.rack {
                    rack.on_recovery_exit();
                }
            } else if newly_acked > 0 {
                self.partial_acks += 1;
                if !self.sack {
                    // RFC 6582 §3.2 step 3 partial ACK: retransmit the first unacknowledged
                    // segment; deflate by the data acknowledged, add back one SMSS if at
                    // least one SMSS was acknowledged.
                    self.sb.mark_front_lost();
                    self.inflation_bytes -= newly_acked as i64;
                    if newly_acked >= self.mss_bytes {
                        self.inflation_bytes += self.mss_bytes as i64;
                    }
                }
            } else if is_dup && !self.sack {
                // RFC 6582 §3.2 step 2 / RFC 5681 §3.2 step 4: each further duplicate ACK
                // means a segment left the network.
                self.inflation_bytes += self.mss_bytes as i64;
            }
            return;
        }
        self.enter_recovery_on_loss(now_ns);
    }

    /// Fast recovery begins, unless a loss episode is already under way: with RACK when a
    /// segment is deemed lost (RFC 8985 §6.2; Linux's `tcp_time_to_recover`), else on
    /// RFC 6675 §5 steps (1)/(2): DupThresh duplicate ACKs, or IsLost(HighACK + 1).
    fn enter_recovery_on_loss(&mut self, now_ns: u64) {
        if self.recovering() || self.snd_una == self.snd_nxt {
            return;
        }
        let loss = match self.rack {
            Some(_) => self.sb.lost_bytes() > 0,
            None => self.dupacks >= DUP_THRESH || (self.sack && self.sb.front_is_lost()),
        };
        if loss {
            self.enter_recovery(now_ns);
        }
    }

    /// The FlightSize a congestion event reduces from. RFC 5681 §3.1 (RTO) and §3.2 (fast
    /// retransmit) set ssthresh to *no more than* max(FlightSize / 2, 2·SMSS). SND.NXT −
    /// SND.UNA exceeds cwnd when SACKed data lies beyond a hole still being repaired (a
    /// recovery starting right after another, an RTO during recovery): those bytes have
    /// left the network, so the base is capped at cwnd — as Linux (which reduces cwnd) and
    /// ns-3 (which reduces pipe) do. Without the cap, HighSpeed's second recovery at
    /// 100 Mbit/s set ssthresh above the first and above BDP + Q.
    fn reduction_flight_size(&self) -> u64 {
        (self.snd_nxt - self.snd_una).min(self.cc.cwnd_bytes())
    }

    /// The timeout was spurious: the original segments are being delivered, only late (a
    /// stall, such as a blockage of the radio, outlasted the RTO). As Linux does on the
    /// timestamp proof (`tcp_try_undo_loss`), the window returns to what it was, the segments
    /// the timeout marked lost and not yet retransmitted are not lost after all (so no
    /// go-back-N of a window that is arriving), and fast recovery is allowed again.
    fn undo_timeout(&mut self, prior: Window) {
        self.cc.undo(prior);
        self.sb.unmark_unretransmitted_losses();
        self.recovery_point = self.snd_una;
    }

    /// RFC 6675 §5 step (4) / RFC 6582 §3.2 step 2: once per window of data.
    fn enter_recovery(&mut self, now_ns: u64) {
        self.cc.on_congestion_event(CongestionEvent::FastRetransmit, now_ns, self.reduction_flight_size());
        self.in_recovery = true;
        self.recovery_point = self.snd_nxt;
        self.window_reduced_ns = now_ns;
        self.partial_acks = 0;
        self.fast_retransmits += 1;
        if let Some(tlp) = &mut self.tlp {
            tlp.end_episode();
        }
        // RFC 6675 §5 step (4.3): the first unacknowledged segment is retransmitted (RACK
        // retransmits what it found lost, as Linux does).
        if self.rack.is_none() {
            self.sb.mark_front_lost();
        }
        // PRR, where the congestion control leaves recovery's window to the sender (not BBR,
        // as in Linux, where PRR runs only for algorithms without their own `cong_control`).
        if self.sack && self.prr_enabled && !self.cc.sets_recovery_window() {
            self.prr = Some(Prr::new(self.snd_nxt - self.snd_una));
        }
        if !self.sack {
            // RFC 5681 §3.2 step 3: cwnd = ssthresh + 3·SMSS.
            self.inflation_bytes = (DUP_THRESH * self.mss_bytes) as i64;
        }
    }

    /// RFC 6298 §5.2/§5.3, with the RFC 6582 §4 variants for partial ACKs without SACK.
    fn restart_rto_after_ack(&mut self, now_ns: u64, newly_acked: u64, was_in_recovery: bool) {
        if self.snd_una == self.snd_nxt {
            self.rto_deadline_ns = None;
            return;
        }
        if newly_acked == 0 {
            return;
        }
        let partial_ack_without_sack = was_in_recovery && self.in_recovery && !self.sack;
        let restart = !partial_ack_without_sack
            || match self.variant {
                NewRenoVariant::SlowButSteady => true,
                NewRenoVariant::Impatient => self.partial_acks == 1,
            };
        if restart {
            self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns());
        }
    }

    /// Linux `tcp_is_cwnd_limited`: in slow start, cwnd may grow up to twice what was in
    /// flight recently; otherwise only if cwnd was filled in the current window.
    fn is_cwnd_limited(&self) -> bool {
        if self.cwnd_limited_in_window {
            return true;
        }
        let cwnd = self.cc.cwnd_bytes();
        cwnd < self.cc.ssthresh_bytes() && cwnd < 2 * self.max_pipe_in_window
    }

    /// Linux `tcp_cwnd_validate`: remember per window of data the strongest sign of use.
    fn track_cwnd_usage(&mut self, stopped_by_cwnd: bool) {
        let pipe = self.sb.pipe_bytes();
        let filled = stopped_by_cwnd || pipe + self.mss_bytes > self.effective_cwnd();
        if self.snd_una >= self.cwnd_usage_end || filled || (!self.cwnd_limited_in_window && pipe > self.max_pipe_in_window) {
            self.cwnd_limited_in_window = filled;
            self.max_pipe_in_window = pipe;
            self.cwnd_usage_end = self.snd_nxt;
        }
    }

    /// The next new segment the peer's window allows: Ok(None) when there is nothing to
    /// send, Err(()) when the window stops it.
    fn next_new_segment(&self) -> Result<Option<(u32, bool)>, ()> {
        if self.snd_nxt >= self.data_end {
            // FIN alone, once all data is out (it needs no window).
            let fin_pending = self.fin_requested && self.snd_nxt == self.data_end;
            return Ok(fin_pending.then_some((0, true)));
        }
        let mut payload = (self.data_end - self.snd_nxt).min(self.mss_bytes);
        let usable = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        if payload > usable {
            // RFC 9293 §3.8.6.2.1 sender SWS avoidance: a short segment only if it is at
            // least half the largest window offered, or if nothing is in flight (so that a
            // window smaller than a segment cannot stall the connection).
            let nothing_in_flight = self.snd_una == self.snd_nxt;
            if usable == 0 || (usable < self.max_snd_wnd / 2 && !nothing_in_flight) {
                return Err(());
            }
            payload = usable;
        }
        let fin = self.fin_requested && self.snd_nxt + payload == self.data_end;
        Ok(Some((payload as u32, fin)))
    }

    /// RFC 6675 §4 NextSeg: lost data first (rule 1), then new data (rule 2), then, in
    /// recovery, unSACKed data below the highest SACK (rule 3).
    fn choose_next(&mut self) -> Next {
        if let Some(i) = self.sb.next_lost() {
            return Next::Retransmit(i);
        }
        let blocked = match self.next_new_segment() {
            Ok(Some((payload_bytes, fin))) => return Next::New { payload_bytes, fin },
            Ok(None) => LimitedBy::App,
            Err(()) => LimitedBy::Rwnd,
        };
        // Rule (3) only without RACK: Linux retransmits only what it deems lost.
        if self.in_recovery && self.sack && self.rack.is_none() {
            if let Some(i) = self.sb.next_unsacked_below_sacked() {
                return Next::Retransmit(i);
            }
        }
        Next::Blocked(blocked)
    }

    /// Sends as much as cwnd, the peer's window, pacing and the application allow.
    /// Returns the number of segments sent.
    pub fn transmit(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> usize {
        let (sent, stopped_by_cwnd) = if self.nothing_to_send() {
            // The receiving end of a download, on every segment it gets: nothing to search.
            self.limited_by = LimitedBy::App;
            (0, false)
        } else {
            self.send_allowed(now_ns, tmpl, out)
        };
        if self.limited_by == LimitedBy::App && self.sb.pipe_bytes() < self.effective_cwnd() {
            self.rate.mark_app_limited(self.sb.pipe_bytes());
        }
        if sent > 0 || stopped_by_cwnd {
            self.track_cwnd_usage(stopped_by_cwnd);
        }
        self.update_persist_timer(now_ns);
        sent
    }

    /// Nothing in flight (so nothing to retransmit) and no new data or FIN to send.
    fn nothing_to_send(&self) -> bool {
        self.snd_una == self.snd_nxt && self.next_new_segment() == Ok(None)
    }

    /// `transmit`'s loop: sets why it stopped, returns the segments sent and whether cwnd
    /// stopped it.
    fn send_allowed(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> (usize, bool) {
        let mut sent = 0;
        let snd_nxt_before = self.snd_nxt;
        let mut stopped_by_cwnd = false;
        let pacing = self.cc.pacing_rate_bps();
        // Linux paces in bursts (`pacing.rs`): a burst's segments leave together, the next
        // burst when the pacing rate has paid for this one. A burst ends with this call.
        let mut burst_left = 0;
        self.limited_by = loop {
            let next = self.choose_next();
            let seq_len = match next {
                Next::Retransmit(i) => self.sb.get(i).len as u64,
                Next::New { payload_bytes, fin } => payload_bytes as u64 + fin as u64,
                Next::Blocked(reason) => break reason,
            };
            // With nothing in flight one segment may always go (RFC 5681 §3.1: the loss
            // window is one segment): a full-sized segment that also carries the FIN takes
            // one more sequence number than a one-MSS cwnd holds, and without this rule it
            // would wait for an ACK that nothing in flight can bring (found by fuzzing).
            let pipe_bytes = self.sb.pipe_bytes();
            if pipe_bytes > 0 && self.effective_cwnd().saturating_sub(pipe_bytes) < seq_len {
                stopped_by_cwnd = true;
                break LimitedBy::Cwnd;
            }
            if let Some(rate_bps) = pacing {
                if burst_left == 0 {
                    if now_ns < self.pacing_release_ns {
                        break LimitedBy::Pacing;
                    }
                    burst_left = pacing::burst_segments(rate_bps, self.mss_bytes);
                }
                burst_left -= 1;
            }
            let pkt = match next {
                Next::Retransmit(i) => self.retransmit(now_ns, i, tmpl),
                Next::New { payload_bytes, fin } => self.send_new(now_ns, payload_bytes, fin, tmpl),
                Next::Blocked(_) => unreachable!("handled above"),
            };
            if let Some(rate_bps) = pacing {
                // The next burst is released once this segment has left at the pacing rate.
                let gap_ns = pkt.wire_bytes() as u64 * 8 * 1_000_000_000 / rate_bps.max(1);
                self.pacing_release_ns = self.pacing_release_ns.max(now_ns) + gap_ns;
            }
            out.push(pkt);
            sent += 1;
            if let Some(prr) = &mut self.prr {
                prr.on_sent(seq_len);
            }
            // RFC 6298 §5.1: start the timer when data is sent and it is not running.
            if self.rto_deadline_ns.is_none() {
                self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns());
            }
        };
        if self.snd_nxt > snd_nxt_before {
            self.schedule_probe(now_ns, false);
        }
        (sent, stopped_by_cwnd)
    }

    fn send_new(&mut self, now_ns: u64, payload_bytes: u32, fin: bool, tmpl: &Template) -> Packet {
        let tx = self.rate.on_send(now_ns, self.sb.pipe_bytes());
        let start = self.snd_nxt;
        let len = payload_bytes + fin as u32;
        self.sb.push(Segment { start, len, fin, sacked: false, lost: false, rtx_in_pipe: false, retransmitted: false, tx });
        self.snd_nxt += len as u64;
        let mut flags = if fin { TcpFlags::FIN } else { TcpFlags(0) };
        if payload_bytes > 0 {
            flags = flags | self.ecn.new_data_flags();
        }
        let mut pkt = tmpl.packet(start, flags, payload_bytes);
        if payload_bytes > 0 {
            pkt.ecn = self.ecn.ect();
        }
        pkt
    }

    fn retransmit(&mut self, now_ns: u64, i: usize, tmpl: &Template) -> Packet {
        let tx = self.rate.on_send(now_ns, self.sb.pipe_bytes());
        self.sb.on_retransmit(i, tx, self.snd_nxt);
        self.retransmitted_segments += 1;
        if i == 0 && self.rack.is_some() && self.rto_deadline_ns.is_some() {
            // Linux's recovery (`tcp_xmit_retransmit_queue`) restarts the timer when it resends
            // the first unacknowledged segment: the resend needs its own round trip, which a
            // queue that grew during the episode may make longer than the RTO left since the
            // last cumulative ACK. Without it millinet timed out spuriously where Linux does
            // not (100 Mbit/s link switching to 10 Mbit/s, docs/validation.md).
            self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns());
        }
        let seg = *self.sb.get(i);
        tmpl.packet(seg.start, if seg.fin { TcpFlags::FIN } else { TcpFlags(0) }, seg.payload_bytes())
    }

    /// RFC 9293 §3.8.6.1: probe a zero window once nothing is in flight (no ACK would
    /// otherwise reveal that it opened); stop as soon as the window allows sending.
    fn update_persist_timer(&mut self, now_ns: u64) {
        if self.limited_by != LimitedBy::Rwnd || self.snd_una != self.snd_nxt {
            self.persist_deadline_ns = None;
            self.persist_backoff = 0;
        } else if self.persist_deadline_ns.is_none() {
            self.persist_deadline_ns = Some(now_ns + self.persist_interval_ns());
        }
    }

    /// The first probe after one RTO, then exponential backoff (RFC 9293 §3.8.6.1), capped.
    fn persist_interval_ns(&self) -> u64 {
        self.rtt.rto_ns().saturating_mul(1 << self.persist_backoff.min(16)).min(self.max_rto_ns)
    }

    /// The persist timer fired: send a window probe. Like Linux, the probe carries no data
    /// and the already acknowledged sequence number SND.UNA − 1, which the receiver must
    /// answer with an ACK carrying its current window (RFC 9293 §3.10.7.4).
    pub fn on_persist_timer(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> usize {
        if self.persist_deadline_ns.is_none_or(|d| now_ns < d) {
            return 0;
        }
        out.push(tmpl.packet(self.snd_una - 1, TcpFlags(0), 0));
        self.persist_backoff += 1;
        self.persist_deadline_ns = Some(now_ns + self.persist_interval_ns());
        1
    }

    /// The probe timeout fired (RFC 8985 §7.3): one segment goes regardless of cwnd — new
    /// data if the peer's window allows, else the highest outstanding segment again — and
    /// the RTO restarts from now.
    pub fn on_probe_timer(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> usize {
        if !self.tlp.as_mut().is_some_and(|tlp| tlp.take_due(now_ns)) || self.snd_una == self.snd_nxt {
            return 0;
        }
        let (pkt, retransmission) = match self.next_new_segment() {
            Ok(Some((payload_bytes, fin))) => (self.send_new(now_ns, payload_bytes, fin, tmpl), false),
            _ => {
                let Some(i) = self.sb.last_index().filter(|&i| !self.sb.get(i).sacked) else { return 0 };
                (self.retransmit(now_ns, i, tmpl), true)
            }
        };
        out.push(pkt);
        if let Some(tlp) = &mut self.tlp {
            tlp.on_probe_sent(self.snd_nxt, retransmission);
        }
        self.rto_deadline_ns = Some(now_ns + self.rtt.rto_ns());
        1
    }

    /// RACK's reordering timer fired (RFC 8985 §6.3): segments sent before the latest
    /// delivered one have now waited long enough to be deemed lost; recovery begins if it
    /// has not, and the losses are retransmitted.
    pub fn on_rack_timer(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> usize {
        if self.rack_deadline_ns.is_none_or(|d| now_ns < d) {
            return 0;
        }
        self.rack_detect_losses(now_ns);
        self.enter_recovery_on_loss(now_ns);
        self.transmit(now_ns, tmpl, out)
    }

    /// The retransmission timer fired (RFC 6298 §5.4–5.6).
    pub fn on_rto_timer(&mut self, now_ns: u64, tmpl: &Template, out: &mut Vec<Packet>) -> usize {
        if self.rto_deadline_ns.is_none_or(|d| now_ns < d) {
            return 0;
        }
        self.rto_deadline_ns = None;
        if self.snd_una == self.snd_nxt {
            return 0;
        }
        self.rtos += 1;
        self.window_reduced_ns = now_ns;
        if self.rtt.backoff() == 0 {
            if self.undo_spurious_rto && self.timestamps {
                self.window_before_rto = Some(Window { cwnd_bytes: self.cc.cwnd_bytes(), ssthresh_bytes: self.cc.ssthresh_bytes() });
            }
            // RFC 5681 §3.1: ssthresh is reduced for the first timeout of a series only
            // (later ones would halve a window that is already one segment).
            self.cc.on_congestion_event(CongestionEvent::Rto, now_ns, self.reduction_flight_size());
        }
        if self.timestamps {
            self.eifel_tsval_ms.get_or_insert(ts_now_ms(now_ns));
        }
        self.in_recovery = false;
        self.inflation_bytes = 0;
        self.prr = None;
        self.dupacks = 0;
        self.rack_deadline_ns = None;
        if let Some(tlp) = &mut self.tlp {
            tlp.end_episode();
        }
        // RFC 6675 §5.1 / RFC 6582 §3.2: no fast recovery before the data sent so far is
        // acknowledged; the SACK scoreboard is kept and the rest is retransmitted in order.
        self.recovery_point = self.snd_nxt;
        self.sb.mark_all_lost(self.snd_una, self.snd_nxt);
        self.rtt.back_off();
        self.transmit(now_ns, tmpl, out)
    }

    /// The congestion window as Linux reports it: PRR's window during a recovery that runs it.
    pub fn cwnd_bytes(&self) -> u64 {
        match &self.prr {
            Some(prr) => prr.window_bytes(),
            None => self.cc.cwnd_bytes(),
        }
    }

    pub fn acked_bytes(&self) -> u64 {
        self.snd_una.min(self.data_end) - self.data_start
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sb.sacked_bytes()
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.sb.pipe_bytes()
    }

    pub fn srtt_ns(&self) -> u64 {
        self.rtt.srtt_ns()
    }

    pub fn rto_ns(&self) -> u64 {
        self.rtt.rto_ns()
    }

    pub fn rtos(&self) -> u64 {
        self.rtos
    }

    pub fn rtt_samples(&self) -> (u64, u64) {
        (self.rtt.samples(), self.rtt.last_rtt_ns())
    }

    pub fn fill_stats(&self, stats: &mut TcpStats) {
        stats.cwnd_bytes = self.cwnd_bytes();
        stats.ssthresh_bytes = self.cc.ssthresh_bytes();
        stats.srtt_ns = self.srtt_ns();
        stats.rttvar_ns = self.rtt.rttvar_ns();
        stats.rto_ns = self.rto_ns();
        stats.bytes_in_flight = self.bytes_in_flight();
        stats.sacked_bytes = self.sacked_bytes();
        stats.lost_bytes = self.sb.lost_bytes();
        stats.pacing_rate_bps = self.cc.pacing_rate_bps().unwrap_or(0);
        stats.acked_bytes = self.acked_bytes();
        stats.retransmitted_segments = self.retransmitted_segments;
        stats.fast_retransmits = self.fast_retransmits;
        stats.rtos = self.rtos;
        stats.spurious_rtos = self.spurious_rtos;
        stats.ecn_reductions = self.ecn_reductions;
        stats.ce_bytes = self.ce_bytes;
        stats.tail_loss_probes = self.tlp.as_ref().map_or(0, |tlp| tlp.probes());
        stats.rtt_samples = self.rtt.samples();
        stats.last_rtt_ns = self.rtt.last_rtt_ns();
        stats.min_rtt_ns = self.rtt.min_rtt_ns();
        let (bytes, interval_ns) = self.last_rate_sample;
        stats.delivery_rate_bps = (u128::from(bytes) * 8_000_000_000).checked_div(u128::from(interval_ns)).unwrap_or(0) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Constructor;
    use crate::tcp::ecn::EcnAgreed;

    /// A window of 100 segments paced at 8 Mbit/s.
    struct Paced;

    impl CongestionControl for Paced {
        fn on_ack(&mut self, _: &AckSample) {}
        fn on_congestion_event(&mut self, _: CongestionEvent, _: u64, _: u64) {}
        fn on_recovery_exit(&mut self, _: u64) {}
        fn undo(&mut self, _: Window) {}
        fn cwnd_bytes(&self) -> u64 {
            100_000
        }
        fn ssthresh_bytes(&self) -> u64 {
            u64::MAX
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            Some(8_000_000)
        }
    }

    fn paced(_: &CcInit) -> Box<dyn CongestionControl> {
        Box::new(Paced)
    }

    #[test]
    fn pacing_releases_segments_on_schedule_and_sets_the_timer() {
        let mut s = Sender::new(&TcpConfig::default(), CcFactory::new(Constructor::Uncoupled(paced)));
        let neg = Negotiated { mss_bytes: 1000, snd_wscale: 0, rcv_wscale: 0, sack: false, timestamps: false, ecn: EcnAgreed::None };
        s.establish(&neg, u16::MAX, 0, false);
        s.send(10_000);
        let tmpl = Template {
            src: Ipv4Addr::LOCALHOST,
            dst: Ipv4Addr::LOCALHOST,
            header: TcpHeader { flags: TcpFlags::ACK, ..TcpHeader::default() },
        };
        let mut out = Vec::new();
        // At 8 Mbit/s a burst is two segments (1 ms of data is less than one, and Linux sends
        // at least two above 1.2 Mbit/s, pacing.rs).
        assert_eq!(s.transmit(0, &tmpl, &mut out), 2, "one burst, then wait for the pacing release");
        assert_eq!(s.limited_by(), LimitedBy::Pacing);
        // 2 × 1040 wire bytes (20 IP + 20 TCP + 1000) at 8 Mbit/s take 2.08 ms.
        assert_eq!(s.next_deadline_ns(), Some(2_080_000));
        assert_eq!(s.transmit(2_079_999, &tmpl, &mut out), 0);
        assert_eq!(s.transmit(2_080_000, &tmpl, &mut out), 2);
        assert_eq!(s.next_deadline_ns(), Some(4_160_000));
        // Late calls do not catch up with a longer burst: one burst per call and interval.
        assert_eq!(s.transmit(10_000_000, &tmpl, &mut out), 2);
        assert_eq!(s.next_deadline_ns(), Some(12_080_000));
    }
}
