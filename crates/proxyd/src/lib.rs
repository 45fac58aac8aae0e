//! The real milliProxy (docs/proxyd.md, docs/proxy.md): the proxy crate's sans-IO core,
//! unchanged, on real packets. `Datapath` takes raw IPv4 datagrams and telemetry datagrams
//! (docs/telemetry.md) with the time, and hands back what to forward; it owns no socket and no
//! clock, so the emulator's link (in its gNB namespace) and the `millinet-proxyd` daemon
//! (NFQUEUE on any Linux router) drive the same code. See docs/proxyd.md.
//!
//! Layout: `datapath` (parse, segment, feed the core, serialise), `buffers` (the packet
//! buffers the core reads payload from and writes coalesced payload into), `networks` (which
//! side of the node an address is on), `config` (the `[proxy]` table of a scenario as a
//! daemon's configuration), `metrics` (the Prometheus text exposition), `split_relay` (the
//! split-TCP baseline as two kernel TCP connections per flow, explicit or behind TPROXY).

mod buffers;
mod config;
mod datapath;
mod metrics;
mod networks;
mod split_relay;

pub use config::{DaemonConfig, DaemonConfigError};
pub use datapath::{ChecksumState, Datapath, DatapathStats, Emitted, Input, Toward};
pub use metrics::{push_counter, render_metrics, render_split_metrics};
pub use networks::{Ipv4Network, NetworkParseError};
pub use split_relay::{SplitCounters, SplitRelay, SplitSockets, Upstream};
