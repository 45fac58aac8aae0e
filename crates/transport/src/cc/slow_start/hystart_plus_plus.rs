//! HyStart++ (RFC 9406 §4), with the RFC's recommended constants (§4.3). Slow start watches
//! the minimum RTT of each round; when it grows by more than a clamp of the previous round's
//! minimum / 8 to [4 ms, 16 ms], slow start turns into Conservative Slow Start (CSS), which
//! grows a quarter as fast. If the RTT falls back below the value that started CSS, slow start
//! resumes (the increase was a fluke); after 5 rounds of CSS, congestion avoidance begins.
//!
//! As RFC 9406 §4.3 recommends, only the first slow start uses it: after a timeout the
//! connection runs standard slow start up to the ssthresh the loss left.

use super::SlowStartStep;
use crate::cc::AckSample;

/// RFC 9406 §4.3: MIN_RTT_THRESH, MAX_RTT_THRESH, MIN_RTT_DIVISOR, N_RTT_SAMPLE,
/// CSS_GROWTH_DIVISOR, CSS_ROUNDS.
const MIN_RTT_THRESH_NS: u64 = 4_000_000;
const MAX_RTT_THRESH_NS: u64 = 16_000_000;
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    SlowStart,
    /// Conservative slow start: the round minimum RTT that started it (cssBaselineMinRtt) and
    /// the rounds completed in it.
    Css {
        baseline_min_rtt_ns: u64,
        rounds: u32,
    },
    /// Congestion avoidance was entered, or a timeout ended the first slow start.
    Done,
}

#[derive(Clone, Debug)]
pub struct HystartPlusPlus {
    phase: Phase,
    /// windowEnd: the SND.NXT at which the current round ends (0: none begun).
    window_end: u64,
    last_round_min_rtt_ns: Option<u64>,
    current_round_min_rtt_ns: Option<u64>,
    rtt_sample_count: u32,
}

impl Default for HystartPlusPlus {
    fn default() -> Self {
        HystartPlusPlus {
            phase: Phase::SlowStart,
            window_end: 0,
            last_round_min_rtt_ns: None,
            current_round_min_rtt_ns: None,
            rtt_sample_count: 0,
        }
    }
}

impl HystartPlusPlus {
    /// A timeout: standard slow start from now on.
    pub fn restart(&mut self) {
        self.phase = Phase::Done;
    }

    pub fn on_ack(&mut self, ack: &AckSample, in_slow_start: bool) -> SlowStartStep {
        if !in_slow_start || self.phase == Phase::Done {
            return SlowStartStep::Grow { divisor: 1 };
        }
        // §4.2: a round ends when the ACK covers windowEnd; the next one starts here.
        if ack.snd_una >= self.window_end {
            self.window_end = ack.snd_nxt;
            self.last_round_min_rtt_ns = self.current_round_min_rtt_ns.take();
            self.rtt_sample_count = 0;
            if let Phase::Css { baseline_min_rtt_ns, rounds } = self.phase {
                if rounds + 1 >= CSS_ROUNDS {
                    self.phase = Phase::Done;
                    return SlowStartStep::Exit;
                }
                self.phase = Phase::Css { baseline_min_rtt_ns, rounds: rounds + 1 };
            }
        }
        if let Some(rtt_ns) = ack.ca_rtt_ns {
            self.current_round_min_rtt_ns = Some(self.current_round_min_rtt_ns.map_or(rtt_ns, |m| m.min(rtt_ns)));
            self.rtt_sample_count += 1;
        }
        let enough_samples = self.rtt_sample_count >= N_RTT_SAMPLE;
        match (self.phase, self.current_round_min_rtt_ns, self.last_round_min_rtt_ns) {
            // This ACK grows at the standard rate; the next ones in CSS.
            (Phase::SlowStart, Some(current), Some(last)) if enough_samples => {
                let rtt_thresh_ns = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH_NS, MAX_RTT_THRESH_NS);
                if current >= last + rtt_thresh_ns {
                    self.phase = Phase::Css { baseline_min_rtt_ns: current, rounds: 0 };
                }
                SlowStartStep::Grow { divisor: 1 }
            }
            (Phase::SlowStart, _, _) => SlowStartStep::Grow { divisor: 1 },
            // This ACK grows at the CSS rate; a round minimum below the baseline resumes slow
            // start for the next ones.
            (Phase::Css { baseline_min_rtt_ns, .. }, Some(current), _) if enough_samples && current < baseline_min_rtt_ns => {
                self.phase = Phase::SlowStart;
                SlowStartStep::Grow { divisor: CSS_GROWTH_DIVISOR }
            }
            (Phase::Css { .. }, _, _) => SlowStartStep::Grow { divisor: CSS_GROWTH_DIVISOR },
            (Phase::Done, _, _) => SlowStartStep::Grow { divisor: 1 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// One round of `n` ACKs with RTT `rtt_ns`, ending at `end`; the steps they got.
    fn round(h: &mut HystartPlusPlus, start: u64, end: u64, n: u64, rtt_ns: u64) -> Vec<SlowStartStep> {
        (0..n)
            .map(|i| h.on_ack(&AckSample { ca_rtt_ns: Some(rtt_ns), snd_una: start + i, snd_nxt: end, ..AckSample::default() }, true))
            .collect()
    }

    const GROW: SlowStartStep = SlowStartStep::Grow { divisor: 1 };
    const CSS: SlowStartStep = SlowStartStep::Grow { divisor: CSS_GROWTH_DIVISOR };

    #[test]
    fn an_rtt_increase_starts_css_and_five_css_rounds_end_slow_start() {
        let mut h = HystartPlusPlus::default();
        // Round 1 sets lastRoundMinRTT = 40 ms; round 2 at 44.9 ms stays (threshold 40/8 = 5 ms).
        assert_eq!(round(&mut h, 1, 100, 10, 40 * MS), vec![GROW; 10]);
        assert_eq!(round(&mut h, 100, 200, 10, 44_900_000), vec![GROW; 10]);
        // Round 3 at 51 ms (≥ 44.9 + 44.9/8): the eighth sample enters CSS, later ACKs grow at a quarter.
        let steps = round(&mut h, 200, 300, 10, 51 * MS);
        assert_eq!(steps, [vec![GROW; 8], vec![CSS; 2]].concat());
        // Four more CSS rounds at the same RTT; the fifth round's end is the exit.
        for r in 0..4 {
            assert_eq!(round(&mut h, 300 + 100 * r, 400 + 100 * r, 10, 51 * MS), vec![CSS; 10], "CSS round {}", r + 2);
        }
        assert_eq!(round(&mut h, 700, 800, 1, 51 * MS), vec![SlowStartStep::Exit]);
        assert_eq!(round(&mut h, 800, 900, 3, 80 * MS), vec![GROW; 3], "done: standard growth, no second exit");
    }

    #[test]
    fn an_rtt_back_below_the_css_baseline_resumes_slow_start() {
        let mut h = HystartPlusPlus::default();
        round(&mut h, 1, 100, 10, 40 * MS);
        assert_eq!(round(&mut h, 100, 200, 10, 50 * MS)[9], CSS);
        // Next round: 45 ms < the 50 ms baseline after eight samples: slow start again.
        assert_eq!(round(&mut h, 200, 300, 10, 45 * MS), [vec![CSS; 8], vec![GROW; 2]].concat());
    }

    #[test]
    fn after_a_timeout_slow_start_is_standard() {
        let mut h = HystartPlusPlus::default();
        h.restart();
        round(&mut h, 1, 100, 10, 40 * MS);
        assert_eq!(round(&mut h, 100, 200, 10, 80 * MS), vec![GROW; 10]);
    }
}
