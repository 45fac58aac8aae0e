//! `bdp`, the published milliProxy policy (docs/proxy.md#flow-window-policies): FW = start value until the
//! first RTT estimate, then floor(RTT_min · R_e / 8), minus 2·B when the RLC buffer B
//! exceeds a threshold, never below 0: the UE's window, shared among its flows
//! (`flow_share`). Without fresh telemetry (none yet, or the latest has expired) there is no
//! R_e to trust: FW is then the UE's own window (passthrough).

use super::{flow_share, FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

pub(super) const DEFAULT_START_BYTES: u64 = 400_000_000;
const DEFAULT_THRESHOLD_BYTES: u64 = 2_000_000;
const NS_PER_S: u128 = 1_000_000_000;

pub struct Bdp {
    start_bytes: u64,
    threshold_bytes: u64,
}

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&["start_bytes", "threshold_bytes"])?;
    Ok(Box::new(Bdp {
        start_bytes: params.bytes("start_bytes", Some(DEFAULT_START_BYTES))?,
        threshold_bytes: params.bytes("threshold_bytes", Some(DEFAULT_THRESHOLD_BYTES))?,
    }))
}

impl FlowWindowPolicy for Bdp {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64 {
        // Without an RTT estimate there is no BDP to compute yet.
        let Some(rtt_min_ns) = input.rtt.min_ns else {
            return self.start_bytes;
        };
        let Some(telemetry) = input.telemetry else {
            return input.ue_window_bytes;
        };
        // Whole bits per second (saturating): the rate the policy was specified and tested with.
        let rate_bps = telemetry.rate_bps as u64;
        let bdp = (rtt_min_ns as u128 * rate_bps as u128 / (8 * NS_PER_S)).min(u64::MAX as u128) as u64;
        let ue_window = if telemetry.rlc_bytes > self.threshold_bytes { bdp.saturating_sub(2 * telemetry.rlc_bytes) } else { bdp };
        flow_share(ue_window, &input.siblings)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::input;
    use super::super::PolicySpec;
    use millinet_wire::Telemetry;

    #[test]
    fn hand_computed_values() {
        let mut p = PolicySpec::new("bdp").build().unwrap();
        let t = Telemetry { rate_bps: 1_000_000_000.0, rlc_bytes: 1_000_000, ..Telemetry::default() };
        // No RTT yet: the start value.
        assert_eq!(p.flow_window_bytes(&input(None, Some(&t))), 400_000_000);
        // 30 ms · 1 Gbit/s / 8 = 3 750 000 bytes; B = 1 MB ≤ 2 MB.
        assert_eq!(p.flow_window_bytes(&input(Some(30_000_000), Some(&t))), 3_750_000);
        // floor: 1 ns · 12 bit/s / 8 = 1.5 ns·bit/s → 0 bytes; 1 s · 12 bit/s / 8 = 1.5 → 1.
        let slow = Telemetry { rate_bps: 12.0, ..Telemetry::default() };
        assert_eq!(p.flow_window_bytes(&input(Some(1_000_000_000), Some(&slow))), 1);
        // B = 2.5 MB > 2 MB: 3 750 000 − 5 000 000 < 0 → 0.
        let full = Telemetry { rlc_bytes: 2_500_000, ..t };
        assert_eq!(p.flow_window_bytes(&input(Some(30_000_000), Some(&full))), 0);
        // 100 ms · 1 Gbit/s / 8 = 12 500 000 − 2 · 2 500 000 = 7 500 000.
        assert_eq!(p.flow_window_bytes(&input(Some(100_000_000), Some(&full))), 7_500_000);
        // B exactly at the threshold: not above it.
        let at = Telemetry { rlc_bytes: 2_000_000, ..t };
        assert_eq!(p.flow_window_bytes(&input(Some(100_000_000), Some(&at))), 12_500_000);
        // An RTT but no fresh telemetry: the UE's own window, not the start value.
        assert_eq!(p.flow_window_bytes(&input(Some(30_000_000), None)), 1 << 30);
        assert_eq!(p.flow_window_bytes(&input(None, None)), 400_000_000);
    }

    #[test]
    fn parameters() {
        let mut p = PolicySpec::new("bdp").with("threshold_bytes", 0.0).with("start_bytes", 1000.0).build().unwrap();
        let t = Telemetry { rate_bps: 8_000_000.0, rlc_bytes: 1, ..Telemetry::default() };
        assert_eq!(p.flow_window_bytes(&input(None, Some(&t))), 1000);
        // 1 s · 8 Mbit/s / 8 = 1 000 000 − 2.
        assert_eq!(p.flow_window_bytes(&input(Some(1_000_000_000), Some(&t))), 999_998);
    }
}
