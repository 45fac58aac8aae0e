//! Points and axis-aligned rectangles in the ground plane, and the one
//! segment test the LOS model needs.

/// A point on the ground plane, metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point2 {
    pub x_m: f64,
    pub y_m: f64,
}

impl Point2 {
    pub const fn new(x_m: f64, y_m: f64) -> Self {
        Point2 { x_m, y_m }
    }

    /// Euclidean ground distance to `other`.
    #[inline]
    pub fn distance_m(self, other: Point2) -> f64 {
        (other.x_m - self.x_m).hypot(other.y_m - self.y_m)
    }

    /// The point a fraction `t` of the way from `self` to `other`.
    #[inline]
    pub fn lerp(self, other: Point2, t: f64) -> Point2 {
        Point2::new(self.x_m + t * (other.x_m - self.x_m), self.y_m + t * (other.y_m - self.y_m))
    }
}

/// An axis-aligned rectangle (a building, car, tree or person seen from
/// above), closed: its edges and corners belong to it. `height_m = None`
/// means "taller than any link", i.e. it blocks whatever crosses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub min: Point2,
    pub max: Point2,
    pub height_m: Option<f64>,
}

impl Rect {
    /// Rectangle from two opposite corners (any order).
    pub fn from_corners(a: Point2, b: Point2, height_m: Option<f64>) -> Self {
        Rect { min: Point2::new(a.x_m.min(b.x_m), a.y_m.min(b.y_m)), max: Point2::new(a.x_m.max(b.x_m), a.y_m.max(b.y_m)), height_m }
    }

    /// The smallest rectangle holding all `points` (no height); `None` if empty.
    pub fn bounding(points: impl IntoIterator<Item = Point2>) -> Option<Self> {
        let mut it = points.into_iter();
        let first = it.next()?;
        let mut r = Rect { min: first, max: first, height_m: None };
        for p in it {
            r.min = Point2::new(r.min.x_m.min(p.x_m), r.min.y_m.min(p.y_m));
            r.max = Point2::new(r.max.x_m.max(p.x_m), r.max.y_m.max(p.y_m));
        }
        Some(r)
    }

    pub fn width_m(&self) -> f64 {
        self.max.x_m - self.min.x_m
    }

    pub fn depth_m(&self) -> f64 {
        self.max.y_m - self.min.y_m
    }

    /// Whether `p` lies in the closed rectangle.
    #[inline]
    pub fn contains(&self, p: Point2) -> bool {
        self.min.x_m <= p.x_m && p.x_m <= self.max.x_m && self.min.y_m <= p.y_m && p.y_m <= self.max.y_m
    }

    /// Whether the two closed rectangles share at least one point.
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.min.x_m <= other.max.x_m && other.min.x_m <= self.max.x_m && self.min.y_m <= other.max.y_m && other.min.y_m <= self.max.y_m
    }

    /// The parameter interval [t_in, t_out] ⊆ [0, 1] over which the segment
    /// a + t·(b − a) lies in this closed rectangle, or `None` if it misses.
    ///
    /// Liang–Barsky clipping (Liang & Barsky, "A new concept and method for
    /// line clipping", ACM TOG 3(1), 1984): each slab x_min ≤ x ≤ x_max,
    /// y_min ≤ y ≤ y_max narrows the interval. Comparisons are closed, so a
    /// segment that only touches an edge or a corner gets a one-point
    /// interval (t_in = t_out) and counts as crossing.
    pub fn clip_segment(&self, a: Point2, b: Point2) -> Option<(f64, f64)> {
        let (dx, dy) = (b.x_m - a.x_m, b.y_m - a.y_m);
        let mut t_in = 0.0f64;
        let mut t_out = 1.0f64;
        // (p, q): the segment is inside the slab side where p·t ≤ q.
        let sides = [(-dx, a.x_m - self.min.x_m), (dx, self.max.x_m - a.x_m), (-dy, a.y_m - self.min.y_m), (dy, self.max.y_m - a.y_m)];
        for (p, q) in sides {
            if p == 0.0 {
                // Parallel to this side: inside the slab everywhere or nowhere.
                if q < 0.0 {
                    return None;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t_in = t_in.max(r);
                } else {
                    t_out = t_out.min(r);
                }
            }
        }
        (t_in <= t_out).then_some((t_in, t_out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_through_middle() {
        let r = Rect::from_corners(Point2::new(4.0, -1.0), Point2::new(6.0, 1.0), None);
        let (t0, t1) = r.clip_segment(Point2::new(0.0, 0.0), Point2::new(10.0, 0.0)).unwrap();
        assert_eq!((t0, t1), (0.4, 0.6));
    }

    #[test]
    fn clip_misses_and_touches() {
        let r = Rect::from_corners(Point2::new(0.0, 0.0), Point2::new(1.0, 1.0), None);
        assert!(r.clip_segment(Point2::new(2.0, 0.0), Point2::new(2.0, 5.0)).is_none());
        // Runs along the right edge: touching counts.
        assert!(r.clip_segment(Point2::new(1.0, -1.0), Point2::new(1.0, 5.0)).is_some());
        // Segment ending before the rectangle.
        assert!(r.clip_segment(Point2::new(-3.0, 0.5), Point2::new(-0.1, 0.5)).is_none());
    }

    #[test]
    fn bounding_and_overlap() {
        let b = Rect::bounding([Point2::new(3.0, 1.0), Point2::new(-1.0, 4.0)]).unwrap();
        assert_eq!((b.min, b.max), (Point2::new(-1.0, 1.0), Point2::new(3.0, 4.0)));
        let o = Rect::from_corners(Point2::new(3.0, 4.0), Point2::new(5.0, 5.0), None);
        assert!(b.overlaps(&o));
        let far = Rect::from_corners(Point2::new(3.1, 4.0), Point2::new(5.0, 5.0), None);
        assert!(!b.overlaps(&far));
        assert!(Rect::bounding(std::iter::empty()).is_none());
    }
}
