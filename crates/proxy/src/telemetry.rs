//! Per-UE telemetry of milliproxy.md §3 and its delivery model (§1): the gNB samples every
//! T_info; a record reaches the proxy D_info after its sample time. The caller hands records
//! over when the gNB samples them; this module holds each until t + D_info.

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// One telemetry record of one UE (milliproxy.md §3).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Telemetry {
    /// Time the gNB sampled it.
    pub t_ns: u64,
    /// RLC buffer occupancy B of this UE.
    pub rlc_bytes: u64,
    /// Achievable PHY rate R_e (full-buffer AMC).
    pub rate_bps: u64,
    pub sinr_db: f64,
    /// SINR below the outage threshold.
    pub outage: bool,
}

#[derive(Debug)]
pub struct TelemetryFeed {
    delay_ns: u64,
    period_ns: u64,
    /// Records accepted and not yet applicable, in sample-time order.
    pending: VecDeque<(Ipv4Addr, Telemetry)>,
    /// Sample time of the last accepted record per UE (T_info sub-sampling).
    last_accepted_ns: BTreeMap<Ipv4Addr, u64>,
    /// The record in force per UE.
    applied: BTreeMap<Ipv4Addr, Telemetry>,
}

impl TelemetryFeed {
    pub fn new(delay_ns: u64, period_ns: u64) -> TelemetryFeed {
        TelemetryFeed {
            delay_ns,
            period_ns,
            pending: VecDeque::new(),
            last_accepted_ns: BTreeMap::new(),
            applied: BTreeMap::new(),
        }
    }

    /// A record sampled by the gNB. Records closer than T_info to the previous accepted one
    /// of the same UE are ignored, so a caller that reports every slot still gets T_info
    /// sampling. Returns whether it was accepted.
    pub fn offer(&mut self, ue: Ipv4Addr, record: Telemetry) -> bool {
        if let Some(&last) = self.last_accepted_ns.get(&ue) {
            if record.t_ns < last + self.period_ns {
                return false;
            }
        }
        self.last_accepted_ns.insert(ue, record.t_ns);
        // Sample times arrive in order from one gNB; keep the queue sorted anyway.
        let at = self.pending.partition_point(|(_, r)| r.t_ns <= record.t_ns);
        self.pending.insert(at, (ue, record));
        true
    }

    /// When the next pending record becomes applicable.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.pending.front().map(|(_, r)| r.t_ns + self.delay_ns)
    }

    /// Applies the next record due at `now_ns`, returning its UE; call until None.
    pub fn apply_next_due(&mut self, now_ns: u64) -> Option<Ipv4Addr> {
        if self.next_due_ns()? > now_ns {
            return None;
        }
        let (ue, record) = self.pending.pop_front()?;
        self.applied.insert(ue, record);
        Some(ue)
    }

    /// The record in force for `ue` (the latest one whose t + D_info has passed).
    pub fn current(&self, ue: Ipv4Addr) -> Option<&Telemetry> {
        self.applied.get(&ue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UE: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);

    fn rec(t_ns: u64, rlc_bytes: u64) -> Telemetry {
        Telemetry { t_ns, rlc_bytes, ..Telemetry::default() }
    }

    #[test]
    fn held_until_sample_time_plus_delay() {
        let mut f = TelemetryFeed::new(3_000_000, 1_000_000);
        assert!(f.offer(UE, rec(10_000_000, 7)));
        assert_eq!(f.next_due_ns(), Some(13_000_000));
        assert_eq!(f.apply_next_due(12_999_999), None);
        assert!(f.current(UE).is_none());
        assert_eq!(f.apply_next_due(13_000_000), Some(UE));
        assert_eq!(f.current(UE).unwrap().rlc_bytes, 7);
    }

    #[test]
    fn sub_sampled_at_t_info() {
        let mut f = TelemetryFeed::new(0, 1_000_000);
        assert!(f.offer(UE, rec(0, 1)));
        assert!(!f.offer(UE, rec(500_000, 2)));
        assert!(f.offer(UE, rec(1_000_000, 3)));
    }
}
