//! Finite downloads: one file, or a list of sizes fetched one after the other on the same
//! connection. Download k + 1 is requested when the last byte of download k reaches the
//! receiving application (the request's own transit is not modelled); the first starts
//! with the connection (the client's SYN), so a single file's time is the download time D of docs/models/transport.md §9,
//! connection start to last byte delivered. The connection closes after the last size is
//! written.

use super::{AppAction, Application, Download};

pub struct Downloads {
    sizes_bytes: Vec<u64>,
    /// Index of the download in progress (== sizes_bytes.len() once all are done).
    current: usize,
    current_start_ns: u64,
    /// Stream offset at which the download in progress ends.
    current_end_bytes: u64,
    done: Vec<Download>,
}

impl Downloads {
    /// `sizes_bytes` must not be empty; each size must be at least 1 byte.
    pub fn new(sizes_bytes: Vec<u64>, start_ns: u64) -> Downloads {
        assert!(!sizes_bytes.is_empty() && !sizes_bytes.contains(&0), "downloads need sizes of at least one byte");
        let current_end_bytes = sizes_bytes[0];
        Downloads { done: Vec::with_capacity(sizes_bytes.len()), sizes_bytes, current: 0, current_start_ns: start_ns, current_end_bytes }
    }

    /// The write that requests the download in progress (closing after the last one).
    fn request_current(&self) -> AppAction {
        AppAction { write_bytes: Some(self.sizes_bytes[self.current]), close: self.current + 1 == self.sizes_bytes.len() }
    }
}

impl Application for Downloads {
    fn on_established(&mut self, _now_ns: u64) -> AppAction {
        self.request_current()
    }

    fn on_delivered(&mut self, now_ns: u64, delivered_bytes: u64) -> AppAction {
        if self.current == self.sizes_bytes.len() || delivered_bytes < self.current_end_bytes {
            return AppAction::NONE;
        }
        let bytes = self.sizes_bytes[self.current];
        self.done.push(Download { bytes, start_ns: self.current_start_ns, end_ns: now_ns });
        self.current += 1;
        if self.current == self.sizes_bytes.len() {
            return AppAction::NONE;
        }
        self.current_start_ns = now_ns;
        self.current_end_bytes += self.sizes_bytes[self.current];
        self.request_current()
    }

    fn downloads(&self) -> &[Download] {
        &self.done
    }

    fn completed_ns(&self) -> Option<u64> {
        (self.current == self.sizes_bytes.len()).then(|| self.done.last().expect("at least one download").end_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_and_closed_at_once_and_timed_from_the_connection_start() {
        let mut app = Downloads::new(vec![5000], 100);
        assert_eq!(app.on_established(300), AppAction { write_bytes: Some(5000), close: true });
        assert!(app.on_delivered(400, 4999).is_none());
        assert_eq!(app.completed_ns(), None);
        assert!(app.on_delivered(900, 5000).is_none());
        assert_eq!(app.downloads(), [Download { bytes: 5000, start_ns: 100, end_ns: 900 }]);
        assert_eq!(app.completed_ns(), Some(900));
        // Nothing more happens after the end.
        assert!(app.on_delivered(950, 5000).is_none());
        assert_eq!(app.downloads().len(), 1);
    }

    #[test]
    fn each_download_is_requested_when_the_previous_one_is_delivered() {
        let mut app = Downloads::new(vec![1000, 3000, 2000], 0);
        assert_eq!(app.on_established(10), AppAction { write_bytes: Some(1000), close: false });
        assert!(app.on_delivered(20, 600).is_none());
        assert_eq!(app.on_delivered(50, 1000), AppAction { write_bytes: Some(3000), close: false });
        assert!(app.on_delivered(60, 3999).is_none());
        assert_eq!(app.on_delivered(80, 4000), AppAction { write_bytes: Some(2000), close: true });
        assert_eq!(app.completed_ns(), None);
        assert!(app.on_delivered(130, 6000).is_none());
        let times: Vec<u64> = app.downloads().iter().map(Download::duration_ns).collect();
        assert_eq!(times, [50, 30, 50]);
        assert_eq!(app.completed_ns(), Some(130));
    }
}
