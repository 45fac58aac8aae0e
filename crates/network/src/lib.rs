//! The network layer, shared by the simulator and the emulator: what models the path rather
//! than one part of it. Nodes with interfaces and addresses, routes that may change during a
//! run, wired links, middlebox sites, the attachment of UE radios to cells and the execution of
//! handovers and bearer switches (X2 forwarding, end markers, route switch, the hold at the
//! target), the sampling behind the time series, and the output records with their one
//! writer.
//!
//! Sans-IO: the network keeps no clock. Its driver (the simulator's event engine or the
//! emulator's real-time loop) hands it the time with every call, wakes it when it asked to be
//! woken ([`Driver::wake_at`], [`NetEvent`]) and handles what reaches hosts and middleboxes
//! ([`Driver::to_host`], [`Driver::to_middlebox`]). docs/engine.md, "Who drives whom".

pub mod ids;
pub mod metrics;
mod mobility;
mod network;
pub mod output;
pub mod radio;
pub mod records;
mod sampling;
pub mod series;
pub mod topology;

pub use ids::{InterfaceId, LinkId, NodeId, SiteId};
pub use mobility::SwitchRecord;
pub use network::{Driver, NetEvent, Network};
pub use output::{Column, ColumnData, Table};
pub use topology::{Hop, PlannedRoute, Topology};
