//! The proxy placed on a node, built from the scenario's `[proxy]` table: milliProxy or
//! the split-TCP baseline. It is fed every TCP packet crossing that node, plus (milliProxy)
//! the gNB's telemetry every T_info.

use std::net::Ipv4Addr;

use millinet_proxy::{Direction, FlowKey, HandlingRule, PolicySpec, Proxy, ProxyConfig, SplitConfig, SplitProxy, Telemetry};
use millinet_transport::TcpConfig;
use millinet_wire::Packet;
use serde_json::{json, Value};

use crate::scenario::{ProxyKind, ProxySpec};
use crate::sim::seconds_to_ns;
use crate::Error;

pub struct ProxySite {
    pub node: u32,
    pub proxy: PathProxy,
    pub timer: u32,
    pub t_info_ns: u64,
}

/// Either proxy, behind the one sans-IO interface the engine drives.
pub enum PathProxy {
    Milli(Proxy),
    Split(SplitProxy),
}

/// One flow's state for the `proxy` time series.
pub struct FlowSample {
    /// milliProxy: the flow window; split-TCP: the receive window offered to the server.
    pub window_bytes: u64,
    pub buffered_bytes: u64,
    pub in_flight_bytes: u64,
    pub rtt_min_ns: Option<u64>,
}

impl PathProxy {
    pub fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, out: &mut Vec<Packet>) {
        match self {
            PathProxy::Milli(p) => p.on_packet(now_ns, packet, direction, out),
            PathProxy::Split(p) => p.on_packet(now_ns, packet, direction, out),
        }
    }

    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        match self {
            PathProxy::Milli(p) => p.on_timeout(now_ns, out),
            PathProxy::Split(p) => p.on_timeout(now_ns, out),
        }
    }

    pub fn next_timeout_ns(&self) -> Option<u64> {
        match self {
            PathProxy::Milli(p) => p.next_timeout_ns(),
            PathProxy::Split(p) => p.next_timeout_ns(),
        }
    }

    /// The split-TCP baseline uses no telemetry.
    pub fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, out: &mut Vec<Packet>) {
        if let PathProxy::Milli(p) = self {
            p.on_telemetry(now_ns, ue, record, out);
        }
    }

    pub fn samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        match self {
            PathProxy::Milli(p) => p
                .flow_keys()
                .filter_map(|key| p.flow_stats(now_ns, &key).map(|fs| (key, fs)))
                .map(|(key, fs)| {
                    let sample = FlowSample {
                        window_bytes: fs.fw_bytes,
                        buffered_bytes: fs.buffered_bytes,
                        in_flight_bytes: fs.in_flight_bytes,
                        rtt_min_ns: fs.rtt.min_ns,
                    };
                    (key, sample)
                })
                .collect(),
            PathProxy::Split(p) => p
                .flow_keys()
                .filter_map(|key| p.flow_stats(&key).map(|fs| (key, fs)))
                .map(|(key, fs)| {
                    let sample = FlowSample {
                        window_bytes: fs.free_bytes,
                        buffered_bytes: fs.buffered_bytes,
                        in_flight_bytes: fs.in_flight_bytes,
                        rtt_min_ns: None,
                    };
                    (key, sample)
                })
                .collect(),
        }
    }

    /// The counters of summary.json's `proxy` object.
    pub fn summary(&self, spec: &ProxySpec) -> Value {
        match self {
            PathProxy::Milli(p) => {
                let st = p.stats();
                json!({
                    "node": spec.node,
                    "kind": "milliproxy",
                    "policy": spec.policy,
                    "flows_created": st.flows_created,
                    "flows_refused_limit": st.flows_refused_limit,
                    "packets_passed_through": st.packets_passed_through,
                    "buffer_full_drops": st.buffer_full_drops,
                    "segments_forwarded": st.segments_forwarded,
                    "local_retransmissions": st.local_retransmissions,
                    "acks_relayed": st.acks_relayed,
                    "dup_acks_suppressed": st.dup_acks_suppressed,
                })
            }
            PathProxy::Split(p) => {
                let st = p.stats();
                json!({
                    "node": spec.node,
                    "kind": "split",
                    "cc": spec.split_cc,
                    "flows_created": st.flows_created,
                    "flows_refused_limit": st.flows_refused_limit,
                    "packets_passed_through": st.packets_passed_through,
                    "bytes_acked_early": st.bytes_acked_early,
                })
            }
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
    let proxy = match p.kind {
        ProxyKind::Milliproxy => PathProxy::Milli(Proxy::new(ProxyConfig {
            rule,
            max_flows: p.max_flows as usize,
            flow_buffer_bytes: p.flow_buffer_bytes,
            mss2_bytes: p.mss2_bytes,
            telemetry_delay_ns: seconds_to_ns(p.d_info_s),
            telemetry_period_ns: seconds_to_ns(p.t_info_s),
            rtt_min_window_ns: seconds_to_ns(p.rtt_min_window_s),
            policy: policy(p),
            suppress_dup_acks_while_repairing: p.suppress_dup_acks_while_repairing,
            ..ProxyConfig::default()
        })
        .map_err(|e| Error::Scenario(format!("proxy: {e}")))?),
        ProxyKind::Split => PathProxy::Split(SplitProxy::new(SplitConfig {
            rule,
            max_flows: p.max_flows as usize,
            buffer_bytes: p.flow_buffer_bytes,
            downstream: TcpConfig { cc: p.split_cc.clone(), mss_bytes: p.split_mss_bytes, ..TcpConfig::default() },
            iss_secret,
        })
        .map_err(|e| Error::Scenario(format!("proxy: {e}")))?),
    };
    Ok(ProxySite { node, proxy, timer, t_info_ns: seconds_to_ns(p.t_info_s).max(1) })
}
