//! TCP connection: one endpoint (sender and receiver halves) per RFC 9293,
//! with SACK (RFC 2018/6675), NewReno (RFC 6582), RTO (RFC 6298), timestamps and
//! window scaling (RFC 7323), delayed ACK (RFC 5681 §4.2, or as Linux), persist timer.

//!
//! Layout: `sender` (what to send, ACK processing, loss recovery, timers) over `scoreboard`
//! (outstanding segments, SACK, pipe), `rate` (delivery-rate samples) and `rtt` (RFC 6298);
//! `receiver` (reassembly, SACK blocks, window) over `delayed_ack` (when to acknowledge);
//! `options` (SYN negotiation);
//! `ranges` (sorted range set); `wrap` (32-bit wire counters); `hooks` (extension points
//! for MP-TCP subflows); `error`. This file holds the connection state machine
//! (RFC 9293 §3.3.2) that ties them together.

mod delayed_ack;
mod ecn;
mod error;
mod hooks;
pub(crate) mod options;
mod prr;
mod rack;
pub(crate) mod ranges;
mod rate;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;
mod tlp;
pub(crate) mod wrap;

use std::net::SocketAddrV4;
use std::ops::{Range, RangeInclusive};

use millinet_wire::{Packet, TcpFlags, TcpHeader, TcpOptions, Timestamps};

use crate::cc::{CcFactory, CubicVariant, HystartMode};
use crate::deadline::earliest_ns;
use delayed_ack::AckTiming;
pub use delayed_ack::DelayedAck;
use ecn::EcnAgreed;
pub use ecn::EcnMode;
pub use error::TcpError;
pub use hooks::ConnectionHooks;
use options::{negotiate, syn_options, Negotiated};
use receiver::Receiver;
use sender::{Sender, Template};
use wrap::{ts_now_ms, unwrap32};

/// Allowed `TcpConfig::mss_bytes`.
pub const MSS_RANGE_BYTES: RangeInclusive<u32> = 100..=65_000;
/// SYN / SYN-ACK retransmissions before giving up (Linux `tcp_syn_retries` default).
const MAX_SYN_RETRIES: u32 = 6;
/// The AccECN option's fields every segment carries if it can: EE0B and ECEB, the CE byte
/// counter the data sender's congestion response reads.
const ACCECN_REQUIRED_FIELDS: usize = 2;
/// TIME-WAIT lasts 2·MSL in RFC 9293 (minutes); a simulated peer never reuses the port, so
/// a short wait that still absorbs a retransmitted FIN is enough.
const TIME_WAIT_NS: u64 = 1_000_000_000;

/// RFC 6582 §4: how the RTO timer is handled on partial ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewRenoVariant {
    /// Reset the RTO timer only on the first partial ACK.
    Impatient,
    /// Reset the RTO timer on every partial ACK.
    SlowButSteady,
}

/// When cwnd may grow on an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndGrowth {
    /// Only while the sender is cwnd-limited (Linux `tcp_is_cwnd_limited`).
    WhenCwndLimited,
    /// On every ACK (ns-3 and older simulators).
    Always,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Congestion control name, looked up in `cc::REGISTRY` (unless `ConnectionParts`
    /// brings a factory).
    pub cc: String,
    pub mss_bytes: u32,
    pub initial_window_segments: u32,
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    /// When the receiver acknowledges (delayed_ack.rs).
    pub delayed_ack: DelayedAck,
    /// The delayed-ACK timer: Linux's TCP_ATO_MIN, 40 ms, where bulk data keeps its ato.
    pub delayed_ack_timeout_ns: u64,
    pub initial_rto_ns: u64,
    pub min_rto_ns: u64,
    pub max_rto_ns: u64,
    /// Receive buffer; the advertised window is its free space.
    pub rcv_buf_bytes: u64,
    /// The application reads in-order data when it can (`read`), and unread data occupies
    /// the receive buffer; otherwise it consumes everything at once.
    pub app_paced_reads: bool,
    pub newreno_variant: NewRenoVariant,
    pub cwnd_growth: CwndGrowth,
    /// A timeout the Eifel test (RFC 3522, timestamps) finds spurious is undone: window,
    /// ssthresh and loss marks back (Linux's behaviour; ns-3 has no undo).
    pub undo_spurious_rto: bool,
    /// How slow start may end before a loss (CUBIC; docs/models/transport.md §6).
    pub hystart: HystartMode,
    /// CUBIC as Linux runs it or as RFC 9438 writes it (docs/models/transport.md §6).
    pub cubic: CubicVariant,
    /// Proportional Rate Reduction (RFC 9937) sets the window of SACK recovery
    /// (docs/models/transport.md §5); otherwise cwnd = ssthresh at once (RFC 6675 §5).
    pub prr: bool,
    /// How SACK loss recovery finds losses (docs/models/transport.md §5).
    pub loss_detection: LossDetection,
    /// The ECN feedback asked for in the SYN exchange (ecn.rs); off by default, as Linux's
    /// `tcp_ecn = 2` asks for none on the connections it opens.
    pub ecn: EcnMode,
    /// Initial send sequence number (RFC 9293 §3.4.1); the caller draws it, the model has no randomness.
    pub iss: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: "cubic".to_string(),
            mss_bytes: 1400,
            initial_window_segments: 10,
            sack: true,
            timestamps: true,
            window_scaling: true,
            delayed_ack: DelayedAck::Linux,
            delayed_ack_timeout_ns: 40_000_000,
            initial_rto_ns: 1_000_000_000,
            min_rto_ns: 200_000_000,
            max_rto_ns: 120_000_000_000,
            rcv_buf_bytes: 1 << 30,
            app_paced_reads: false,
            newreno_variant: NewRenoVariant::Impatient,
            cwnd_growth: CwndGrowth::WhenCwndLimited,
            undo_spurious_rto: true,
            hystart: HystartMode::Linux,
            cubic: CubicVariant::Linux,
            prr: true,
            loss_detection: LossDetection::RackTlp,
            ecn: EcnMode::Off,
            iss: 0,
        }
    }
}

/// How a SACK sender finds its losses. Without SACK, duplicate ACKs decide either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossDetection {
    /// RACK's time-based marking and the tail loss probe (RFC 8985), Linux's default.
    RackTlp,
    /// RFC 6675 IsLost (DupThresh SACKed segments above a hole), no probe.
    Rfc6675,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

/// What stopped the sender from sending more (`limited_by` in docs/outputs.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitedBy {
    Cwnd = 0,
    Rwnd = 1,
    App = 2,
    Pacing = 3,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpStats {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt_ns: u64,
    pub rttvar_ns: u64,
    pub rto_ns: u64,
    pub bytes_in_flight: u64,
    pub pacing_rate_bps: u64,
    /// Bytes cumulatively acknowledged by the peer (sender side).
    pub acked_bytes: u64,
    /// Bytes delivered in order to the application (receiver side).
    pub delivered_bytes: u64,
    pub retransmitted_segments: u64,
    pub fast_retransmits: u64,
    pub rtos: u64,
    pub spurious_rtos: u64,
    /// Tail loss probes sent (RFC 8985 §7).
    pub tail_loss_probes: u64,
    /// Number of RTT samples taken so far and the latest one.
    pub rtt_samples: u64,
    pub last_rtt_ns: u64,
    /// The smallest RTT sample so far (0 before the first).
    pub min_rtt_ns: u64,
    /// The latest delivery-rate sample (Linux's tcpi_delivery_rate), 0 before the first.
    pub delivery_rate_bps: u64,
    /// Time spent limited by cwnd, rwnd, the application and pacing, indexed by `LimitedBy`.
    pub limited_ns: [u64; 4],
    /// Outstanding bytes SACKed by the peer, and deemed lost (RFC 6675 scoreboard).
    pub sacked_bytes: u64,
    pub lost_bytes: u64,
    /// Window reductions in answer to ECN feedback (RFC 3168 §6.1.2).
    pub ecn_reductions: u64,
    /// Payload bytes the peer reported as having arrived CE-marked (ecn.rs).
    pub ce_bytes: u64,
}

/// Read-only access to a connection's sender state, without computing all of `TcpStats`.
pub struct SenderView<'a>(&'a Sender);

impl SenderView<'_> {
    pub fn cwnd_bytes(&self) -> u64 {
        self.0.cwnd_bytes()
    }
    pub fn acked_bytes(&self) -> u64 {
        self.0.acked_bytes()
    }
    pub fn sacked_bytes(&self) -> u64 {
        self.0.sacked_bytes()
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.0.bytes_in_flight()
    }
    pub fn srtt_ns(&self) -> u64 {
        self.0.srtt_ns()
    }
    pub fn rto_ns(&self) -> u64 {
        self.0.rto_ns()
    }
    pub fn rtos(&self) -> u64 {
        self.0.rtos()
    }
}

/// What a connection is built with besides its `TcpConfig`: the congestion-control factory
/// (the subflows of one MP-TCP connection share one, and with it a coupled algorithm's
/// state) and optional hooks.
pub struct ConnectionParts {
    pub cc: CcFactory,
    pub hooks: Option<Box<dyn ConnectionHooks>>,
}

impl ConnectionParts {
    /// The algorithm named by `cfg.cc`, no hooks.
    pub fn from_config(cfg: &TcpConfig) -> Result<ConnectionParts, TcpError> {
        Ok(ConnectionParts { cc: CcFactory::by_name(&cfg.cc)?, hooks: None })
    }
}

pub struct TcpConnection {
    cfg: TcpConfig,
    hooks: Option<Box<dyn ConnectionHooks>>,
    local: SocketAddrV4,
    remote: Option<SocketAddrV4>,
    state: TcpState,
    /// SYNs exchanged and acknowledged: data may flow (the state may already be FIN-WAIT-1).
    synchronized: bool,
    negotiated: Negotiated,
    /// Options of the peer's SYN, to answer a retransmitted SYN identically.
    peer_syn: TcpOptions,
    /// The ECN flags of our SYN-ACK (ecn.rs).
    syn_ack_ecn_flags: TcpFlags,
    syn_deadline_ns: Option<u64>,
    syn_retries: u32,
    syn_sent_ns: u64,
    time_wait_deadline_ns: Option<u64>,
    snd: Sender,
    rcv: Receiver,
    /// Time charged to each of `LimitedBy`'s reasons (TcpStats::limited_ns).
    limited_ns: [u64; 4],
    /// Start of the interval whose time is charged to `snd.limited_by()`.
    limited_since_ns: u64,
}

impl TcpConnection {
    fn new(
        cfg: TcpConfig,
        parts: ConnectionParts,
        local: SocketAddrV4,
        remote: Option<SocketAddrV4>,
        state: TcpState,
        now_ns: u64,
    ) -> Result<TcpConnection, TcpError> {
        if !MSS_RANGE_BYTES.contains(&cfg.mss_bytes) {
            return Err(TcpError::MssOutOfRange { mss_bytes: cfg.mss_bytes });
        }
        let mut conn = TcpConnection {
            snd: Sender::new(&cfg, parts.cc),
            hooks: parts.hooks,
            rcv: Receiver::new(cfg.rcv_buf_bytes, cfg.app_paced_reads, cfg.delayed_ack, cfg.delayed_ack_timeout_ns),
            negotiated: Negotiated {
                mss_bytes: cfg.mss_bytes as u64,
                snd_wscale: 0,
                rcv_wscale: 0,
                sack: false,
                timestamps: false,
                ecn: EcnAgreed::None,
            },
            cfg,
            local,
            remote,
            state,
            synchronized: false,
            peer_syn: TcpOptions::default(),
            syn_ack_ecn_flags: TcpFlags(0),
            syn_deadline_ns: None,
            syn_retries: 0,
            syn_sent_ns: 0,
            time_wait_deadline_ns: None,
            limited_ns: [0; 4],
            limited_since_ns: now_ns,
        };
        conn.enter_hooks(&[]);
        Ok(conn)
    }

    /// Active open: returns the connection and emits the SYN into `out`.
    pub fn connect(
        cfg: TcpConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        now_ns: u64,
        out: &mut Vec<Packet>,
    ) -> Result<TcpConnection, TcpError> {
        let parts = ConnectionParts::from_config(&cfg)?;
        TcpConnection::connect_with(cfg, parts, local, remote, now_ns, out)
    }

    /// Active open with a given congestion-control factory and hooks (`cfg.cc` unused).
    pub fn connect_with(
        cfg: TcpConfig,
        parts: ConnectionParts,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        now_ns: u64,
        out: &mut Vec<Packet>,
    ) -> Result<TcpConnection, TcpError> {
        let mut conn = TcpConnection::new(cfg, parts, local, Some(remote), TcpState::SynSent, now_ns)?;
        conn.send_syn(now_ns, out);
        Ok(conn)
    }

    /// Passive open: waits for a SYN to `local` from anyone.
    pub fn listen(cfg: TcpConfig, local: SocketAddrV4) -> Result<TcpConnection, TcpError> {
        let parts = ConnectionParts::from_config(&cfg)?;
        TcpConnection::listen_with(cfg, parts, local)
    }

    /// Passive open with a given congestion-control factory and hooks (`cfg.cc` unused).
    pub fn listen_with(cfg: TcpConfig, parts: ConnectionParts, local: SocketAddrV4) -> Result<TcpConnection, TcpError> {
        TcpConnection::new(cfg, parts, local, None, TcpState::Listen, 0)
    }

    /// A segment addressed to this connection arrived.
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        self.charge_limited_time(now_ns);
        let Some(hdr) = pkt.tcp_header() else { return };
        if self.state == TcpState::Closed {
            return;
        }
        let mark = self.enter_hooks(out);
        if let Some(hooks) = &mut self.hooks {
            if hdr.flags.contains(TcpFlags::SYN) {
                hooks.syn_in(hdr);
            } else {
                hooks.segment_in(hdr, pkt.payload_bytes);
            }
        }
        match self.state {
            TcpState::Listen => self.on_segment_listen(now_ns, pkt, hdr, out),
            TcpState::SynSent => self.on_segment_syn_sent(now_ns, pkt.ecn, hdr),
            _ => self.on_segment_synchronized(now_ns, pkt, hdr, out),
        }
        self.flush(now_ns, out);
        self.leave_hooks(out, mark);
    }

    /// The deadline returned by `next_deadline_ns` has passed (it may be called late or
    /// spuriously; the connection checks its own deadlines).
    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.charge_limited_time(now_ns);
        if self.state == TcpState::Closed {
            return;
        }
        let mark = self.enter_hooks(out);
        if self.syn_deadline_ns.is_some_and(|d| now_ns >= d) {
            self.on_syn_timer(now_ns, out);
        }
        if self.time_wait_deadline_ns.is_some_and(|d| now_ns >= d) {
            self.enter_closed();
            return;
        }
        if self.rcv.ack_deadline_ns().is_some_and(|d| now_ns >= d) {
            self.rcv.on_ack_timer();
        }
        if self.can_send_data() {
            let tmpl = self.template(now_ns);
            let sent = self.snd.on_rto_timer(now_ns, &tmpl, out)
                + self.snd.on_rack_timer(now_ns, &tmpl, out)
                + self.snd.on_probe_timer(now_ns, &tmpl, out)
                + self.snd.on_persist_timer(now_ns, &tmpl, out);
            if sent > 0 {
                self.rcv.ack_sent();
            }
        }
        // Also releases paced segments.
        self.flush(now_ns, out);
        self.leave_hooks(out, mark);
    }

    /// The earliest time at which `on_timeout` must be called, if any.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        if self.state == TcpState::Closed {
            return None;
        }
        let data_timers = if self.can_send_data() { self.snd.next_deadline_ns() } else { None };
        let ack_timer = if self.synchronized { self.rcv.ack_deadline_ns() } else { None };
        earliest_ns(earliest_ns(self.syn_deadline_ns, self.time_wait_deadline_ns), earliest_ns(ack_timer, data_timers))
    }

    /// The application appends `bytes` to the send stream (u64::MAX: unlimited, bulk).
    pub fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>) {
        self.charge_limited_time(now_ns);
        if self.snd.fin_requested() {
            // RFC 9293 §3.10.2: no sending after CLOSE.
            return;
        }
        let mark = self.enter_hooks(out);
        self.snd.send(bytes);
        self.flush(now_ns, out);
        self.leave_hooks(out, mark);
    }

    /// The application will write nothing more: FIN after the last byte.
    pub fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.charge_limited_time(now_ns);
        let mark = self.enter_hooks(out);
        // RFC 9293 §3.10.4.
        self.state = match self.state {
            TcpState::Listen | TcpState::SynSent => {
                self.enter_closed();
                TcpState::Closed
            }
            TcpState::SynReceived | TcpState::Established => TcpState::FinWait1,
            TcpState::CloseWait => TcpState::LastAck,
            other => other,
        };
        if self.state != TcpState::Closed {
            self.snd.close();
        }
        self.flush(now_ns, out);
        self.leave_hooks(out, mark);
    }

    /// Sends a pure ACK now, if synchronized: for options the hooks must get to the peer on
    /// a segment of their own (MP-TCP's DATA_FIN and its DATA_ACK, RFC 8684 §3.3.3).
    pub fn send_ack(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.charge_limited_time(now_ns);
        let mark = self.enter_hooks(out);
        self.rcv.request_ack();
        self.flush(now_ns, out);
        self.leave_hooks(out, mark);
    }

    /// Stream offsets delivered in order to the application since the last call (reads
    /// everything: for receivers that consume at once).
    pub fn take_delivered(&mut self) -> Range<u64> {
        self.rcv.read(u64::MAX)
    }

    /// An application-paced receiver reads at most `max_bytes` of in-order data; when that
    /// opens the window enough, a window update goes out.
    pub fn read(&mut self, now_ns: u64, max_bytes: u64, out: &mut Vec<Packet>) -> Range<u64> {
        let mark = self.enter_hooks(out);
        let range = self.rcv.read(max_bytes);
        if !range.is_empty() && self.rcv.window_update_due() {
            self.rcv.request_ack();
            self.flush(now_ns, out);
        }
        self.leave_hooks(out, mark);
        range
    }

    pub fn state(&self) -> TcpState {
        self.state
    }

    /// The counters and the sender's state now (computed here: most events read none of it).
    pub fn stats(&self) -> TcpStats {
        let mut stats = TcpStats { limited_ns: self.limited_ns, delivered_bytes: self.delivered_bytes(), ..TcpStats::default() };
        self.snd.fill_stats(&mut stats);
        stats
    }

    /// Bytes delivered in order to the application (as in `stats()`).
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv.delivered_bytes()
    }

    /// RTT samples taken so far, and the last one (ns): what the engine reads after every ACK.
    pub fn rtt_samples(&self) -> (u64, u64) {
        self.snd.rtt_samples()
    }

    /// The sender's fields read per segment by MP-TCP's scheduler and the split proxy (as in
    /// `stats()`).
    pub fn sender(&self) -> SenderView<'_> {
        SenderView(&self.snd)
    }

    pub fn local(&self) -> SocketAddrV4 {
        self.local
    }

    pub fn remote(&self) -> Option<SocketAddrV4> {
        self.remote
    }

    /// Diagnostic: work units spent in the sender's scoreboard so far (segments and ranges
    /// visited, binary-search comparisons). Tests use it to check that the cost per ACK
    /// does not grow with the window.
    pub fn scoreboard_steps(&self) -> u64 {
        self.snd.scoreboard_steps()
    }

    /// On entry from the driver: the hooks' current window cap applies to what is advertised
    /// from now on. Returns where this call's segments start in `out`.
    #[inline]
    fn enter_hooks(&mut self, out: &[Packet]) -> usize {
        if let Some(hooks) = &self.hooks {
            self.rcv.set_window_cap_bytes(hooks.rcv_window_cap_bytes().unwrap_or(u64::MAX));
        }
        out.len()
    }

    /// Before returning to the driver: the hooks see every non-SYN segment this call emitted
    /// (SYNs went through `syn_out` when built).
    #[inline]
    fn leave_hooks(&mut self, out: &mut [Packet], mark: usize) {
        let Some(hooks) = &mut self.hooks else { return };
        for pkt in &mut out[mark..] {
            let payload_bytes = pkt.payload_bytes;
            let header = pkt.tcp_header_mut().expect("a TCP connection emits TCP segments");
            if !header.flags.contains(TcpFlags::SYN) {
                hooks.segment_out(header, payload_bytes);
            }
        }
    }

    /// Charges the time since the last call to what limited the sender meanwhile.
    fn charge_limited_time(&mut self, now_ns: u64) {
        let elapsed = now_ns.saturating_sub(self.limited_since_ns);
        self.limited_ns[self.snd.limited_by() as usize] += elapsed;
        self.limited_since_ns = self.limited_since_ns.max(now_ns);
    }

    fn can_send_data(&self) -> bool {
        self.synchronized && !matches!(self.state, TcpState::Closed | TcpState::TimeWait)
    }

    fn enter_closed(&mut self) {
        self.state = TcpState::Closed;
        self.syn_deadline_ns = None;
        self.time_wait_deadline_ns = None;
    }

    fn enter_time_wait(&mut self, now_ns: u64) {
        self.state = TcpState::TimeWait;
        self.time_wait_deadline_ns = Some(now_ns + TIME_WAIT_NS);
    }

    /// Sends what the sender may send, then a pure ACK if one is still owed.
    fn flush(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        // The header fields depend on the receiver's state only, which sending data leaves
        // alone unless it carried the ACK: a template the sender did not use serves the pure
        // ACK (a receiver builds one per segment, not two).
        let mut unused = None;
        if self.can_send_data() {
            let tmpl = self.template(now_ns);
            if self.snd.transmit(now_ns, &tmpl, out) > 0 {
                self.rcv.ack_sent();
            } else {
                unused = Some(tmpl);
            }
        }
        if self.synchronized && self.state != TcpState::Closed && self.rcv.wants_ack_now() {
            let tmpl = unused.unwrap_or_else(|| self.template(now_ns));
            out.push(tmpl.packet(self.snd.snd_nxt(), TcpFlags(0), 0));
            self.rcv.ack_sent();
        }
    }

    /// Header fields common to every segment sent now (RFC 7323 §3 timestamps on every
    /// segment when negotiated; SACK blocks whenever data is held out of order).
    fn template(&self, now_ns: u64) -> Template {
        let remote = self.remote.expect("synchronized connections know their peer");
        let mut options = TcpOptions::default();
        if self.negotiated.timestamps {
            options.timestamps = Some(Timestamps { tsval: ts_now_ms(now_ns) as u32, tsecr: self.rcv.ts_recent() });
        }
        if self.negotiated.sack {
            self.rcv.fill_sack_blocks(&mut options);
        }
        if let Some(option) = self.rcv.accecn_option() {
            // RFC 9768 §3.2.3.3: on every segment, as Linux's `tcp_ecn_option = 2`, with at
            // least the CE byte counter (SACK blocks give way down to two; else left out).
            let _ = options.push_accecn(&option, ACCECN_REQUIRED_FIELDS);
        }
        Template {
            src: *self.local.ip(),
            dst: *remote.ip(),
            header: TcpHeader {
                src_port: self.local.port(),
                dst_port: remote.port(),
                seq: 0,
                ack: self.rcv.ack_number(),
                flags: TcpFlags::ACK | self.rcv.ecn_flags(),
                window: self.rcv.window_field(),
                options,
            },
        }
    }

    /// SYN (active open) or SYN-ACK (passive open), first transmission or retransmission.
    fn send_syn(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let remote = self.remote.expect("a SYN has a destination");
        let passive = self.state == TcpState::SynReceived || (self.state == TcpState::FinWait1 && !self.synchronized);
        let options = syn_options(&self.cfg, ts_now_ms(now_ns) as u32, passive.then_some(&self.peer_syn));
        let mut header = TcpHeader {
            src_port: self.local.port(),
            dst_port: remote.port(),
            seq: self.cfg.iss,
            ack: if passive { self.rcv.ack_number() } else { 0 },
            flags: if passive {
                TcpFlags::SYN | TcpFlags::ACK | self.syn_ack_ecn_flags
            } else {
                TcpFlags::SYN | ecn::syn_flags(self.cfg.ecn)
            },
            window: self.rcv.syn_window(),
            options,
        };
        if let Some(hooks) = &mut self.hooks {
            hooks.syn_out(&mut header);
        }
        out.push(Packet::tcp(*self.local.ip(), *remote.ip(), header, 0));
        self.syn_sent_ns = now_ns;
        self.syn_deadline_ns = Some(now_ns + self.snd.rtt().rto_ns());
    }

    /// RFC 6298 §5.5 backoff applies to the SYN as well; give up after MAX_SYN_RETRIES.
    fn on_syn_timer(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if self.syn_retries >= MAX_SYN_RETRIES {
            self.enter_closed();
            return;
        }
        self.syn_retries += 1;
        self.snd.rtt().back_off();
        self.send_syn(now_ns, out);
    }

    fn on_segment_listen(&mut self, now_ns: u64, pkt: &Packet, hdr: &TcpHeader, out: &mut Vec<Packet>) {
        if !hdr.flags.contains(TcpFlags::SYN) || hdr.flags.contains(TcpFlags::ACK) || hdr.flags.contains(TcpFlags::RST) {
            return;
        }
        self.remote = Some(SocketAddrV4::new(pkt.src, hdr.src_port));
        self.peer_syn = hdr.options;
        self.negotiated = negotiate(&self.cfg, &hdr.options);
        (self.negotiated.ecn, self.syn_ack_ecn_flags) = ecn::answer_syn(self.cfg.ecn, hdr.flags, pkt.ecn);
        self.rcv.on_syn(hdr.seq, self.peer_tsval(hdr));
        self.state = TcpState::SynReceived;
        self.send_syn(now_ns, out);
    }

    fn on_segment_syn_sent(&mut self, now_ns: u64, ecn: u8, hdr: &TcpHeader) {
        let acks_syn = hdr.flags.contains(TcpFlags::ACK) && hdr.ack == self.cfg.iss.wrapping_add(1);
        if hdr.flags.contains(TcpFlags::RST) {
            if acks_syn {
                self.enter_closed();
            }
            return;
        }
        // Simultaneous open (a SYN without ACK) is not modelled.
        if !hdr.flags.contains(TcpFlags::SYN) || !acks_syn {
            return;
        }
        self.negotiated = negotiate(&self.cfg, &hdr.options);
        self.negotiated.ecn = ecn::read_syn_ack(self.cfg.ecn, hdr.flags);
        self.rcv.on_syn(hdr.seq, self.peer_tsval(hdr));
        self.establish(now_ns, hdr, Some(ecn));
        self.rcv.request_ack();
    }

    fn on_segment_synchronized(&mut self, now_ns: u64, pkt: &Packet, hdr: &TcpHeader, out: &mut Vec<Packet>) {
        let payload_bytes = pkt.payload_bytes;
        if hdr.flags.contains(TcpFlags::RST) {
            // RFC 9293 §3.10.7.4 (minimal): a reset inside the receive window closes.
            let offset = unwrap32(self.rcv.rcv_nxt(), hdr.seq).wrapping_sub(self.rcv.rcv_nxt());
            if offset <= ((self.rcv.window_field() as u64) << self.negotiated.rcv_wscale) {
                self.enter_closed();
            }
            return;
        }
        if hdr.flags.contains(TcpFlags::SYN) {
            if !self.synchronized && hdr.seq.wrapping_add(1) == self.rcv.ack_number() {
                // Our SYN-ACK was lost: the peer retransmitted its SYN.
                self.send_syn(now_ns, out);
            } else {
                // A retransmitted SYN-ACK (our ACK was lost), or a stray SYN: re-ACK.
                self.rcv.request_ack();
            }
            return;
        }
        if !hdr.flags.contains(TcpFlags::ACK) {
            return;
        }
        if !self.synchronized {
            if hdr.ack != self.cfg.iss.wrapping_add(1) {
                return;
            }
            self.establish(now_ns, hdr, None);
        }
        self.rcv.on_ecn(pkt.ecn, payload_bytes, hdr.flags);
        self.snd.on_ack(now_ns, hdr, payload_bytes);
        if self.snd.fin_acked() {
            self.on_fin_acked(now_ns);
        }
        let fin = hdr.flags.contains(TcpFlags::FIN);
        let tsval = self.peer_tsval(hdr);
        let snd = &self.snd;
        // Read only where Linux's receiver needs it.
        let timing = || AckTiming { rto_ns: snd.rto_ns(), srtt_ns: snd.srtt_ns() };
        if self.rcv.on_segment(now_ns, hdr.seq, payload_bytes, fin, tsval, timing) {
            self.on_peer_fin(now_ns);
        } else if fin && self.state == TcpState::TimeWait {
            // RFC 9293 §3.10.7.4: a retransmitted FIN restarts the TIME-WAIT timeout.
            self.enter_time_wait(now_ns);
        }
    }

    /// The peer's TSval when timestamps are in use.
    fn peer_tsval(&self, hdr: &TcpHeader) -> Option<u32> {
        if self.negotiated.timestamps {
            hdr.options.timestamps.map(|t| t.tsval)
        } else {
            None
        }
    }

    /// The SYN exchange completed with the segment `hdr`: a SYN-ACK that arrived with the
    /// IP-ECN field `syn_ack_ecn`, or the ACK of our SYN-ACK (None).
    fn establish(&mut self, now_ns: u64, hdr: &TcpHeader, syn_ack_ecn: Option<u8>) {
        let neg = self.negotiated;
        // RTT of the handshake: from the echoed timestamp, else only if the SYN was not
        // retransmitted (Karn).
        let sample = match hdr.options.timestamps.filter(|_| neg.timestamps) {
            Some(ts) => Some(Sender::handshake_ts_rtt_ns(now_ns, ts.tsecr)),
            None if self.syn_retries == 0 => Some(now_ns - self.syn_sent_ns),
            None => None,
        };
        self.snd.on_handshake_rtt(sample);
        self.syn_deadline_ns = None;
        self.synchronized = true;
        self.rcv.establish(neg.mss_bytes, neg.rcv_wscale, neg.sack);
        self.snd.establish(&neg, hdr.window, hdr.seq, syn_ack_ecn.is_none());
        self.rcv.establish_ecn(neg.ecn, syn_ack_ecn, self.snd.echoes_every_mark());
        if self.state != TcpState::FinWait1 {
            self.state = TcpState::Established;
        }
    }

    /// RFC 9293 §3.10.7.4 (fifth check, ACK of our FIN).
    fn on_fin_acked(&mut self, now_ns: u64) {
        match self.state {
            TcpState::FinWait1 => self.state = TcpState::FinWait2,
            TcpState::Closing => self.enter_time_wait(now_ns),
            TcpState::LastAck => self.enter_closed(),
            _ => {}
        }
    }

    /// RFC 9293 §3.10.7.4 (eighth check, FIN bit).
    fn on_peer_fin(&mut self, now_ns: u64) {
        match self.state {
            TcpState::SynReceived | TcpState::Established => self.state = TcpState::CloseWait,
            TcpState::FinWait1 if self.snd.fin_acked() => self.enter_time_wait(now_ns),
            TcpState::FinWait1 => self.state = TcpState::Closing,
            TcpState::FinWait2 => self.enter_time_wait(now_ns),
            _ => {}
        }
    }
}
