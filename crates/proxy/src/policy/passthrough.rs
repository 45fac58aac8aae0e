//! `passthrough`: FW = the UE's own advertised window; the proxy only coalesces segments
//! (docs/proxy.md#flow-window-policies).

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
    use super::super::testing::input;
    use super::super::PolicySpec;

    #[test]
    fn follows_the_ue_window() {
        let mut p = PolicySpec::new("passthrough").build().unwrap();
        let mut i = input(Some(1), None);
        i.ue_window_bytes = 77_000;
        assert_eq!(p.flow_window_bytes(&i), 77_000);
    }
}
