//! The scenario translated into the models' own configurations: what the engine (and the
//! emulator) build their channel, RAN, transport and proxy models from. Seconds become
//! integer nanoseconds here, once.

mod link_rate;
pub mod proxy;
pub mod radio;
mod transport;

pub use link_rate::LinkRate;
pub use transport::{app_spec, link_codel, link_opportunities, link_params, mptcp_config, tcp_config, RlcAqm};

/// Seconds (as scenario files write them) to the models' integer nanoseconds.
pub fn seconds_to_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}
