//! Obstacle sets: a fixed list from the scenario, or a random draw in a region.

use rand_core::RngCore;

use crate::error::{check_at_least, ConfigError};
use crate::geometry::{Point2, Rect};
use crate::pathloss::O2iModel;
use crate::rng::uniform_in;

/// Side of a human blocker seen from above (docs/models/channel.md §1: 0.5 m × 0.5 m).
pub const HUMAN_BLOCKER_SIDE_M: f64 = 0.5;

/// A building an indoor UE can stand in: its footprint (an obstacle like any other for the
/// LOS test) and its façade's O2I model (docs/models/channel.md §2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Building {
    pub footprint: Rect,
    pub o2i: O2iModel,
}

/// A human blocker centred at `center`, `height_m` tall.
pub fn human_blocker(center: Point2, height_m: f64) -> Rect {
    let h = HUMAN_BLOCKER_SIDE_M / 2.0;
    Rect::from_corners(Point2::new(center.x_m - h, center.y_m - h), Point2::new(center.x_m + h, center.y_m + h), Some(height_m))
}

/// A random obstacle field: `count` rectangles with sizes drawn uniformly in
/// the given ranges and placed uniformly so that each lies wholly inside
/// `region`. Obstacles may overlap each other (overlapping buildings simply
/// form a larger blocked area).
#[derive(Clone, Debug, PartialEq)]
pub struct ObstacleDraw {
    pub region: Rect,
    pub count: usize,
    /// (min, max) extent along x.
    pub width_m: (f64, f64),
    /// (min, max) extent along y.
    pub depth_m: (f64, f64),
    /// (min, max) height; `None` draws obstacles of unlimited height.
    pub height_m: Option<(f64, f64)>,
}

impl ObstacleDraw {
    /// Draw the obstacles from `rng` (the scenario's obstacle stream). Each
    /// obstacle consumes, in order: width, depth, height (if ranged), x, y.
    pub fn draw(&self, rng: &mut impl RngCore) -> Result<Vec<Rect>, ConfigError> {
        self.validate()?;
        let r = &self.region;
        Ok((0..self.count)
            .map(|_| {
                let w = uniform_in(rng, self.width_m.0, self.width_m.1);
                let d = uniform_in(rng, self.depth_m.0, self.depth_m.1);
                let h = self.height_m.map(|(lo, hi)| uniform_in(rng, lo, hi));
                let x = uniform_in(rng, r.min.x_m, r.max.x_m - w);
                let y = uniform_in(rng, r.min.y_m, r.max.y_m - d);
                Rect::from_corners(Point2::new(x, y), Point2::new(x + w, y + d), h)
            })
            .collect())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let ranges =
            [("obstacles.width_m", self.width_m, self.region.width_m()), ("obstacles.depth_m", self.depth_m, self.region.depth_m())];
        for (field, (lo, hi), room) in ranges {
            check_at_least(field, lo, 0.0)?;
            if !(hi.is_finite() && hi >= lo && hi <= room) {
                return Err(ConfigError::new(field, (lo, hi), format!("min ≤ max ≤ the region's extent ({room} m)")));
            }
        }
        if let Some((lo, hi)) = self.height_m {
            check_at_least("obstacles.height_m", lo, 0.0)?;
            if !(hi.is_finite() && hi >= lo) {
                return Err(ConfigError::new("obstacles.height_m", (lo, hi), "finite min ≤ max"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn field() -> ObstacleDraw {
        ObstacleDraw {
            region: Rect::from_corners(Point2::new(0.0, 10.0), Point2::new(50.0, 90.0), None),
            count: 3,
            width_m: (5.0, 15.0),
            depth_m: (2.0, 10.0),
            height_m: Some((5.0, 20.0)),
        }
    }

    #[test]
    fn draws_inside_region_with_sizes_in_range() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for _ in 0..200 {
            for o in field().draw(&mut rng).unwrap() {
                assert!((5.0..=15.0).contains(&o.width_m()) && (2.0..=10.0).contains(&o.depth_m()));
                assert!(o.min.x_m >= 0.0 && o.max.x_m <= 50.0 && o.min.y_m >= 10.0 && o.max.y_m <= 90.0);
                assert!((5.0..=20.0).contains(&o.height_m.unwrap()));
            }
        }
    }

    #[test]
    fn same_seed_same_draw_other_seed_other_draw() {
        let d = |s| field().draw(&mut Xoshiro256PlusPlus::seed_from_u64(s)).unwrap();
        assert_eq!(d(5), d(5));
        assert_ne!(d(5), d(6));
    }

    #[test]
    fn rejects_obstacles_larger_than_region() {
        let mut f = field();
        f.width_m = (5.0, 60.0);
        let e = f.draw(&mut Xoshiro256PlusPlus::seed_from_u64(1)).unwrap_err();
        assert_eq!(e.field, "obstacles.width_m");
    }

    #[test]
    fn human_blocker_is_half_metre_square() {
        let h = human_blocker(Point2::new(1.0, 1.0), 1.8);
        assert_eq!((h.width_m(), h.depth_m(), h.height_m), (0.5, 0.5, Some(1.8)));
    }
}
