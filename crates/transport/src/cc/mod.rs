//! Congestion controls behind one trait, built by a `CcFactory`; `REGISTRY` maps names to
//! constructors.
//!
//! The sender owns the loss-recovery machinery (RFC 6675 / RFC 6582) and only asks the
//! algorithm for its window, threshold and pacing rate, and tells it what happened: an ACK
//! (with an RTT sample and a delivery-rate sample), a congestion event, the end of recovery.
//! Adding an algorithm is adding a file here and a line in `REGISTRY`. Algorithms that need
//! shared state (MP-TCP coupled LIA/OLIA/BALIA read the other subflows' windows and RTTs)
//! are registered as `Constructor::Coupled`: the factory that builds the subflows of one
//! MP-TCP connection hands each a `SubflowHandle` into one `SubflowSet`; the sender never
//! sees it.

pub mod balia;
pub mod bbr;
pub mod coupled;
pub mod cubic;
pub mod dctcp;
pub mod highspeed;
pub mod lia;
pub mod newreno;
pub mod olia;
pub mod prague;
mod shared;
pub mod slow_start;

use std::cell::{Ref, RefCell};
use std::fmt;
use std::rc::Rc;

pub use cubic::CubicVariant;
pub use shared::{SubflowHandle, SubflowSet, SubflowView};
pub use slow_start::HystartMode;

/// Delivery-rate sample per draft-cheng-iccrg-delivery-rate-estimation §3.3 (the input
/// of model-based algorithms such as BBR).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered (cumulatively or selectively acknowledged) over `interval_ns`.
    pub delivered_bytes: u64,
    /// max(send elapsed, ACK elapsed) of the most recently sent packet newly delivered.
    pub interval_ns: u64,
    /// The sample was taken while the application did not keep the pipe full, so it
    /// underestimates the path's rate and must not lower a bandwidth estimate.
    pub is_app_limited: bool,
    /// Total bytes delivered on the connection when the sample's packet was sent.
    pub prior_delivered_bytes: u64,
}

/// Everything the sender knows about one incoming ACK that delivered data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    pub now_ns: u64,
    /// Bytes newly cumulatively acknowledged by this ACK (RFC 3465 byte counting).
    pub acked_bytes: u64,
    /// RTT measured from this ACK, if it yielded a valid sample (RFC 6298 / RFC 7323).
    pub rtt_ns: Option<u64>,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    /// Pipe (RFC 6675) after the ACK was processed.
    pub bytes_in_flight: u64,
    /// Bytes this ACK caused to be deemed lost (RFC 6675 IsLost, the segment retransmitted
    /// on entering recovery, lost retransmissions).
    pub lost_bytes: u64,
    /// The sender has been cwnd-limited recently (Linux `tcp_is_cwnd_limited`), or the
    /// connection is configured to grow cwnd on every ACK.
    pub cwnd_limited: bool,
    /// The sender is in fast recovery: window-based algorithms hold cwnd (RFC 6675 §5).
    pub in_recovery: bool,
    /// Total bytes delivered so far on this connection.
    pub delivered_total_bytes: u64,
    pub rate: Option<RateSample>,
    /// RTT of the newest segment this ACK delivered (cumulatively or by SACK), from its send
    /// time, if it was never retransmitted: the sample Linux hands congestion controls
    /// (`ack_sample.rtt_us`), finer than the timestamp-based `rtt_ns`.
    pub ca_rtt_ns: Option<u64>,
    /// SND.UNA and SND.NXT after the ACK (unwrapped sequence numbers): where a round of the
    /// window ends.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Payload bytes this ACK newly reports as having arrived CE-marked (ECN feedback,
    /// docs/models/transport.md §12): what DCTCP and Prague take their marking fraction from.
    pub ce_bytes: u64,
}

/// How the sender detected a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Duplicate ACKs or SACK-based loss detection; once per window of data.
    FastRetransmit,
    /// Retransmission timeout (first of a series of back-to-back timeouts).
    Rto,
    /// ECN feedback reported congestion (RFC 3168 §6.1.2): the window is reduced as for a fast
    /// retransmit, once per window of data, with nothing to retransmit.
    EcnEcho,
}

/// A window as a congestion event found it: what an undo restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
}

impl Window {
    /// Linux's undo (`tcp_undo_cwnd_reduction`, with `tcp_reno_undo_cwnd`, which CUBIC and
    /// Reno share): neither cwnd nor ssthresh ends below what it was before the reduction,
    /// and neither is lowered by the undo. Returns (ssthresh, cwnd) in bytes.
    fn undone(self, ssthresh_bytes: u64, cwnd_bytes: u64) -> (u64, u64) {
        (ssthresh_bytes.max(self.ssthresh_bytes), cwnd_bytes.max(self.cwnd_bytes))
    }
}

/// Parameters every algorithm is built from. The MSS is the effective one (after the
/// handshake), so all byte-based rules use the segment size actually sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcInit {
    pub mss_bytes: u64,
    pub initial_cwnd_bytes: u64,
    /// How slow start may end before a loss (algorithms that have a choice: CUBIC).
    pub hystart: HystartMode,
    /// CUBIC as Linux runs it or as RFC 9438 writes it.
    pub cubic: CubicVariant,
}

pub trait CongestionControl {
    /// An ACK delivered new data (cumulatively or through SACK).
    fn on_ack(&mut self, ack: &AckSample);
    /// A loss was detected; `flight_size_bytes` is SND.NXT − SND.UNA (RFC 5681 FlightSize).
    fn on_congestion_event(&mut self, kind: CongestionEvent, now_ns: u64, flight_size_bytes: u64);
    /// A cumulative ACK covered the recovery point (RFC 6582 §3.2 step 3 / RFC 6675 §5).
    fn on_recovery_exit(&mut self, now_ns: u64);
    /// The last congestion event proved spurious (a timeout the Eifel test found spurious,
    /// RFC 3522): undo its reduction, back to at least `prior`, the window just before it.
    fn undo(&mut self, prior: Window);
    fn cwnd_bytes(&self) -> u64;
    fn ssthresh_bytes(&self) -> u64;
    /// The algorithm sets its own window during fast recovery (BBR's packet conservation, as
    /// Linux's `cong_control` algorithms do), so the sender applies no PRR to it.
    fn sets_recovery_window(&self) -> bool {
        false
    }
    /// The algorithm is scalable and marks its packets ECT(1), the L4S identifier (RFC 9331
    /// §4), where Accurate ECN's feedback was agreed.
    fn l4s(&self) -> bool {
        false
    }
    /// The algorithm takes its marking fraction from RFC 3168's ECE flags, so its connection,
    /// as a data receiver, echoes the CE state of every packet (RFC 8257 §3.2) instead of
    /// holding ECE until CWR (as Linux's DCTCP does, on both ends).
    fn echoes_every_mark(&self) -> bool {
        false
    }
    /// Pacing rate in bit/s, or None for ACK-clocked sending.
    fn pacing_rate_bps(&self) -> Option<u64> {
        // Window-based algorithms do not pace.
        None
    }
}

/// How an algorithm is built. A coupled algorithm (MP-TCP LIA, RFC 6356 §3; OLIA; BALIA)
/// also receives its subflow's handle into the state shared by every subflow its factory
/// builds, so that it can publish its own window and RTT and read the others'.
#[derive(Clone, Copy)]
pub enum Constructor {
    Uncoupled(fn(&CcInit) -> Box<dyn CongestionControl>),
    Coupled(fn(&CcInit, SubflowHandle) -> Box<dyn CongestionControl>),
}

/// Every algorithm selectable by name (`TcpConfig::cc`).
pub const REGISTRY: &[(&str, Constructor)] = &[
    ("newreno", Constructor::Uncoupled(newreno::construct)),
    ("cubic", Constructor::Uncoupled(cubic::construct)),
    ("highspeed", Constructor::Uncoupled(highspeed::construct)),
    ("bbr", Constructor::Uncoupled(bbr::construct)),
    ("dctcp", Constructor::Uncoupled(dctcp::construct)),
    ("prague", Constructor::Uncoupled(prague::construct)),
    ("lia", Constructor::Coupled(coupled::construct::<lia::Lia>)),
    ("olia", Constructor::Coupled(coupled::construct::<olia::Olia>)),
    ("balia", Constructor::Coupled(coupled::construct::<balia::Balia>)),
];

/// A name not in `REGISTRY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCc {
    pub name: String,
}

impl fmt::Display for UnknownCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown congestion control {:?}; allowed: ", self.name)?;
        for (i, entry) in REGISTRY.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{:?}", entry.0)?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownCc {}

/// Builds the congestion control of each connection (or MP-TCP subflow) it is asked for.
/// For a coupled algorithm the factory owns the state its subflows share: every
/// `build` of one factory (or of its clones) joins the same `SubflowSet`; a new factory
/// starts a new set (one MP-TCP connection).
#[derive(Clone)]
pub struct CcFactory {
    constructor: Constructor,
    subflows: Rc<RefCell<SubflowSet>>,
}

impl CcFactory {
    pub fn new(constructor: Constructor) -> CcFactory {
        CcFactory { constructor, subflows: Rc::default() }
    }

    /// The factory of the algorithm registered under `name`.
    pub fn by_name(name: &str) -> Result<CcFactory, UnknownCc> {
        match REGISTRY.iter().find(|entry| entry.0 == name) {
            Some(entry) => Ok(CcFactory::new(entry.1)),
            None => Err(UnknownCc { name: name.to_string() }),
        }
    }

    pub fn build(&self, init: &CcInit) -> Box<dyn CongestionControl> {
        match self.constructor {
            Constructor::Uncoupled(construct) => construct(init),
            Constructor::Coupled(construct) => construct(init, SubflowHandle::join(&self.subflows, init)),
        }
    }

    /// The state shared by the subflows built so far (empty for uncoupled algorithms).
    pub fn subflows(&self) -> Ref<'_, SubflowSet> {
        self.subflows.borrow()
    }
}

/// What an ACK may do to the window of a loss-based algorithm.
enum AckGrowth {
    /// No growth: in fast recovery (RFC 6675 §5), not cwnd-limited, or nothing acknowledged.
    Hold,
    /// RFC 5681 §3.1 slow start with RFC 3465 Appropriate Byte Counting, limit L = 2·SMSS:
    /// grow by the bytes acknowledged, at most 2·SMSS per ACK.
    SlowStart { increase_bytes: u64 },
    /// cwnd ≥ ssthresh: the algorithm's own increase rule.
    CongestionAvoidance,
}

fn ack_growth(ack: &AckSample, cwnd_bytes: u64, ssthresh_bytes: u64, mss_bytes: u64) -> AckGrowth {
    if ack.in_recovery || !ack.cwnd_limited || ack.acked_bytes == 0 {
        AckGrowth::Hold
    } else if cwnd_bytes < ssthresh_bytes {
        AckGrowth::SlowStart { increase_bytes: ack.acked_bytes.min(2 * mss_bytes) }
    } else {
        AckGrowth::CongestionAvoidance
    }
}

/// The response of a loss-based algorithm to a congestion event, given the part of
/// FlightSize it keeps (FlightSize/2 in RFC 5681 §3.1 eq. (4)): ssthresh = max(kept,
/// 2·SMSS); cwnd = ssthresh on entering fast recovery (RFC 6675 §5 step (4.2)), or the loss
/// window of one segment after a timeout (RFC 5681 §3.1). Returns (ssthresh, cwnd) in bytes.
fn reduced_window(kind: CongestionEvent, kept_bytes: u64, mss_bytes: u64) -> (u64, u64) {
    let ssthresh_bytes = kept_bytes.max(2 * mss_bytes);
    let cwnd_bytes = match kind {
        CongestionEvent::FastRetransmit | CongestionEvent::EcnEcho => ssthresh_bytes,
        CongestionEvent::Rto => mss_bytes,
    };
    (ssthresh_bytes, cwnd_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_lookup_names_allowed_algorithms() {
        assert!(CcFactory::by_name("newreno").is_ok());
        assert!(CcFactory::by_name("cubic").is_ok());
        let err = CcFactory::by_name("vegas").err().expect("unknown name").to_string();
        assert_eq!(
            err,
            r#"unknown congestion control "vegas"; allowed: "newreno", "cubic", "highspeed", "bbr", "dctcp", "prague", "lia", "olia", "balia""#
        );
    }

    #[test]
    fn uncoupled_subflows_share_nothing() {
        let factory = CcFactory::by_name("newreno").expect("registered");
        let init = CcInit { mss_bytes: 1000, initial_cwnd_bytes: 10_000, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
        let (_a, _b) = (factory.build(&init), factory.build(&init));
        assert_eq!(factory.subflows().iter().count(), 0);
    }
}
