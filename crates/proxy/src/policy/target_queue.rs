//! `target-queue`: a flow window that steers the UE's RLC buffer toward a small standing queue
//! instead of switching at a threshold (docs/proxy.md#flow-window-policies).
//!
//!   FW = BDP + Q* − g · (B − Q*), never below 0,
//!   BDP = RTT_min · R_e / 8 (as `bdp`), Q* = R_e · d* / 8,
//!
//! d* the target queueing delay, max(d_min, f · RTT_min) with d_min `target_delay_s` (default
//! 3 ms) and f `rtt_fraction` (default 0.15), and g the gain on the queue's error (default 0.5);
//! docs/proxy.md gives the measurements these defaults come from. Why f: the standing queue
//! covers a rate that rises before the server, one RTT away, can follow, so on long paths it
//! has to last longer (docs/studies.md: at D_RS 20 ms a 3 ms queue ran dry). Why: the `bdp` rule's R_e is the PHY's achievable rate, above
//! what the stack delivers, so a queue builds up to its threshold, where FW falls by 2·B at once
//! and the radio starves (docs/studies.md, the limit cycle). Here FW is continuous in B: each
//! byte of queue above Q* takes g bytes off the window, so the queue settles where the surplus
//! of the estimate is absorbed, B = Q* + (BDP − true BDP) / (1 + g), and Q* keeps the radio fed
//! when the rate rises. A gain below 1 keeps the loop, which sees B one RTT late, from
//! overcorrecting. The window is the UE's, shared among its flows (`flow_share`): R_e, B and
//! Q* are the UE's. Without an RTT estimate FW is the start value; without fresh telemetry the
//! UE's own window (as `bdp`). In outage R_e = 0: FW = 0, the server probes the zero window.

use super::bdp::DEFAULT_START_BYTES;
use super::{flow_share, FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

/// d_min, f and g as the milliproxy study validated them for `calibrated` over its full grid
/// (docs/studies.md, "Both TCP profiles, the full grid"): d* = max(3 ms, 0.15 · RTT_min).
pub const DEFAULT_TARGET_DELAY_S: f64 = 0.003;
pub const DEFAULT_RTT_FRACTION: f64 = 0.15;
pub const DEFAULT_GAIN: f64 = 0.5;

pub struct TargetQueue {
    start_bytes: u64,
    target: TargetDelay,
    gain: f64,
}

/// d* = max(d_min, f · RTT_min).
#[derive(Clone, Copy, Debug)]
pub(super) struct TargetDelay {
    pub min_s: f64,
    pub rtt_fraction: f64,
}

impl TargetDelay {
    /// `target_delay_s` and `rtt_fraction` of the policy's parameters.
    pub(super) fn from_params(params: &Params) -> Result<TargetDelay, PolicyError> {
        Ok(TargetDelay {
            min_s: params.number("target_delay_s", DEFAULT_TARGET_DELAY_S, (0.0, 10.0), "0 to 10 seconds")?,
            rtt_fraction: params.number("rtt_fraction", DEFAULT_RTT_FRACTION, (0.0, 1.0), "0 to 1")?,
        })
    }

    /// d* in seconds; `rtt_min_ns` None before the first RTT estimate.
    pub(super) fn seconds(&self, rtt_min_ns: Option<u64>) -> f64 {
        let from_rtt = rtt_min_ns.map_or(0.0, |ns| self.rtt_fraction * ns as f64 * 1e-9);
        self.min_s.max(from_rtt)
    }
}

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&["start_bytes", "target_delay_s", "rtt_fraction", "gain"])?;
    Ok(Box::new(TargetQueue {
        start_bytes: params.bytes("start_bytes", Some(DEFAULT_START_BYTES))?,
        target: TargetDelay::from_params(params)?,
        gain: params.number("gain", DEFAULT_GAIN, (0.0, 1.0), "0 to 1")?,
    }))
}

impl FlowWindowPolicy for TargetQueue {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64 {
        let Some(rtt_min_ns) = input.rtt.min_ns else {
            return self.start_bytes;
        };
        let Some(telemetry) = input.telemetry else {
            return input.ue_window_bytes;
        };
        let target_delay_s = self.target.seconds(Some(rtt_min_ns));
        flow_share(queue_steering_window(rtt_min_ns, telemetry.rate_bps, telemetry.rlc_bytes, target_delay_s, self.gain), &input.siblings)
    }
}

/// FW = BDP + Q* − g · (B − Q*), never below 0, with BDP = RTT_min · R / 8 and
/// Q* = R · d* / 8 for a rate R in bit/s: the window of `target-queue` (R = R_e) and of
/// `calibrated` (R = η · R_e).
pub(super) fn queue_steering_window(rtt_min_ns: u64, rate_bps: f64, rlc_bytes: u64, target_delay_s: f64, gain: f64) -> u64 {
    let rate_bytes_per_s = rate_bps.max(0.0) / 8.0;
    let bdp = rtt_min_ns as f64 * 1e-9 * rate_bytes_per_s;
    let target = target_delay_s * rate_bytes_per_s;
    let error = rlc_bytes as f64 - target;
    // `as` saturates: a negative window is 0.
    (bdp + target - gain * error) as u64
}

#[cfg(test)]
mod tests {
    use super::super::testing::input;
    use super::super::PolicySpec;
    use super::*;
    use millinet_wire::Telemetry;

    fn at(rlc_bytes: u64, rate_bps: f64) -> Telemetry {
        Telemetry { rate_bps, rlc_bytes, ..Telemetry::default() }
    }

    #[test]
    fn the_target_delay_grows_with_rtt_min_beyond_its_floor() {
        // 1 Gbit/s = 125 MB/s, B at 0. d* = max(2 ms, RTT_min / 8).
        let mut p =
            PolicySpec::new("target-queue").with("target_delay_s", 0.002).with("rtt_fraction", 0.125).with("gain", 0.5).build().unwrap();
        // RTT_min 8 ms: RTT_min/8 = 1 ms < 2 ms, d* = 2 ms: BDP 1 000 000 + Q* 250 000 + 0.5 · 250 000.
        assert_eq!(p.flow_window_bytes(&input(Some(8_000_000), Some(&at(0, 1e9)))), 1_375_000);
        // RTT_min 40 ms: d* = 5 ms: BDP 5 000 000 + Q* 625 000 + 0.5 · 625 000.
        assert_eq!(p.flow_window_bytes(&input(Some(40_000_000), Some(&at(0, 1e9)))), 5_937_500);
        // f = 0: d* stays 2 ms at 40 ms, BDP 5 000 000 + 250 000 + 125 000.
        let mut p = PolicySpec::new("target-queue").with("target_delay_s", 0.002).with("rtt_fraction", 0.0).build().unwrap();
        assert_eq!(p.flow_window_bytes(&input(Some(40_000_000), Some(&at(0, 1e9)))), 5_375_000);
        let e = PolicySpec::new("target-queue").with("rtt_fraction", 1.5).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'target-queue': rtt_fraction = 1.5: allowed 0 to 1");
    }

    #[test]
    fn hand_computed_values() {
        let mut p = PolicySpec::new("target-queue").with("target_delay_s", 0.005).build().unwrap();
        // 1 Gbit/s = 125 MB/s; RTT_min 30 ms: BDP 3 750 000 B; Q* = 5 ms · 125 MB/s = 625 000 B.
        let rtt = Some(30_000_000);
        // B at the target: FW = BDP + Q* = 4 375 000.
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(625_000, 1e9)))), 4_375_000);
        // An empty RLC: 4 375 000 + 0.5 · 625 000 = 4 687 500.
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(0, 1e9)))), 4_687_500);
        // 1 MB above the target: 4 375 000 − 0.5 · 1 000 000 = 3 875 000.
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(1_625_000, 1e9)))), 3_875_000);
        // 10 MB: 4 375 000 − 0.5 · 9 375 000 < 0 → 0.
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(10_000_000, 1e9)))), 0);
        // Outage (R_e = 0): no BDP, no target; any queue gives 0.
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(0, 0.0)))), 0);
        assert_eq!(p.flow_window_bytes(&input(rtt, Some(&at(50_000, 0.0)))), 0);
        // No RTT estimate: the start value; no fresh telemetry: the UE's own window.
        assert_eq!(p.flow_window_bytes(&input(None, Some(&at(0, 1e9)))), 400_000_000);
        assert_eq!(p.flow_window_bytes(&input(rtt, None)), 1 << 30);
        // The default d* is max(3 ms, 0.15 · 30 ms) = 4.5 ms: Q* = 562 500 B, FW at an empty RLC
        // 3 750 000 + 562 500 + 0.5 · 562 500; at RTT_min 10 ms the 3 ms floor: Q* = 375 000 B,
        // FW 1 250 000 + 375 000 + 187 500.
        let mut default = PolicySpec::new("target-queue").build().unwrap();
        assert_eq!(default.flow_window_bytes(&input(rtt, Some(&at(0, 1e9)))), 4_593_750);
        assert_eq!(default.flow_window_bytes(&input(Some(10_000_000), Some(&at(0, 1e9)))), 1_812_500);
    }

    #[test]
    fn parameters_and_their_ranges() {
        let mut p =
            PolicySpec::new("target-queue").with("target_delay_s", 0.0).with("rtt_fraction", 0.0).with("gain", 1.0).build().unwrap();
        // d* = 0, g = 1: FW = BDP − B = 3 750 000 − 1 000 000.
        assert_eq!(p.flow_window_bytes(&input(Some(30_000_000), Some(&at(1_000_000, 1e9)))), 2_750_000);
        let e = PolicySpec::new("target-queue").with("gain", 1.5).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'target-queue': gain = 1.5: allowed 0 to 1");
        let e = PolicySpec::new("target-queue").with("target_delay_s", f64::NAN).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'target-queue': target_delay_s = NaN: allowed 0 to 10 seconds");
    }

    #[test]
    fn the_window_is_continuous_in_the_queue_where_bdp_jumps() {
        // Over B from 0 to 8 MB in 1 kB steps at 2.4 Gbit/s and 20 ms: target-queue's FW never
        // moves by more than g · 1 kB a step and never rises with B; bdp's falls by about 4 MB
        // at its 2 MB threshold.
        let (mut target, mut bdp) = (PolicySpec::new("target-queue").build().unwrap(), PolicySpec::new("bdp").build().unwrap());
        let fw = |p: &mut Box<dyn FlowWindowPolicy>, b: u64| p.flow_window_bytes(&input(Some(20_000_000), Some(&at(b, 2.4e9))));
        let steps: Vec<u64> = (0..=8_000).map(|k| k * 1_000).collect();
        let mut largest_bdp_step = 0;
        for w in steps.windows(2) {
            let (before, after) = (fw(&mut target, w[0]), fw(&mut target, w[1]));
            assert!(after <= before && before - after <= 501, "B {} → {}: FW {before} → {after}", w[0], w[1]);
            largest_bdp_step = largest_bdp_step.max(fw(&mut bdp, w[0]).saturating_sub(fw(&mut bdp, w[1])));
        }
        assert!(largest_bdp_step > 3_900_000, "{largest_bdp_step}");
    }
}
