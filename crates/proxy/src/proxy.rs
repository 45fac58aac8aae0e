//! The proxy at one node (milliproxy.md §1–2): the flow table with its limits, telemetry
//! delivery and timers. Sans-IO: packets, telemetry and the time in; packets and a deadline out.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use millinet_transport::deadline::earliest_ns;
use millinet_wire::{Packet, TcpFlags};

use crate::buffer::{LengthOnly, PayloadStore};
use crate::config::ProxyConfig;
use crate::deadlines::Deadlines;
use crate::flow_table::{Direction, FlowKey};
use crate::instance::{Ctx, FlowStats, Instance};
use crate::stats::ProxyStats;
use crate::telemetry::{Telemetry, TelemetryFeed};

/// Idle flows are looked for at most this often (removal happens within this of the timeout).
const IDLE_SWEEP_MIN_INTERVAL_NS: u64 = 1_000_000_000;

struct Slot<S: PayloadStore> {
    instance: Instance<S>,
    /// The local-RTO deadline registered in `Proxy::rto_deadlines`.
    armed_rto_ns: Option<u64>,
}

pub struct Proxy<S: PayloadStore = LengthOnly> {
    cfg: ProxyConfig,
    flows: BTreeMap<FlowKey, Slot<S>>,
    telemetry: TelemetryFeed,
    stats: ProxyStats,
    rto_deadlines: Deadlines,
    next_idle_sweep_ns: Option<u64>,
}

impl<S: PayloadStore> Proxy<S> {
    pub fn new(cfg: ProxyConfig) -> Result<Proxy<S>, String> {
        cfg.validate()?;
        Ok(Proxy {
            telemetry: TelemetryFeed::new(cfg.telemetry_delay_ns, cfg.telemetry_period_ns),
            cfg,
            flows: BTreeMap::new(),
            stats: ProxyStats::default(),
            rto_deadlines: Deadlines::default(),
            next_idle_sweep_ns: None,
        })
    }

    /// A packet crossing the proxy's node in `direction`. Whatever must leave the node
    /// (the packet itself, coalesced segments, relayed ACKs, local retransmissions) is
    /// appended to `out`: packets from the server go on toward the UE, from the UE toward
    /// the server; the direction of each output is that of its destination address.
    pub fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, out: &mut Vec<Packet>) {
        self.apply_due_telemetry(now_ns, out);
        let Some(hdr) = packet.tcp_header().copied() else {
            self.pass(packet, out);
            return;
        };
        let key = FlowKey::of(&packet, direction);
        if !self.flows.contains_key(&key) && !self.try_create(now_ns, key, &hdr.flags) {
            self.pass(packet, out);
            return;
        }
        let Some(slot) = self.flows.get_mut(&key) else { return };
        let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry: self.telemetry.current(*key.ue.ip()) };
        match direction {
            Direction::FromServer => slot.instance.on_server_packet(now_ns, packet, &hdr, &mut ctx, out),
            Direction::FromUe => slot.instance.on_ue_packet(now_ns, packet, &hdr, &mut ctx, out),
        }
        if slot.instance.finished() {
            self.stats.flows_closed += 1;
            self.remove(key);
        } else {
            Self::arm_rto(&self.cfg, &mut self.rto_deadlines, key, slot);
        }
    }

    /// A telemetry record of UE `ue`, delivered when the gNB sampled it (`record.t_ns`); it
    /// takes effect D_info later (`telemetry_delay_ns`), via `on_timeout` if not right now.
    pub fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, out: &mut Vec<Packet>) {
        if self.telemetry.offer(ue, record) {
            self.stats.telemetry_accepted += 1;
        }
        self.apply_due_telemetry(now_ns, out);
    }

    /// The deadline from `next_timeout_ns` has passed (late or spurious calls are harmless).
    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.apply_due_telemetry(now_ns, out);
        while let Some(key) = self.rto_deadlines.pop_due(now_ns) {
            if let Some(slot) = self.flows.get_mut(&key) {
                slot.armed_rto_ns = None;
                let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry: self.telemetry.current(*key.ue.ip()) };
                slot.instance.on_tick(now_ns, &mut ctx, out);
                Self::arm_rto(&self.cfg, &mut self.rto_deadlines, key, slot);
            }
        }
        if self.next_idle_sweep_ns.is_some_and(|t| t <= now_ns) {
            self.sweep_idle(now_ns);
        }
    }

    /// The earliest time `on_timeout` must be called, if any.
    pub fn next_timeout_ns(&self) -> Option<u64> {
        earliest_ns(earliest_ns(self.telemetry.next_due_ns(), self.rto_deadlines.first_ns()), self.next_idle_sweep_ns)
    }

    pub fn stats(&self) -> &ProxyStats {
        &self.stats
    }

    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }

    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    pub fn flow_keys(&self) -> impl Iterator<Item = FlowKey> + '_ {
        self.flows.keys().copied()
    }

    /// FW, buffer, in flight toward the UE and RTT estimates of one flow.
    pub fn flow_stats(&self, now_ns: u64, key: &FlowKey) -> Option<FlowStats> {
        self.flows.get(key).map(|s| s.instance.stats(now_ns))
    }

    /// The payload store of one flow (real bytes in a daemon).
    pub fn payload(&self, key: &FlowKey) -> Option<&S> {
        self.flows.get(key).map(|s| s.instance.payload())
    }

    fn pass(&mut self, packet: Packet, out: &mut Vec<Packet>) {
        self.stats.packets_passed_through += 1;
        out.push(packet);
    }

    /// An instance for a handled flow's SYN, if the limit allows (milliproxy.md §2).
    fn try_create(&mut self, now_ns: u64, key: FlowKey, flags: &TcpFlags) -> bool {
        let syn = flags.contains(TcpFlags::SYN) && !flags.contains(TcpFlags::ACK);
        if !syn || !self.cfg.rule.handles(key.server.port()) {
            return false;
        }
        if self.flows.len() >= self.cfg.max_flows {
            self.stats.flows_refused_limit += 1;
            return false;
        }
        // Validated in `new`: a failure here cannot happen, and would only mean no instance.
        let Ok(policy) = self.cfg.policy_for(key.server.port()).build() else { return false };
        self.flows.insert(key, Slot { instance: Instance::new(policy, &self.cfg, now_ns), armed_rto_ns: None });
        self.stats.flows_created += 1;
        self.next_idle_sweep_ns.get_or_insert(now_ns + self.cfg.idle_timeout_ns);
        true
    }

    fn remove(&mut self, key: FlowKey) {
        if let Some(mut slot) = self.flows.remove(&key) {
            self.stats.buffer_bytes -= slot.instance.buffered_bytes();
            self.rto_deadlines.rearm(key, &mut slot.armed_rto_ns, None);
        }
        if self.flows.is_empty() {
            self.next_idle_sweep_ns = None;
        }
    }

    fn arm_rto(cfg: &ProxyConfig, deadlines: &mut Deadlines, key: FlowKey, slot: &mut Slot<S>) {
        deadlines.rearm(key, &mut slot.armed_rto_ns, slot.instance.rto_deadline_ns(cfg));
    }

    fn apply_due_telemetry(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        while let Some(ue) = self.telemetry.apply_next_due(now_ns) {
            self.stats.telemetry_applied += 1;
            let telemetry = self.telemetry.current(ue);
            for (&key, slot) in self.flows.range_mut(FlowKey::range_of_ue(ue)) {
                let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry };
                slot.instance.on_tick(now_ns, &mut ctx, out);
                Self::arm_rto(&self.cfg, &mut self.rto_deadlines, key, slot);
            }
        }
    }

    /// Removes flows idle for `idle_timeout_ns` (O(flows), at most once per second).
    fn sweep_idle(&mut self, now_ns: u64) {
        let idle = self.cfg.idle_timeout_ns;
        let expired: Vec<FlowKey> =
            self.flows.iter().filter(|(_, s)| s.instance.last_activity_ns + idle <= now_ns).map(|(&k, _)| k).collect();
        for key in expired {
            self.stats.flows_idle_expired += 1;
            self.remove(key);
        }
        self.next_idle_sweep_ns = self
            .flows
            .values()
            .map(|s| s.instance.last_activity_ns + idle)
            .min()
            .map(|t| t.max(now_ns + IDLE_SWEEP_MIN_INTERVAL_NS));
    }
}
