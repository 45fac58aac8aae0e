//! The proxy placed on a node, built from the scenario's `[proxy]` table: milliProxy or the
//! split-TCP baseline, driven through the one `Middlebox` interface. It is fed every TCP
//! packet crossing that node and, when it uses them, the gNB's telemetry records, each
//! D_info after the gNB sampled it (milliproxy.md §1, §3).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use millinet_proxy::{
    Direction, FlowKey, FlowSample, HandlingRule, Middlebox, NoPayloads, PolicySpec, Proxy, ProxyConfig, SplitConfig, SplitProxy,
};
use millinet_transport::deadline::earliest_ns;
use millinet_transport::TcpConfig;
use millinet_wire::{Packet, Telemetry};
use serde_json::{Map, Value};

use crate::scenario::{ProxyKind, ProxySpec};
use crate::sim::seconds_to_ns;
use crate::Error;

pub struct ProxySite {
    pub node: u32,
    pub proxy: DelayedTelemetry,
    pub timer: u32,
    pub t_info_ns: u64,
}

/// The middlebox with the telemetry on its way to it: a record sampled at t is handed over at
/// t + D_info. Held records count as deadlines, and every call into the middlebox first hands
/// over those due, so a record takes effect before anything else the middlebox sees at or
/// after its arrival time.
pub struct DelayedTelemetry {
    middlebox: Box<dyn Middlebox>,
    /// D_info: 0 at the gNB, a few ms at the edge.
    delay_ns: u64,
    /// (arrival time, UE, record), in arrival order: records are sampled in time order.
    in_transit: VecDeque<(u64, Ipv4Addr, Telemetry)>,
}

impl DelayedTelemetry {
    pub fn new(middlebox: Box<dyn Middlebox>, delay_ns: u64) -> DelayedTelemetry {
        DelayedTelemetry { middlebox, delay_ns, in_transit: VecDeque::new() }
    }

    pub fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, out: &mut Vec<Packet>) {
        self.hand_over_due(now_ns, out);
        self.middlebox.on_packet(now_ns, packet, direction, &mut NoPayloads, out);
    }

    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.hand_over_due(now_ns, out);
        self.middlebox.on_timeout(now_ns, &mut NoPayloads, out);
    }

    pub fn next_timeout_ns(&self) -> Option<u64> {
        earliest_ns(self.middlebox.next_timeout_ns(), self.in_transit.front().map(|&(at_ns, _, _)| at_ns))
    }

    /// A record the gNB sampled at `record.t_ns` (now, or earlier).
    pub fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, out: &mut Vec<Packet>) {
        if !self.middlebox.uses_telemetry() {
            return;
        }
        self.in_transit.push_back((record.t_ns + self.delay_ns, ue, record));
        self.hand_over_due(now_ns, out);
    }

    pub fn samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        self.middlebox.flow_samples(now_ns)
    }

    /// summary.json's `proxy` object: the node, the middlebox's kind and setting, its counters.
    pub fn summary(&self, spec: &ProxySpec) -> Value {
        let s = self.middlebox.summary();
        let mut m = Map::new();
        m.insert("node".into(), spec.node.clone().into());
        m.insert("kind".into(), s.kind.into());
        m.insert(s.setting.0.into(), s.setting.1.into());
        for (name, value) in s.counters {
            m.insert(name.into(), value.into());
        }
        Value::Object(m)
    }

    fn hand_over_due(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        while let Some(&(at_ns, ue, record)) = self.in_transit.front() {
            if at_ns > now_ns {
                return;
            }
            self.in_transit.pop_front();
            self.middlebox.on_telemetry(now_ns, ue, record, &mut NoPayloads, out);
        }
    }
}

fn policy(p: &ProxySpec) -> PolicySpec {
    let spec = PolicySpec::new(&p.policy);
    match p.policy.as_str() {
        "bdp" => spec.with("threshold_bytes", p.bdp_threshold_bytes as f64).with("start_bytes", p.bdp_start_bytes as f64),
        "static" => spec.with("fw_bytes", p.static_fw_bytes as f64),
        _ => spec,
    }
}

/// `iss_secret` seeds the split proxy's initial sequence numbers (from the run's seed).
pub fn build(p: &ProxySpec, node: u32, timer: u32, iss_secret: u64) -> Result<ProxySite, Error> {
    let rule = if p.server_ports.is_empty() { HandlingRule::All } else { HandlingRule::ServerPorts(p.server_ports.clone()) };
    let middlebox: Box<dyn Middlebox> = match p.kind {
        ProxyKind::Milliproxy => Box::new(
            Proxy::<millinet_proxy::LengthOnly>::new(ProxyConfig {
                rule,
                max_flows: p.max_flows as usize,
                flow_buffer_bytes: p.flow_buffer_bytes,
                mss2_bytes: p.mss2_bytes,
                rtt_min_window_ns: seconds_to_ns(p.rtt_min_window_s),
                policy: policy(p),
                suppress_dup_acks_while_repairing: p.suppress_dup_acks_while_repairing,
                ..ProxyConfig::default()
            })
            .map_err(|e| Error::Scenario(format!("proxy: {e}")))?,
        ),
        ProxyKind::Split => Box::new(
            SplitProxy::new(SplitConfig {
                rule,
                max_flows: p.max_flows as usize,
                buffer_bytes: p.flow_buffer_bytes,
                downstream: TcpConfig { cc: p.split_cc.clone(), mss_bytes: p.split_mss_bytes, ..TcpConfig::default() },
                iss_secret,
            })
            .map_err(|e| Error::Scenario(format!("proxy: {e}")))?,
        ),
    };
    let t_info_ns = seconds_to_ns(p.t_info_s).max(1);
    Ok(ProxySite { node, proxy: DelayedTelemetry::new(middlebox, seconds_to_ns(p.d_info_s)), timer, t_info_ns })
}
