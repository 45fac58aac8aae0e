//! Flow-window policies (docs/proxy.md#flow-window-policies): one trait, a registry by name. Adding a policy is
//! a file in this folder plus one line in `REGISTRY`.

mod bdp;
mod calibrated;
mod passthrough;
mod rapid;
mod static_fw;
mod target_queue;

use millinet_wire::Telemetry;
pub use target_queue::{DEFAULT_GAIN, DEFAULT_RTT_FRACTION, DEFAULT_TARGET_DELAY_S};

use crate::error::PolicyError;
use crate::rtt::RttEstimates;

/// What a policy may look at (docs/proxy.md#writing-a-flow-window-policy).
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
    /// Bytes of the flow received from the server so far (the offset past the highest).
    pub server_bytes: u64,
    /// The UE's other flows.
    pub siblings: Siblings,
}

/// What a flow's policy sees of the other flows of its UE, which share its RLC buffer, its
/// rate and its telemetry record (docs/proxy.md, "Several flows per UE").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Siblings {
    /// The UE's other flows with a proxy instance.
    pub flows: u32,
    /// Their server bytes held by the proxy, not yet acknowledged by the UE.
    pub outstanding_bytes: u64,
    /// Bytes the UE has acknowledged on them.
    pub acked_bytes: u64,
    /// Of them, the flows whose policy yields part of its share
    /// (`FlowWindowPolicy::surplus_bytes`), and the bytes they yield together.
    pub yielding: u32,
    pub surplus_bytes: u64,
}

impl Siblings {
    pub fn plus(&self, other: &Siblings) -> Siblings {
        Siblings {
            flows: self.flows + other.flows,
            outstanding_bytes: self.outstanding_bytes + other.outstanding_bytes,
            acked_bytes: self.acked_bytes + other.acked_bytes,
            yielding: self.yielding + other.yielding,
            surplus_bytes: self.surplus_bytes + other.surplus_bytes,
        }
    }

    /// The sum less one of its terms.
    pub fn minus(&self, part: &Siblings) -> Siblings {
        Siblings {
            flows: self.flows - part.flows,
            outstanding_bytes: self.outstanding_bytes - part.outstanding_bytes,
            acked_bytes: self.acked_bytes - part.acked_bytes,
            yielding: self.yielding - part.yielding,
            surplus_bytes: self.surplus_bytes - part.surplus_bytes,
        }
    }
}

/// A UE's window (what all its flows together may have outstanding: the policies compute it
/// from the UE's rate, RTT and RLC queue, which the flows share) as one flow's: an equal share
/// at least, and whatever the other flows leave unused, max(W / n, W − their outstanding
/// bytes). Backlogged flows get equal windows whatever their congestion controls, so no flow
/// takes another's room in the shared RLC queue (CUBIC would, over BBR); a flow that cannot
/// use its share (application-limited, in slow start) leaves it to the others. With one flow
/// it is W.
pub fn flow_share(ue_window_bytes: u64, siblings: &Siblings) -> u64 {
    let equal = ue_window_bytes / (u64::from(siblings.flows) + 1);
    equal.max(ue_window_bytes.saturating_sub(siblings.outstanding_bytes))
}

/// Computes the flow window FW in bytes; 0 is legal (the server then probes a zero window).
pub trait FlowWindowPolicy: Send {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64;

    /// Bytes of its share this flow leaves to the UE's other flows, if it yields any
    /// (`rapid`'s slow flows); `Siblings::surplus_bytes` adds them up.
    fn surplus_bytes(&self) -> Option<u64> {
        None
    }
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
    ("rapid", rapid::build),
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
            server_bytes: 0,
            siblings: super::Siblings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ues_window_is_shared_equally_or_left_to_whoever_can_use_it() {
        let w = 1_000_000;
        let others = |flows, outstanding_bytes| Siblings { flows, outstanding_bytes, ..Siblings::default() };
        // Alone: the whole window.
        assert_eq!(flow_share(w, &Siblings::default()), w);
        // One other flow using none of it: all of it; using 300 000: the remaining 700 000;
        // using 900 000: still the equal half.
        assert_eq!(flow_share(w, &others(1, 0)), w);
        assert_eq!(flow_share(w, &others(1, 300_000)), 700_000);
        assert_eq!(flow_share(w, &others(1, 900_000)), 500_000);
        // Three others holding 2 MB between them: a quarter.
        assert_eq!(flow_share(w, &others(3, 2_000_000)), 250_000);
        // Two backlogged flows that each hold what they are given settle at equal halves:
        // from any split, each update moves the window toward W / 2.
        let (mut a, mut b) = (900_000u64, 100_000u64);
        for _ in 0..4 {
            (a, b) = (flow_share(w, &others(1, b)), flow_share(w, &others(1, a)));
        }
        assert!(a.abs_diff(500_000) <= 1 && b.abs_diff(500_000) <= 1, "{a} {b}");
        // A sum and its parts.
        let x = Siblings { flows: 1, outstanding_bytes: 5, acked_bytes: 7, yielding: 1, surplus_bytes: 3 };
        let y = Siblings { flows: 1, outstanding_bytes: 2, acked_bytes: 1, yielding: 0, surplus_bytes: 0 };
        assert_eq!(x.plus(&y).minus(&y), x);
    }

    #[test]
    fn unknown_names_and_parameters_are_clear_errors() {
        let e = PolicySpec::new("bbr").build().err().unwrap();
        assert_eq!(e, PolicyError::UnknownPolicy { policy: "bbr".into() });
        assert_eq!(e.to_string(), "flow-window policy 'bbr': unknown; allowed: bdp, static, passthrough, target-queue, calibrated, rapid");
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
