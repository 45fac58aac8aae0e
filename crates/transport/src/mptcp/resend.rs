//! Signals that ride on segments without data, which TCP does not retransmit (the DATA_FIN,
//! RFC 8684 §3.3.3; the MP_JOIN third ACK, §3.2): sent again whenever not answered within
//! the RTO of the subflow used, the interval doubling each time.

/// The interval doubles at most this many times.
const MAX_BACKOFF: u32 = 6;

/// When a signal goes again.
#[derive(Debug, Default)]
pub(super) struct Resend {
    /// None: not armed (never sent, or answered).
    deadline_ns: Option<u64>,
    /// Times it was sent.
    sent: u32,
}

impl Resend {
    pub fn deadline_ns(&self) -> Option<u64> {
        self.deadline_ns
    }

    /// Times it was sent so far.
    pub fn count(&self) -> u32 {
        self.sent
    }

    /// Whether it must go (again) now: not armed, or its deadline passed.
    pub fn due(&self, now_ns: u64) -> bool {
        self.deadline_ns.is_none_or(|d| now_ns >= d)
    }

    /// It went at `now_ns` on a subflow whose RTO is `rto_ns`.
    pub fn sent(&mut self, now_ns: u64, rto_ns: u64) {
        self.deadline_ns = Some(now_ns + (rto_ns << self.sent.min(MAX_BACKOFF)));
        self.sent += 1;
    }

    /// Answered, or no longer needed.
    pub fn stop(&mut self) {
        self.deadline_ns = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_doubles_up_to_a_cap() {
        let mut r = Resend::default();
        assert!(r.due(0));
        r.sent(0, 100);
        assert!(!r.due(99) && r.due(100));
        r.sent(100, 100);
        assert_eq!(r.deadline_ns(), Some(300));
        for _ in 0..10 {
            r.sent(0, 100);
        }
        assert_eq!((r.deadline_ns(), r.count()), (Some(100 << MAX_BACKOFF), 12));
        r.stop();
        assert!(r.due(0));
    }
}
