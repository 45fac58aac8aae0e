//! CQI reporting (docs/models/channel.md §9): the SINR adaptive modulation and coding
//! must use is the one the UE measured at its last report instant, delivered
//! after a delay. Measurements happen at k·period; the report measured at
//! k·period is usable from k·period + delay until the next one arrives.

use std::collections::VecDeque;

use crate::error::ConfigError;

/// Reporting period and delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqiConfig {
    pub period_ns: u64,
    pub delay_ns: u64,
}

impl Default for CqiConfig {
    fn default() -> Self {
        CqiConfig { period_ns: 1_000_000, delay_ns: 500_000 }
    }
}

/// The CQI state of one (UE, cell) link.
#[derive(Clone, Debug)]
pub struct CqiReporter {
    config: CqiConfig,
    /// Reports measured but not yet delivered: (delivery time, SINR).
    in_flight: VecDeque<(u64, f64)>,
    next_measure_ns: u64,
    reported: Option<f64>,
}

impl CqiReporter {
    pub fn new(config: CqiConfig) -> Result<Self, ConfigError> {
        if config.period_ns == 0 {
            return Err(ConfigError::new("cqi.period_ns", config.period_ns, "a period > 0"));
        }
        // At most ⌈delay/period⌉ + 1 reports are ever in flight, so the queue
        // never grows after this allocation.
        let cap = (config.delay_ns / config.period_ns) as usize + 2;
        Ok(CqiReporter { config, in_flight: VecDeque::with_capacity(cap), next_measure_ns: 0, reported: None })
    }

    /// Feed the true SINR at `now_ns` (call at least once per report period,
    /// e.g. every slot, with non-decreasing times) and get the SINR AMC must
    /// use now: [`CqiReporter::measure`], then [`CqiReporter::reported`].
    pub fn update(&mut self, now_ns: u64, true_sinr_db: f64) -> Option<f64> {
        self.measure(now_ns, true_sinr_db);
        self.reported(now_ns)
    }

    /// Whether a call to [`CqiReporter::measure`] at `now_ns` would take a measurement.
    #[inline]
    pub fn measures_at(&self, now_ns: u64) -> bool {
        now_ns >= self.next_measure_ns
    }

    /// The measurement for instant k·period is the SINR passed at the first call at or
    /// after it.
    pub fn measure(&mut self, now_ns: u64, true_sinr_db: f64) {
        if self.measures_at(now_ns) {
            let p = self.config.period_ns;
            let instant = now_ns - now_ns % p;
            self.in_flight.push_back((instant.saturating_add(self.config.delay_ns), true_sinr_db));
            self.next_measure_ns = instant + p;
        }
    }

    /// The next time the reporter acts: a measurement, or a report that arrives.
    pub fn next_event_ns(&self) -> u64 {
        self.in_flight.front().map_or(self.next_measure_ns, |&(at, _)| at.min(self.next_measure_ns))
    }

    /// The SINR AMC must use at `now_ns`: the last report delivered by then, or `None`
    /// before the first one arrives.
    pub fn reported(&mut self, now_ns: u64) -> Option<f64> {
        while let Some(&(at, v)) = self.in_flight.front() {
            if at > now_ns {
                break;
            }
            self.reported = Some(v);
            self.in_flight.pop_front();
        }
        self.reported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    #[test]
    fn lags_by_delay_and_updates_with_period() {
        // True SINR equals the time in ms; slots of 125 µs.
        let mut c = CqiReporter::new(CqiConfig::default()).unwrap();
        let mut seen = Vec::new();
        for slot in 0..40u64 {
            let t = slot * 125 * US;
            seen.push((t, c.update(t, t as f64 / 1e6)));
        }
        let at = |us: u64| seen.iter().find(|(t, _)| *t == us * US).unwrap().1;
        assert_eq!(at(0), None);
        assert_eq!(at(375), None);
        assert_eq!(at(500), Some(0.0)); // measured at 0, delivered at 0.5 ms
        assert_eq!(at(1375), Some(0.0)); // the 1 ms report is still in flight
        assert_eq!(at(1500), Some(1.0));
        assert_eq!(at(2250), Some(1.0));
        assert_eq!(at(2500), Some(2.0));
        assert_eq!(at(4875), Some(4.0));
    }

    #[test]
    fn delay_longer_than_period() {
        let mut c = CqiReporter::new(CqiConfig { period_ns: 1_000 * US, delay_ns: 2_500 * US }).unwrap();
        let mut last = None;
        for slot in 0..80u64 {
            let t = slot * 125 * US;
            last = c.update(t, t as f64 / 1e6);
            if t == 2_375 * US {
                assert_eq!(last, None);
            }
            if t == 4_000 * US {
                assert_eq!(last, Some(1.0));
            }
        }
        assert_eq!(last, Some(7.0)); // at 9.875 ms: measured at 7 ms
        assert!(c.in_flight.capacity() <= 8);
    }

    #[test]
    fn rejects_zero_period() {
        assert!(CqiReporter::new(CqiConfig { period_ns: 0, delay_ns: 0 }).is_err());
    }
}
