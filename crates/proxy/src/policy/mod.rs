//! Flow-window policies (milliproxy.md §4): one trait, a registry by name. Adding a policy is
//! a file in this folder plus one line in `REGISTRY`.

mod bdp;
mod calibrated;
mod passthrough;
mod static_fw;
mod target_queue;

use millinet_wire::Telemetry;
pub use target_queue::{DEFAULT_GAIN, DEFAULT_RTT_FRACTION, DEFAULT_TARGET_DELAY_S};

use crate::error::PolicyError;
use crate::rtt::RttEstimates;

/// What a policy may look at (milliproxy.md §4 "Interface").
#[derive(Clone, Copy, Debug)]
pub struct PolicyInput<'a> {
    pub now_ns: u64,
    /// The UE's telemetry in force (already D_info old), if any has arrived.
    pub telemetry: Option<&'a Telemetry>,
    pub rtt: RttEstimates,
    /// Server payload held by the instance (not yet acknowledged by the UE).
    pub buffered_bytes: u64,
    /// Bytes forwarded toward the UE and not yet acknowledged.
    pub in_flight_bytes: u64,
    /// The UE's own advertised receive window, in bytes (after scaling).
    pub ue_window_bytes: u64,
    /// Bytes of the flow the UE has acknowledged so far (a stream offset).
    pub ue_acked_bytes: u64,
}

/// Computes the flow window FW in bytes; 0 is legal (the server then probes a zero window).
pub trait FlowWindowPolicy: Send {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64;
}

/// A policy selected by name with numeric parameters, e.g. `bdp` with
/// `[("threshold_bytes", 2e6)]`. Unknown names and parameters are errors.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySpec {
    pub name: String,
    pub params: Vec<(String, f64)>,
}

impl PolicySpec {
    pub fn new(name: &str) -> PolicySpec {
        PolicySpec { name: name.to_string(), params: Vec::new() }
    }

    pub fn with(mut self, key: &str, value: f64) -> PolicySpec {
        self.params.push((key.to_string(), value));
        self
    }

    /// Builds an instance of the policy (once per flow, never per packet).
    pub fn build(&self) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
        let Some((_, constructor)) = REGISTRY.iter().find(|(name, _)| *name == self.name) else {
            return Err(PolicyError::UnknownPolicy { policy: self.name.clone() });
        };
        constructor(&Params { policy: &self.name, given: &self.params })
    }
}

/// Parameters handed to a policy constructor, with checked access.
pub struct Params<'a> {
    policy: &'a str,
    given: &'a [(String, f64)],
}

impl Params<'_> {
    /// Checks that every given parameter is one of `allowed`.
    pub fn only(&self, allowed: &'static [&'static str]) -> Result<(), PolicyError> {
        match self.given.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => Err(PolicyError::UnknownParameter { policy: self.policy.to_string(), parameter: k.clone(), allowed }),
            None => Ok(()),
        }
    }

    /// A non-negative byte count, or `default` when absent.
    pub fn bytes(&self, key: &'static str, default: Option<u64>) -> Result<u64, PolicyError> {
        match (self.given.iter().find(|(k, _)| k == key), default) {
            (Some((_, v)), _) if v.is_finite() && *v >= 0.0 => Ok(*v as u64),
            (Some((_, v)), _) => Err(PolicyError::NotAByteCount { policy: self.policy.to_string(), parameter: key, value: *v }),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(PolicyError::MissingParameter { policy: self.policy.to_string(), parameter: key }),
        }
    }
}

impl Params<'_> {
    /// A finite number within `range` (inclusive), or `default` when absent.
    pub fn number(&self, key: &'static str, default: f64, range: (f64, f64), allowed: &'static str) -> Result<f64, PolicyError> {
        match self.given.iter().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, v)) if v.is_finite() && (range.0..=range.1).contains(v) => Ok(*v),
            Some((_, v)) => Err(PolicyError::OutOfRange { policy: self.policy.to_string(), parameter: key, value: *v, allowed }),
        }
    }
}

type Constructor = fn(&Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError>;

/// Every policy by name.
pub const REGISTRY: &[(&str, Constructor)] = &[
    ("bdp", bdp::build),
    ("static", static_fw::build),
    ("passthrough", passthrough::build),
    ("target-queue", target_queue::build),
    ("calibrated", calibrated::build),
];

/// What the policies' unit tests feed them.
#[cfg(test)]
mod testing {
    use super::PolicyInput;
    use crate::rtt::RttEstimates;
    use millinet_wire::Telemetry;

    /// An input with RTT_min `rtt_min_ns`, `telemetry` and a 1 GiB UE window.
    pub fn input(rtt_min_ns: Option<u64>, telemetry: Option<&Telemetry>) -> PolicyInput<'_> {
        PolicyInput {
            now_ns: 0,
            telemetry,
            rtt: RttEstimates { min_ns: rtt_min_ns, ..RttEstimates::default() },
            buffered_bytes: 0,
            in_flight_bytes: 0,
            ue_window_bytes: 1 << 30,
            ue_acked_bytes: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_and_parameters_are_clear_errors() {
        let e = PolicySpec::new("bbr").build().err().unwrap();
        assert_eq!(e, PolicyError::UnknownPolicy { policy: "bbr".into() });
        assert_eq!(e.to_string(), "flow-window policy 'bbr': unknown; allowed: bdp, static, passthrough, target-queue, calibrated");
        let e = PolicySpec::new("bdp").with("thresh", 1.0).build().err().unwrap();
        assert!(matches!(&e, PolicyError::UnknownParameter { parameter, .. } if parameter == "thresh"), "{e:?}");
        assert_eq!(e.to_string(), "flow-window policy 'bdp': unknown parameter 'thresh'; allowed: start_bytes, threshold_bytes");
        let e = PolicySpec::new("static").build().err().unwrap();
        assert_eq!(e, PolicyError::MissingParameter { policy: "static".into(), parameter: "fw_bytes" });
        assert_eq!(e.to_string(), "flow-window policy 'static': parameter 'fw_bytes' is required");
        let e = PolicySpec::new("static").with("fw_bytes", -1.0).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'static': fw_bytes = -1: must be a finite number ≥ 0");
    }
}
