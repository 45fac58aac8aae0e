//! The proxy at one node (docs/proxy.md#what-milliproxy-is): the flow table with its limits, the telemetry
//! in force per UE and timers. Sans-IO, driven through `Middlebox`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use millinet_transport::deadline::earliest_ns;
use millinet_wire::{Packet, TcpFlags, Telemetry};

use crate::config::ProxyConfig;
use crate::deadlines::Deadlines;
use crate::error::ProxyConfigError;
use crate::flow_table::{Direction, FlowKey};
use crate::instance::{Ctx, FlowStats, Instance};
use crate::middlebox::{FlowSample, Middlebox, Summary};
use crate::payload::{LengthOnly, PayloadPool, PayloadStore};
use crate::policy::Siblings;
use crate::stats::ProxyStats;

/// Idle flows are looked for at most this often (removal happens within this of the timeout).
const IDLE_SWEEP_MIN_INTERVAL_NS: u64 = 1_000_000_000;

/// A UE's latest telemetry record.
struct InForce {
    record: Telemetry,
    /// Its expiry has been counted (`ProxyStats::telemetry_expired`).
    expired: bool,
    /// Its place in `Proxy::telemetry_by_update`.
    update: u64,
}

/// The UE's record if it is fresh (telemetry records, docs/telemetry.md, are at most
/// `telemetry_max_age_ns` old when used); counts the moment one turns stale.
fn fresh<'a>(
    table: &'a mut BTreeMap<Ipv4Addr, InForce>,
    stats: &mut ProxyStats,
    cfg: &ProxyConfig,
    now_ns: u64,
    ue: &Ipv4Addr,
) -> Option<&'a Telemetry> {
    let in_force = table.get_mut(ue)?;
    if now_ns.saturating_sub(in_force.record.t_ns) <= cfg.telemetry_max_age_ns {
        return Some(&in_force.record);
    }
    if !in_force.expired {
        in_force.expired = true;
        stats.telemetry_expired += 1;
    }
    None
}

/// Every flow of `ue` added up: a flow's `Siblings` is this less its own part.
fn ue_flows<S: PayloadStore>(flows: &BTreeMap<FlowKey, Slot<S>>, ue: Ipv4Addr) -> Siblings {
    flows.range(FlowKey::range_of_ue(ue)).fold(Siblings::default(), |sum, (_, slot)| sum.plus(&slot.instance.as_sibling()))
}

struct Slot<S: PayloadStore> {
    instance: Instance<S>,
    /// The local-RTO deadline registered in `Proxy::rto_deadlines`.
    armed_rto_ns: Option<u64>,
    /// The other flows of its UE, recounted when a flow of the UE comes or goes: a flow alone
    /// on its UE (the common case) skips summing its siblings on every packet.
    sibling_flows: usize,
}

pub struct Proxy<S: PayloadStore = LengthOnly> {
    cfg: ProxyConfig,
    flows: BTreeMap<FlowKey, Slot<S>>,
    /// The latest record per UE, of at most `max_ues` UEs.
    telemetry: BTreeMap<Ipv4Addr, InForce>,
    /// (update number, UE) of every record held: the least recently updated first.
    telemetry_by_update: BTreeSet<(u64, Ipv4Addr)>,
    /// Records admitted so far: the next update number.
    telemetry_updates: u64,
    stats: ProxyStats,
    rto_deadlines: Deadlines,
    next_idle_sweep_ns: Option<u64>,
}

impl<S: PayloadStore> Proxy<S> {
    pub fn new(cfg: ProxyConfig) -> Result<Proxy<S>, ProxyConfigError> {
        cfg.validate()?;
        Ok(Proxy {
            telemetry: BTreeMap::new(),
            telemetry_by_update: BTreeSet::new(),
            telemetry_updates: 0,
            cfg,
            flows: BTreeMap::new(),
            stats: ProxyStats::default(),
            rto_deadlines: Deadlines::default(),
            next_idle_sweep_ns: None,
        })
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

    /// An instance for a handled flow's SYN, if the limit allows (docs/proxy.md#how-a-flow-is-handled).
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
        self.flows.insert(key, Slot { instance: Instance::new(policy, &self.cfg, now_ns), armed_rto_ns: None, sibling_flows: 0 });
        self.recount_siblings(*key.ue.ip());
        self.stats.flows_created += 1;
        self.next_idle_sweep_ns.get_or_insert(now_ns + self.cfg.idle_timeout_ns);
        true
    }

    fn remove(&mut self, key: FlowKey) {
        if let Some(mut slot) = self.flows.remove(&key) {
            self.stats.buffer_bytes -= slot.instance.buffered_bytes();
            self.rto_deadlines.rearm(key, &mut slot.armed_rto_ns, None);
            self.recount_siblings(*key.ue.ip());
        }
        if self.flows.is_empty() {
            self.next_idle_sweep_ns = None;
        }
    }

    fn recount_siblings(&mut self, ue: Ipv4Addr) {
        let flows = self.flows.range(FlowKey::range_of_ue(ue)).count();
        for (_, slot) in self.flows.range_mut(FlowKey::range_of_ue(ue)) {
            slot.sibling_flows = flows - 1;
        }
    }

    /// The `Siblings` of `key`'s flow: its UE's flows summed, less its own; none (and no scan
    /// of the UE's range of the table) while it is alone on its UE.
    fn siblings_of(&self, key: &FlowKey) -> Siblings {
        match self.flows.get(key) {
            Some(slot) if slot.sibling_flows > 0 => ue_flows(&self.flows, *key.ue.ip()).minus(&slot.instance.as_sibling()),
            _ => Siblings::default(),
        }
    }

    fn arm_rto(cfg: &ProxyConfig, deadlines: &mut Deadlines, key: FlowKey, slot: &mut Slot<S>) {
        deadlines.rearm(key, &mut slot.armed_rto_ns, slot.instance.rto_deadline_ns(cfg));
    }

    /// Puts `record` in force for `ue` unless it is late (older than `telemetry_max_age_ns`
    /// or than the record in force). A UE new to a table of `max_ues` takes the place of the
    /// one updated longest ago (counted): UEs come and go, and the state stays bounded.
    fn admit_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry) -> bool {
        let in_force = self.telemetry.get(&ue).map(|t| (t.record.t_ns, t.update));
        if now_ns.saturating_sub(record.t_ns) > self.cfg.telemetry_max_age_ns || in_force.is_some_and(|(t, _)| record.t_ns < t) {
            self.stats.telemetry_late += 1;
            return false;
        }
        match in_force {
            Some((_, update)) => {
                self.telemetry_by_update.remove(&(update, ue));
            }
            None if self.telemetry.len() >= self.cfg.max_ues => {
                if let Some((_, evicted)) = self.telemetry_by_update.pop_first() {
                    self.telemetry.remove(&evicted);
                    self.stats.telemetry_evicted += 1;
                }
            }
            None => {}
        }
        self.telemetry_updates += 1;
        self.telemetry_by_update.insert((self.telemetry_updates, ue));
        self.telemetry.insert(ue, InForce { record, expired: false, update: self.telemetry_updates });
        true
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
        self.next_idle_sweep_ns =
            self.flows.values().map(|s| s.instance.last_activity_ns + idle).min().map(|t| t.max(now_ns + IDLE_SWEEP_MIN_INTERVAL_NS));
    }
}

impl<S: PayloadStore> Middlebox for Proxy<S> {
    /// The packet itself when it passes, coalesced segments and local retransmissions toward
    /// the UE, relayed ACKs toward the server.
    fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        let Some(hdr) = packet.tcp_header().copied() else {
            self.pass(packet, out);
            return;
        };
        let key = FlowKey::of(&packet, direction);
        // One lookup tells whether the flow is known and alone on its UE, as the packet path
        // looked it up before siblings existed.
        let alone = match self.flows.get(&key).map(|slot| slot.sibling_flows == 0) {
            Some(alone) => alone,
            None if self.try_create(now_ns, key, &hdr.flags) => false,
            None => {
                self.pass(packet, out);
                return;
            }
        };
        let siblings = if alone { Siblings::default() } else { self.siblings_of(&key) };
        let Some(slot) = self.flows.get_mut(&key) else { return };
        let telemetry = fresh(&mut self.telemetry, &mut self.stats, &self.cfg, now_ns, key.ue.ip());
        let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry, pool, siblings };
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

    /// Every flow of the UE recomputes FW at once and forwards what it allows.
    /// A record already too old, or older than the one in force, is refused (counted).
    fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        if !self.admit_telemetry(now_ns, ue, record) {
            return;
        }
        self.stats.telemetry_applied += 1;
        let telemetry = self.telemetry.get(&ue).map(|t| &t.record);
        let ue_total = ue_flows(&self.flows, ue);
        for (&key, slot) in self.flows.range_mut(FlowKey::range_of_ue(ue)) {
            let siblings = ue_total.minus(&slot.instance.as_sibling());
            let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry, pool: &mut *pool, siblings };
            slot.instance.on_tick(now_ns, &mut ctx, out);
            Self::arm_rto(&self.cfg, &mut self.rto_deadlines, key, slot);
        }
    }

    fn on_timeout(&mut self, now_ns: u64, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        while let Some(key) = self.rto_deadlines.pop_due(now_ns) {
            let siblings = self.siblings_of(&key);
            if let Some(slot) = self.flows.get_mut(&key) {
                slot.armed_rto_ns = None;
                let telemetry = fresh(&mut self.telemetry, &mut self.stats, &self.cfg, now_ns, key.ue.ip());
                let mut ctx = Ctx { cfg: &self.cfg, stats: &mut self.stats, telemetry, pool: &mut *pool, siblings };
                slot.instance.on_tick(now_ns, &mut ctx, out);
                Self::arm_rto(&self.cfg, &mut self.rto_deadlines, key, slot);
            }
        }
        if self.next_idle_sweep_ns.is_some_and(|t| t <= now_ns) {
            self.sweep_idle(now_ns);
        }
    }

    /// The optional local RTO and the idle sweep.
    fn next_deadline_ns(&self) -> Option<u64> {
        earliest_ns(self.rto_deadlines.first_ns(), self.next_idle_sweep_ns)
    }

    fn uses_telemetry(&self) -> bool {
        true
    }

    fn flow_samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        self.flows
            .iter()
            .map(|(&key, slot)| {
                let fs = slot.instance.stats(now_ns);
                let sample = FlowSample {
                    window_bytes: fs.fw_bytes,
                    buffered_bytes: fs.buffered_bytes,
                    in_flight_bytes: fs.in_flight_bytes,
                    rtt_min_ns: fs.rtt.min_ns,
                };
                (key, sample)
            })
            .collect()
    }

    fn summary(&self) -> Summary {
        let st = &self.stats;
        Summary {
            kind: "milliproxy",
            setting: ("policy", self.cfg.policy.name.clone()),
            counters: vec![
                ("flows_created", st.flows_created),
                ("flows_refused_limit", st.flows_refused_limit),
                ("packets_passed_through", st.packets_passed_through),
                ("buffer_full_drops", st.buffer_full_drops),
                ("segments_forwarded", st.segments_forwarded),
                ("local_retransmissions", st.local_retransmissions),
                ("acks_relayed", st.acks_relayed),
                ("dup_acks_suppressed", st.dup_acks_suppressed),
                ("telemetry_late", st.telemetry_late),
                ("telemetry_evicted", st.telemetry_evicted),
                ("telemetry_expired", st.telemetry_expired),
            ],
            gauges: vec![("telemetry_ues", self.telemetry.len() as u64)],
        }
    }
}
