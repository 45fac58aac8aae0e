//! `passthrough`: FW = the UE's own advertised window; the proxy only coalesces segments
//! (milliproxy.md §4).

use super::{FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

pub struct Passthrough;

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&[])?;
    Ok(Box::new(Passthrough))
}

impl FlowWindowPolicy for Passthrough {
    fn flow_window_bytes(&mut self, input: &PolicyInput) -> u64 {
        input.ue_window_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::PolicySpec;
    use super::*;
    use crate::rtt::RttEstimates;

    #[test]
    fn follows_the_ue_window() {
        let mut p = PolicySpec::new("passthrough").build().unwrap();
        let input = PolicyInput {
            now_ns: 0,
            telemetry: None,
            rtt: RttEstimates { min_ns: Some(1), ..RttEstimates::default() },
            buffered_bytes: 0,
            in_flight_bytes: 0,
            ue_window_bytes: 77_000,
            ue_acked_bytes: 0,
        };
        assert_eq!(p.flow_window_bytes(&input), 77_000);
    }
}
