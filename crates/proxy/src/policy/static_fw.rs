//! `static`: a fixed flow window, for experiments (milliproxy.md §4).

use super::{FlowWindowPolicy, Params, PolicyInput};
use crate::error::PolicyError;

pub struct StaticFw {
    fw_bytes: u64,
}

pub fn build(params: &Params) -> Result<Box<dyn FlowWindowPolicy>, PolicyError> {
    params.only(&["fw_bytes"])?;
    Ok(Box::new(StaticFw { fw_bytes: params.bytes("fw_bytes", None)? }))
}

impl FlowWindowPolicy for StaticFw {
    fn flow_window_bytes(&mut self, _input: &PolicyInput) -> u64 {
        self.fw_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::PolicySpec;
    use super::*;
    use crate::rtt::RttEstimates;

    #[test]
    fn fixed() {
        let mut p = PolicySpec::new("static").with("fw_bytes", 123_456.0).build().unwrap();
        let input = PolicyInput {
            now_ns: 5,
            telemetry: None,
            rtt: RttEstimates::default(),
            buffered_bytes: 9,
            in_flight_bytes: 9,
            ue_window_bytes: 9,
            ue_acked_bytes: 0,
        };
        assert_eq!(p.flow_window_bytes(&input), 123_456);
    }
}
