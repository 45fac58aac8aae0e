//! BBR v1 as Linux 6.18 runs it (net/ipv4/tcp_bbr.c, which
//! draft-cardwell-iccrg-bbr-congestion-control-00, "the draft", describes). A model of the
//! path — bottleneck bandwidth BtlBw (windowed max of the delivery rate over 10 round trips)
//! and round-trip propagation time RTprop (windowed min RTT over 10 s) — sets the pacing
//! rate (pacing_gain × BtlBw) and cwnd (cwnd_gain × BDP, plus the ACK-aggregation allowance
//! `extra_acked` of `ack_aggregation.rs`, plus three pacing bursts). Losses do not shrink the
//! model; in fast recovery cwnd follows draft §4.2.3.4 (as Linux
//! `bbr_set_cwnd_to_recover_or_restore`): it drops to what is in flight, loses the bytes
//! deemed lost, is held by packet conservation for one round, and is restored to its value
//! before recovery when recovery ends. A policer is detected by `long_term.rs`.
//!
//! Choices where the sender differs from Linux:
//! - Deterministic PROBE_BW start (Linux draws the phase at random): the cycle starts at
//!   phase 0 (gain 1.25), one of Linux's seven possible starts; there is no RNG in models.
//! - Pacing margin 1 % (Linux `bbr_pacing_margin_percent`): pacing = gain × BtlBw × 0.99.
//!   BtlBw counts payload bytes; the sender paces wire bytes (headers included), as Linux.
//! - Linux's in-flight estimate at the next departure time (`bbr_packets_in_net_at_edt`)
//!   counts the burst about to leave when probing, but not what the path drains before it
//!   leaves: the pacing schedule is the sender's, not in the ACK sample.
//! - The samples of packets sent during PROBE_RTT (and until the data in flight at its end
//!   is delivered) count as application-limited, as Linux marks them (draft §4.3.5). This
//!   is tracked here from the samples' `prior_delivered_bytes`, without a hook in the sender.
//! - After an RTO cwnd restarts from one segment and grows by the bytes delivered per ACK up
//!   to its target (Linux's loss state without the `prior_cwnd` restore).
//! - No idle-restart handling (draft §4.3.4.5 needs a transmit-start event the trait lacks).

mod ack_aggregation;
mod long_term;

use ack_aggregation::AckAggregation;
use long_term::{LongTermBandwidth, Observation};

use super::{AckSample, CcInit, CongestionControl, CongestionEvent, Window};
use crate::pacing;

/// Draft §4.3.2.2: STARTUP pacing and cwnd gain 2/ln 2 (≈ 2.885).
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// Draft §4.3.3: DRAIN pacing gain ln 2/2, the inverse of the STARTUP gain.
pub const DRAIN_GAIN: f64 = std::f64::consts::LN_2 / 2.0;
/// Draft §4.3.4.1: PROBE_BW cwnd gain.
pub const CWND_GAIN: f64 = 2.0;
/// Draft §4.3.4.1: the eight-phase PROBE_BW pacing-gain cycle.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux `bbr_pacing_margin_percent` = 1: pace 1 % below the estimate.
pub const PACING_MARGIN: f64 = 0.99;
/// Draft §4.1.1.1: BtlBwFilterLen, in round trips.
pub const BTL_BW_FILTER_ROUNDS: u64 = 10;
/// Draft §4.1.2.1: RTpropFilterLen.
pub const MIN_RTT_FILTER_NS: u64 = 10_000_000_000;
/// Draft §4.3.5: ProbeRTTDuration.
pub const PROBE_RTT_DURATION_NS: u64 = 200_000_000;
/// Draft §4.2.3.3: BBRMinPipeCwnd, in segments.
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// Draft §4.3.2.2: BtlBw must grow by 25 % per round …
const FULL_BW_GROWTH: f64 = 1.25;
/// … or the pipe is full after this many rounds.
const FULL_BW_ROUNDS: u32 = 3;
/// Linux `bbr_quantization_budget`: cwnd allows three pacing bursts (`pacing.rs`) in flight.
const BURSTS_IN_CWND: u64 = 3;
/// Linux `bbr_extra_acked_max_us`: the ACK-aggregation allowance is at most 100 ms of data.
const EXTRA_ACKED_MAX_NS: u64 = 100_000_000;
/// PROBE_BW starts in this phase (see the module comment).
const PROBE_BW_START_PHASE: usize = 0;
/// Draft §4.2.1: without an RTT sample the initial pacing rate assumes 1 ms.
const DEFAULT_RTT_NS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Windowed maximum over the last `BTL_BW_FILTER_ROUNDS` round trips in which a sample was
/// taken (draft §4.1.1.1): one slot per round, the best sample of that round. Like the
/// draft's filter, it ages only when a new sample arrives, so rounds whose samples are all
/// ignored (application-limited) do not expire the estimate.
#[derive(Clone, Copy, Debug, Default)]
struct MaxFilter {
    slots: [(u64, u64); BTL_BW_FILTER_ROUNDS as usize],
    latest_round: u64,
}

impl MaxFilter {
    fn update(&mut self, round: u64, value: u64) {
        let slot = &mut self.slots[(round % BTL_BW_FILTER_ROUNDS) as usize];
        *slot = if slot.0 == round { (round, slot.1.max(value)) } else { (round, value) };
        self.latest_round = round;
    }

    fn max(&self) -> u64 {
        let latest = self.latest_round;
        self.slots.iter().filter(|s| s.0 + BTL_BW_FILTER_ROUNDS > latest).map(|s| s.1).max().unwrap_or(0)
    }
}

pub struct Bbr {
    mss_bytes: u64,
    initial_cwnd_bytes: u64,
    mode: Mode,
    cwnd_bytes: u64,
    pacing_rate_bps: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    btl_bw: MaxFilter,
    /// RTprop and when it was last set (u64::MAX: no sample yet).
    min_rtt_ns: u64,
    min_rtt_stamp_ns: u64,
    /// The pacing rate was initialised from the smoothed RTT.
    has_seen_rtt: bool,
    /// Draft §4.1.1.3 round counting by delivered bytes.
    round_count: u64,
    next_round_delivered_bytes: u64,
    round_start: bool,
    last_delivered_total_bytes: u64,
    /// Draft §4.3.2.2 full-pipe detection.
    filled_pipe: bool,
    full_bw_bps: u64,
    full_bw_count: u32,
    /// Draft §4.3.4 gain cycling.
    cycle_index: usize,
    cycle_stamp_ns: u64,
    /// Draft §4.3.5 PROBE_RTT bookkeeping.
    probe_rtt_done_ns: Option<u64>,
    probe_rtt_round_done: bool,
    /// Draft §4.2.3.4 BBRSaveCwnd (before loss recovery or PROBE_RTT), restored after.
    prior_cwnd_bytes: u64,
    /// Draft §4.2.3.4 loss recovery: entered on this ACK, in fast recovery, and the
    /// delivered count that ends packet conservation (one round after entry).
    entering_recovery: bool,
    in_recovery: bool,
    conservation_until_delivered_bytes: Option<u64>,
    probe_rtt_entries: u64,
    /// `prior_delivered_bytes` range whose samples count as application-limited because
    /// their packets were sent during PROBE_RTT (start, end of the marked delivered count).
    probe_rtt_limited: Option<(u64, u64)>,
    ack_aggregation: AckAggregation,
    long_term: LongTermBandwidth,
    /// Bytes deemed lost so far (Linux `tp->lost`), and when data was last delivered
    /// (`tp->delivered_mstamp`).
    lost_total_bytes: u64,
    delivered_at_ns: u64,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(Bbr::new(init))
}

/// Delivery rate of a sample, bit/s.
fn rate_bps(delivered_bytes: u64, interval_ns: u64) -> u64 {
    (delivered_bytes as u128 * 8 * 1_000_000_000 / interval_ns.max(1) as u128) as u64
}

impl Bbr {
    pub fn new(init: &CcInit) -> Bbr {
        let mut bbr = Bbr {
            mss_bytes: init.mss_bytes,
            initial_cwnd_bytes: init.initial_cwnd_bytes,
            mode: Mode::Startup,
            cwnd_bytes: init.initial_cwnd_bytes,
            pacing_rate_bps: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            btl_bw: MaxFilter::default(),
            min_rtt_ns: u64::MAX,
            min_rtt_stamp_ns: 0,
            has_seen_rtt: false,
            round_count: 0,
            next_round_delivered_bytes: 0,
            round_start: false,
            last_delivered_total_bytes: 0,
            filled_pipe: false,
            full_bw_bps: 0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp_ns: 0,
            probe_rtt_done_ns: None,
            probe_rtt_round_done: false,
            prior_cwnd_bytes: 0,
            entering_recovery: false,
            in_recovery: false,
            conservation_until_delivered_bytes: None,
            probe_rtt_entries: 0,
            probe_rtt_limited: None,
            ack_aggregation: AckAggregation::default(),
            long_term: LongTermBandwidth::default(),
            lost_total_bytes: 0,
            delivered_at_ns: 0,
        };
        bbr.init_pacing_rate(DEFAULT_RTT_NS);
        bbr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// BtlBw: the windowed-max delivery rate (payload bytes), bit/s.
    pub fn btl_bw_bps(&self) -> u64 {
        self.btl_bw.max()
    }

    /// The rate pacing and cwnd follow (Linux `bbr_bw`): a detected policer's, else BtlBw.
    pub fn bw_bps(&self) -> u64 {
        self.long_term.policed_bps().unwrap_or_else(|| self.btl_bw_bps())
    }

    /// The ACK-aggregation allowance `extra_acked`, bytes.
    pub fn extra_acked_bytes(&self) -> u64 {
        self.ack_aggregation.extra_acked_bytes()
    }

    /// RTprop: the windowed-min RTT (u64::MAX before the first sample).
    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    pub fn cycle_index(&self) -> usize {
        self.cycle_index
    }

    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    pub fn probe_rtt_entries(&self) -> u64 {
        self.probe_rtt_entries
    }

    /// Draft §4.2.1 BBRInitPacingRate: the initial window over the RTT, at the STARTUP gain.
    fn init_pacing_rate(&mut self, rtt_ns: u64) {
        let nominal_bps = rate_bps(self.initial_cwnd_bytes, rtt_ns);
        self.pacing_rate_bps = (HIGH_GAIN * nominal_bps as f64 * PACING_MARGIN) as u64;
    }

    /// Linux `bbr_bdp`: gain × bw × RTprop in segments, rounded up; the initial window
    /// before the first RTT sample.
    fn bdp_segments(&self, bw_bps: u64, gain: f64) -> u64 {
        if self.min_rtt_ns == u64::MAX {
            return self.initial_cwnd_bytes.div_ceil(self.mss_bytes);
        }
        let bdp_bytes = gain * bw_bps as f64 * self.min_rtt_ns as f64 / 8e9;
        (bdp_bytes / self.mss_bytes as f64).ceil() as u64
    }

    /// Linux `bbr_quantization_budget`: room for three pacing bursts, rounded up to an even
    /// number of segments (fewer delayed ACKs), and two more in the probing phase so that
    /// it gets above the BDP however small that is.
    fn quantization_budget_bytes(&self, segments: u64) -> u64 {
        let mut segments = segments + BURSTS_IN_CWND * pacing::burst_segments(self.pacing_rate_bps, self.mss_bytes);
        segments += segments % 2;
        if self.mode == Mode::ProbeBw && self.cycle_index == 0 {
            segments += 2;
        }
        segments * self.mss_bytes
    }

    /// Linux `bbr_inflight` (draft §4.2.3.2 BBRInflight): gain × BDP at BtlBw with the
    /// quantization budget.
    pub fn inflight_bytes(&self, gain: f64) -> u64 {
        self.quantization_budget_bytes(self.bdp_segments(self.btl_bw_bps(), gain))
    }

    /// Linux `bbr_set_cwnd`'s target: cwnd_gain × BDP, plus the ACK-aggregation allowance
    /// once the pipe is full (at most 100 ms at the rate, `bbr_ack_aggregation_cwnd`), with
    /// the quantization budget.
    fn target_cwnd_bytes(&self) -> u64 {
        let bw_bps = self.bw_bps();
        let aggregation_bytes = if self.filled_pipe {
            self.extra_acked_bytes().min((bw_bps as u128 * EXTRA_ACKED_MAX_NS as u128 / 8_000_000_000) as u64)
        } else {
            0
        };
        self.quantization_budget_bytes(self.bdp_segments(bw_bps, self.cwnd_gain) + aggregation_bytes / self.mss_bytes)
    }

    /// Draft §4.1.1.3 round counting and §4.1.1.5 BBRUpdateBtlBw, with Linux's long-term
    /// sampling and ACK-aggregation estimate (`bbr_update_bw`, `bbr_update_ack_aggregation`).
    /// Returns whether the sample was application-limited.
    fn update_bw(&mut self, ack: &AckSample, delivered_bytes: u64) -> bool {
        self.round_start = false;
        let Some(rs) = ack.rate else { return true };
        if rs.prior_delivered_bytes >= self.next_round_delivered_bytes {
            self.next_round_delivered_bytes = ack.delivered_total_bytes;
            self.round_count += 1;
            self.round_start = true;
        }
        let sent_in_probe_rtt = self.probe_rtt_limited.is_some_and(|(start, end)| (start..=end).contains(&rs.prior_delivered_bytes));
        let app_limited = rs.is_app_limited || sent_in_probe_rtt;
        let observation = Observation { round_start: self.round_start, losses: ack.lost_bytes > 0, app_limited, ..self.observation_now() };
        if self.long_term.observe(&observation, self.mode == Mode::ProbeBw) {
            self.enter_probe_bw(ack.now_ns);
        }
        let bw_bps = rate_bps(rs.delivered_bytes, rs.interval_ns);
        // Application-limited samples only count when they exceed the estimate.
        if !app_limited || bw_bps >= self.btl_bw_bps() {
            self.btl_bw.update(self.round_count, bw_bps);
        }
        if delivered_bytes > 0 {
            let bw_bps = self.bw_bps();
            self.ack_aggregation.on_delivery(self.round_start, ack.now_ns, delivered_bytes, bw_bps, self.cwnd_bytes, self.mss_bytes);
        }
        app_limited
    }

    fn enter_probe_bw(&mut self, now_ns: u64) {
        self.mode = Mode::ProbeBw;
        self.cycle_index = PROBE_BW_START_PHASE;
        self.cycle_stamp_ns = now_ns;
    }

    /// Linux `bbr_update_gains`: each mode's gains; a detected policer's rate is paced at 1.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.long_term.policed_bps().is_some() => (1.0, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_index], CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// Draft §4.3.4.3 BBRIsNextCyclePhase with the prior inflight, then advance. A loss on
    /// this ACK ends a probing phase (Linux `rs->losses`); the burst about to leave counts
    /// in flight while probing (`bbr_packets_in_net_at_edt`).
    fn check_cycle_phase(&mut self, now_ns: u64, prior_inflight_bytes: u64, losses: bool) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let full_length = now_ns - self.cycle_stamp_ns > self.min_rtt_ns;
        let next = if self.pacing_gain > 1.0 {
            let leaving_bytes = pacing::burst_segments(self.pacing_rate_bps, self.mss_bytes) * self.mss_bytes;
            full_length && (losses || prior_inflight_bytes + leaving_bytes >= self.inflight_bytes(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_inflight_bytes <= self.inflight_bytes(1.0)
        } else {
            full_length
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
            self.cycle_stamp_ns = now_ns;
        }
    }

    /// Draft §4.3.2.2 BBRCheckFullPipe: once per round, on samples that were not
    /// application-limited.
    fn check_full_pipe(&mut self, app_limited: bool) {
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        let bw_bps = self.btl_bw_bps();
        if bw_bps as f64 >= self.full_bw_bps as f64 * FULL_BW_GROWTH {
            self.full_bw_bps = bw_bps;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.filled_pipe = self.full_bw_count >= FULL_BW_ROUNDS;
    }

    /// Draft §4.3.3 BBRCheckDrain.
    fn check_drain(&mut self, now_ns: u64, inflight_bytes: u64) {
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain && inflight_bytes <= self.inflight_bytes(1.0) {
            self.enter_probe_bw(now_ns);
        }
    }

    /// Draft §4.1.2.3 BBRUpdateRTprop (a strictly lower sample, as Linux, or any sample
    /// once the estimate is 10 s old) and §4.3.5 BBRCheckProbeRTT. The sample is Linux's
    /// `rs->rtt_us`: from the send time of the newest segment the ACK delivered.
    fn update_min_rtt_and_probe_rtt(&mut self, ack: &AckSample) {
        let expired = self.min_rtt_ns != u64::MAX && ack.now_ns > self.min_rtt_stamp_ns + MIN_RTT_FILTER_NS;
        if let Some(rtt_ns) = ack.ca_rtt_ns {
            if rtt_ns < self.min_rtt_ns || expired {
                self.min_rtt_ns = rtt_ns;
                self.min_rtt_stamp_ns = ack.now_ns;
            }
        }
        if expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_ns = None;
            self.probe_rtt_entries += 1;
            self.probe_rtt_limited = Some((ack.delivered_total_bytes, ack.delivered_total_bytes));
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        // Linux / draft §4.3.5: samples of this mode are application-limited.
        if let Some((_, end)) = self.probe_rtt_limited.as_mut() {
            *end = ack.delivered_total_bytes + ack.bytes_in_flight;
        }
        match self.probe_rtt_done_ns {
            None if ack.bytes_in_flight <= MIN_PIPE_CWND_SEGMENTS * self.mss_bytes => {
                self.probe_rtt_done_ns = Some(ack.now_ns + PROBE_RTT_DURATION_NS);
                self.probe_rtt_round_done = false;
                self.next_round_delivered_bytes = ack.delivered_total_bytes;
            }
            None => {}
            Some(done_ns) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && ack.now_ns > done_ns {
                    self.min_rtt_stamp_ns = ack.now_ns;
                    self.cwnd_bytes = self.cwnd_bytes.max(self.prior_cwnd_bytes);
                    if self.filled_pipe {
                        self.enter_probe_bw(ack.now_ns);
                    } else {
                        self.mode = Mode::Startup;
                    }
                }
            }
        }
    }

    /// The connection's counters as long-term sampling reads them (`on_ack` has updated them
    /// before the model runs), with no round start, loss or application limit.
    fn observation_now(&self) -> Observation {
        Observation {
            round_start: false,
            losses: false,
            app_limited: false,
            delivered_at_ns: self.delivered_at_ns,
            delivered_total_bytes: self.last_delivered_total_bytes,
            lost_total_bytes: self.lost_total_bytes,
        }
    }

    /// Draft §4.2.1 BBRSetPacingRateWithGain: never lowered before the pipe is filled.
    fn set_pacing_rate(&mut self) {
        let bw_bps = self.bw_bps();
        if bw_bps == 0 {
            return;
        }
        let rate_bps = (self.pacing_gain * bw_bps as f64 * PACING_MARGIN) as u64;
        if self.filled_pipe || rate_bps > self.pacing_rate_bps {
            self.pacing_rate_bps = rate_bps;
        }
    }

    /// Draft §4.2.3.4 BBRSaveCwnd: the cwnd to restore after loss recovery or PROBE_RTT
    /// (the larger one when they overlap).
    fn save_cwnd(&mut self) {
        self.prior_cwnd_bytes =
            if self.in_recovery || self.mode == Mode::ProbeRtt { self.prior_cwnd_bytes.max(self.cwnd_bytes) } else { self.cwnd_bytes };
    }

    /// Draft §4.2.3.4 BBRModulateCwndForRecovery, with BBROnEnterFastRecovery on the ACK
    /// that started recovery. Returns whether packet conservation holds cwnd.
    fn modulate_cwnd_for_recovery(&mut self, ack: &AckSample, delivered_bytes: u64) -> bool {
        if self.in_recovery && !ack.in_recovery {
            // The sender is not in fast recovery: the reduction came outside it (a lost
            // retransmission after an RTO, whose loss window already applies).
            self.in_recovery = false;
            self.entering_recovery = false;
            self.conservation_until_delivered_bytes = None;
        }
        if ack.lost_bytes > 0 {
            self.cwnd_bytes = self.cwnd_bytes.saturating_sub(ack.lost_bytes).max(self.mss_bytes);
        }
        if std::mem::take(&mut self.entering_recovery) {
            // In flight, plus at least one segment for the fast retransmit; conservation
            // lasts until the data in flight now has been delivered (one round).
            self.cwnd_bytes = ack.bytes_in_flight + delivered_bytes.max(self.mss_bytes);
            self.conservation_until_delivered_bytes = Some(ack.delivered_total_bytes + ack.bytes_in_flight);
        }
        match self.conservation_until_delivered_bytes {
            Some(end) if ack.delivered_total_bytes < end => {
                self.cwnd_bytes = self.cwnd_bytes.max(ack.bytes_in_flight + delivered_bytes);
                true
            }
            _ => {
                self.conservation_until_delivered_bytes = None;
                false
            }
        }
    }

    /// Draft §4.2.3.4 BBRSetCwnd and §4.2.3.5 for PROBE_RTT.
    fn set_cwnd(&mut self, ack: &AckSample, delivered_bytes: u64) {
        let target_bytes = self.target_cwnd_bytes();
        let conserving = self.modulate_cwnd_for_recovery(ack, delivered_bytes);
        if conserving {
            // Packet conservation: no growth this round.
        } else if self.filled_pipe {
            self.cwnd_bytes = (self.cwnd_bytes + delivered_bytes).min(target_bytes);
        } else if self.cwnd_bytes < target_bytes || ack.delivered_total_bytes < self.initial_cwnd_bytes {
            self.cwnd_bytes += delivered_bytes;
        }
        let min_pipe_bytes = MIN_PIPE_CWND_SEGMENTS * self.mss_bytes;
        if !conserving {
            self.cwnd_bytes = self.cwnd_bytes.max(min_pipe_bytes);
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd_bytes = self.cwnd_bytes.min(min_pipe_bytes);
        }
    }
}

impl CongestionControl for Bbr {
    /// Linux `bbr_main`: update the model and the state machine (`bbr_update_model`), then
    /// the controls.
    fn on_ack(&mut self, ack: &AckSample) {
        let delivered_bytes = ack.delivered_total_bytes.saturating_sub(self.last_delivered_total_bytes);
        self.last_delivered_total_bytes = ack.delivered_total_bytes;
        self.lost_total_bytes += ack.lost_bytes;
        if delivered_bytes > 0 {
            self.delivered_at_ns = ack.now_ns;
        }
        if !self.has_seen_rtt && ack.srtt_ns > 0 {
            // Linux `bbr_init_pacing_rate_from_rtt` once the first RTT is known.
            self.has_seen_rtt = true;
            self.init_pacing_rate(ack.srtt_ns);
        }
        let app_limited = self.update_bw(ack, delivered_bytes);
        self.check_cycle_phase(ack.now_ns, ack.bytes_in_flight + delivered_bytes, ack.lost_bytes > 0);
        self.check_full_pipe(app_limited);
        self.check_drain(ack.now_ns, ack.bytes_in_flight);
        self.update_min_rtt_and_probe_rtt(ack);
        self.update_gains();
        self.set_pacing_rate();
        self.set_cwnd(ack, delivered_bytes);
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, now_ns: u64, flight_size_bytes: u64) {
        match kind {
            // Draft §4.2.3.4 BBROnEnterFastRecovery (completed by the ACK's `set_cwnd`); a
            // further reduction within the episode (a lost retransmission) changes nothing:
            // the bytes deemed lost already come off cwnd.
            CongestionEvent::FastRetransmit if !self.in_recovery => {
                self.save_cwnd();
                self.in_recovery = true;
                self.entering_recovery = true;
            }
            // BBR v1, as Linux's, does not react to ECN (its `ssthresh` is infinite and it sets
            // its own window).
            CongestionEvent::FastRetransmit | CongestionEvent::EcnEcho => {}
            CongestionEvent::Rto => {
                // Linux `bbr_set_state(TCP_CA_Loss)`: everything in flight is lost, full-pipe
                // growth is measured afresh, and the timeout ends a round of long-term
                // sampling, with a loss.
                self.lost_total_bytes += flight_size_bytes;
                self.full_bw_bps = 0;
                let observation = Observation { round_start: true, losses: true, ..self.observation_now() };
                if self.long_term.observe(&observation, self.mode == Mode::ProbeBw) {
                    self.enter_probe_bw(now_ns);
                    self.update_gains();
                }
                // RFC 5681 §3.1 loss window; `set_cwnd` regrows it by the bytes delivered.
                self.cwnd_bytes = self.mss_bytes;
                self.in_recovery = false;
                self.entering_recovery = false;
                self.conservation_until_delivered_bytes = None;
            }
        }
    }

    /// BBR keeps its own window in recovery (packet conservation, draft §4.2.3.4).
    fn sets_recovery_window(&self) -> bool {
        true
    }

    /// Draft §4.2.3.4: packet conservation ends and BBRRestoreCwnd.
    fn on_recovery_exit(&mut self, _now_ns: u64) {
        self.in_recovery = false;
        self.conservation_until_delivered_bytes = None;
        self.cwnd_bytes = self.cwnd_bytes.max(self.prior_cwnd_bytes);
    }

    /// Linux's BBR restores its saved cwnd when the connection leaves the loss state, and an
    /// undo leaves it (its ssthresh is unused). The slow-down was spurious: full-pipe
    /// detection and long-term sampling start again (`bbr_undo_cwnd`).
    fn undo(&mut self, prior: Window) {
        self.cwnd_bytes = self.cwnd_bytes.max(prior.cwnd_bytes);
        self.full_bw_bps = 0;
        self.full_bw_count = 0;
        self.long_term.reset(&self.observation_now());
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd_bytes
    }

    /// BBR does not use a slow-start threshold.
    fn ssthresh_bytes(&self) -> u64 {
        u64::MAX
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.pacing_rate_bps)
    }
}
