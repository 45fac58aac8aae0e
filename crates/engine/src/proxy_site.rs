//! A milliProxy placed on a node: built from the scenario's `[proxy]` table and fed
//! every TCP packet crossing that node, plus the gNB's telemetry every T_info.

use millinet_proxy::{HandlingRule, PolicySpec, Proxy, ProxyConfig};

use crate::scenario::ProxySpec;
use crate::sim::seconds_to_ns;
use crate::Error;

pub struct ProxySite {
    pub node: u32,
    pub proxy: Proxy,
    pub timer: u32,
    pub t_info_ns: u64,
}

fn policy(p: &ProxySpec) -> PolicySpec {
    let spec = PolicySpec::new(&p.policy);
    match p.policy.as_str() {
        "bdp" => spec.with("threshold_bytes", p.bdp_threshold_bytes as f64).with("start_bytes", p.bdp_start_bytes as f64),
        "static" => spec.with("fw_bytes", p.static_fw_bytes as f64),
        _ => spec,
    }
}

pub fn build(p: &ProxySpec, node: u32, timer: u32) -> Result<ProxySite, Error> {
    let cfg = ProxyConfig {
        rule: if p.server_ports.is_empty() { HandlingRule::All } else { HandlingRule::ServerPorts(p.server_ports.clone()) },
        max_flows: p.max_flows as usize,
        flow_buffer_bytes: p.flow_buffer_bytes,
        mss2_bytes: p.mss2_bytes,
        telemetry_delay_ns: seconds_to_ns(p.d_info_s),
        telemetry_period_ns: seconds_to_ns(p.t_info_s),
        rtt_min_window_ns: seconds_to_ns(p.rtt_min_window_s),
        policy: policy(p),
        suppress_dup_acks_while_repairing: p.suppress_dup_acks_while_repairing,
        ..ProxyConfig::default()
    };
    let proxy = Proxy::new(cfg).map_err(|e| Error::Scenario(format!("proxy: {e}")))?;
    Ok(ProxySite { node, proxy, timer, t_info_ns: seconds_to_ns(p.t_info_s).max(1) })
}
