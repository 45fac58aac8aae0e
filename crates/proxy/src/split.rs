//! The split-TCP baseline (docs/proxy.md#split-tcp): an operator-style performance-enhancing proxy
//! that terminates the UE's connection and opens its own to the server. It acknowledges
//! server data as soon as it has it (early ACKs: end-to-end semantics are broken on
//! purpose), holds at most `buffer_bytes` not yet acknowledged by the UE — advertising the
//! free space as its receive window toward the server — and sends to the UE with its own
//! TCP (congestion control and MSS of its choosing). Transparent: toward the UE it speaks
//! with the server's address, toward the server with the UE's.
//!
//! Sans-IO like `Proxy`, driven through the same `Middlebox` interface. Both halves
//! are the project's own `TcpConnection`, driven exactly as an endpoint would drive it.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_transport::deadline::earliest_ns;
use millinet_transport::{EcnMode, TcpConfig, TcpConnection, TcpState};
use millinet_wire::{Packet, TcpFlags, Telemetry};

use crate::config::HandlingRule;
use crate::deadlines::Deadlines;
use crate::error::SplitConfigError;
use crate::flow_table::{Direction, FlowKey};
use crate::middlebox::{FlowSample, Middlebox, Summary};
use crate::payload::PayloadPool;

#[derive(Clone, Debug, PartialEq)]
pub struct SplitConfig {
    pub rule: HandlingRule,
    pub max_flows: usize,
    /// Data held per flow: received from the server and not yet acknowledged by the UE.
    pub buffer_bytes: u64,
    /// The proxy's TCP toward the UE (its `cc` and `mss_bytes` matter most); the side
    /// toward the server takes the options and MSS the UE asked for.
    pub downstream: TcpConfig,
    /// Mixed into initial sequence numbers (RFC 6528 §3: ISN = M + F(4-tuple, secret)).
    pub iss_secret: u64,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig {
            rule: HandlingRule::All,
            max_flows: 65_536,
            buffer_bytes: crate::DEFAULT_FLOW_BUFFER_BYTES,
            downstream: TcpConfig { cc: "cubic".to_string(), mss_bytes: 1400, ..TcpConfig::default() },
            iss_secret: 0,
        }
    }
}

impl SplitConfig {
    /// One clear message naming the field, the value and what is allowed.
    pub fn validate(&self) -> Result<(), SplitConfigError> {
        if self.buffer_bytes < self.downstream.mss_bytes as u64 {
            return Err(SplitConfigError::BufferBelowMss { buffer_bytes: self.buffer_bytes, mss_bytes: self.downstream.mss_bytes });
        }
        TcpConnection::listen(self.downstream.clone(), SocketAddrV4::new(0.into(), 0)).map(|_| ()).map_err(SplitConfigError::Downstream)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitStats {
    pub flows_created: u64,
    pub flows_closed: u64,
    pub flows_refused_limit: u64,
    pub packets_passed_through: u64,
    /// Bytes the proxy acknowledged to servers before the UE had acknowledged them, at the
    /// moment of acknowledging (summed): how far early ACKs ran ahead of the UE.
    pub bytes_acked_early: u64,
    /// Payload bytes received from servers and not yet acknowledged by UEs, all flows.
    pub buffer_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitFlowStats {
    /// Received from the server and not yet acknowledged by the UE.
    pub buffered_bytes: u64,
    /// What the proxy offers the server as its receive window.
    pub free_bytes: u64,
    /// Sent toward the UE and not yet acknowledged.
    pub in_flight_bytes: u64,
}

/// One split flow: the connection with the UE (we play the server) and the one with the
/// server (we play the UE), sharing one buffer.
struct Split {
    toward_ue: TcpConnection,
    toward_server: TcpConnection,
    /// Stream bytes handed to `toward_ue` so far.
    relayed_bytes: u64,
    /// Stream bytes the UE acknowledged, released from the buffer toward the server's window.
    released_bytes: u64,
    ue_side_closed: bool,
    server_side_closed: bool,
    /// `buffered_bytes` as last added into `SplitStats::buffer_bytes`.
    accounted_bytes: u64,
    armed_ns: Option<u64>,
}

impl Split {
    fn buffered_bytes(&self) -> u64 {
        self.toward_server.delivered_bytes() - self.released_bytes
    }

    /// Moves data and buffer space between the halves after anything happened to either.
    fn pump(&mut self, now_ns: u64, stats: &mut SplitStats, out: &mut Vec<Packet>) {
        let received = self.toward_server.delivered_bytes();
        if received > self.relayed_bytes {
            self.toward_ue.send(now_ns, received - self.relayed_bytes, out);
            self.relayed_bytes = received;
        }
        // Buffer space comes back as the UE acknowledges: reading it from the server-side
        // connection reopens the window advertised to the server.
        let acked = self.toward_ue.sender().acked_bytes().min(self.relayed_bytes);
        if acked > self.released_bytes {
            self.toward_server.read(now_ns, acked - self.released_bytes, out);
            self.released_bytes = acked;
        }
        // A FIN crosses over as a CLOSE of the other half (RFC 9293 §3.10.4), which sends
        // it after everything before it.
        if !self.ue_side_closed && peer_closed(&self.toward_server) {
            self.ue_side_closed = true;
            self.toward_ue.close(now_ns, out);
        }
        if !self.server_side_closed && peer_closed(&self.toward_ue) {
            self.server_side_closed = true;
            self.toward_server.close(now_ns, out);
        }
        stats.buffer_bytes = stats.buffer_bytes - self.accounted_bytes + self.buffered_bytes();
        self.accounted_bytes = self.buffered_bytes();
    }

    fn finished(&self) -> bool {
        let done = |c: &TcpConnection| matches!(c.state(), TcpState::Closed | TcpState::TimeWait);
        done(&self.toward_ue) && done(&self.toward_server)
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        earliest_ns(self.toward_ue.next_deadline_ns(), self.toward_server.next_deadline_ns())
    }
}

pub struct SplitProxy {
    cfg: SplitConfig,
    flows: BTreeMap<FlowKey, Split>,
    deadlines: Deadlines,
    stats: SplitStats,
}

impl SplitProxy {
    pub fn new(cfg: SplitConfig) -> Result<SplitProxy, SplitConfigError> {
        cfg.validate()?;
        Ok(SplitProxy { cfg, flows: BTreeMap::new(), deadlines: Deadlines::default(), stats: SplitStats::default() })
    }

    pub fn stats(&self) -> &SplitStats {
        &self.stats
    }

    pub fn flow_keys(&self) -> impl Iterator<Item = FlowKey> + '_ {
        self.flows.keys().copied()
    }

    /// Buffer and in-flight bytes of one flow.
    pub fn flow_stats(&self, key: &FlowKey) -> Option<SplitFlowStats> {
        self.flows.get(key).map(|s| self.split_stats(s))
    }

    fn split_stats(&self, s: &Split) -> SplitFlowStats {
        let buffered_bytes = s.buffered_bytes();
        SplitFlowStats {
            buffered_bytes,
            free_bytes: self.cfg.buffer_bytes.saturating_sub(buffered_bytes),
            in_flight_bytes: s.toward_ue.sender().bytes_in_flight(),
        }
    }

    fn pass(&mut self, packet: Packet, out: &mut Vec<Packet>) {
        self.stats.packets_passed_through += 1;
        out.push(packet);
    }

    /// Terminates the UE's SYN (answering as the server) and opens the connection to the
    /// server (as the UE), if the rule and the flow limit allow.
    fn try_create(&mut self, now_ns: u64, key: FlowKey, syn: &Packet, out: &mut Vec<Packet>) -> bool {
        if !self.cfg.rule.handles(key.server.port()) {
            return false;
        }
        if self.flows.len() >= self.cfg.max_flows {
            self.stats.flows_refused_limit += 1;
            return false;
        }
        let Some(hdr) = syn.tcp_header() else { return false };
        let opts = &hdr.options;
        let iss = initial_sequence_number(&key, self.cfg.iss_secret, now_ns);
        let upstream = TcpConfig {
            // What the UE asked for, so the server sees the options it would have seen.
            mss_bytes: opts.mss.map_or(536, u32::from),
            sack: opts.sack_permitted,
            timestamps: opts.timestamps.is_some(),
            window_scaling: opts.window_scale.is_some(),
            ecn: EcnMode::requested_by(hdr.flags),
            rcv_buf_bytes: self.cfg.buffer_bytes,
            app_paced_reads: true,
            iss,
            ..self.cfg.downstream.clone()
        };
        // ECN ends at the proxy on each side (docs/proxy.md): toward the UE it answers the UE's
        // request with the best both have, toward the server it asks what the UE asked.
        let downstream = TcpConfig { iss: iss.wrapping_add(0x9e37_79b9), ecn: EcnMode::Accurate, ..self.cfg.downstream.clone() };
        let (Ok(mut toward_ue), Ok(toward_server)) =
            (TcpConnection::listen(downstream, key.server), TcpConnection::connect(upstream, key.ue, key.server, now_ns, out))
        else {
            return false;
        };
        toward_ue.on_packet(now_ns, syn, out);
        let split = Split {
            toward_ue,
            toward_server,
            relayed_bytes: 0,
            released_bytes: 0,
            ue_side_closed: false,
            server_side_closed: false,
            accounted_bytes: 0,
            armed_ns: None,
        };
        self.flows.insert(key, split);
        self.stats.flows_created += 1;
        self.after(now_ns, key, out);
        true
    }

    fn after(&mut self, now_ns: u64, key: FlowKey, out: &mut Vec<Packet>) {
        let Some(split) = self.flows.get_mut(&key) else { return };
        split.pump(now_ns, &mut self.stats, out);
        if split.finished() {
            let mut split = self.flows.remove(&key).expect("present");
            self.stats.buffer_bytes -= split.accounted_bytes;
            self.deadlines.rearm(key, &mut split.armed_ns, None);
            self.stats.flows_closed += 1;
            return;
        }
        let wanted = split.next_deadline_ns();
        self.deadlines.rearm(key, &mut split.armed_ns, wanted);
    }
}

impl Middlebox for SplitProxy {
    /// Payload bytes are not relayed: the two connections carry lengths only (the transport
    /// models no bytes), so the proxy's own segments have none; passed packets keep theirs.
    fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, _pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        let Some(hdr) = packet.tcp_header() else {
            self.pass(packet, out);
            return;
        };
        let key = FlowKey::of(&packet, direction);
        if !self.flows.contains_key(&key) {
            let syn = hdr.flags.contains(TcpFlags::SYN) && !hdr.flags.contains(TcpFlags::ACK);
            if !(syn && direction == Direction::FromUe && self.try_create(now_ns, key, &packet, out)) {
                self.pass(packet, out);
            }
            return;
        }
        let Some(split) = self.flows.get_mut(&key) else { return };
        match direction {
            Direction::FromUe => split.toward_ue.on_packet(now_ns, &packet, out),
            Direction::FromServer => {
                let acked_before = split.toward_server.delivered_bytes();
                split.toward_server.on_packet(now_ns, &packet, out);
                let acked_now = split.toward_server.delivered_bytes();
                let ue_acked = split.toward_ue.sender().acked_bytes();
                self.stats.bytes_acked_early += acked_now.saturating_sub(acked_before.max(ue_acked));
            }
        }
        self.after(now_ns, key, out);
    }

    /// The split proxy uses no telemetry.
    fn on_telemetry(&mut self, _now_ns: u64, _ue: Ipv4Addr, _record: Telemetry, _pool: &mut dyn PayloadPool, _out: &mut Vec<Packet>) {}

    fn on_timeout(&mut self, now_ns: u64, _pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        while let Some(key) = self.deadlines.pop_due(now_ns) {
            let Some(split) = self.flows.get_mut(&key) else { continue };
            split.armed_ns = None;
            split.toward_ue.on_timeout(now_ns, out);
            split.toward_server.on_timeout(now_ns, out);
            self.after(now_ns, key, out);
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.deadlines.first_ns()
    }

    fn uses_telemetry(&self) -> bool {
        false
    }

    fn flow_samples(&self, _now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        self.flows
            .iter()
            .map(|(&key, split)| {
                let fs = self.split_stats(split);
                let sample = FlowSample {
                    window_bytes: fs.free_bytes,
                    buffered_bytes: fs.buffered_bytes,
                    in_flight_bytes: fs.in_flight_bytes,
                    rtt_min_ns: None,
                };
                (key, sample)
            })
            .collect()
    }

    fn summary(&self) -> Summary {
        let st = &self.stats;
        Summary {
            kind: "split",
            setting: ("cc", self.cfg.downstream.cc.clone()),
            counters: vec![
                ("flows_created", st.flows_created),
                ("flows_refused_limit", st.flows_refused_limit),
                ("packets_passed_through", st.packets_passed_through),
                ("bytes_acked_early", st.bytes_acked_early),
            ],
            gauges: Vec::new(),
        }
    }
}

/// The peer's FIN has been received: the states that follow it (RFC 9293 §3.3.2), or a
/// reset.
fn peer_closed(c: &TcpConnection) -> bool {
    matches!(c.state(), TcpState::CloseWait | TcpState::LastAck | TcpState::Closing | TcpState::TimeWait | TcpState::Closed)
}

/// RFC 6528 §3: M + F(4-tuple, secret), with M a 4 µs clock and F a keyed mix of the
/// 4-tuple (SplitMix64 finaliser: deterministic, so runs repeat exactly).
fn initial_sequence_number(key: &FlowKey, secret: u64, now_ns: u64) -> u32 {
    let tuple = (u64::from(u32::from(*key.ue.ip())) << 32 | u64::from(u32::from(*key.server.ip())))
        ^ (u64::from(key.ue.port()) << 16 | u64::from(key.server.port())).rotate_left(40);
    let mut z = tuple ^ secret;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z as u32).wrapping_add((now_ns / 4_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_typed_and_keep_the_transport_message() {
        let small = SplitConfig { buffer_bytes: 1000, ..SplitConfig::default() };
        let e = small.validate().err().unwrap();
        assert_eq!(e, SplitConfigError::BufferBelowMss { buffer_bytes: 1000, mss_bytes: 1400 });
        assert_eq!(e.to_string(), "buffer_bytes = 1000: allowed at least the MSS toward the UE (1400)");
        let mut bad_cc = SplitConfig::default();
        bad_cc.downstream.cc = "nope".into();
        let e = SplitProxy::new(bad_cc.clone()).err().unwrap();
        let transport = TcpConnection::listen(bad_cc.downstream, SocketAddrV4::new(0.into(), 0)).err().unwrap();
        assert_eq!(e, SplitConfigError::Downstream(transport));
    }
}
