//! millinet channel models (docs/models/channel.md): mobility, obstacles, LOS,
//! 3GPP TR 38.901 path loss and LOS probability, shadowing, blockage,
//! fading, link budget, link abstraction, CQI and trace files.
//!
//! Every model is a plain state machine: it is given inputs and the current
//! time (`now_ns`, u64 nanoseconds) and returns values; none reads a clock,
//! a file (except the `load_*` trace helpers) or global state, and all
//! randomness comes from seeded streams handed in by the caller.
//! [`LinkChannel`] assembles the models for one (UE, cell) pair.

pub mod antenna;
pub mod blockage;
pub mod calibration;
pub mod capacity_process;
mod channel;
pub mod cqi;
mod error;
pub mod fading;
pub mod geometry;
pub mod link;
pub mod los;
pub mod los_probability;
pub mod mobility;
pub mod obstacles;
pub mod pathloss;
mod rng;
pub mod shadowing;
pub mod sinr;
pub mod traces;
pub mod units;

pub use antenna::{Angles, ElementPattern, Orientation, Panel};
pub use blockage::{BlockageConfig, ForcedEvent, ForcedKind};
pub use capacity_process::{CapacityCarrier, CapacityConfig, CapacityProcess};
pub use channel::{BlockedEffect, Indoor, LinkChannel, LinkConfig, LinkState, DEFAULT_INDOOR_DISTANCE_M};
pub use cqi::{CqiConfig, CqiReporter};
pub use error::ConfigError;
pub use fading::FadingConfig;
pub use geometry::{Point2, Rect};
pub use link::{sinr_required_db, LinkAbstraction};
pub use los::Antenna;
pub use mobility::MobilityConfig;
pub use obstacles::{Building, ObstacleDraw};
pub use pathloss::{O2iModel, Scenario};
pub use rng::LinkRngs;
