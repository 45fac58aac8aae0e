//! RTT estimator (docs/proxy.md#how-a-flow-is-handled, "RTT"): RTT_e = RTT_down + RTT_up, each
//! measured with the proxy's own clock, and RTT_min = min of RTT_e over a sliding window.

use std::collections::VecDeque;

use millinet_wire::seq;

/// Relayed TSvals remembered while waiting for the server to echo them (bounds memory when
/// the server never answers).
const MAX_PENDING_TSVALS: usize = 4096;

/// Minimum over a sliding time window with a monotone deque: O(1) amortised per sample.
#[derive(Debug)]
pub struct WindowedMin {
    window_ns: u64,
    /// (time, value), values strictly increasing from front to back.
    samples: VecDeque<(u64, u64)>,
}

impl WindowedMin {
    pub fn new(window_ns: u64) -> WindowedMin {
        WindowedMin { window_ns, samples: VecDeque::new() }
    }

    pub fn push(&mut self, now_ns: u64, value: u64) {
        while self.samples.back().is_some_and(|&(_, v)| v >= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((now_ns, value));
        self.expire(now_ns);
    }

    /// The minimum of the samples taken in (now − window, now] (expired samples are
    /// dropped on the next push; at most those are skipped here).
    pub fn get(&self, now_ns: u64) -> Option<u64> {
        self.samples.iter().find(|&&(t, _)| t + self.window_ns > now_ns).map(|&(_, v)| v)
    }

    fn expire(&mut self, now_ns: u64) {
        while self.samples.front().is_some_and(|&(t, _)| t + self.window_ns <= now_ns) {
            self.samples.pop_front();
        }
    }
}

/// The latest RTT estimates of a flow, as given to flow-window policies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimates {
    /// Latest proxy → UE → proxy sample.
    pub down_ns: Option<u64>,
    /// Latest proxy → server → proxy sample.
    pub up_ns: Option<u64>,
    /// Minimum of RTT_e = RTT_down + RTT_up over the sliding window.
    pub min_ns: Option<u64>,
}

#[derive(Debug)]
pub struct RttEstimator {
    down_ns: Option<u64>,
    up_ns: Option<u64>,
    min: WindowedMin,
    /// (TSval, time first relayed) of ACKs relayed toward the server, TSvals increasing.
    relayed_tsvals: VecDeque<(u32, u64)>,
    /// The highest TSval ever relayed. An ACK that reaches the proxy late (held in the uplink
    /// through a blockage) carries a TSval the server may already hold from a copy relayed
    /// before; taking its relay as the first would make the server's next segment echoing it
    /// (an RTO retransmission, sent before this ACK arrived) a sample of a few ms, and RTT_min
    /// would keep it for its whole window.
    highest_relayed_tsval: Option<u32>,
    /// Without timestamps: when an ACK that may trigger new server data was relayed.
    trigger_ns: Option<u64>,
}

impl RttEstimator {
    pub fn new(window_ns: u64) -> RttEstimator {
        RttEstimator {
            down_ns: None,
            up_ns: None,
            min: WindowedMin::new(window_ns),
            relayed_tsvals: VecDeque::new(),
            highest_relayed_tsval: None,
            trigger_ns: None,
        }
    }

    /// RTT_down sample: a segment forwarded toward the UE was covered by the UE's ACK
    /// (the caller applies Karn's rule).
    pub fn on_down_sample(&mut self, now_ns: u64, rtt_ns: u64) {
        self.down_ns = Some(rtt_ns);
        self.combine(now_ns);
    }

    /// An ACK carrying `tsval` was relayed toward the server.
    pub fn on_ack_relayed(&mut self, now_ns: u64, tsval: u32) {
        if self.highest_relayed_tsval.is_none_or(|highest| seq::gt(tsval, highest)) {
            self.highest_relayed_tsval = Some(tsval);
            if self.relayed_tsvals.len() == MAX_PENDING_TSVALS {
                self.relayed_tsvals.pop_front();
            }
            self.relayed_tsvals.push_back((tsval, now_ns));
        }
    }

    /// Without timestamps: an ACK that may make the server send (handshake completion, or an
    /// ACK that opened the window of a window-limited server) was relayed.
    pub fn on_trigger_relayed(&mut self, now_ns: u64) {
        self.trigger_ns.get_or_insert(now_ns);
    }

    /// New data from the server arrived; `tsecr` is its echoed timestamp, if timestamps are in use.
    pub fn on_server_data(&mut self, now_ns: u64, tsecr: Option<u32>) {
        let relayed_ns = match tsecr {
            Some(echo) => {
                while self.relayed_tsvals.front().is_some_and(|&(v, _)| seq::lt(v, echo)) {
                    self.relayed_tsvals.pop_front();
                }
                match self.relayed_tsvals.front() {
                    Some(&(v, t)) if v == echo => {
                        self.relayed_tsvals.pop_front();
                        Some(t)
                    }
                    _ => None,
                }
            }
            None => self.trigger_ns.take(),
        };
        if let Some(t) = relayed_ns {
            self.up_ns = Some(now_ns - t);
            self.combine(now_ns);
        }
    }

    pub fn estimates(&self, now_ns: u64) -> RttEstimates {
        RttEstimates { down_ns: self.down_ns, up_ns: self.up_ns, min_ns: self.min.get(now_ns) }
    }

    fn combine(&mut self, now_ns: u64) {
        if let (Some(down), Some(up)) = (self.down_ns, self.up_ns) {
            self.min.push(now_ns, down + up);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_min_forgets_old_samples() {
        let mut m = WindowedMin::new(10);
        m.push(0, 5);
        m.push(3, 7);
        m.push(6, 6);
        assert_eq!(m.get(9), Some(5));
        assert_eq!(m.get(10), Some(6));
        assert_eq!(m.get(16), None);
    }

    #[test]
    fn rtt_up_matches_the_first_relay_of_a_tsval() {
        let mut r = RttEstimator::new(1_000);
        r.on_down_sample(0, 5);
        r.on_ack_relayed(10, 100);
        r.on_ack_relayed(12, 100);
        r.on_ack_relayed(14, 101);
        r.on_server_data(30, Some(100));
        assert_eq!(r.estimates(30), RttEstimates { down_ns: Some(5), up_ns: Some(20), min_ns: Some(25) });
        // Echo of an already-sampled TSval: no new sample.
        r.on_server_data(31, Some(100));
        assert_eq!(r.estimates(31).up_ns, Some(20));
        r.on_server_data(40, Some(101));
        assert_eq!(r.estimates(40).up_ns, Some(26));
    }

    #[test]
    fn an_ack_relayed_again_late_does_not_restart_its_tsvals_clock() {
        // TSval 100 relayed at 10 and echoed at 30 (sample 20). A copy of it that was held in
        // the uplink through a blockage is relayed at 1000; the server's retransmission at
        // its RTO echoes 100 (it has held it since 10) and reaches the proxy at 1004: not a
        // 4 ns round trip.
        let mut r = RttEstimator::new(10_000);
        r.on_down_sample(0, 5);
        r.on_ack_relayed(10, 100);
        r.on_server_data(30, Some(100));
        r.on_ack_relayed(1000, 100);
        r.on_server_data(1004, Some(100));
        assert_eq!(r.estimates(1004), RttEstimates { down_ns: Some(5), up_ns: Some(20), min_ns: Some(25) });
        // A new TSval is timed as before.
        r.on_ack_relayed(1010, 101);
        r.on_server_data(1032, Some(101));
        assert_eq!(r.estimates(1032).up_ns, Some(22));
    }

    #[test]
    fn rtt_up_without_timestamps_uses_triggers() {
        let mut r = RttEstimator::new(1_000);
        r.on_trigger_relayed(100);
        r.on_trigger_relayed(105);
        r.on_server_data(130, None);
        assert_eq!(r.estimates(130).up_ns, Some(30));
        r.on_server_data(140, None);
        assert_eq!(r.estimates(140).up_ns, Some(30));
    }
}
