//! One RLC entity (TS 38.322): the transmitting side at one end of a radio
//! bearer and the receiving side at the other, for one direction.
//!
//! The simulator carries no payload, so both sides share one store of SDUs:
//! `window` holds every SDU that has been (partly) transmitted and not yet
//! delivered, indexed by SN − `base_sn`; the receiver's state is the byte count
//! received per SDU. `base_sn` is at once the receiver's next in-order SN
//! (RX_Next) and the lowest SN the transmitter still holds.

mod am;
mod buffer;
#[cfg(test)]
mod properties;
pub(crate) mod segment;
mod um;

use std::collections::VecDeque;

use millinet_wire::aqm::{Aqm, Verdict};
use millinet_wire::ECN_CE;

use crate::config::{RlcMode, UeConfig};
use crate::stats::DropReason;
use am::AmArq;
pub(crate) use am::Nacked;
pub use buffer::Sdu;
use buffer::TxBuffer;
use segment::Segment;

/// Where the receiving side puts what it is done with.
pub(crate) trait RlcSink {
    /// An SDU complete and in sequence, handed to PDCP.
    fn deliver(&mut self, sdu: Sdu);
    /// An SDU that leaves without being delivered.
    fn drop_sdu(&mut self, sdu: Sdu, reason: DropReason);
    /// The AQM CE-marked an SDU as it left the buffer.
    fn marked(&mut self, sdu: &Sdu);
}

#[derive(Debug)]
struct WindowSdu {
    sdu: Sdu,
    /// Bytes sent by first transmissions (only the newest SDU can be partial).
    sent: u32,
    /// Bytes the receiver holds.
    received: u32,
    /// UM: time the receiver discards the SDU because a segment was lost;
    /// `u64::MAX` while none was.
    release_ns: u64,
}

#[derive(Debug)]
enum Arq {
    Am(AmArq),
    Um { t_reordering_ns: u64 },
}

#[derive(Debug)]
pub(crate) struct RlcEntity {
    limit_bytes: u64,
    /// SDUs not transmitted at all yet.
    pending: TxBuffer,
    window: VecDeque<WindowSdu>,
    base_sn: u64,
    arq: Arq,
}

impl RlcEntity {
    pub fn new(cfg: &UeConfig, limit_bytes: u64) -> Self {
        let arq = match cfg.rlc_mode {
            RlcMode::Am => Arq::Am(AmArq::new(cfg.t_reassembly_ns, cfg.t_status_prohibit_ns)),
            RlcMode::Um => Arq::Um { t_reordering_ns: cfg.t_reordering_ns },
        };
        RlcEntity { limit_bytes, pending: TxBuffer::default(), window: VecDeque::new(), base_sn: 0, arq }
    }

    /// Occupancy B: bytes waiting for a first transmission plus the
    /// retransmission queue (docs/models/ran.md#rlc). Bytes inside HARQ are not counted.
    #[inline]
    pub fn queued_bytes(&self) -> u64 {
        let tail = self.window.back().map_or(0, |w| u64::from(w.sdu.bytes - w.sent));
        let retx = match &self.arq {
            Arq::Am(am) => am.retx_bytes(),
            Arq::Um { .. } => 0,
        };
        self.pending.bytes() + tail + retx
    }

    /// SDUs held on either side: not yet delivered, dropped or lost.
    #[inline]
    pub fn held_sdus(&self) -> usize {
        self.pending.len() + self.window.len()
    }

    /// Nothing queued, nothing outstanding, no timer running.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.pending.len() == 0
            && self.window.is_empty()
            && match &self.arq {
                Arq::Am(am) => am.is_idle(),
                Arq::Um { .. } => true,
            }
    }

    /// Tail drop: the SDU is refused when it does not fit under the limit
    /// (docs/models/ran.md#rlc). Returns whether it was accepted.
    pub fn enqueue(&mut self, sdu: Sdu) -> bool {
        if self.queued_bytes() + u64::from(sdu.bytes) > self.limit_bytes {
            return false;
        }
        self.pending.push(sdu);
        true
    }

    /// Fill a TB of `budget` bytes: AM retransmissions first, then the rest of
    /// the partly sent SDU, then new SDUs (concatenation and segmentation, TS
    /// 38.322 §5.2.2.1/§5.2.3.1). The AQM, if any, judges each new SDU as it
    /// leaves the buffer. Returns the bytes used.
    pub fn build_tb(
        &mut self,
        now_ns: u64,
        budget: u32,
        mut aqm: Option<&mut (dyn Aqm + 'static)>,
        tb: &mut Vec<Segment>,
        sink: &mut impl RlcSink,
    ) -> u32 {
        let mut left = budget;
        if let Arq::Am(am) = &mut self.arq {
            left -= am.take_retx(left, tb);
        }
        if left > 0 {
            let sn = self.base_sn + self.window.len() as u64;
            if let Some(back) = self.window.back_mut() {
                let unsent = back.sdu.bytes - back.sent;
                if unsent > 0 {
                    let len = unsent.min(left);
                    tb.push(Segment { sn: sn - 1, offset: back.sent, len });
                    back.sent += len;
                    left -= len;
                }
            }
        }
        while left > 0 {
            let Some(mut sdu) = self.pending.pop() else { break };
            if let Some(aqm) = aqm.as_deref_mut() {
                let sojourn_ns = now_ns.saturating_sub(sdu.packet.meta.ran_entry_ns);
                match aqm.on_dequeue(now_ns, sojourn_ns, self.queued_bytes(), sdu.packet.ecn) {
                    Verdict::Deliver => {}
                    Verdict::Drop => {
                        sink.drop_sdu(sdu, DropReason::Aqm);
                        continue;
                    }
                    Verdict::Mark => {
                        sdu.packet.ecn = ECN_CE;
                        sink.marked(&sdu);
                    }
                }
            }
            let sn = self.base_sn + self.window.len() as u64;
            let len = sdu.bytes.min(left);
            tb.push(Segment { sn, offset: 0, len });
            self.window.push_back(WindowSdu { sdu, sent: len, received: 0, release_ns: u64::MAX });
            left -= len;
        }
        budget - left
    }

    /// SDUs forwarded from another leg (docs/models/ran.md#attach-detach-and-forwarding) go ahead of everything not
    /// yet transmitted, in order; they were accepted once, so the limit does not
    /// apply to them again.
    pub fn adopt(&mut self, sdus: &[Sdu]) {
        self.pending.push_front(sdus);
    }

    /// RLC re-establishment at detach (TS 38.322 §5.1.2). The receiving side
    /// hands the complete SDUs it holds behind a hole to PDCP (NR's RLC would
    /// have delivered them already, out of sequence; PDCP reorders); the
    /// transmitting side has no acknowledgement for any SDU not delivered in
    /// sequence, so it returns all of them, in SN order then the untransmitted
    /// ones, into `forward`. TBs inside HARQ are abandoned with the leg: their
    /// SDUs are among those returned. Returns the SDUs returned that were not
    /// also handed up (the copies of those will reach PDCP as duplicates).
    pub fn re_establish(&mut self, sink: &mut impl RlcSink, forward: &mut Vec<Sdu>) -> u64 {
        let mut not_handed_up = self.pending.len() as u64;
        for w in self.window.drain(..) {
            if w.received == w.sdu.bytes {
                sink.deliver(w.sdu);
            } else {
                not_handed_up += 1;
            }
            forward.push(w.sdu);
        }
        while let Some(sdu) = self.pending.pop() {
            forward.push(sdu);
        }
        not_handed_up
    }

    /// A TB carrying `segments` was decoded at `now_ns`.
    pub fn on_received(&mut self, now_ns: u64, segments: &[Segment], sink: &mut impl RlcSink) {
        for seg in segments {
            // UM may already have moved past an SDU whose other segment was lost.
            let Some(idx) = seg.sn.checked_sub(self.base_sn) else {
                continue;
            };
            let w = &mut self.window[idx as usize];
            w.received += seg.len;
            debug_assert!(w.received <= w.sdu.bytes, "segment received twice");
        }
        self.deliver_in_order(now_ns, sink);
    }

    /// HARQ gave up on a TB carrying `segments`; the loss is known at `now_ns`.
    pub fn on_lost(&mut self, now_ns: u64, segments: &[Segment]) {
        match &mut self.arq {
            Arq::Am(am) => segments.iter().for_each(|&s| am.on_lost(now_ns, s)),
            Arq::Um { t_reordering_ns } => {
                for seg in segments {
                    let Some(idx) = seg.sn.checked_sub(self.base_sn) else {
                        continue;
                    };
                    let w = &mut self.window[idx as usize];
                    w.release_ns = um::release_at(w.release_ns, now_ns, *t_reordering_ns);
                }
            }
        }
    }

    /// Run the timers due at `now_ns`: AM status reporting, UM reordering.
    pub fn on_timers(&mut self, now_ns: u64, sink: &mut impl RlcSink) -> Nacked {
        match &mut self.arq {
            Arq::Am(am) => am.poll_status(now_ns),
            Arq::Um { .. } => {
                self.deliver_in_order(now_ns, sink);
                Nacked::default()
            }
        }
    }

    /// Hand complete SDUs to PDCP in SN order; in UM, discard an SDU at the
    /// head once its reordering deadline passed (and it has been sent whole,
    /// so the transmitter is done with it too).
    fn deliver_in_order(&mut self, now_ns: u64, sink: &mut impl RlcSink) {
        while let Some(front) = self.window.front() {
            let complete = front.received == front.sdu.bytes;
            let lost = front.release_ns <= now_ns && front.sent == front.sdu.bytes;
            if !complete && !lost {
                break;
            }
            let w = self.window.pop_front().expect("front exists");
            self.base_sn += 1;
            if complete {
                sink.deliver(w.sdu);
            } else {
                sink.drop_sdu(w.sdu, DropReason::UmLoss);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::{Packet, UdpHeader};

    use super::*;

    #[derive(Default)]
    pub(super) struct Collect {
        pub delivered: Vec<u64>,
        pub dropped: Vec<(u64, DropReason)>,
    }

    impl RlcSink for Collect {
        fn deliver(&mut self, sdu: Sdu) {
            self.delivered.push(sdu.count);
        }
        fn drop_sdu(&mut self, sdu: Sdu, reason: DropReason) {
            self.dropped.push((sdu.count, reason));
        }
        // Marks are counted by the cell's sink (tests/scheduling.rs); these tests run no AQM.
        fn marked(&mut self, _sdu: &Sdu) {}
    }

    pub(super) fn sdu(count: u64, bytes: u32) -> Sdu {
        let p = Packet::udp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, UdpHeader { src_port: 1, dst_port: 2 }, bytes - 28);
        Sdu { packet: p, count, bytes }
    }

    fn entity(mode: RlcMode, sdus: &[u32]) -> RlcEntity {
        let mut e = RlcEntity::new(&UeConfig { rlc_mode: mode, ..UeConfig::default() }, 1 << 20);
        for (i, &b) in sdus.iter().enumerate() {
            assert!(e.enqueue(sdu(i as u64, b)));
        }
        e
    }

    pub(super) const MS: u64 = 1_000_000;

    #[test]
    fn segmentation_and_concatenation_fill_tbs_exactly() {
        let mut e = entity(RlcMode::Am, &[1000, 1000, 1000]);
        let mut sink = Collect::default();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert_eq!(e.build_tb(0, 1500, None, &mut a, &mut sink), 1500);
        assert_eq!(a, [Segment { sn: 0, offset: 0, len: 1000 }, Segment { sn: 1, offset: 0, len: 500 }]);
        assert_eq!(e.queued_bytes(), 1500);
        assert_eq!(e.build_tb(0, 4000, None, &mut b, &mut sink), 1500);
        assert_eq!(b, [Segment { sn: 1, offset: 500, len: 500 }, Segment { sn: 2, offset: 0, len: 1000 }]);
        // The second TB arrives first: nothing can go to PDCP before SDU 0.
        e.on_received(MS, &b, &mut sink);
        assert!(sink.delivered.is_empty());
        e.on_received(MS, &a, &mut sink);
        assert_eq!(sink.delivered, [0, 1, 2]);
        assert!(e.is_idle());
    }

    #[test]
    fn am_status_report_waits_for_reassembly_and_prohibit_timers() {
        let mut e = entity(RlcMode::Am, &[1000, 1000, 1000]);
        let mut sink = Collect::default();
        let mut tbs = [Vec::new(), Vec::new(), Vec::new()];
        for tb in &mut tbs {
            e.build_tb(0, 1000, None, tb, &mut sink);
        }
        e.on_lost(MS, &tbs[0]);
        e.on_received(MS, &tbs[2], &mut sink);
        assert_eq!(e.on_timers(MS + MS / 2, &mut sink), Nacked::default(), "t-Reassembly running");
        assert_eq!(e.on_timers(2 * MS, &mut sink), Nacked { segments: 1, bytes: 1000 });
        assert_eq!(e.queued_bytes(), 1000, "the retransmission counts in B");
        e.on_lost(2 * MS + MS / 2, &tbs[1]);
        // t-Reassembly runs out at 3.5 ms but t-StatusProhibit holds until 4 ms.
        assert_eq!(e.on_timers(3 * MS + MS / 2, &mut sink), Nacked::default());
        assert_eq!(e.on_timers(4 * MS, &mut sink).segments, 1);
        let mut retx = Vec::new();
        assert_eq!(e.build_tb(4 * MS, 5000, None, &mut retx, &mut sink), 2000);
        assert_eq!(retx.iter().map(|s| s.sn).collect::<Vec<_>>(), [0, 1], "SN order");
        e.on_received(5 * MS, &retx, &mut sink);
        assert_eq!(sink.delivered, [0, 1, 2]);
    }

    #[test]
    fn um_discards_a_lost_sdu_after_t_reordering_and_moves_on() {
        let mut e = entity(RlcMode::Um, &[1000, 1000]);
        let mut sink = Collect::default();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        e.build_tb(0, 1000, None, &mut a, &mut sink);
        e.build_tb(0, 1000, None, &mut b, &mut sink);
        e.on_lost(MS, &a);
        e.on_received(MS, &b, &mut sink);
        e.on_timers(MS + MS / 2, &mut sink);
        assert!(sink.delivered.is_empty() && sink.dropped.is_empty(), "t-Reordering running");
        e.on_timers(2 * MS, &mut sink);
        assert_eq!(sink.dropped, [(0, DropReason::UmLoss)]);
        assert_eq!(sink.delivered, [1]);
        assert!(e.is_idle());
    }

    #[test]
    fn um_keeps_sending_the_rest_of_a_lost_sdu_and_ignores_it_late() {
        let mut e = entity(RlcMode::Um, &[1000]);
        let mut sink = Collect::default();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        e.build_tb(0, 400, None, &mut a, &mut sink);
        e.on_lost(MS, &a);
        e.on_timers(3 * MS, &mut sink);
        assert!(sink.dropped.is_empty(), "600 bytes still unsent");
        e.build_tb(3 * MS, 1000, None, &mut b, &mut sink);
        e.on_timers(3 * MS, &mut sink);
        assert_eq!(sink.dropped, [(0, DropReason::UmLoss)]);
        // The rest arriving after the SDU was discarded changes nothing.
        e.on_received(4 * MS, &b, &mut sink);
        assert!(sink.delivered.is_empty() && e.is_idle());
    }
}
