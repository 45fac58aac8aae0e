//! Where the UE is at any time: static, or constant speed along a polyline.

use crate::error::{check_at_least, ConfigError};
use crate::geometry::Point2;
use crate::units::ns_to_s;

/// How a UE moves (docs/models/channel.md §1).
#[derive(Clone, Debug, PartialEq)]
pub enum MobilityConfig {
    /// The UE stays at one point.
    Static(Point2),
    /// The UE starts at the first waypoint at t = 0 and moves along the
    /// polyline at constant `speed_mps`; it stops at the last waypoint.
    Route { waypoints: Vec<Point2>, speed_mps: f64 },
}

impl Default for MobilityConfig {
    fn default() -> Self {
        MobilityConfig::Static(Point2::new(0.0, 0.0))
    }
}

/// A validated mobility model that answers "where, and how far travelled" for
/// non-decreasing times in O(1) amortised: it remembers the segment of the
/// last answer and only walks forward (a query earlier in time restarts the
/// walk from the first segment, still correct).
#[derive(Clone, Debug)]
pub struct Trajectory {
    waypoints: Vec<Point2>,
    /// Arc length from the first waypoint to waypoint i.
    cum_m: Vec<f64>,
    speed_mps: f64,
    segment: usize,
}

impl Trajectory {
    pub fn new(config: &MobilityConfig) -> Result<Self, ConfigError> {
        let (waypoints, speed_mps) = match config {
            MobilityConfig::Static(p) => (vec![*p], 0.0),
            MobilityConfig::Route { waypoints, speed_mps } => {
                if waypoints.is_empty() {
                    return Err(ConfigError::new("mobility.waypoints", waypoints, "at least one waypoint"));
                }
                check_at_least("mobility.speed_mps", *speed_mps, 0.0)?;
                (waypoints.clone(), *speed_mps)
            }
        };
        for (i, p) in waypoints.iter().enumerate() {
            if !(p.x_m.is_finite() && p.y_m.is_finite()) {
                return Err(ConfigError::new(format!("mobility.waypoints[{i}]"), p, "finite coordinates"));
            }
        }
        let mut cum_m = Vec::with_capacity(waypoints.len());
        let mut acc = 0.0;
        cum_m.push(0.0);
        for w in waypoints.windows(2) {
            acc += w[0].distance_m(w[1]);
            cum_m.push(acc);
        }
        Ok(Trajectory { waypoints, cum_m, speed_mps, segment: 0 })
    }

    /// Every waypoint of the route (one point for a static UE).
    pub fn waypoints(&self) -> &[Point2] {
        &self.waypoints
    }

    pub fn speed_mps(&self) -> f64 {
        self.speed_mps
    }

    /// Distance travelled along the route by `now_ns` (stops growing at the end).
    #[inline]
    pub fn travelled_m(&self, now_ns: u64) -> f64 {
        (self.speed_mps * ns_to_s(now_ns)).min(*self.cum_m.last().unwrap_or(&0.0))
    }

    /// Position at `now_ns` and the distance travelled so far.
    pub fn at(&mut self, now_ns: u64) -> (Point2, f64) {
        let s = self.travelled_m(now_ns);
        if s < self.cum_m[self.segment] {
            self.segment = 0;
        }
        let last = self.waypoints.len() - 1;
        while self.segment < last && self.cum_m[self.segment + 1] <= s {
            self.segment += 1;
        }
        if self.segment == last {
            return (self.waypoints[last], s);
        }
        let (a, b) = (self.waypoints[self.segment], self.waypoints[self.segment + 1]);
        let len = self.cum_m[self.segment + 1] - self.cum_m[self.segment];
        (a.lerp(b, (s - self.cum_m[self.segment]) / len), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> Trajectory {
        Trajectory::new(&MobilityConfig::Route {
            waypoints: vec![Point2::new(0.0, 0.0), Point2::new(10.0, 0.0), Point2::new(10.0, 10.0)],
            speed_mps: 2.0,
        })
        .unwrap()
    }

    #[test]
    fn walks_the_polyline_and_stops() {
        let mut t = route();
        assert_eq!(t.at(0), (Point2::new(0.0, 0.0), 0.0));
        assert_eq!(t.at(2_500_000_000), (Point2::new(5.0, 0.0), 5.0));
        assert_eq!(t.at(5_000_000_000), (Point2::new(10.0, 0.0), 10.0));
        assert_eq!(t.at(7_500_000_000), (Point2::new(10.0, 5.0), 15.0));
        assert_eq!(t.at(60_000_000_000), (Point2::new(10.0, 10.0), 20.0));
        // Going back in time is still answered correctly.
        assert_eq!(t.at(1_000_000_000), (Point2::new(2.0, 0.0), 2.0));
    }

    #[test]
    fn static_and_duplicate_waypoints() {
        let mut s = Trajectory::new(&MobilityConfig::Static(Point2::new(3.0, 4.0))).unwrap();
        assert_eq!(s.at(9_000_000_000), (Point2::new(3.0, 4.0), 0.0));
        let mut d = Trajectory::new(&MobilityConfig::Route {
            waypoints: vec![Point2::new(0.0, 0.0), Point2::new(0.0, 0.0), Point2::new(0.0, 4.0)],
            speed_mps: 1.0,
        })
        .unwrap();
        assert_eq!(d.at(1_000_000_000), (Point2::new(0.0, 1.0), 1.0));
    }

    #[test]
    fn rejects_bad_config() {
        let e = Trajectory::new(&MobilityConfig::Route { waypoints: vec![], speed_mps: 1.0 }).unwrap_err();
        assert_eq!(e.field, "mobility.waypoints");
        let e = Trajectory::new(&MobilityConfig::Route { waypoints: vec![Point2::new(0.0, 0.0)], speed_mps: -1.0 }).unwrap_err();
        assert_eq!(e.to_string(), "mobility.speed_mps = -1.0: expected a finite number ≥ 0");
    }
}
