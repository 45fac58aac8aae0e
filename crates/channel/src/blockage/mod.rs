//! Blockage: which LOS state a link is in (docs/models/channel.md §5).
//!
//! A LOS-state model implements [`BlockageModel`]; [`BlockageConfig`] is the
//! registry that names every model a scenario can choose and builds it.
//! Adding a model is adding a file here plus a variant and a line in
//! `BlockageConfig::build_los_model`. Trace-driven links replace the whole
//! SINR chain rather than only the LOS state, so the link channel handles
//! those two variants itself. Forced events ([`ForcedEvents`]) are an overlay
//! applied on top of any model.

mod forced;
mod geometric;
mod markov;

use std::sync::Arc;

use rand_xoshiro::Xoshiro256PlusPlus;

pub use forced::{ForcedEvent, ForcedEvents, ForcedKind};
pub use geometric::GeometricBlockage;
pub use markov::MarkovBlockage;

use crate::error::{check_positive, ConfigError};
use crate::geometry::Rect;
use crate::los::Antenna;
use crate::pathloss::Scenario;
use crate::traces::{CapacitySeries, SinrSeries};

/// The geometry of one (UE, cell) link at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkGeometry {
    pub cell: Antenna,
    pub ue: Antenna,
    pub d2d_m: f64,
}

/// A model of the LOS state of a link over time.
pub trait BlockageModel: std::fmt::Debug + Send {
    /// Whether the link is LOS at `now_ns` (non-decreasing across calls).
    fn is_los(&mut self, now_ns: u64, geo: &LinkGeometry) -> bool;
}

/// The blockage model of a link, as chosen by the scenario.
#[derive(Clone, Debug)]
pub enum BlockageConfig {
    /// LOS from the obstacle test (shared obstacle list; empty = always LOS).
    Geometric { obstacles: Arc<[Rect]> },
    /// Two-state Markov chain with LOS→NLOS rate `lambda_per_s`.
    Markov { lambda_per_s: f64 },
    /// SINR taken from a trace instead of the propagation models.
    SinrTrace(Arc<SinrSeries>),
    /// Capacity taken from a trace; SINR is its inverse through the link abstraction.
    CapacityTrace(Arc<CapacitySeries>),
}

impl Default for BlockageConfig {
    fn default() -> Self {
        BlockageConfig::Geometric { obstacles: Arc::from(Vec::new()) }
    }
}

impl BlockageConfig {
    /// Build the LOS-state model for a link; `None` for the trace variants.
    ///
    /// `area` bounds every cell–UE segment the link can have (the cell and
    /// all route points): the geometric model keeps only obstacles touching
    /// it. `rng` is the link's `blockage` stream.
    pub(crate) fn build_los_model(
        &self,
        scenario: Scenario,
        h_ut_m: f64,
        area: &Rect,
        rng: Xoshiro256PlusPlus,
    ) -> Result<Option<Box<dyn BlockageModel>>, ConfigError> {
        Ok(match self {
            BlockageConfig::Geometric { obstacles } => Some(Box::new(GeometricBlockage::new(obstacles, area))),
            BlockageConfig::Markov { lambda_per_s } => {
                check_positive("blockage.lambda_per_s", *lambda_per_s)?;
                Some(Box::new(MarkovBlockage::new(*lambda_per_s, scenario, h_ut_m, rng)))
            }
            BlockageConfig::SinrTrace(_) | BlockageConfig::CapacityTrace(_) => None,
        })
    }
}
