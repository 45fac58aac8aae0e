//! MAC HARQ (TS 38.321 §5.3.2, §5.4.2; docs/models/ran.md#harq): a pool of stop-and-wait
//! processes per UE and direction, the BLER curve, and chase combining.
//!
//! Timing model: a TB sent in the slot starting at `t` is decoded at the end
//! of that slot. Its process stays busy until the feedback has come back, one
//! HARQ RTT after `t`; a failed TB is retransmitted no earlier than that, with
//! the same size, resources and SINR target (chase combining: identical
//! redundancy, so the receiver adds the linear SINRs of all attempts).

use millinet_channel::units::{db_to_lin, lin_to_db};
use rand_core::RngCore;

use crate::config::{HarqConfig, HarqMode};
use crate::rlc::segment::Segment;
use crate::stats::DirStats;

/// Block error rate of one decoding attempt at effective SINR `sinr_eff_db`
/// for a TB whose MCS needs `sinr_req_db` (docs/models/ran.md#harq): 10 % when they are
/// equal, falling steeply above.
#[inline]
pub fn bler(sinr_eff_db: f64, sinr_req_db: f64) -> f64 {
    1.0 / (1.0 + 9.0 * (1.5 * (sinr_eff_db - sinr_req_db)).exp())
}

/// Uniform draw in [0, 1) with the 53 bits an f64 mantissa holds.
#[inline]
fn uniform01(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[derive(Debug)]
pub(crate) struct HarqProcess {
    /// Segments of the TB in this process; empty when the process is free.
    /// The vector keeps its capacity, so steady state allocates nothing.
    pub tb: Vec<Segment>,
    pub tb_bytes: u32,
    /// Fraction of the slot's resources the TB occupies; a retransmission
    /// needs the same.
    pub share: f64,
    sinr_req_db: f64,
    combined_lin: f64,
    attempts: u8,
    busy_until_ns: u64,
    retx_pending: bool,
}

/// What happened to a transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Decoded,
    /// Failed; retransmission due one HARQ RTT later.
    Retry,
    /// Failed after the last retransmission: the TB goes back to RLC.
    GiveUp,
}

#[derive(Debug)]
pub(crate) struct HarqEntity {
    procs: Vec<HarqProcess>,
    /// By process: when it can take a new TB (its `busy_until_ns`), `u64::MAX` while it holds
    /// one. Kept apart from the processes so that the search for a free one, every slot for
    /// every UE with data, reads two cache lines instead of every process.
    free_at_ns: Vec<u64>,
    /// Processes holding a failed TB that waits for its retransmission.
    retx_waiting: usize,
}

impl HarqEntity {
    pub fn new(processes: usize) -> Self {
        let procs = (0..processes)
            .map(|_| HarqProcess {
                tb: Vec::new(),
                tb_bytes: 0,
                share: 0.0,
                sinr_req_db: 0.0,
                combined_lin: 0.0,
                attempts: 0,
                busy_until_ns: 0,
                retx_pending: false,
            })
            .collect();
        HarqEntity { procs, free_at_ns: vec![0; processes], retx_waiting: 0 }
    }

    #[inline]
    pub fn process(&self, idx: usize) -> &HarqProcess {
        &self.procs[idx]
    }

    /// A process that can take a new TB at `now_ns`.
    #[inline]
    pub fn free_process(&self, now_ns: u64) -> Option<usize> {
        self.free_at_ns.iter().position(|&t| t <= now_ns)
    }

    /// The retransmission that has waited longest among those due at
    /// `now_ns` and fitting in `share_left`.
    pub fn due_retx(&self, now_ns: u64, share_left: f64) -> Option<usize> {
        if self.retx_waiting == 0 {
            return None;
        }
        let mut best: Option<usize> = None;
        for (i, p) in self.procs.iter().enumerate() {
            if p.retx_pending
                && p.busy_until_ns <= now_ns
                && p.share <= share_left + crate::SHARE_EPS
                && best.is_none_or(|b| p.busy_until_ns < self.procs[b].busy_until_ns)
            {
                best = Some(i);
            }
        }
        best
    }

    /// True when a retransmission is due at `now_ns` (whatever its size).
    #[inline]
    pub fn retx_due(&self, now_ns: u64) -> bool {
        self.due_retx(now_ns, f64::INFINITY).is_some()
    }

    /// Bytes of TBs held by processes (sent, not yet decoded or given up).
    pub fn bytes_in_flight(&self) -> u64 {
        self.procs.iter().map(|p| u64::from(p.tb_bytes)).sum()
    }

    /// Whether any process holds a TB (sent or waiting for its retransmission).
    pub fn holds_tb(&self) -> bool {
        self.free_at_ns.contains(&u64::MAX)
    }

    /// No TB in any process and no process waiting for feedback.
    pub fn is_idle(&self, now_ns: u64) -> bool {
        self.free_at_ns.iter().all(|&t| t <= now_ns)
    }

    /// The segment list of a free process, to be filled by RLC.
    #[inline]
    pub fn tb_mut(&mut self, idx: usize) -> &mut Vec<Segment> {
        debug_assert!(self.procs[idx].tb.is_empty());
        &mut self.procs[idx].tb
    }

    /// Arm process `idx`, whose segments RLC just filled, for a first transmission.
    pub fn start(&mut self, idx: usize, tb_bytes: u32, share: f64, sinr_req_db: f64) {
        let p = &mut self.procs[idx];
        p.tb_bytes = tb_bytes;
        p.share = share;
        p.sinr_req_db = sinr_req_db;
        p.combined_lin = 0.0;
        p.attempts = 0;
        self.free_at_ns[idx] = u64::MAX;
    }

    /// Take the due retransmission of process `idx` for this slot (its resources are reserved
    /// when the slot is scheduled; [`HarqEntity::transmit`] sends it once the slot's SINR is known).
    pub fn claim_retx(&mut self, idx: usize, stats: &mut DirStats) {
        let p = &mut self.procs[idx];
        debug_assert!(p.retx_pending);
        p.retx_pending = false;
        self.retx_waiting -= 1;
        stats.harq_retx += 1;
    }

    /// Send (or resend, once claimed) the TB of process `idx` in the slot starting at
    /// `now_ns` while the actual SINR is `sinr_now_db` (below `outage_sinr_db`
    /// the attempt adds no energy).
    #[allow(clippy::too_many_arguments)]
    pub fn transmit(
        &mut self,
        idx: usize,
        now_ns: u64,
        sinr_now_db: f64,
        outage_sinr_db: f64,
        cfg: &HarqConfig,
        rng: &mut impl RngCore,
        stats: &mut DirStats,
    ) -> Outcome {
        let p = &mut self.procs[idx];
        debug_assert!(!p.retx_pending, "a retransmission is claimed before it is sent");
        p.attempts += 1;
        p.busy_until_ns = now_ns + cfg.rtt_ns;
        stats.harq_tx += 1;
        stats.harq_tx_bytes += u64::from(p.tb_bytes);
        if !crate::amc::in_outage(sinr_now_db, outage_sinr_db) {
            p.combined_lin += db_to_lin(sinr_now_db);
        }
        let decoded = match cfg.mode {
            HarqMode::Ideal => true,
            HarqMode::Errors => {
                let eff_db = lin_to_db(p.combined_lin);
                uniform01(rng) >= bler(eff_db, p.sinr_req_db)
            }
        };
        if decoded {
            return Outcome::Decoded;
        }
        stats.harq_failures += 1;
        if p.attempts > cfg.max_retx {
            stats.harq_give_ups += 1;
            return Outcome::GiveUp;
        }
        p.retx_pending = true;
        self.retx_waiting += 1;
        Outcome::Retry
    }

    /// Empty process `idx` after its TB was decoded or handed back to RLC.
    #[inline]
    pub fn release(&mut self, idx: usize) {
        let p = &mut self.procs[idx];
        p.tb.clear();
        p.tb_bytes = 0;
        self.free_at_ns[idx] = p.busy_until_ns;
    }
}

#[cfg(test)]
mod tests {
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    /// Send `n` TBs at actual SINR = required − `gap_db` and return the
    /// fraction decoded at the first attempt and at the first retransmission.
    fn success_by_attempt(gap_db: f64, n: u32) -> (f64, f64) {
        let cfg = HarqConfig { max_retx: 1, ..HarqConfig::default() };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut stats = DirStats::default();
        let mut h = HarqEntity::new(1);
        let (mut first, mut retx, mut retx_ok) = (0u32, 0u32, 0u32);
        let mut now = 0;
        for _ in 0..n {
            h.tb_mut(0).push(Segment { sn: 0, offset: 0, len: 100 });
            h.start(0, 100, 1.0, 10.0);
            match h.transmit(0, now, 10.0 - gap_db, -5.0, &cfg, &mut rng, &mut stats) {
                Outcome::Decoded => first += 1,
                Outcome::Retry => {
                    now += cfg.rtt_ns;
                    retx += 1;
                    h.claim_retx(0, &mut stats);
                    if h.transmit(0, now, 10.0 - gap_db, -5.0, &cfg, &mut rng, &mut stats) == Outcome::Decoded {
                        retx_ok += 1;
                    }
                }
                Outcome::GiveUp => unreachable!("one retransmission allowed"),
            }
            h.release(0);
            now += cfg.rtt_ns;
        }
        (f64::from(first) / f64::from(n), f64::from(retx_ok) / f64::from(retx))
    }

    #[test]
    fn first_attempt_bler_is_ten_percent_when_channel_is_as_reported() {
        let (first, _) = success_by_attempt(0.0, 40_000);
        // 3 sigma of a binomial(40000, 0.1) fraction is 0.0045.
        assert!((first - 0.9).abs() < 0.0045, "first-attempt success {first}");
    }

    #[test]
    fn chase_combining_raises_retransmission_success() {
        // 3 dB below target: one attempt fails ~55 %; two combined attempts
        // reach the target + 0.01 dB, so the retransmission fails ~10 %.
        let (first, second) = success_by_attempt(3.0103 - 0.01, 20_000);
        assert!((first - (1.0 - bler(6.99, 10.0))).abs() < 0.015, "first {first}");
        assert!(second > 0.87 && second < 0.93, "retransmission success {second}");
    }

    #[test]
    fn outage_attempt_adds_no_energy_and_ideal_mode_never_fails() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut stats = DirStats::default();
        let mut h = HarqEntity::new(1);
        let cfg = HarqConfig::default();
        h.tb_mut(0).push(Segment { sn: 0, offset: 0, len: 1 });
        h.start(0, 1, 1.0, 0.0);
        for k in 0..=cfg.max_retx {
            if k > 0 {
                h.claim_retx(0, &mut stats);
            }
            let o = h.transmit(0, u64::from(k) * cfg.rtt_ns, f64::NEG_INFINITY, -5.0, &cfg, &mut rng, &mut stats);
            assert_eq!(o, if k == cfg.max_retx { Outcome::GiveUp } else { Outcome::Retry });
        }
        h.release(0);
        let ideal = HarqConfig { mode: HarqMode::Ideal, ..cfg };
        h.tb_mut(0).push(Segment { sn: 1, offset: 0, len: 1 });
        h.start(0, 1, 1.0, 0.0);
        assert_eq!(h.transmit(0, 10 * cfg.rtt_ns, -30.0, -5.0, &ideal, &mut rng, &mut stats), Outcome::Decoded);
    }

    #[test]
    fn bler_is_ten_percent_at_the_required_sinr() {
        assert!((bler(12.0, 12.0) - 0.1).abs() < 1e-12);
        assert!(bler(15.0, 12.0) < 0.01);
        assert!(bler(9.0, 12.0) > 0.5);
    }
}
