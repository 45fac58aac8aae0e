//! Combining optional deadlines (a sans-IO model reports its next timeout as `Option<u64>`).

/// The earlier of two optional deadlines (None: no deadline). Written out pairwise on
/// purpose: the array form `[a, b, ..].into_iter().flatten().min()` compiles to a large
/// vectorised loop, and the engine asks every endpoint for its deadline after every packet —
/// that form alone was about a quarter of a mmWave run's instructions (callgrind).
#[inline]
pub fn earliest_ns(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::earliest_ns;

    #[test]
    fn none_is_no_deadline() {
        assert_eq!(earliest_ns(Some(5), Some(3)), Some(3));
        assert_eq!(earliest_ns(Some(5), None), Some(5));
        assert_eq!(earliest_ns(None, Some(0)), Some(0));
        assert_eq!(earliest_ns(None, None), None);
    }
}
