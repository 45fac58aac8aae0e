//! The random streams a link consumes, and the two draws every model needs.
//!
//! No stream is ever seeded from entropy: the caller (engine or emulator) derives
//! each one from the run seed and hands it over by value.

use rand_core::RngCore;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The three independent streams owned by one [`crate::LinkChannel`].
///
/// - `blockage`: the Markov model's initial state and sojourn times (unused by
///   the geometric and trace models);
/// - `shadowing`: the AR(1) innovations of the LOS and NLOS shadowing processes;
/// - `fading`: the random angles and phases of the sum-of-sinusoids fading,
///   drawn once at construction.
///
/// Keeping them apart means switching fading on or off does not change the
/// blockage sequence or the shadowing values of a run.
#[derive(Clone, Debug)]
pub struct LinkRngs {
    pub blockage: Xoshiro256PlusPlus,
    pub shadowing: Xoshiro256PlusPlus,
    pub fading: Xoshiro256PlusPlus,
}

impl LinkRngs {
    /// Split one seeded stream into three non-overlapping ones with xoshiro's
    /// `jump()` (2¹²⁸ steps apart), for callers that hold one stream per link.
    pub fn from_stream(stream: Xoshiro256PlusPlus) -> Self {
        let blockage = stream.clone();
        let mut s = stream;
        s.jump();
        let shadowing = s.clone();
        s.jump();
        LinkRngs { blockage, shadowing, fading: s }
    }
}

/// Uniform draw in [0, 1) with 53 random bits (the full f64 mantissa).
#[inline]
pub fn uniform01(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Standard normal draw.
#[inline]
pub fn normal(rng: &mut impl RngCore) -> f64 {
    StandardNormal.sample(rng)
}

/// Uniform draw in [lo, hi] (returns `lo` when the range is empty).
#[inline]
pub fn uniform_in(rng: &mut impl RngCore, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * uniform01(rng)
}
