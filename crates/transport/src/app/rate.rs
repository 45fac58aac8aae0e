//! Application-limited source: writes at a constant rate, counted from the connection's
//! start, in chunks every millisecond once the connection is established.

use super::{AppAction, Application};

/// How often the source writes what has become due.
const CHUNK_NS: u64 = 1_000_000;

pub struct RateLimited {
    rate_bps: f64,
    start_ns: u64,
    written_bytes: u64,
    next_write_ns: Option<u64>,
}

impl RateLimited {
    pub fn new(rate_bps: f64, start_ns: u64) -> RateLimited {
        RateLimited { rate_bps, start_ns, written_bytes: 0, next_write_ns: None }
    }
}

impl Application for RateLimited {
    fn on_established(&mut self, now_ns: u64) -> AppAction {
        // The first write happens at once, through the deadline, like every later one.
        self.next_write_ns = Some(now_ns);
        AppAction::NONE
    }

    fn on_deadline(&mut self, now_ns: u64) -> AppAction {
        // Everything due since the start, truncated to whole bytes; what was already
        // written is subtracted so that truncation never accumulates.
        let due_bytes = ((now_ns - self.start_ns) as f64 * self.rate_bps / 8e9) as u64;
        let write_bytes = due_bytes - self.written_bytes;
        self.written_bytes = due_bytes;
        self.next_write_ns = Some(now_ns + CHUNK_NS);
        AppAction { write_bytes: Some(write_bytes), close: false }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.next_write_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_is_due_every_millisecond_without_drift() {
        // 1 Mbit/s from t = 2 ms: 125 bytes per millisecond.
        let mut app = RateLimited::new(1e6, 2_000_000);
        assert_eq!(app.next_deadline_ns(), None);
        assert!(app.on_established(5_000_000).is_none());
        assert_eq!(app.next_deadline_ns(), Some(5_000_000));
        // 3 ms since the start are due at the first write.
        assert_eq!(app.on_deadline(5_000_000).write_bytes, Some(375));
        assert_eq!(app.next_deadline_ns(), Some(6_000_000));
        assert_eq!(app.on_deadline(6_000_000).write_bytes, Some(125));
        // A late call writes what accumulated; the total stays rate × time.
        assert_eq!(app.on_deadline(9_500_000).write_bytes, Some(437));
        assert_eq!(app.written_bytes, 937);
    }
}
