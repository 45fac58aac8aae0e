//! One per-flow instance (docs/proxy.md#how-a-flow-is-handled): buffer, coalescing toward the UE, ACK relay
//! toward the server, local repair, RTT estimator and the flow window.

use millinet_wire::{seq, Packet, PayloadId, TcpFlags, TcpHeader, TcpOptions, Telemetry, ECN_CE};

use crate::ack_relay::{pure_ack, window_field};
use crate::buffer::{Entry, SegmentBuffer};
use crate::config::ProxyConfig;
use crate::handshake::{clamp_mss_toward_server, Handshake, SynOptions};
use crate::offsets::SeqSpace;
use crate::payload::{PayloadPool, PayloadStore};
use crate::policy::{FlowWindowPolicy, PolicyInput, Siblings};
use crate::rtt::{RttEstimates, RttEstimator};
use crate::sent::SentLog;
use crate::stats::ProxyStats;

/// RFC 5681 §3.2: duplicate ACKs that trigger a retransmission.
const DUP_ACK_THRESHOLD: u32 = 3;

/// What an instance needs from the proxy around it for one call.
pub struct Ctx<'a> {
    pub cfg: &'a ProxyConfig,
    pub stats: &'a mut ProxyStats,
    /// The UE's telemetry in force.
    pub telemetry: Option<&'a Telemetry>,
    /// The driver's packet buffers (used only if the payload store holds bytes).
    pub pool: &'a mut dyn PayloadPool,
    /// The UE's other flows.
    pub siblings: Siblings,
}

/// Observables of one flow (docs/outputs.md §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    pub fw_bytes: u64,
    pub buffered_bytes: u64,
    pub in_flight_bytes: u64,
    pub rtt: RttEstimates,
    /// The UE's highest cumulative ACK, as a stream offset from the server's ISN + 1.
    pub ue_acked_bytes: u64,
    pub last_relayed_window_bytes: u64,
}

pub struct Instance<S: PayloadStore> {
    handshake: Handshake,
    /// Known once the server's SYN or SYN-ACK passed.
    space: Option<SeqSpace>,
    policy: Box<dyn FlowWindowPolicy>,
    fw_bytes: u64,
    buffer: SegmentBuffer,
    payload: S,
    sent: SentLog,
    rtt: RttEstimator,
    /// Latest server segment: addresses, ports, TTL of coalesced segments.
    downlink_template: Option<Packet>,
    arrivals: u64,
    /// Offset just past the highest server data seen.
    server_end: u64,
    /// Offset just past the server's FIN.
    server_fin_end: Option<u64>,
    /// The UE's highest cumulative ACK.
    una: u64,
    /// Next new offset to forward toward the UE.
    snd_nxt: u64,
    ue_window_field: u16,
    ue_window_bytes: u64,
    dup_acks: u32,
    /// A local repair is under way until the UE acknowledges this offset.
    recovery_end: Option<u64>,
    /// Sequence number of the UE's FIN and whether the server acknowledged it.
    ue_fin_seq: Option<u32>,
    ue_fin_acked: bool,
    reset: bool,
    /// Pure-ACK template of the last ACK relayed and its window field, for window updates.
    last_relayed: Option<Packet>,
    last_relayed_window: u16,
    /// Right edge offered to the server by the last relayed ACK.
    last_relayed_edge: u64,
    pub last_activity_ns: u64,
}

impl<S: PayloadStore> Instance<S> {
    pub fn new(policy: Box<dyn FlowWindowPolicy>, cfg: &ProxyConfig, now_ns: u64) -> Instance<S> {
        Instance {
            handshake: Handshake::default(),
            space: None,
            policy,
            fw_bytes: 0,
            buffer: SegmentBuffer::default(),
            payload: S::default(),
            sent: SentLog::default(),
            rtt: RttEstimator::new(cfg.rtt_min_window_ns),
            downlink_template: None,
            arrivals: 0,
            server_end: 0,
            server_fin_end: None,
            una: 0,
            snd_nxt: 0,
            ue_window_field: 0,
            ue_window_bytes: 0,
            dup_acks: 0,
            recovery_end: None,
            ue_fin_seq: None,
            ue_fin_acked: false,
            reset: false,
            last_relayed: None,
            last_relayed_window: 0,
            last_relayed_edge: 0,
            last_activity_ns: now_ns,
        }
    }

    pub fn payload(&self) -> &S {
        &self.payload
    }

    pub fn buffered_bytes(&self) -> u64 {
        self.buffer.payload_bytes()
    }

    /// This flow as one of its UE's flows: to its siblings' `Siblings`.
    pub fn as_sibling(&self) -> Siblings {
        let surplus = self.policy.surplus_bytes();
        Siblings {
            flows: 1,
            outstanding_bytes: self.buffer.payload_bytes(),
            acked_bytes: self.una,
            yielding: surplus.is_some() as u32,
            surplus_bytes: surplus.unwrap_or(0),
        }
    }

    /// FIN/RST completion: both FINs acknowledged, or a reset.
    pub fn finished(&self) -> bool {
        self.reset || (self.ue_fin_acked && self.server_fin_end.is_some_and(|f| self.una >= f))
    }

    pub fn stats(&self, now_ns: u64) -> FlowStats {
        FlowStats {
            fw_bytes: self.fw_bytes,
            buffered_bytes: self.buffer.payload_bytes(),
            in_flight_bytes: self.sent.in_flight_bytes(),
            rtt: self.rtt.estimates(now_ns),
            ue_acked_bytes: self.una,
            last_relayed_window_bytes: (self.last_relayed_window as u64) << self.handshake.ue_window_shift(),
        }
    }

    /// When the proxy's own retransmission timer toward the UE expires, if it is on.
    pub fn rto_deadline_ns(&self, cfg: &ProxyConfig) -> Option<u64> {
        let rto = cfg.local_rto_ns?;
        self.sent.first().map(|(_, s)| s.sent_ns + rto)
    }

    /// Any packet keeps the flow alive; a RST from either side passes through and ends the
    /// instance. Returns true when the packet was that RST.
    fn passed_reset(&mut self, now_ns: u64, packet: &Packet, hdr: &TcpHeader, out: &mut Vec<Packet>) -> bool {
        self.last_activity_ns = now_ns;
        let reset = hdr.flags.contains(TcpFlags::RST);
        if reset {
            self.reset = true;
            out.push(*packet);
        }
        reset
    }

    // ---- server → UE -------------------------------------------------------------------

    pub fn on_server_packet(&mut self, now_ns: u64, packet: Packet, hdr: &TcpHeader, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        if self.passed_reset(now_ns, &packet, hdr, out) {
            return;
        }
        if hdr.flags.contains(TcpFlags::SYN) {
            self.handshake.server = Some(SynOptions::of(&hdr.options));
            self.space = Some(SeqSpace::from_isn(hdr.seq));
            out.push(packet);
            return;
        }
        let Some(space) = self.space else {
            out.push(packet);
            return;
        };
        if let Some(fin) = self.ue_fin_seq {
            self.ue_fin_acked |= hdr.flags.contains(TcpFlags::ACK) && seq::gt(hdr.ack, fin);
        }
        let fin = hdr.flags.contains(TcpFlags::FIN);
        let seq_len = packet.payload_bytes as u64 + fin as u64;
        let start = space.offset(hdr.seq, self.server_end);
        let (Some(start), true) = (start, seq_len > 0) else {
            // Pure ACKs and window updates for the UE's data pass unchanged.
            out.push(packet);
            return;
        };
        let end = start + seq_len;
        self.rtt.on_server_data(now_ns, if self.handshake.timestamps() { hdr.options.timestamps.map(|t| t.tsecr) } else { None });
        self.server_end = self.server_end.max(end);
        if fin {
            self.server_fin_end = Some(end);
        }
        if end <= self.una {
            // The UE already has it: let it answer as it would without the proxy.
            out.push(packet);
            return;
        }
        self.downlink_template = Some(packet);
        self.arrivals += 1;
        let mut gap = self.buffer.first_gap(start.max(self.una), end);
        let already_buffered = gap.is_none();
        while let Some((gap_start, gap_end)) = gap {
            let with_fin = fin && gap_end == end;
            let payload_bytes = (gap_end - gap_start - with_fin as u64) as u32;
            let room = (ctx.cfg.flow_buffer_bytes.saturating_sub(self.buffer.payload_bytes()))
                .min(ctx.cfg.total_buffer_bytes.saturating_sub(ctx.stats.buffer_bytes));
            if payload_bytes as u64 > room {
                ctx.stats.buffer_full_drops += 1;
                break;
            }
            self.buffer.insert(
                gap_start,
                Entry {
                    payload_bytes,
                    fin: with_fin,
                    arrival: self.arrivals,
                    ack: hdr.ack,
                    window: hdr.window,
                    flags: hdr.flags.masked(TcpFlags::PSH | TcpFlags::ECN_BITS) | TcpFlags::ACK,
                    timestamps: hdr.options.timestamps,
                    raw_options: hdr.options.raw(),
                    ecn: packet.ecn,
                    meta: packet.meta,
                },
            );
            if S::HOLDS_BYTES {
                let from = (gap_start - start) as usize;
                let bytes = ctx.pool.bytes(packet.meta.payload);
                self.payload.on_buffered(gap_start, payload_bytes, bytes.get(from..).unwrap_or(&[]));
            }
            ctx.stats.buffer_bytes += payload_bytes as u64;
            ctx.stats.server_segments_buffered += 1;
            if gap_start < self.snd_nxt {
                // Fills a hole below what was already forwarded (server-side loss): send it now.
                self.send_segment(now_ns, gap_start, gap_end, u32::MAX, true, ctx, out);
            }
            gap = self.buffer.first_gap(gap_end, end);
        }
        if already_buffered {
            // Everything was buffered already: the server retransmitted, so the UE likely
            // missed it; repair from the buffer (stands in for a lost local retransmission).
            if let Some((seg_start, _)) = self.sent.containing(start.max(self.una)) {
                self.retransmit(now_ns, seg_start, ctx, out);
            }
        }
        self.refresh_fw(now_ns, ctx);
        self.forward(now_ns, ctx, out);
    }

    /// Forwards buffered data toward the UE while the windows allow (docs/proxy.md#how-a-flow-is-handled):
    /// in flight ≤ FW and within the UE's own window; coalescing never waits.
    fn forward(&mut self, now_ns: u64, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        let mss = self.handshake.mss_toward_ue(ctx.cfg.mss2_bytes);
        let ue_edge = self.una + self.ue_window_bytes;
        loop {
            let Some((start, _)) = self.buffer.from(self.snd_nxt).next() else { return };
            let in_flight = self.sent.in_flight_bytes();
            let fw_edge = start + self.fw_bytes.saturating_sub(in_flight);
            // With nothing in flight one original segment may go even if FW is smaller than
            // it (else a FW below one segment would stall the flow forever).
            let first_always = in_flight == 0 && self.fw_bytes > 0;
            if !self.send_segment(now_ns, start, fw_edge.min(ue_edge), mss, first_always, ctx, out) {
                return;
            }
        }
    }

    /// Sends the original segments starting at `start` that are contiguous, end at or below
    /// `max_end` and total at most `max_payload` bytes, as one segment: their exact
    /// concatenation. Only constituents with the same unmodelled options are merged: an
    /// MP-TCP segment's DSS mapping (RFC 8684 §3.3.1) covers its own range, and a segment
    /// reaching past its mapping makes the receiver reset the subflow (§3.7). Header rule:
    /// ACK number, window, timestamps, PSH/ECE/CWR and ECN come from the constituent that
    /// arrived last from the server; FIN only if the final constituent carries it. Returns
    /// false if nothing fit.
    #[allow(clippy::too_many_arguments)]
    fn send_segment(
        &mut self,
        now_ns: u64,
        start: u64,
        max_end: u64,
        max_payload: u32,
        first_always: bool,
        ctx: &mut Ctx,
        out: &mut Vec<Packet>,
    ) -> bool {
        let (Some(template), Some(space)) = (self.downlink_template, self.space) else { return false };
        let mut end = start;
        let mut payload_bytes = 0u32;
        let mut latest: Option<Entry> = None;
        // FIN only if the final constituent carries it.
        let mut fin = false;
        // RFC 3168 §5: a CE mark on any constituent is congestion the UE must echo.
        let mut congestion_experienced = false;
        for (s, e) in self.buffer.from(start) {
            let fits = s + e.seq_len() <= max_end && payload_bytes.saturating_add(e.payload_bytes) <= max_payload;
            let same_options = latest.is_none_or(|l| l.raw_options == e.raw_options);
            if s != end || !same_options || !(fits || (latest.is_none() && first_always)) {
                break;
            }
            end = s + e.seq_len();
            payload_bytes += e.payload_bytes;
            fin = e.fin;
            congestion_experienced |= e.ecn == ECN_CE;
            if latest.is_none_or(|l| e.arrival > l.arrival) {
                latest = Some(*e);
            }
            if e.fin {
                break;
            }
        }
        let Some(latest) = latest else { return false };
        let mut p = template;
        p.payload_bytes = payload_bytes;
        p.ecn = if congestion_experienced { ECN_CE } else { latest.ecn };
        p.meta = latest.meta;
        p.meta.payload = PayloadId::NONE;
        if S::HOLDS_BYTES {
            let (id, bytes) = ctx.pool.alloc(payload_bytes as usize);
            self.payload.read(start, bytes);
            p.meta.payload = id;
        }
        if let Some(h) = p.tcp_header_mut() {
            h.seq = space.wire(start);
            h.ack = latest.ack;
            h.window = latest.window;
            h.flags = if fin { latest.flags | TcpFlags::FIN } else { latest.flags };
            h.options = TcpOptions { timestamps: latest.timestamps, ..TcpOptions::from_raw(&latest.raw_options) };
        }
        out.push(p);
        match self.sent.get(start) {
            Some(_) => self.sent.on_retransmitted(start, now_ns),
            None => {
                self.sent.on_sent(start, end, now_ns);
                self.snd_nxt = self.snd_nxt.max(end);
                ctx.stats.segments_forwarded += 1;
            }
        }
        true
    }

    /// Resends an outstanding segment toward the UE from the buffer (docs/proxy.md#how-a-flow-is-handled).
    fn retransmit(&mut self, now_ns: u64, start: u64, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        let Some(seg) = self.sent.get(start).copied() else { return };
        if self.send_segment(now_ns, start, seg.end, u32::MAX, true, ctx, out) {
            ctx.stats.local_retransmissions += 1;
        }
    }

    // ---- UE → server -------------------------------------------------------------------

    pub fn on_ue_packet(&mut self, now_ns: u64, mut packet: Packet, hdr: &TcpHeader, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        if self.passed_reset(now_ns, &packet, hdr, out) {
            return;
        }
        if hdr.flags.contains(TcpFlags::SYN) {
            self.handshake.ue = Some(SynOptions::of(&hdr.options));
            // RFC 7323 §2.2: the window of a SYN is never scaled.
            self.ue_window_field = hdr.window;
            self.ue_window_bytes = hdr.window as u64;
            if let Some(h) = packet.tcp_header_mut() {
                clamp_mss_toward_server(&mut h.options, ctx.cfg.mss1_bytes);
            }
            if hdr.flags.contains(TcpFlags::ACK) && !self.handshake.timestamps() {
                // The server opened: its first data follows this SYN-ACK.
                self.rtt.on_trigger_relayed(now_ns);
            }
            out.push(packet);
            return;
        }
        let Some(space) = self.space.filter(|_| self.handshake.complete()) else {
            out.push(packet);
            return;
        };
        let fin = hdr.flags.contains(TcpFlags::FIN);
        if fin {
            self.ue_fin_seq = Some(hdr.seq.wrapping_add(packet.payload_bytes));
        }
        let shift = self.handshake.ue_window_shift();
        self.ue_window_field = hdr.window;
        self.ue_window_bytes = (hdr.window as u64) << shift;

        let mut advanced_from = None;
        let mut duplicate = false;
        if hdr.flags.contains(TcpFlags::ACK) {
            if let Some(ack) = space.offset(hdr.ack, self.una).filter(|&a| a > self.una) {
                advanced_from = Some(self.una);
                self.on_cum_ack(now_ns, ack);
            } else if space.offset(hdr.ack, self.una) == Some(self.una)
                && packet.payload_bytes == 0
                && !fin
                && self.sent.in_flight_bytes() > 0
            {
                self.dup_acks += 1;
                duplicate = true;
            }
            if self.handshake.sack() {
                for b in hdr.options.sack() {
                    if let (Some(l), Some(r)) = (space.offset(b.left, self.una), space.offset(b.right, self.una)) {
                        self.sent.on_sack(l, r);
                    }
                }
            }
        }
        self.local_repair(now_ns, duplicate, ctx, out);
        self.refresh_fw(now_ns, ctx);

        // The segment the UE is missing is one the proxy forwarded and holds: the proxy repairs it.
        let repairing = self.sent.get(self.una).is_some();
        if duplicate && ctx.cfg.suppress_dup_acks_while_repairing && repairing {
            ctx.stats.dup_acks_suppressed += 1;
        } else {
            self.relay(now_ns, packet, advanced_from, space, ctx, out);
        }
        self.forward(now_ns, ctx, out);
    }

    /// The UE's cumulative ACK advanced to `ack`: release the buffer, take an RTT_down sample.
    fn on_cum_ack(&mut self, now_ns: u64, ack: u64) {
        if let Some(sample) = self.sent.on_cum_ack(ack, now_ns) {
            self.rtt.on_down_sample(now_ns, sample);
        }
        self.una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dup_acks = 0;
        if self.recovery_end.is_some_and(|r| ack >= r) {
            self.recovery_end = None;
        }
    }

    /// Local repair toward the UE (docs/proxy.md#how-a-flow-is-handled): on the third duplicate ACK resend the
    /// segment at the UE's cumulative ACK and every SACK hole; while repairing, resend holes
    /// that new SACK information reveals (RFC 6675 §5 in spirit, from the proxy's buffer).
    fn local_repair(&mut self, now_ns: u64, duplicate: bool, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        if self.recovery_end.is_none() {
            if !(duplicate && self.dup_acks == DUP_ACK_THRESHOLD) {
                return;
            }
            self.recovery_end = Some(self.snd_nxt);
            if self.sent.get(self.una).is_some_and(|s| !s.retransmitted) {
                self.retransmit(now_ns, self.una, ctx, out);
            }
        }
        let mut from = self.una;
        while let Some(hole) = self.sent.next_hole(from) {
            self.retransmit(now_ns, hole, ctx, out);
            from = hole + 1;
        }
    }

    /// Relays the UE's segment: first one pure ACK per original boundary below its
    /// cumulative ACK (every `segments_per_relayed_ack`-th of them), then the segment
    /// itself; all with the window set to FW.
    fn relay(
        &mut self,
        now_ns: u64,
        mut packet: Packet,
        advanced_from: Option<u64>,
        space: SeqSpace,
        ctx: &mut Ctx,
        out: &mut Vec<Packet>,
    ) {
        let window = self.relayed_window_field(ctx.cfg);
        let Some(hdr) = packet.tcp_header_mut() else { return };
        hdr.window = window;
        let (ue_seq, ue_ack, tsval) = (hdr.seq, hdr.ack, hdr.options.timestamps.map(|t| t.tsval));
        let ue_acks = hdr.flags.contains(TcpFlags::ACK);
        if let Some(from) = advanced_from {
            let ack = self.una;
            let copy = packet;
            let stride = ctx.cfg.segments_per_relayed_ack;
            let (mut boundaries, mut relayed) = (0, 0);
            let released = self.buffer.release_through(ack, |end| {
                if end > from && end < ack {
                    boundaries += 1;
                    if boundaries % stride == 0 {
                        out.push(pure_ack(&copy, ue_seq, space.wire(end), window));
                        relayed += 1;
                    }
                }
            });
            self.payload.on_released(ack);
            ctx.stats.buffer_bytes -= released;
            ctx.stats.acks_relayed += relayed;
        }
        out.push(packet);
        ctx.stats.acks_relayed += 1;
        if let Some(tsval) = tsval.filter(|_| self.handshake.timestamps()) {
            self.rtt.on_ack_relayed(now_ns, tsval);
        }
        if !ue_acks {
            // Without ACK the acknowledgment field means nothing (RFC 9293 §3.1): a window
            // update made from this segment would acknowledge what the UE never did.
            return;
        }
        let edge = self.una + ((window as u64) << self.handshake.ue_window_shift());
        if !self.handshake.timestamps()
            && (self.last_relayed.is_none() || (self.server_end >= self.last_relayed_edge && edge > self.last_relayed_edge))
        {
            // Handshake completion, or an ACK that opened the window of a window-limited server.
            self.rtt.on_trigger_relayed(now_ns);
        }
        let fin = packet.tcp_header().is_some_and(|h| h.flags.contains(TcpFlags::FIN)) as u32;
        self.last_relayed = Some(pure_ack(&packet, ue_seq.wrapping_add(packet.payload_bytes + fin), ue_ack, window));
        self.last_relayed_window = window;
        self.last_relayed_edge = edge;
    }

    // ---- flow window -------------------------------------------------------------------

    /// The window field of relayed ACKs: FW, but never more than the flow buffer. Every
    /// byte the server sends stays buffered until the UE acknowledges it, and a relayed
    /// ACK never passes the UE's, so a window within the buffer keeps the server from
    /// overrunning it (a window above it would turn the excess into drops and losses).
    fn relayed_window_field(&self, cfg: &ProxyConfig) -> u16 {
        window_field(self.fw_bytes.min(cfg.flow_buffer_bytes), self.handshake.ue_window_shift(), self.ue_window_field)
    }

    fn refresh_fw(&mut self, now_ns: u64, ctx: &mut Ctx) {
        let input = PolicyInput {
            now_ns,
            telemetry: ctx.telemetry,
            rtt: self.rtt.estimates(now_ns),
            buffered_bytes: self.buffer.payload_bytes(),
            in_flight_bytes: self.sent.in_flight_bytes(),
            ue_window_bytes: self.ue_window_bytes,
            ue_acked_bytes: self.una,
            server_bytes: self.server_end,
            siblings: ctx.siblings,
        };
        self.fw_bytes = self.policy.flow_window_bytes(&input);
    }

    /// New telemetry (or a timer): recompute FW, tell the server if its window reopened
    /// from zero (it may be waiting on its persist timer), forward what the window allows.
    pub fn on_tick(&mut self, now_ns: u64, ctx: &mut Ctx, out: &mut Vec<Packet>) {
        self.refresh_fw(now_ns, ctx);
        if let Some(mut update) = self.last_relayed.filter(|_| self.last_relayed_window == 0) {
            let window = self.relayed_window_field(ctx.cfg);
            if window > 0 {
                if let Some(h) = update.tcp_header_mut() {
                    h.window = window;
                }
                out.push(update);
                ctx.stats.acks_relayed += 1;
                self.last_relayed_window = window;
                self.last_relayed_edge = self.una + ((window as u64) << self.handshake.ue_window_shift());
                if !self.handshake.timestamps() {
                    self.rtt.on_trigger_relayed(now_ns);
                }
            }
        }
        if let Some(rto) = ctx.cfg.local_rto_ns {
            if let Some((start, _)) = self.sent.first().filter(|(_, s)| s.sent_ns + rto <= now_ns) {
                self.retransmit(now_ns, start, ctx, out);
            }
        }
        self.forward(now_ns, ctx, out);
    }
}
