//! Full buffer: the sender always has data.

use super::{AppAction, Application};

pub struct Bulk;

impl Application for Bulk {
    fn on_established(&mut self, _now_ns: u64) -> AppAction {
        AppAction { write_bytes: Some(u64::MAX), close: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_without_limit_once_and_never_closes() {
        let mut app = Bulk;
        assert_eq!(app.on_established(5), AppAction { write_bytes: Some(u64::MAX), close: false });
        assert!(app.on_delivered(9, 1 << 40).is_none());
        assert_eq!((app.next_deadline_ns(), app.completed_ns()), (None, None));
    }
}
