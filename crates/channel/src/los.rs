//! Geometric line-of-sight test (docs/models/channel.md §1).

use crate::geometry::{Point2, Rect};

/// One end of a radio link: ground position and antenna height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Antenna {
    pub pos: Point2,
    pub height_m: f64,
}

/// Whether the straight path from `cell` to `ue` is free of all `obstacles`.
///
/// An obstacle blocks when the ground projection of the path crosses its
/// rectangle and, if it has a height, the obstacle's top is at or above the
/// path somewhere over the crossing. The path height is linear along the
/// segment, so its lowest point over the crossing [t_in, t_out] is at one of
/// the two ends; an obstacle lower than that point does not block.
///
/// Grazing rule: obstacles are closed sets, so a path that only touches an
/// edge or a corner, or whose height equals the obstacle top, is blocked.
/// At 28 GHz the first Fresnel zone is tens of centimetres wide, so a path
/// that grazes a wall is already heavily obstructed; treating it as blocked
/// is the conservative choice. Transitions are immediate (no diffraction).
pub fn is_los(cell: Antenna, ue: Antenna, obstacles: &[Rect]) -> bool {
    !obstacles.iter().any(|o| blocks(o, cell, ue))
}

fn blocks(o: &Rect, cell: Antenna, ue: Antenna) -> bool {
    let Some((t_in, t_out)) = o.clip_segment(cell.pos, ue.pos) else {
        return false;
    };
    match o.height_m {
        None => true,
        Some(top) => {
            let z = |t: f64| cell.height_m + t * (ue.height_m - cell.height_m);
            top >= z(t_in).min(z(t_out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ant(x: f64, y: f64, h: f64) -> Antenna {
        Antenna { pos: Point2::new(x, y), height_m: h }
    }

    fn rect(x0: f64, y0: f64, x1: f64, y1: f64, h: Option<f64>) -> Rect {
        Rect::from_corners(Point2::new(x0, y0), Point2::new(x1, y1), h)
    }

    #[test]
    fn blocked_and_clear() {
        let (gnb, ue) = (ant(0.0, 0.0, 10.0), ant(100.0, 0.0, 1.5));
        let wall = rect(40.0, -5.0, 50.0, 5.0, None);
        assert!(!is_los(gnb, ue, &[wall]));
        let aside = rect(40.0, 1.0, 50.0, 5.0, None);
        assert!(is_los(gnb, ue, &[aside]));
        assert!(is_los(gnb, ue, &[]));
    }

    #[test]
    fn grazing_an_edge_or_corner_blocks() {
        let (gnb, ue) = (ant(0.0, 0.0, 10.0), ant(10.0, 10.0, 1.5));
        // The diagonal touches only the corner (5, 5).
        assert!(!is_los(gnb, ue, &[rect(5.0, 0.0, 7.0, 5.0, None)]));
        // A path running along the edge y = 0.
        let (a, b) = (ant(0.0, 0.0, 10.0), ant(10.0, 0.0, 1.5));
        assert!(!is_los(a, b, &[rect(2.0, 0.0, 3.0, 4.0, None)]));
        // Just off the corner: clear.
        assert!(is_los(gnb, ue, &[rect(5.0 + 1e-9, 0.0, 7.0, 5.0, None)]));
    }

    #[test]
    fn obstacle_lower_than_the_path_does_not_block() {
        // Path from 10 m down to 1.5 m over 100 m: at x = 40..50 its height is
        // 6.6 m .. 5.75 m, lowest 5.75 m at the far side of the crossing.
        let (gnb, ue) = (ant(0.0, 0.0, 10.0), ant(100.0, 0.0, 1.5));
        assert!(is_los(gnb, ue, &[rect(40.0, -5.0, 50.0, 5.0, Some(5.0))]));
        assert!(!is_los(gnb, ue, &[rect(40.0, -5.0, 50.0, 5.0, Some(6.0))]));
        // Top exactly at the path's lowest point over the crossing: grazing → blocked.
        assert!(!is_los(gnb, ue, &[rect(40.0, -5.0, 50.0, 5.0, Some(5.75))]));
        // A 1.8 m person right next to the UE blocks it.
        assert!(!is_los(gnb, ue, &[rect(98.0, -0.25, 98.5, 0.25, Some(1.8))]));
    }
}
