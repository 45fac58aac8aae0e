//! Proxy configuration (docs/proxy.md#what-milliproxy-is) with its defaults and validation.

use crate::error::ProxyConfigError;
use crate::policy::PolicySpec;

/// Which flows get an instance (docs/proxy.md#how-a-flow-is-handled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlingRule {
    All,
    /// Only flows whose server-side port is listed.
    ServerPorts(Vec<u16>),
}

impl HandlingRule {
    pub fn handles(&self, server_port: u16) -> bool {
        match self {
            HandlingRule::All => true,
            HandlingRule::ServerPorts(ports) => ports.contains(&server_port),
        }
    }
}

/// Buffer of one instance: above the milliproxy route's BDP at D_RS 20 ms (3.2 Gbit/s ×
/// about 44 ms ≈ 17 MB), which the 10 MB of the original evaluation capped (docs/studies.md).
pub const DEFAULT_FLOW_BUFFER_BYTES: u64 = 40_000_000;

/// More segments per relayed ACK than this would starve an ACK-clocked server of ACKs.
pub const MAX_SEGMENTS_PER_RELAYED_ACK: u32 = 16;

#[derive(Clone, Debug, PartialEq)]
pub struct ProxyConfig {
    pub rule: HandlingRule,
    /// Most instances at once.
    pub max_flows: usize,
    /// Most UEs whose telemetry is held; a new one evicts the least recently updated.
    pub max_ues: usize,
    /// Buffer of one instance.
    pub flow_buffer_bytes: u64,
    /// Buffer of all instances together.
    pub total_buffer_bytes: u64,
    /// MSS toward the server (the UE's SYN is clamped to it).
    pub mss1_bytes: u32,
    /// Largest coalesced segment toward the UE.
    pub mss2_bytes: u32,
    /// Server segments per relayed ACK within a series (docs/proxy.md#how-a-flow-is-handled, "ACK path": 1, one
    /// ACK per original boundary). 2 relays every second boundary, as a receiver with delayed
    /// ACKs would (RFC 5681 §4.2): half the datagrams toward the server for a daemon whose
    /// core goes to sending them, and no loss of growth for a server counting bytes with
    /// RFC 3465's L = 2·SMSS. The UE's own ACK is always relayed.
    pub segments_per_relayed_ack: u32,
    pub idle_timeout_ns: u64,
    /// Sliding window of RTT_min.
    pub rtt_min_window_ns: u64,
    /// Flow-window policy of every handled flow (default `calibrated`)...
    pub policy: PolicySpec,
    /// ...unless its server port is listed here.
    pub policy_by_server_port: Vec<(u16, PolicySpec)>,
    /// The proxy's own retransmission timer toward the UE (None: off, the default).
    pub local_rto_ns: Option<u64>,
    /// Do not relay duplicate ACKs while a local repair is under way (off by default).
    pub suppress_dup_acks_while_repairing: bool,
    /// A UE's telemetry record older than this (now − its sampling time `t_ns`) is no longer
    /// used: its flows fall back to passthrough until a fresh one arrives (a stale R_e or B would
    /// otherwise steer FW forever; docs/proxy.md#driving-it).
    pub telemetry_max_age_ns: u64,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            rule: HandlingRule::All,
            max_flows: 65_536,
            max_ues: 65_536,
            flow_buffer_bytes: DEFAULT_FLOW_BUFFER_BYTES,
            total_buffer_bytes: 1 << 30,
            mss1_bytes: 1400,
            mss2_bytes: 20_000,
            segments_per_relayed_ack: 1,
            idle_timeout_ns: 60_000_000_000,
            rtt_min_window_ns: 10_000_000_000,
            policy: PolicySpec::new("calibrated"),
            policy_by_server_port: Vec::new(),
            local_rto_ns: None,
            suppress_dup_acks_while_repairing: false,
            telemetry_max_age_ns: 100_000_000,
        }
    }
}

impl ProxyConfig {
    /// One clear message naming the field, the value and what is allowed.
    pub fn validate(&self) -> Result<(), ProxyConfigError> {
        if !(536..=65_535).contains(&self.mss1_bytes) {
            return Err(ProxyConfigError::Mss1 { mss1_bytes: self.mss1_bytes });
        }
        if !(self.mss1_bytes..=65_535).contains(&self.mss2_bytes) {
            return Err(ProxyConfigError::Mss2 { mss2_bytes: self.mss2_bytes, mss1_bytes: self.mss1_bytes });
        }
        if !(1..=MAX_SEGMENTS_PER_RELAYED_ACK).contains(&self.segments_per_relayed_ack) {
            return Err(ProxyConfigError::SegmentsPerRelayedAck { segments: self.segments_per_relayed_ack });
        }
        if self.idle_timeout_ns == 0 {
            return Err(ProxyConfigError::ZeroIdleTimeout);
        }
        if self.rtt_min_window_ns == 0 {
            return Err(ProxyConfigError::ZeroRttMinWindow);
        }
        if self.local_rto_ns == Some(0) {
            return Err(ProxyConfigError::ZeroLocalRto);
        }
        if self.telemetry_max_age_ns == 0 {
            return Err(ProxyConfigError::ZeroTelemetryMaxAge);
        }
        self.policy.build()?;
        for (_, spec) in &self.policy_by_server_port {
            spec.build()?;
        }
        Ok(())
    }

    pub fn policy_for(&self, server_port: u16) -> &PolicySpec {
        self.policy_by_server_port.iter().find(|(p, _)| *p == server_port).map_or(&self.policy, |(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::PolicyError;

    #[test]
    fn refusals_are_typed_and_name_field_value_and_range() {
        let cfg = |f: fn(&mut ProxyConfig)| {
            let mut c = ProxyConfig::default();
            f(&mut c);
            c.validate().err().unwrap()
        };
        let e = cfg(|c| c.mss1_bytes = 100);
        assert_eq!(e, ProxyConfigError::Mss1 { mss1_bytes: 100 });
        assert_eq!(e.to_string(), "mss1_bytes = 100: allowed 536..=65535");
        let e = cfg(|c| c.mss2_bytes = 1000);
        assert_eq!(e.to_string(), "mss2_bytes = 1000: allowed mss1_bytes (1400)..=65535");
        assert_eq!(cfg(|c| c.segments_per_relayed_ack = 0).to_string(), "segments_per_relayed_ack = 0: allowed 1..=16");
        assert_eq!(cfg(|c| c.segments_per_relayed_ack = 17).to_string(), "segments_per_relayed_ack = 17: allowed 1..=16");
        assert_eq!(cfg(|c| c.idle_timeout_ns = 0), ProxyConfigError::ZeroIdleTimeout);
        assert_eq!(cfg(|c| c.rtt_min_window_ns = 0), ProxyConfigError::ZeroRttMinWindow);
        assert_eq!(cfg(|c| c.local_rto_ns = Some(0)).to_string(), "local_rto_ns = 0: must be > 0 (None turns it off)");
        assert_eq!(cfg(|c| c.telemetry_max_age_ns = 0).to_string(), "telemetry_max_age_ns = 0: must be > 0");
        let e = cfg(|c| c.policy_by_server_port = vec![(443, PolicySpec::new("nope"))]);
        assert_eq!(e, ProxyConfigError::Policy(PolicyError::UnknownPolicy { policy: "nope".into() }));
        assert_eq!(e.to_string(), "flow-window policy 'nope': unknown; allowed: bdp, static, passthrough, target-queue, calibrated, rapid");
        assert!(ProxyConfig::default().validate().is_ok());
    }
}
