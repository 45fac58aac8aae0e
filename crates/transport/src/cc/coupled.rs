//! The window of MP-TCP's coupled congestion controls (LIA, OLIA, BALIA). They differ in two
//! rules only, each supplied as a `Coupling`: the congestion-avoidance increase, computed from
//! every live subflow of the connection, and the reduction on a congestion event. The rest
//! is standard TCP, as RFC 6356 §3 prescribes for LIA and the OLIA and BALIA papers keep:
//! slow start per RFC 5681 §3.1 with RFC 3465 byte counting, ssthresh and cwnd after a
//! congestion event per RFC 5681 / RFC 6675 (`reduced_window`), deflation to ssthresh when
//! recovery ends (RFC 6582 §3.2 step 3).
//!
//! Windows are in bytes. The coupled increase of one ACK is often a fraction of a byte (a
//! quarter of a byte per 1000-byte ACK for two equal 1 MB windows), so the window is kept as
//! a fractional byte count and those fractions add up instead of being rounded away.
//!
//! Each subflow publishes its window, smoothed RTT and OLIA's ℓ counts after every change.
//! The rules weigh the live subflows that have an RTT sample, this one included: a subflow
//! without one has no rate yet (Linux's implementations skip such subflows too), and while
//! this subflow has none itself it grows as standard TCP. Alone, a subflow grows as
//! standard TCP under every rule: each one's increase then reduces to 1/cwnd.

use std::marker::PhantomData;

use super::{
    ack_growth, reduced_window, AckGrowth, AckSample, CcInit, CongestionControl, CongestionEvent, SubflowHandle, SubflowView, Window,
};

/// The two rules in which LIA, OLIA and BALIA differ.
pub trait Coupling {
    /// The congestion-avoidance increase of subflow `paths[own]`: on each ACK its window
    /// changes by `increase · bytes_acked · MSS` bytes. Standard TCP's is 1/cwnd (RFC 5681
    /// eq. (3), per acknowledged byte as RFC 3465 counts). The papers write their rules per
    /// acknowledged packet with windows in packets; the same rule with windows in bytes is
    /// this factor. `paths` are the live subflows that have an RTT sample.
    fn increase(paths: &[SubflowView], own: usize) -> f64;

    /// The part of FlightSize that `paths[own]` keeps as ssthresh on a congestion event
    /// (before the 2·SMSS floor): standard TCP's FlightSize/2 (RFC 5681 §3.1 eq. (4)), which
    /// RFC 6356 §3 keeps for LIA and OLIA keeps as well.
    fn kept_flight_bytes(flight_size_bytes: u64, _paths: &[SubflowView], _own: usize) -> u64 {
        flight_size_bytes / 2
    }
}

/// One subflow's window under the coupling `C`.
pub struct Coupled<C> {
    mss_bytes: u64,
    cwnd_bytes: f64,
    ssthresh_bytes: u64,
    srtt_ns: u64,
    /// OLIA's ℓ_1r and ℓ_2r (see `SubflowView`).
    acked_between_losses_bytes: u64,
    acked_since_loss_bytes: u64,
    subflow: SubflowHandle,
    /// The live subflows with an RTT sample, gathered for one rule (kept for its allocation).
    paths: Vec<SubflowView>,
    coupling: PhantomData<C>,
}

pub fn construct<C: Coupling + 'static>(init: &CcInit, subflow: SubflowHandle) -> Box<dyn CongestionControl> {
    Box::new(Coupled::<C>::new(init, subflow))
}

impl<C: Coupling> Coupled<C> {
    pub fn new(init: &CcInit, subflow: SubflowHandle) -> Coupled<C> {
        Coupled {
            mss_bytes: init.mss_bytes,
            cwnd_bytes: init.initial_cwnd_bytes as f64,
            // RFC 5681 §3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
            srtt_ns: 0,
            acked_between_losses_bytes: 0,
            acked_since_loss_bytes: 0,
            subflow,
            paths: Vec::new(),
            coupling: PhantomData,
        }
    }

    fn publish(&self) {
        self.subflow.publish(SubflowView {
            cwnd_bytes: self.cwnd_bytes as u64,
            srtt_ns: self.srtt_ns,
            acked_between_losses_bytes: self.acked_between_losses_bytes,
            acked_since_loss_bytes: self.acked_since_loss_bytes,
        });
    }

    /// Gathers the live subflows that have an RTT sample into `paths` and returns this
    /// subflow's index among them, or None while it has no sample.
    fn gather_paths(&mut self) -> Option<usize> {
        let own_id = self.subflow.id();
        let mut own = None;
        self.paths.clear();
        for (id, view) in self.subflow.subflows().iter().filter(|(_, view)| view.srtt_ns > 0) {
            if id == own_id {
                own = Some(self.paths.len());
            }
            self.paths.push(view);
        }
        own
    }
}

impl<C: Coupling> CongestionControl for Coupled<C> {
    fn on_ack(&mut self, ack: &AckSample) {
        self.srtt_ns = ack.srtt_ns;
        self.acked_since_loss_bytes += ack.acked_bytes;
        match ack_growth(ack, self.cwnd_bytes as u64, self.ssthresh_bytes, self.mss_bytes) {
            AckGrowth::Hold => {}
            AckGrowth::SlowStart { increase_bytes } => self.cwnd_bytes += increase_bytes as f64,
            AckGrowth::CongestionAvoidance => {
                // The rule weighs this subflow with the RTT of this very ACK.
                self.publish();
                let increase = match self.gather_paths() {
                    Some(own) => C::increase(&self.paths, own),
                    // No RTT to be weighed with yet: standard TCP, RFC 5681 eq. (3).
                    None => 1.0 / self.cwnd_bytes,
                };
                let grown = self.cwnd_bytes + increase * (ack.acked_bytes * self.mss_bytes) as f64;
                // A window the increase rule lowers (OLIA's negative α_r) keeps one segment, as
                // Linux's OLIA does (mptcp_olia.c): the sender sends one segment anyway, and
                // below it α_r/w_r, the next decrease, grows without bound (a window driven to
                // zero would divide by zero).
                let floor = self.cwnd_bytes.min(self.mss_bytes as f64);
                self.cwnd_bytes = grown.max(floor);
                // Nor is such a decrease a congestion event: ssthresh follows the window, so
                // that slow start does not resume.
                self.ssthresh_bytes = self.ssthresh_bytes.min(self.cwnd_bytes as u64);
            }
        }
        self.publish();
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, _now_ns: u64, flight_size_bytes: u64) {
        // OLIA's ℓ: a loss closes the current inter-loss distance, unless nothing was
        // acknowledged since the previous one (back-to-back timeouts, a lost retransmission:
        // one loss episode).
        if self.acked_since_loss_bytes > 0 {
            self.acked_between_losses_bytes = self.acked_since_loss_bytes;
            self.acked_since_loss_bytes = 0;
        }
        let kept_bytes = match self.gather_paths() {
            Some(own) => C::kept_flight_bytes(flight_size_bytes, &self.paths, own),
            // No RTT yet (a timeout before the first ACK): standard TCP, RFC 5681 eq. (4).
            None => flight_size_bytes / 2,
        };
        let (ssthresh_bytes, cwnd_bytes) = reduced_window(kind, kept_bytes, self.mss_bytes);
        self.ssthresh_bytes = ssthresh_bytes;
        self.cwnd_bytes = cwnd_bytes as f64;
        self.publish();
    }

    fn on_recovery_exit(&mut self, _now_ns: u64) {
        // RFC 6582 §3.2 step 3, option (2): deflate to ssthresh on a full ACK.
        self.cwnd_bytes = self.ssthresh_bytes as f64;
        self.publish();
    }

    fn undo(&mut self, prior: Window) {
        let (ssthresh_bytes, cwnd_bytes) = prior.undone(self.ssthresh_bytes, self.cwnd_bytes as u64);
        self.ssthresh_bytes = ssthresh_bytes;
        self.cwnd_bytes = cwnd_bytes as f64;
        self.publish();
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd_bytes as u64
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }
}
