//! Geometric blockage: LOS from the obstacle test of docs/models/channel.md §1.

use super::{BlockageModel, LinkGeometry};
use crate::geometry::Rect;
use crate::los::is_los;

/// The obstacles that can ever cross this link. Every cell–UE segment lies in
/// the convex hull of the cell and the route, hence in its bounding box, so
/// obstacles outside that box are dropped once at construction and never
/// tested per query.
#[derive(Clone, Debug)]
pub struct GeometricBlockage {
    obstacles: Vec<Rect>,
}

impl GeometricBlockage {
    pub fn new(obstacles: &[Rect], area: &Rect) -> Self {
        GeometricBlockage { obstacles: obstacles.iter().filter(|o| o.overlaps(area)).copied().collect() }
    }
}

impl BlockageModel for GeometricBlockage {
    fn is_los(&mut self, _now_ns: u64, geo: &LinkGeometry) -> bool {
        is_los(geo.cell, geo.ue, &self.obstacles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point2;
    use crate::los::Antenna;

    #[test]
    fn keeps_only_relevant_obstacles() {
        let area = Rect::from_corners(Point2::new(0.0, 0.0), Point2::new(50.0, 100.0), None);
        let near = Rect::from_corners(Point2::new(20.0, 40.0), Point2::new(30.0, 45.0), None);
        let far = Rect::from_corners(Point2::new(200.0, 40.0), Point2::new(210.0, 45.0), None);
        let mut g = GeometricBlockage::new(&[near, far], &area);
        assert_eq!(g.obstacles, vec![near]);
        let geo = |x| LinkGeometry {
            cell: Antenna { pos: Point2::new(25.0, 100.0), height_m: 10.0 },
            ue: Antenna { pos: Point2::new(x, 0.0), height_m: 1.5 },
            d2d_m: 100.0,
        };
        assert!(!g.is_los(0, &geo(25.0)));
        assert!(g.is_los(0, &geo(0.0)));
    }
}
