//! `calibrated`: `target-queue`'s window on a rate that is calibrated against what the UE
//! actually receives (docs/proxy.md, "calibrated").
//!
//!   FW = BDP + Q* − g · (B − Q*), never below 0,
//!   BDP = RTT_min · η·R_e / 8, Q* = η·R_e · d* / 8, d* = max(d_min, f · RTT_min) as in
//!   `target-queue`,
//!
//! η, the delivery efficiency, is what the UE acknowledges per second over the mean R_e of the
//! same interval (`interval_s`, default 10 ms), taken only from intervals in which the RLC
//! buffer never fell below Q*/2 and the UE was never in outage: the radio was busy all along,
//! so the acknowledged rate is what the cell delivers at that R_e. Each such interval moves η
//! by a weight of 1/8 toward its sample; η starts at 1 (the `bdp` rule's implicit assumption)
//! and stays within [0.25, 1.25]. An interval in which the buffer ran low but the UE was in
//! reach throughout (no outage, R_e > 0) is a lower bound: the cell delivered at least that
//! much, so a sample above η raises it the same way, and one below leaves it alone.
//!
//! Why: R_e is the PHY's achievable rate from the last CQI, above what the stack delivers
//! (headers, HARQ retransmissions, the scheduler's overheads), about 20% on the milliproxy
//! route. `target-queue`'s standing queue is Q* plus that surplus of its BDP estimate over the
//! true BDP, divided by 1 + g (docs/proxy.md), so at short D_RS its RAN latency is well above
//! Q*'s. Calibrating R_e removes the surplus and leaves Q*, while R_e still follows the channel
//! from one CQI to the next (a blockage cuts FW at once; η only scales it). Intervals where the
//! buffer ran low say only that the cell could deliver what it did (the proxy's window, not
//! the radio, limited the rate). Without that lower bound a low η locks in: samples taken in
//! deep fades (HARQ failures at a CQI that promised more) pull η down, the window it sets then
//! keeps the buffer below Q*/2 once the channel is back, and no interval is busy enough to
//! raise it (docs/proxy.md: BBR seed 24 at D_RS 20 ms held FW at half the BDP for 5 s). With
//! it, each interval delivers what FW allows, about η·R_e·(1 + d*/RTT_min), and η climbs until
//! the queue builds and busy intervals calibrate it again. The acknowledged bytes are the
//! UE's, every flow of it (this one's and its siblings'), as R_e and B are; the window is
//! the UE's, shared among its flows (`flow_share`). A sibling that closes takes its bytes out
//! of the sum: the interval it closes in reads low once.

use super::bdp::DEFAULT_START_BYTES;
use super::target_queue::{queue_steering_window, TargetDelay, DEFAULT_GAIN};
use super::{flow_share, FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

const DEFAULT_INTERVAL_S: f64 = 0.010;
/// Weight of one interval's sample in η.
const SMOOTHING: f64 = 1.0 / 8.0;
const MIN_EFFICIENCY: f64 = 0.25;
const MAX_EFFICIENCY: f64 = 1.25;

pub struct Calibrated {
    start_bytes: u64,
    target: TargetDelay,
    gain: f64,
    interval_ns: u64,
    /// η.
    efficiency: f64,
    interval: Option<Interval>,
}

/// The measurement under way.
#[derive(Clone, Copy, Debug)]
struct Interval {
    start_ns: u64,
    start_acked_bytes: u64,
    /// R_e integrated over the interval so far (bit/s × ns) up to `last_ns`.
    rate_integral: f64,
    last_ns: u64,
    /// R_e in force since `last_ns`.
    last_rate_bps: f64,
    /// The UE was out of outage with R_e > 0 at every call so far.
    in_reach: bool,
    /// And the RLC stayed at or above Q*/2.
    busy: bool,
}

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&["start_bytes", "target_delay_s", "rtt_fraction", "gain", "interval_s"])?;
    Ok(Box::new(Calibrated {
        start_bytes: params.bytes("start_bytes", Some(DEFAULT_START_BYTES))?,
        target: TargetDelay::from_params(params)?,
        gain: params.number("gain", DEFAULT_GAIN, (0.0, 1.0), "0 to 1")?,
        interval_ns: (params.number("interval_s", DEFAULT_INTERVAL_S, (1e-4, 10.0), "100 µs to 10 seconds")? * 1e9) as u64,
        efficiency: 1.0,
        interval: None,
    }))
}

impl Calibrated {
    /// Brings the interval under way up to `now_ns` and, when it is long enough, takes its
    /// sample (a value if the radio was busy throughout, a lower bound if the UE was only in
    /// reach) and starts the next one.
    fn measure(&mut self, now_ns: u64, acked_bytes: u64, rate_bps: f64, in_reach: bool, busy: bool) {
        let next = Interval::starting(now_ns, acked_bytes, rate_bps, in_reach, busy);
        let interval = self.interval.get_or_insert(next);
        interval.rate_integral += interval.last_rate_bps * now_ns.saturating_sub(interval.last_ns) as f64;
        interval.last_ns = now_ns.max(interval.last_ns);
        interval.last_rate_bps = rate_bps;
        interval.in_reach &= in_reach;
        interval.busy &= busy;
        if interval.last_ns - interval.start_ns < self.interval_ns {
            return;
        }
        if interval.in_reach && interval.rate_integral > 0.0 {
            let delivered_bit = acked_bytes.saturating_sub(interval.start_acked_bytes) as f64 * 8.0;
            // delivered / (mean R_e · elapsed) = delivered / ∫R_e dt.
            let sample = delivered_bit * 1e9 / interval.rate_integral;
            if interval.busy || sample > self.efficiency {
                self.efficiency = (self.efficiency + SMOOTHING * (sample - self.efficiency)).clamp(MIN_EFFICIENCY, MAX_EFFICIENCY);
            }
        }
        *interval = next;
    }
}

impl Interval {
    fn starting(now_ns: u64, acked_bytes: u64, rate_bps: f64, in_reach: bool, busy: bool) -> Interval {
        Interval {
            start_ns: now_ns,
            start_acked_bytes: acked_bytes,
            rate_integral: 0.0,
            last_ns: now_ns,
            last_rate_bps: rate_bps,
            in_reach,
            busy,
        }
    }
}

impl FlowWindowPolicy for Calibrated {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64 {
        let Some(telemetry) = input.telemetry else {
            // No telemetry in force: nothing to measure against; start afresh when it returns.
            self.interval = None;
            return input.ue_window_bytes;
        };
        let rate_bps = telemetry.rate_bps.max(0.0);
        let target_delay_s = self.target.seconds(input.rtt.min_ns);
        let target_bytes = self.efficiency * rate_bps / 8.0 * target_delay_s;
        let in_reach = !telemetry.outage && rate_bps > 0.0;
        // The UE's delivery: every flow of it counts, as R_e and B are the UE's.
        let ue_acked_bytes = input.ue_acked_bytes + input.siblings.acked_bytes;
        self.measure(input.now_ns, ue_acked_bytes, rate_bps, in_reach, in_reach && telemetry.rlc_bytes as f64 >= target_bytes / 2.0);
        let Some(rtt_min_ns) = input.rtt.min_ns else {
            return self.start_bytes;
        };
        flow_share(
            queue_steering_window(rtt_min_ns, self.efficiency * rate_bps, telemetry.rlc_bytes, target_delay_s, self.gain),
            &input.siblings,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::input;
    use super::super::PolicySpec;
    use super::*;
    use millinet_wire::Telemetry;

    const MS: u64 = 1_000_000;
    const RTT: Option<u64> = Some(30 * MS);

    fn at(rlc_bytes: u64, rate_bps: f64) -> Telemetry {
        Telemetry { rate_bps, rlc_bytes, ..Telemetry::default() }
    }

    fn policy() -> Box<dyn FlowWindowPolicy> {
        PolicySpec::new("calibrated").with("target_delay_s", 0.005).build().unwrap()
    }

    /// Feeds `ms` calls one ms apart from `from_ms`, the UE acknowledging `delivered_bps` and
    /// the telemetry `telemetry`; returns the last FW and the acknowledged bytes reached.
    fn feed(p: &mut Box<dyn FlowWindowPolicy>, from_ms: u64, ms: u64, acked: u64, delivered_bps: f64, telemetry: Telemetry) -> (u64, u64) {
        let mut fw = 0;
        let mut acked_bytes = acked;
        for k in 0..ms {
            let mut i = input(RTT, Some(&telemetry));
            i.now_ns = (from_ms + k) * MS;
            acked_bytes = acked + (delivered_bps / 8.0 * (k as f64) * 1e-3) as u64;
            i.ue_acked_bytes = acked_bytes;
            fw = p.flow_window_bytes(&i);
        }
        (fw, acked_bytes)
    }

    #[test]
    fn uncalibrated_it_is_target_queue() {
        // η = 1 before any interval: the same windows as target-queue's hand-computed ones.
        let mut p = policy();
        assert_eq!(p.flow_window_bytes(&input(RTT, Some(&at(625_000, 1e9)))), 4_375_000);
        let mut p = policy();
        assert_eq!(p.flow_window_bytes(&input(RTT, Some(&at(1_625_000, 1e9)))), 3_875_000);
        let mut p = policy();
        assert_eq!(p.flow_window_bytes(&input(None, Some(&at(0, 1e9)))), 400_000_000, "no RTT yet: the start value");
        assert_eq!(p.flow_window_bytes(&input(RTT, None)), 1 << 30, "no telemetry: the UE's window");
        assert_eq!(p.flow_window_bytes(&input(RTT, Some(&at(10_000, 0.0)))), 0, "outage");
        // d* = max(5 ms, RTT_min / 4) = 7.5 ms at RTT_min 30 ms: BDP 3 750 000 + Q* 937 500
        // − 0.5 · (625 000 − 937 500).
        let mut p = PolicySpec::new("calibrated").with("target_delay_s", 0.005).with("rtt_fraction", 0.25).build().unwrap();
        assert_eq!(p.flow_window_bytes(&input(RTT, Some(&at(625_000, 1e9)))), 4_843_750);
    }

    #[test]
    fn a_busy_radio_that_delivers_80_percent_of_r_e_brings_eta_to_0_8() {
        let mut p = policy();
        // R_e 1 Gbit/s, the UE acknowledging 800 Mbit/s, the RLC at 1 MB (above Q*/2 = 312 500).
        let (fw, _) = feed(&mut p, 0, 400, 0, 0.8e9, at(1_000_000, 1e9));
        // η → 0.8: BDP 3 000 000, Q* 500 000, FW = 3 500 000 − 0.5 · (1 000 000 − 500 000).
        let expected = 3_250_000.0;
        assert!((fw as f64 - expected).abs() < 0.01 * expected, "FW {fw}, expected about {expected}");
        // Uncalibrated (target-queue) it would be 3 750 000 + 625 000 − 0.5 · 375 000.
        assert!(fw < 4_187_500 - 800_000);
    }

    #[test]
    fn low_queue_intervals_below_eta_and_outages_leave_eta_alone() {
        let mut p = policy();
        let (calibrated, acked) = feed(&mut p, 0, 400, 0, 0.8e9, at(1_000_000, 1e9));
        // Now the RLC runs nearly empty (the window, not the radio, limits the rate) and the UE
        // gets only 100 Mbit/s: no sample, the same window at the same queue.
        let (_, acked) = feed(&mut p, 400, 200, acked, 0.1e9, at(100_000, 1e9));
        let (fw, acked) = feed(&mut p, 600, 1, acked, 0.0, at(1_000_000, 1e9));
        assert!((fw as f64 - calibrated as f64).abs() < 2_000.0, "{fw} vs {calibrated}");
        // An outage (nothing delivered, R_e 0) is no sample either.
        let outage = Telemetry { outage: true, ..at(2_000_000, 0.0) };
        let (fw_outage, acked) = feed(&mut p, 601, 200, acked, 0.0, outage);
        assert_eq!(fw_outage, 0);
        let (fw, _) = feed(&mut p, 801, 1, acked, 0.0, at(1_000_000, 1e9));
        assert!((fw as f64 - calibrated as f64).abs() < 2_000.0, "{fw} vs {calibrated}");
    }

    #[test]
    fn a_low_queue_interval_that_delivered_more_than_eta_raises_it() {
        // η driven to 0.25 by a full RLC and nothing acknowledged (a deep fade).
        let mut p = policy();
        let (low, acked) = feed(&mut p, 0, 2_000, 0, 0.0, at(400_000, 1e9));
        assert_eq!(low, 971_875);
        // The channel is back: the RLC stays nearly empty (below Q*/2) while the UE
        // acknowledges 900 Mbit/s of R_e's 1 Gbit/s. Each interval is a lower bound above η:
        // η climbs to 0.9. FW at η 0.9, B 10 000: BDP 3 375 000, Q* 562 500,
        // FW = 3 937 500 − 0.5 · (10 000 − 562 500) = 4 213 750.
        let (fw, _) = feed(&mut p, 2_000, 1_000, acked, 0.9e9, at(10_000, 1e9));
        let expected = 4_213_750.0;
        assert!((fw as f64 - expected).abs() < 0.01 * expected, "FW {fw}, expected about {expected}");
    }

    #[test]
    fn eta_stays_within_its_bounds() {
        // A UE that acknowledges nothing while the RLC is full: η falls to 0.25, not below.
        let mut p = policy();
        let (fw, _) = feed(&mut p, 0, 2_000, 0, 0.0, at(400_000, 1e9));
        // η 0.25: BDP 937 500, Q* 156 250, FW = 1 093 750 − 0.5 · 243 750.
        assert_eq!(fw, 971_875);
        // One that acknowledges twice R_e (a stale CQI): η rises to 1.25, not above.
        let mut p = policy();
        let (fw, _) = feed(&mut p, 0, 2_000, 0, 2e9, at(1_000_000, 1e9));
        // η 1.25: BDP 4 687 500, Q* 781 250, FW = 5 468 750 − 0.5 · 218 750.
        assert_eq!(fw, 5_359_375);
    }

    #[test]
    fn parameters_and_their_ranges() {
        let e = PolicySpec::new("calibrated").with("interval_s", 0.0).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'calibrated': interval_s = 0: allowed 100 µs to 10 seconds");
        let e = PolicySpec::new("calibrated").with("gain", -0.1).build().err().unwrap();
        assert_eq!(e.to_string(), "flow-window policy 'calibrated': gain = -0.1: allowed 0 to 1");
        let e = PolicySpec::new("calibrated").with("fw_bytes", 1.0).build().err().unwrap();
        assert!(e.to_string().contains("fw_bytes"), "{e}");
    }
}
