//! Why a configuration is refused. Each `Display` is one message naming the field, the value
//! and what is allowed; the engine shows them to users after "proxy: ", word for word.

use std::fmt;

/// A flow-window policy could not be built from its `PolicySpec` (docs/proxy.md#flow-window-policies).
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyError {
    UnknownPolicy {
        policy: String,
    },
    UnknownParameter {
        policy: String,
        parameter: String,
        allowed: &'static [&'static str],
    },
    /// A byte count that is negative, infinite or NaN.
    NotAByteCount {
        policy: String,
        parameter: &'static str,
        value: f64,
    },
    MissingParameter {
        policy: String,
        parameter: &'static str,
    },
    /// A number outside what the parameter allows (`allowed` says what that is).
    OutOfRange {
        policy: String,
        parameter: &'static str,
        value: f64,
        allowed: &'static str,
    },
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownPolicy { policy } => {
                let known: Vec<&str> = crate::policy::REGISTRY.iter().map(|(name, _)| *name).collect();
                write!(f, "flow-window policy '{policy}': unknown; allowed: {}", known.join(", "))
            }
            PolicyError::UnknownParameter { policy, parameter, allowed } => {
                write!(f, "flow-window policy '{policy}': unknown parameter '{parameter}'; allowed: {}", allowed.join(", "))
            }
            PolicyError::NotAByteCount { policy, parameter, value } => {
                write!(f, "flow-window policy '{policy}': {parameter} = {value}: must be a finite number ≥ 0")
            }
            PolicyError::MissingParameter { policy, parameter } => {
                write!(f, "flow-window policy '{policy}': parameter '{parameter}' is required")
            }
            PolicyError::OutOfRange { policy, parameter, value, allowed } => {
                write!(f, "flow-window policy '{policy}': {parameter} = {value}: allowed {allowed}")
            }
        }
    }
}

impl std::error::Error for PolicyError {}

/// `ProxyConfig::validate` (and so `Proxy::new`) refused the configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum ProxyConfigError {
    /// Outside 536..=65535.
    Mss1 {
        mss1_bytes: u32,
    },
    /// Outside mss1_bytes..=65535.
    Mss2 {
        mss2_bytes: u32,
        mss1_bytes: u32,
    },
    /// Outside 1..=MAX_SEGMENTS_PER_RELAYED_ACK.
    SegmentsPerRelayedAck {
        segments: u32,
    },
    ZeroIdleTimeout,
    ZeroRttMinWindow,
    /// `Some(0)`: the timer is turned off with `None`.
    ZeroLocalRto,
    ZeroTelemetryMaxAge,
    Policy(PolicyError),
}

impl fmt::Display for ProxyConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyConfigError::Mss1 { mss1_bytes } => write!(f, "mss1_bytes = {mss1_bytes}: allowed 536..=65535"),
            ProxyConfigError::Mss2 { mss2_bytes, mss1_bytes } => {
                write!(f, "mss2_bytes = {mss2_bytes}: allowed mss1_bytes ({mss1_bytes})..=65535")
            }
            ProxyConfigError::SegmentsPerRelayedAck { segments } => {
                write!(f, "segments_per_relayed_ack = {segments}: allowed 1..={}", crate::config::MAX_SEGMENTS_PER_RELAYED_ACK)
            }
            ProxyConfigError::ZeroIdleTimeout => f.write_str("idle_timeout_ns = 0: must be > 0"),
            ProxyConfigError::ZeroRttMinWindow => f.write_str("rtt_min_window_ns = 0: must be > 0"),
            ProxyConfigError::ZeroLocalRto => f.write_str("local_rto_ns = 0: must be > 0 (None turns it off)"),
            ProxyConfigError::ZeroTelemetryMaxAge => f.write_str("telemetry_max_age_ns = 0: must be > 0"),
            ProxyConfigError::Policy(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ProxyConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProxyConfigError::Policy(e) => Some(e),
            _ => None,
        }
    }
}

impl From<PolicyError> for ProxyConfigError {
    fn from(e: PolicyError) -> Self {
        ProxyConfigError::Policy(e)
    }
}

/// `SplitConfig::validate` (and so `SplitProxy::new`) refused the configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitConfigError {
    /// The buffer cannot hold one segment toward the UE.
    BufferBelowMss { buffer_bytes: u64, mss_bytes: u32 },
    /// The TCP configuration toward the UE, refused by `millinet_transport`.
    Downstream(millinet_transport::TcpError),
}

impl fmt::Display for SplitConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitConfigError::BufferBelowMss { buffer_bytes, mss_bytes } => {
                write!(f, "buffer_bytes = {buffer_bytes}: allowed at least the MSS toward the UE ({mss_bytes})")
            }
            SplitConfigError::Downstream(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SplitConfigError {}
