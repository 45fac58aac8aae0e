//! milliProxy core (milliproxy.md §1–4), sans-IO: the caller feeds every packet crossing the
//! proxy's node, the UE telemetry and the time; the proxy returns packets to send on and the
//! next deadline. It never reads a clock, does I/O or prints, so the simulator and the real
//! daemon drive the same code. See docs/proxy.md.
//!
//! Layout: `proxy` (flow table, limits, timers) over `instance` (one flow) built from
//! `handshake` (SYN options, MSS clamp), `buffer` (server payload by sequence number with the
//! original boundaries), `sent` (in flight toward the UE, SACK scoreboard), `ack_relay`
//! (per-boundary ACKs, window rewrite), `rtt` (RTT_down + RTT_up, windowed minimum),
//! `telemetry` (D_info / T_info delivery), `policy` (flow-window policies by name).
//! `split` is the split-TCP baseline (milliproxy.md §5), a different proxy with the same
//! sans-IO interface, built from two `millinet_transport` connections.

mod ack_relay;
mod buffer;
mod by_offset;
mod config;
mod deadlines;
mod flow_table;
mod handshake;
mod instance;
mod offsets;
pub mod policy;
mod proxy;
mod rtt;
mod sent;
mod split;
mod stats;
mod telemetry;

pub use buffer::{LengthOnly, PayloadStore};
pub use config::{HandlingRule, ProxyConfig};
pub use flow_table::{Direction, FlowKey};
pub use instance::FlowStats;
pub use policy::{FlowWindowPolicy, PolicyInput, PolicySpec};
pub use proxy::Proxy;
pub use rtt::RttEstimates;
pub use split::{SplitConfig, SplitFlowStats, SplitProxy, SplitStats};
pub use stats::ProxyStats;
pub use telemetry::Telemetry;
