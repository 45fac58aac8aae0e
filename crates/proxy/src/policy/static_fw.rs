//! `static`: a fixed flow window, for experiments (docs/proxy.md#flow-window-policies).

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
    use super::super::testing::input;
    use super::super::{PolicySpec, Siblings};

    #[test]
    fn fixed() {
        let mut p = PolicySpec::new("static").with("fw_bytes", 123_456.0).build().unwrap();
        let mut i = input(None, None);
        (i.buffered_bytes, i.in_flight_bytes, i.ue_window_bytes) = (9, 9, 9);
        assert_eq!(p.flow_window_bytes(&i), 123_456);
        // Fixed for each flow, however many the UE has.
        i.siblings = Siblings { flows: 3, outstanding_bytes: 1_000_000, ..Siblings::default() };
        assert_eq!(p.flow_window_bytes(&i), 123_456);
    }
}
