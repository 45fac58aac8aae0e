//! milliProxy core (docs/proxy.md#what-milliproxy-is), sans-IO: the caller feeds every packet crossing the
//! proxy's node, the UE telemetry and the time; the proxy returns packets to send on and the
//! next deadline. It never reads a clock, does I/O or prints, so the simulator and the real
//! daemon drive the same code, through one interface (`Middlebox`). See docs/proxy.md.
//!
//! Layout: `proxy` (flow table, limits, timers) over `instance` (one flow) built from
//! `handshake` (SYN options, MSS clamp), `buffer` (server payload by sequence number with the
//! original boundaries), `sent` (in flight toward the UE, SACK scoreboard), `ack_relay`
//! (per-boundary ACKs, window rewrite), `rtt` (RTT_down + RTT_up, windowed minimum),
//! `policy` (flow-window policies by name), `payload` (where payload bytes enter, leave and
//! are kept). `split` is the split-TCP baseline (docs/proxy.md#split-tcp), a different proxy behind
//! the same `Middlebox` interface, built from two `millinet_transport` connections.
//! Telemetry arrives as `millinet_wire::Telemetry`; its delay (D_info) is the driver's.

mod ack_relay;
mod buffer;
mod by_offset;
mod config;
mod deadlines;
mod error;
mod flow_table;
mod handshake;
mod instance;
mod middlebox;
mod offsets;
mod payload;
pub mod policy;
mod proxy;
mod rtt;
mod sent;
mod split;
mod stats;

pub use config::{HandlingRule, ProxyConfig, DEFAULT_FLOW_BUFFER_BYTES, MAX_SEGMENTS_PER_RELAYED_ACK};
pub use error::{PolicyError, ProxyConfigError, SplitConfigError};
pub use flow_table::{Direction, FlowKey};
pub use instance::FlowStats;
pub use middlebox::{FlowSample, Middlebox, Summary};
pub use millinet_wire::Telemetry;
pub use payload::{LengthOnly, NoPayloads, PayloadBytes, PayloadPool, PayloadStore};
pub use policy::{FlowWindowPolicy, PolicyInput, PolicySpec, DEFAULT_GAIN, DEFAULT_RTT_FRACTION, DEFAULT_TARGET_DELAY_S};
pub use proxy::Proxy;
pub use rtt::RttEstimates;
pub use split::{SplitConfig, SplitFlowStats, SplitProxy, SplitStats};
pub use stats::ProxyStats;
