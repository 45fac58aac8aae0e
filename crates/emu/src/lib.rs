//! The emulator (docs/emulator.md): real Linux TCP endpoints in network namespaces, joined
//! through a userspace link that drives the very network layer the simulator drives (its
//! links, cells, UE radios, handovers and routes) on a real clock. `emulate_file` runs a
//! scenario file and returns what it measured.

pub mod capture;
pub mod clock;
pub mod connections;
pub mod datagrams;
pub mod endpoint;
pub mod error;
pub mod frames;
pub mod iperf;
pub mod link;
pub mod mptcp;
pub mod netns;
pub mod plan;
pub mod programs;
mod run;
mod summary;
pub mod tcp_info;
pub mod telemetry;
pub mod testbed;
pub mod tun;

pub use error::EmuError;
pub use run::{emulate_file, Client, EmulateOptions, Emulation};
