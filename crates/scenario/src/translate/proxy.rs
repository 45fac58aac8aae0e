//! The `[proxy]` table as the configuration of milliProxy or of the split-TCP baseline.

use millinet_proxy::{HandlingRule, PolicySpec, ProxyConfig, SplitConfig};
use millinet_transport::TcpConfig;

use super::seconds_to_ns;
use crate::ProxySpec;

fn rule(p: &ProxySpec) -> HandlingRule {
    if p.server_ports.is_empty() {
        HandlingRule::All
    } else {
        HandlingRule::ServerPorts(p.server_ports.clone())
    }
}

fn policy(p: &ProxySpec) -> PolicySpec {
    let spec = PolicySpec::new(&p.policy);
    match p.policy.as_str() {
        "bdp" => spec.with("threshold_bytes", p.bdp_threshold_bytes as f64).with("start_bytes", p.bdp_start_bytes as f64),
        "static" => spec.with("fw_bytes", p.static_fw_bytes as f64),
        "target-queue" | "calibrated" => spec
            .with("start_bytes", p.bdp_start_bytes as f64)
            .with("target_delay_s", p.target_queue_delay_s)
            .with("rtt_fraction", p.target_queue_rtt_fraction)
            .with("gain", p.target_queue_gain),
        _ => spec,
    }
}

pub fn milliproxy_config(p: &ProxySpec) -> ProxyConfig {
    ProxyConfig {
        rule: rule(p),
        max_flows: p.max_flows as usize,
        max_ues: p.max_ues as usize,
        flow_buffer_bytes: p.flow_buffer_bytes,
        mss2_bytes: p.mss2_bytes,
        segments_per_relayed_ack: p.segments_per_relayed_ack,
        rtt_min_window_ns: seconds_to_ns(p.rtt_min_window_s),
        telemetry_max_age_ns: seconds_to_ns(p.telemetry_max_age_s),
        policy: policy(p),
        suppress_dup_acks_while_repairing: p.suppress_dup_acks_while_repairing,
        ..ProxyConfig::default()
    }
}

/// `iss_secret` seeds the split proxy's initial sequence numbers (from the run's seed).
pub fn split_config(p: &ProxySpec, iss_secret: u64) -> SplitConfig {
    SplitConfig {
        rule: rule(p),
        max_flows: p.max_flows as usize,
        buffer_bytes: p.flow_buffer_bytes,
        downstream: TcpConfig { cc: p.split_cc.clone(), mss_bytes: p.split_mss_bytes, ..TcpConfig::default() },
        iss_secret,
    }
}
