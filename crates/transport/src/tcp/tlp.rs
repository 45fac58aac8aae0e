//! The tail loss probe (RFC 8985 §7). When the last segments of a flight are lost no later
//! segment is delivered to reveal it, and only the RTO (at least 200 ms, and backed off)
//! would. TLP sends one probe two round trips after the last transmission or ACK — new data
//! if the peer's window allows, else the highest segment again — so that the peer's ACK
//! (with SACK) lets RACK find the losses and fast recovery repair them.
//!
//! When the probe timeout (PTO) is due and the probe's episode are this module's; sending
//! the probe is the sender's. The PTO is Linux's `tcp_schedule_loss_probe` (6.18, the kernel
//! whose defaults the `modern` profile follows): 2·SRTT, plus the minimum RTO when a single
//! segment is outstanding (the peer may delay its ACK) or 2 ms otherwise, 1 s before any RTT
//! sample, and never later than the RTO.

/// Linux TCP_TIMEOUT_MIN_US: the allowance for ACK processing beside several segments.
const ACK_ALLOWANCE_NS: u64 = 2_000_000;
/// Linux TCP_TIMEOUT_INIT: the PTO before any RTT sample.
const PTO_WITHOUT_RTT_NS: u64 = 1_000_000_000;
/// How much earlier a re-armed PTO must be to move the armed one. While SRTT shrinks nearly
/// every ACK would pull the probe a little earlier, and each such move costs the simulator a
/// timer event; the probe goes at most this late instead.
const PTO_SLACK_NS: u64 = 1_000_000;

/// A probe that has been sent and whose outcome is not known yet.
#[derive(Clone, Copy, Debug)]
struct Episode {
    /// TLP.end_seq: SND.NXT when the probe was sent.
    end_seq: u64,
    /// TLP.is_retrans: the probe resent data rather than sending new data.
    retransmission: bool,
}

/// What an ACK revealed about the probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProbeOutcome {
    /// Nothing yet, or nothing to do.
    Pending,
    /// The retransmitted probe repaired a loss: the window is reduced (RFC 8985 §7.4.2).
    RepairedLoss,
}

/// The ACK facts the episode is judged on.
pub(crate) struct ProbeAck {
    pub ack: u64,
    /// The end of the ACK's D-SACK block, if it has one.
    pub dsack_end: Option<u64>,
    /// It advanced SND.UNA or SACKed new data (not a pure duplicate ACK).
    pub delivered: bool,
}

#[derive(Debug, Default)]
pub(crate) struct TailLossProbe {
    deadline_ns: Option<u64>,
    episode: Option<Episode>,
    probes: u64,
}

impl TailLossProbe {
    pub fn deadline_ns(&self) -> Option<u64> {
        self.deadline_ns
    }

    pub fn probes(&self) -> u64 {
        self.probes
    }

    /// The probe timeout from now (RFC 8985 §7.2 PTO, as Linux computes it): `srtt_ns` None
    /// before any RTT sample; `rto_left_ns`, the time until the RTO would fire.
    pub fn pto_ns(srtt_ns: Option<u64>, single_segment_out: bool, min_rto_ns: u64, rto_left_ns: u64) -> u64 {
        let pto_ns = match srtt_ns {
            Some(srtt_ns) => 2 * srtt_ns + if single_segment_out { min_rto_ns } else { ACK_ALLOWANCE_NS },
            None => PTO_WITHOUT_RTT_NS,
        };
        pto_ns.min(rto_left_ns)
    }

    /// Arms the PTO `pto_ns` from now (RFC 8985 §7.2: after sending new data and on an ACK
    /// of new data, while the sender is not recovering from a loss), unless that is less than
    /// `PTO_SLACK_NS` before the armed one.
    pub fn schedule(&mut self, now_ns: u64, pto_ns: u64) {
        let at_ns = now_ns + pto_ns;
        if self.deadline_ns.is_none_or(|armed_ns| at_ns >= armed_ns || armed_ns - at_ns > PTO_SLACK_NS) {
            self.deadline_ns = Some(at_ns);
        }
    }

    pub fn cancel(&mut self) {
        self.deadline_ns = None;
    }

    /// A loss recovery or a timeout began: the probe's episode is over (Linux resets
    /// tlp_high_seq there), and no probe is due.
    pub fn end_episode(&mut self) {
        self.episode = None;
        self.deadline_ns = None;
    }

    /// The PTO fired at `now_ns`: whether a probe may go. At most one probe is outstanding
    /// (RFC 8985 §7.3: a second PTO of the same episode sends nothing).
    pub fn take_due(&mut self, now_ns: u64) -> bool {
        if self.deadline_ns.is_none_or(|d| now_ns < d) {
            return false;
        }
        self.deadline_ns = None;
        self.episode.is_none()
    }

    /// The probe went out with SND.NXT now at `snd_nxt`.
    pub fn on_probe_sent(&mut self, snd_nxt: u64, retransmission: bool) {
        self.episode = Some(Episode { end_seq: snd_nxt, retransmission });
        self.probes += 1;
    }

    /// RFC 8985 §7.4.2, as Linux's `tcp_process_tlp_ack`: once the ACK reaches TLP.end_seq,
    /// a probe of new data ends the episode; a D-SACK of the retransmitted probe shows that
    /// the original arrived too (no loss); an ACK beyond TLP.end_seq means the probe repaired
    /// a loss; a pure duplicate ACK means both arrived.
    pub fn on_ack(&mut self, ack: &ProbeAck) -> ProbeOutcome {
        let Some(episode) = self.episode else { return ProbeOutcome::Pending };
        if ack.ack < episode.end_seq {
            return ProbeOutcome::Pending;
        }
        if !episode.retransmission || ack.dsack_end == Some(episode.end_seq) {
            self.episode = None;
        } else if ack.ack > episode.end_seq {
            self.episode = None;
            return ProbeOutcome::RepairedLoss;
        } else if !ack.delivered {
            self.episode = None;
        }
        ProbeOutcome::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn pto_is_two_srtt_plus_an_allowance_never_past_the_rto() {
        assert_eq!(TailLossProbe::pto_ns(Some(30 * MS), false, 200 * MS, 1_000 * MS), 62 * MS);
        assert_eq!(TailLossProbe::pto_ns(Some(30 * MS), true, 200 * MS, 1_000 * MS), 260 * MS, "delayed ACK allowance");
        assert_eq!(TailLossProbe::pto_ns(Some(30 * MS), true, 200 * MS, 230 * MS), 230 * MS, "the RTO comes first");
        assert_eq!(TailLossProbe::pto_ns(None, false, 200 * MS, 5_000 * MS), 1_000 * MS);
    }

    fn ack(ack: u64, dsack_end: Option<u64>, delivered: bool) -> ProbeAck {
        ProbeAck { ack, dsack_end, delivered }
    }

    #[test]
    fn one_probe_per_episode_and_its_outcome_per_rfc_8985_7_4() {
        let mut tlp = TailLossProbe::default();
        tlp.schedule(0, 10);
        assert!(!tlp.take_due(9));
        assert!(tlp.take_due(10));
        // Re-armed later it moves; earlier by less than the slack it stays, by more it moves.
        tlp.schedule(0, 5 * MS);
        tlp.schedule(MS, 5 * MS);
        assert_eq!(tlp.deadline_ns(), Some(6 * MS));
        tlp.schedule(MS, 4 * MS + 1);
        assert_eq!(tlp.deadline_ns(), Some(6 * MS));
        tlp.schedule(MS, 3 * MS);
        assert_eq!(tlp.deadline_ns(), Some(4 * MS));
        tlp.cancel();
        tlp.on_probe_sent(5_000, true);
        tlp.schedule(20, 10);
        assert!(!tlp.take_due(30), "a second probe waits for the first one's outcome");
        assert_eq!(tlp.on_ack(&ack(4_000, None, true)), ProbeOutcome::Pending);
        // The ACK of the probe itself is not enough: the original may still come.
        assert_eq!(tlp.on_ack(&ack(5_000, None, true)), ProbeOutcome::Pending);
        assert_eq!(tlp.on_ack(&ack(6_000, None, true)), ProbeOutcome::RepairedLoss);
        assert_eq!(tlp.on_ack(&ack(7_000, None, true)), ProbeOutcome::Pending, "the episode is over");
        // The original and the probe both arrived: the D-SACK says so.
        tlp.on_probe_sent(8_000, true);
        assert_eq!(tlp.on_ack(&ack(8_000, Some(8_000), false)), ProbeOutcome::Pending);
        assert_eq!(tlp.on_ack(&ack(9_000, None, true)), ProbeOutcome::Pending);
        // So does a pure duplicate ACK at TLP.end_seq.
        tlp.on_probe_sent(10_000, true);
        assert_eq!(tlp.on_ack(&ack(10_000, None, false)), ProbeOutcome::Pending);
        assert_eq!(tlp.on_ack(&ack(11_000, None, true)), ProbeOutcome::Pending);
        // A probe of new data repairs nothing by itself.
        tlp.on_probe_sent(12_000, false);
        assert_eq!(tlp.on_ack(&ack(12_000, None, true)), ProbeOutcome::Pending);
        assert_eq!(tlp.on_ack(&ack(13_000, None, true)), ProbeOutcome::Pending);
        assert_eq!(tlp.probes(), 4);
    }
}
