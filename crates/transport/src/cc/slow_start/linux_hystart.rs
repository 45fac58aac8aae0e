//! HyStart as Linux's CUBIC runs it (`net/ipv4/tcp_cubic.c`, Linux 6.18; Ha and Rhee,
//! "Taming the elephants", Computer Networks 2011), with the kernel's default parameters
//! (`hystart=1`, `hystart_detect=3`: both detectors). Per round of slow start it looks for
//! - an ACK train: ACKs keep arriving within 2 ms of each other for longer than half the
//!   minimum RTT since the round began, so the window already spans the path's BDP;
//! - a delay increase: the smallest RTT among the round's first 8 samples exceeds the minimum
//!   RTT by more than a clamp of min RTT / 8 to [4 ms, 16 ms], so a queue is building;
//!
//! and either ends slow start at the current window (ssthresh = cwnd). Differences from the
//! kernel: times are kept in nanoseconds rather than microseconds, and after a timeout the
//! next ACK starts a new round (the kernel starts it at the timeout with that moment's SND.NXT).

use super::SlowStartStep;
use crate::cc::AckSample;

/// `hystart_low_window`: no detection below 16 segments.
const LOW_WINDOW_SEGMENTS: u64 = 16;
/// `hystart_ack_delta_us`: ACKs at most 2 ms apart belong to one train.
const ACK_DELTA_NS: u64 = 2_000_000;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX`: the delay threshold's clamp.
const DELAY_MIN_NS: u64 = 4_000_000;
const DELAY_MAX_NS: u64 = 16_000_000;
/// The kernel discards delay samples for one second (HZ) after a congestion-avoidance epoch
/// begins (right after fast recovery).
const AFTER_RECOVERY_NS: u64 = 1_000_000_000;
/// `hystart_ack_delay` allows for the time to send 4 GSO packets of the device's
/// `gso_max_size`, 64 KiB on the emulator's veth and TUN devices, at the pacing rate, at most 1 ms.
const ACK_DELAY_GSO_BYTES: u64 = 4 * 65_536;
const ACK_DELAY_MAX_NS: u64 = 1_000_000;
/// `sysctl_tcp_pacing_ss_ratio`: in slow start the kernel's pacing rate (which it computes
/// even without a pacing qdisc) is 200% of cwnd per smoothed RTT.
const PACING_SS_RATIO: u64 = 2;

#[derive(Clone, Debug)]
pub struct LinuxHystart {
    mss_bytes: u64,
    /// A detector fired since the last reset: no more detection (`found`).
    found: bool,
    /// The round: when it began, the SND.NXT that ends it, the last ACK of its train.
    round_start_ns: u64,
    round_end_seq: u64,
    last_ack_ns: u64,
    /// The smallest RTT sample of the round and how many samples it has seen.
    round_min_rtt_ns: u64,
    round_samples: u32,
    /// The smallest RTT seen since the last reset (`delay_min`).
    min_rtt_ns: Option<u64>,
}

impl LinuxHystart {
    pub fn new(mss_bytes: u64) -> LinuxHystart {
        LinuxHystart {
            mss_bytes,
            found: false,
            round_start_ns: 0,
            // The first ACK passes it and starts the first round.
            round_end_seq: 0,
            last_ack_ns: 0,
            round_min_rtt_ns: u64::MAX,
            round_samples: 0,
            min_rtt_ns: None,
        }
    }

    /// `bictcp_hystart_reset`: a new round begins at this ACK and ends with SND.NXT now.
    fn start_round(&mut self, now_ns: u64, snd_nxt: u64) {
        self.round_start_ns = now_ns;
        self.last_ack_ns = now_ns;
        self.round_end_seq = snd_nxt;
        self.round_min_rtt_ns = u64::MAX;
        self.round_samples = 0;
    }

    /// `bictcp_reset` on a timeout: detection is armed again and the minimum RTT forgotten.
    pub fn restart(&mut self) {
        *self = LinuxHystart::new(self.mss_bytes);
    }

    /// `cubictcp_acked` and `hystart_update`.
    pub fn on_ack(&mut self, ack: &AckSample, cwnd_bytes: u64, in_slow_start: bool, ca_epoch_start_ns: Option<u64>) -> SlowStartStep {
        let keep_growing = SlowStartStep::Grow { divisor: 1 };
        // The kernel samples the RTT of the newest segment the ACK delivered, and none when
        // that was a retransmission.
        let Some(rtt_ns) = ack.ca_rtt_ns else { return keep_growing };
        if ca_epoch_start_ns.is_some_and(|start| ack.now_ns.saturating_sub(start) < AFTER_RECOVERY_NS) {
            return keep_growing;
        }
        let delay_ns = rtt_ns.max(1);
        let min_rtt_ns = *self.min_rtt_ns.insert(self.min_rtt_ns.map_or(delay_ns, |m| m.min(delay_ns)));
        if self.found || !in_slow_start {
            return keep_growing;
        }
        if ack.snd_una > self.round_end_seq {
            self.start_round(ack.now_ns, ack.snd_nxt);
        }
        if cwnd_bytes < LOW_WINDOW_SEGMENTS * self.mss_bytes {
            return keep_growing;
        }
        // ACK train. Without pacing the kernel halves the threshold: a train longer than half
        // the minimum RTT means the window covers the path.
        if ack.now_ns - self.last_ack_ns <= ACK_DELTA_NS {
            self.last_ack_ns = ack.now_ns;
            let threshold_ns = (min_rtt_ns + ack_delay_ns(cwnd_bytes, ack.srtt_ns)) / 2;
            if ack.now_ns - self.round_start_ns > threshold_ns {
                self.found = true;
            }
        }
        // Delay increase.
        self.round_min_rtt_ns = self.round_min_rtt_ns.min(delay_ns);
        if self.round_samples < MIN_SAMPLES {
            self.round_samples += 1;
        } else if self.round_min_rtt_ns > min_rtt_ns + (min_rtt_ns / 8).clamp(DELAY_MIN_NS, DELAY_MAX_NS) {
            self.found = true;
        }
        if self.found {
            SlowStartStep::Exit
        } else {
            keep_growing
        }
    }
}

/// `hystart_ack_delay`: the time 4 GSO packets take at the kernel's slow-start pacing rate
/// (2 · cwnd per smoothed RTT), at most 1 ms; 0 before the first RTT sample.
fn ack_delay_ns(cwnd_bytes: u64, srtt_ns: u64) -> u64 {
    if srtt_ns == 0 || cwnd_bytes == 0 {
        return 0;
    }
    let delay_ns = ACK_DELAY_GSO_BYTES as u128 * srtt_ns as u128 / (PACING_SS_RATIO * cwnd_bytes) as u128;
    delay_ns.min(ACK_DELAY_MAX_NS as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MSS: u64 = 1000;

    fn ack(now_ns: u64, rtt_ns: u64, snd_una: u64, snd_nxt: u64) -> AckSample {
        AckSample { now_ns, ca_rtt_ns: Some(rtt_ns), srtt_ns: rtt_ns, snd_una, snd_nxt, ..AckSample::default() }
    }

    #[test]
    fn the_ack_delay_is_four_gso_packets_at_the_slow_start_pacing_rate_at_most_one_millisecond() {
        // 1 MB window over 10 ms: 200 MB/s pacing, 262 144 B take 1.31 ms: capped at 1 ms.
        assert_eq!(ack_delay_ns(1_000_000, 10 * MS), MS);
        // 10 MB over 10 ms: 2 GB/s, 131 µs.
        assert_eq!(ack_delay_ns(10_000_000, 10 * MS), 131_072);
        assert_eq!(ack_delay_ns(10_000_000, 0), 0);
    }

    #[test]
    fn an_ack_train_longer_than_half_the_min_rtt_ends_slow_start() {
        let mut h = LinuxHystart::new(MSS);
        let cwnd = 100 * MSS;
        // Round 1 begins with the first ACK at 100 ms (min RTT 20 ms); ACKs every 1 ms.
        let mut t = 100 * MS;
        assert_eq!(h.on_ack(&ack(t, 20 * MS, 1, 100_000), cwnd, true, None), SlowStartStep::Grow { divisor: 1 });
        // The threshold is (20 ms + 1 ms of ACK delay) / 2 = 10.5 ms after the round began.
        let mut exit_at = None;
        for i in 1..20 {
            t += MS;
            if h.on_ack(&ack(t, 20 * MS, 1 + i, 100_000), cwnd, true, None) == SlowStartStep::Exit {
                exit_at = Some(i);
                break;
            }
        }
        assert_eq!(exit_at, Some(11), "the first ACK more than 10.5 ms into the train");
        assert_eq!(
            h.on_ack(&ack(t + MS, 20 * MS, 50, 100_000), cwnd, true, None),
            SlowStartStep::Grow { divisor: 1 },
            "found: no more detection"
        );
    }

    #[test]
    fn a_gap_in_the_acks_breaks_the_train() {
        let mut h = LinuxHystart::new(MSS);
        let cwnd = 100 * MSS;
        h.on_ack(&ack(100 * MS, 20 * MS, 1, 100_000), cwnd, true, None);
        // ACKs 3 ms apart never extend the train (and the RTT does not grow).
        for i in 1..30 {
            let step = h.on_ack(&ack(100 * MS + 3 * i * MS, 20 * MS, 1 + i, 100_000), cwnd, true, None);
            assert_eq!(step, SlowStartStep::Grow { divisor: 1 }, "ACK {i}");
        }
    }

    #[test]
    fn a_round_whose_min_rtt_grew_by_more_than_the_threshold_ends_slow_start() {
        let mut h = LinuxHystart::new(MSS);
        let cwnd = 100 * MSS;
        // Round 1: min RTT 40 ms (threshold: 40/8 = 5 ms). ACKs 3 ms apart: no train.
        let mut t = 0;
        for i in 0..10 {
            t += 3 * MS;
            assert_eq!(h.on_ack(&ack(t, 40 * MS, 1 + i, 1000), cwnd, true, None), SlowStartStep::Grow { divisor: 1 });
        }
        // Round 2 (SND.UNA passes 1000): RTTs 45 ms, not more than 40 + 5: no exit.
        for i in 0..12 {
            t += 3 * MS;
            assert_eq!(h.on_ack(&ack(t, 45 * MS, 1001 + i, 2000), cwnd, true, None), SlowStartStep::Grow { divisor: 1 });
        }
        // Round 3: 45.1 ms: the ninth sample (after the eight the round collects) exits.
        let steps: Vec<_> =
            (0..9).map(|i| h.on_ack(&ack(t + 3 * (i + 1) * MS, 45 * MS + 100_000, 2001 + i, 3000), cwnd, true, None)).collect();
        assert_eq!(steps[..8], [SlowStartStep::Grow { divisor: 1 }; 8]);
        assert_eq!(steps[8], SlowStartStep::Exit);
    }

    #[test]
    fn below_sixteen_segments_and_after_recovery_nothing_is_detected() {
        let mut h = LinuxHystart::new(MSS);
        for i in 0..40 {
            let step = h.on_ack(&ack(100 * MS + i * MS / 2, (20 + i) * MS, 1 + i, 100_000), 15 * MSS, true, None);
            assert_eq!(step, SlowStartStep::Grow { divisor: 1 });
        }
        let mut h = LinuxHystart::new(MSS);
        for i in 0..40 {
            let step = h.on_ack(&ack(100 * MS + i * MS / 2, (20 + i) * MS, 1 + i, 100_000), 100 * MSS, true, Some(90 * MS));
            assert_eq!(step, SlowStartStep::Grow { divisor: 1 });
        }
    }
}
