//! `rapid`: the flow control of RAPID (M. Diarra, A. Ismail, T. Turletti, W. Dabbous,
//! "RAN-aware Proxy-based Flow Control for High Throughput and Low Delay eMBB", 2021/2022),
//! as its authors' ns-3 code computes it, on milliProxy's inputs (docs/proxy.md, "rapid").
//!
//! The UE's rate is split equally among its flows, and a flow that does not use its share
//! ("slow": an interactive or application-limited flow) is held to what it uses, the rest
//! going to the others:
//!
//!   rw = max(16 384, R · RTT / 8 / n),  n the UE's flows,
//!   FW = demand          for a slow flow,
//!   FW = rw + Σ_slow max(rw − demand_j, 0) / (n − n_slow)   for the others.
//!
//! A flow's arrival rate is measured over sub-intervals of its server-side RTT (RTT_up, 2·d
//! in the paper's code), smoothed as ema = 0.6 · sample + 0.4 · ema. An epoch lasts as long
//! as slow start would take to reach the window in force at its start, thresh: krt = ⌈1 +
//! log2(thresh / MSS)⌉ sub-intervals. At its end the flow is slow if the last sub-interval's
//! arrival rate is below 0.85 of the rate thresh allows (thresh / RTT_up), and then its demand
//! is (ema / (thresh / RTT_up)) · thresh.
//!
//! Choices where the code differs from what milliProxy has (docs/proxy.md lists them): R is
//! the telemetry's R_e, not a rate from the last MCS with the code's calibration constants;
//! RTT is milliProxy's RTT_min (RTT_down + RTT_up), the code's rttRAN + 2·d; the surplus of a
//! slow flow counts only when its demand is below rw (the code takes |rw − demand|); RAPID
//! also sets its own congestion window toward the UE (it is a split proxy), milliProxy has
//! none; without telemetry the UE's own window, as every milliProxy policy.

use super::{FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

/// The code's floor on rw.
const MIN_WINDOW_BYTES: u64 = 16_384;
/// Below this fraction of the rate its window allows, a flow is slow.
const SLOW_FRACTION: f64 = 0.85;
/// Weight of the newest sub-interval in the arrival rate's average.
const EMA_WEIGHT: f64 = 0.6;
const DEFAULT_MSS_BYTES: u64 = 1400;

pub struct Rapid {
    mss_bytes: u64,
    /// The sub-interval under way: its start and the server bytes received by then.
    interval: Option<(u64, u64)>,
    /// The epoch under way: its end and thresh.
    epoch: Option<(u64, u64)>,
    /// The last sub-interval's arrival rate and the smoothed one, bytes per second.
    last_rate: f64,
    ema_rate: Option<f64>,
    /// The window a slow flow is held to; None while the flow is not slow.
    demand_bytes: Option<u64>,
    /// What a slow flow leaves of its share to the UE's other flows: max(rw − demand, 0).
    surplus_bytes: Option<u64>,
    /// FW as last computed (thresh of the next epoch).
    last_fw_bytes: u64,
}

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&["mss_bytes"])?;
    Ok(Box::new(Rapid {
        mss_bytes: params.bytes("mss_bytes", Some(DEFAULT_MSS_BYTES))?.max(1),
        interval: None,
        epoch: None,
        last_rate: 0.0,
        ema_rate: None,
        demand_bytes: None,
        surplus_bytes: None,
        last_fw_bytes: 0,
    }))
}

impl Rapid {
    /// Sub-intervals of RTT_up: the arrival rate and its average; at an epoch's end, whether
    /// the flow is slow and its demand.
    fn measure(&mut self, now_ns: u64, server_bytes: u64, rtt_up_ns: u64) {
        let (start_ns, start_bytes) = *self.interval.get_or_insert((now_ns, server_bytes));
        if now_ns - start_ns >= rtt_up_ns {
            self.last_rate = server_bytes.saturating_sub(start_bytes) as f64 * 1e9 / (now_ns - start_ns) as f64;
            let ema = self.ema_rate.map_or(self.last_rate, |ema| EMA_WEIGHT * self.last_rate + (1.0 - EMA_WEIGHT) * ema);
            self.ema_rate = Some(ema);
            self.interval = Some((now_ns, server_bytes));
        }
        let (end_ns, thresh) =
            *self.epoch.get_or_insert_with(|| (now_ns + epoch_ns(self.last_fw_bytes, self.mss_bytes, rtt_up_ns), self.last_fw_bytes));
        if now_ns < end_ns {
            return;
        }
        let expected = thresh as f64 * 1e9 / rtt_up_ns as f64;
        self.demand_bytes = match self.ema_rate {
            Some(ema) if expected > 0.0 && self.last_rate < SLOW_FRACTION * expected => Some(((ema / expected) * thresh as f64) as u64),
            _ => None,
        };
        let thresh = self.demand_bytes.unwrap_or(self.last_fw_bytes);
        self.epoch = Some((now_ns + epoch_ns(thresh, self.mss_bytes, rtt_up_ns), thresh));
    }
}

/// krt sub-intervals of `rtt_up_ns`: as many as slow start takes to reach `thresh_bytes`.
fn epoch_ns(thresh_bytes: u64, mss_bytes: u64, rtt_up_ns: u64) -> u64 {
    let krt = (1.0 + (thresh_bytes.max(mss_bytes) as f64 / mss_bytes as f64).log2()).ceil();
    (krt * rtt_up_ns as f64) as u64
}

impl FlowWindowPolicy for Rapid {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64 {
        let (Some(telemetry), Some(rtt_min_ns), Some(rtt_up_ns)) = (input.telemetry, input.rtt.min_ns, input.rtt.up_ns) else {
            return input.ue_window_bytes;
        };
        self.measure(input.now_ns, input.server_bytes, rtt_up_ns.max(1));
        let siblings = &input.siblings;
        let flows = u64::from(siblings.flows) + 1;
        let rw = ((telemetry.rate_bps.max(0.0) / 8.0 * rtt_min_ns as f64 * 1e-9) as u64 / flows).max(MIN_WINDOW_BYTES);
        self.surplus_bytes = self.demand_bytes.map(|demand| rw.saturating_sub(demand));
        let fw = match self.demand_bytes {
            Some(demand) => demand,
            None => rw + siblings.surplus_bytes / (flows - u64::from(siblings.yielding)).max(1),
        };
        self.last_fw_bytes = fw;
        fw
    }

    fn surplus_bytes(&self) -> Option<u64> {
        self.surplus_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::input;
    use super::super::{PolicySpec, Siblings};
    use super::*;
    use crate::rtt::RttEstimates;
    use millinet_wire::Telemetry;

    const MS: u64 = 1_000_000;

    fn at(rate_bps: f64) -> Telemetry {
        Telemetry { rate_bps, ..Telemetry::default() }
    }

    /// RTT_min 10 ms, RTT_up 4 ms, R_e 1 Gbit/s, `siblings`, at `now_ns` with `server_bytes`.
    fn fw(p: &mut Box<dyn FlowWindowPolicy>, now_ns: u64, server_bytes: u64, siblings: Siblings) -> u64 {
        let t = at(1e9);
        let mut i = input(Some(10 * MS), Some(&t));
        i.rtt = RttEstimates { min_ns: Some(10 * MS), up_ns: Some(4 * MS), down_ns: Some(6 * MS) };
        i.now_ns = now_ns;
        i.server_bytes = server_bytes;
        i.siblings = siblings;
        p.flow_window_bytes(&i)
    }

    #[test]
    fn equal_shares_of_the_ues_bdp_and_what_slow_flows_leave() {
        let mut p = PolicySpec::new("rapid").build().unwrap();
        // One flow: R_e · RTT = 1 Gbit/s · 10 ms / 8 = 1 250 000 bytes.
        assert_eq!(fw(&mut p, 0, 0, Siblings::default()), 1_250_000);
        // Two: 625 000 each.
        let one = Siblings { flows: 1, ..Siblings::default() };
        assert_eq!(fw(&mut p, 0, 0, one), 625_000);
        // The other is slow and yields 500 000: rw + 500 000 / (2 − 1).
        let slow = Siblings { flows: 1, yielding: 1, surplus_bytes: 500_000, ..Siblings::default() };
        assert_eq!(fw(&mut p, 0, 0, slow), 1_125_000);
        // Three flows, one slow yielding 300 000: 416 666 + 300 000 / 2.
        let three = Siblings { flows: 2, yielding: 1, surplus_bytes: 300_000, ..Siblings::default() };
        assert_eq!(fw(&mut p, 0, 0, three), 416_666 + 150_000);
        // The 16 384-byte floor at a low rate; no telemetry: the UE's own window.
        let t = at(1e6);
        let mut i = input(Some(10 * MS), Some(&t));
        i.rtt.up_ns = Some(4 * MS);
        assert_eq!(p.flow_window_bytes(&i), 16_384);
        i.telemetry = None;
        assert_eq!(p.flow_window_bytes(&i), 1 << 30);
    }

    #[test]
    fn a_flow_that_sends_a_tenth_of_its_share_is_held_to_its_demand_and_yields_the_rest() {
        let mut p = PolicySpec::new("rapid").build().unwrap();
        let (mut now, mut received) = (0, 0);
        let one = Siblings { flows: 1, ..Siblings::default() };
        // The server sends 62 500 bytes per 4 ms RTT_up: a tenth of the 625 000 its share
        // allows per RTT_up. An epoch at the share is ⌈1 + log2(625 000 / 1400)⌉ = 10
        // sub-intervals; at its end the flow is slow, held to (ema / expected) · thresh =
        // 62 500 and yielding the rest. Measured against that window in the next epoch it is
        // no longer slow and gets its share back, to be measured again: RAPID's code probes so.
        let mut windows = Vec::new();
        for _ in 0..400 {
            windows.push((fw(&mut p, now, received, one), p.surplus_bytes()));
            now += MS;
            received += 62_500 / 4;
        }
        let held: Vec<_> = windows.iter().filter(|(w, _)| *w < 625_000).collect();
        assert!(held.len() > 100, "held in {} of 400 calls", held.len());
        for (w, surplus) in held {
            assert!((*w as f64 - 62_500.0).abs() < 0.02 * 62_500.0, "{w}");
            assert_eq!(*surplus, Some(625_000 - w));
        }
        assert!(windows.iter().all(|(w, s)| *w < 625_000 || (*w == 625_000 && s.is_none())));
        let mut window = 0;
        // A flow that fills its window per RTT_up stays a fair-share flow.
        let mut q = PolicySpec::new("rapid").build().unwrap();
        let (mut now, mut received) = (0, 0);
        for _ in 0..200 {
            window = fw(&mut q, now, received, one);
            now += MS;
            received += 625_000 / 4;
        }
        assert_eq!((window, q.surplus_bytes()), (625_000, None));
    }
}
