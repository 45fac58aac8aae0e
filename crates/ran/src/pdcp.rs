//! PDCP (TS 38.323) as far as the transport sees it: the COUNT and entry stamp
//! at the sender (the stamp defines RAN latency, docs/models/ran.md#pdcp-and-ran-latency) and, at the
//! receiver, in-order delivery with duplicate discard across the legs and cells
//! a bearer uses (docs/models/ran.md#pdcp-and-ran-latency).

use std::collections::VecDeque;

use millinet_wire::Packet;

use crate::rlc::Sdu;

/// Transmitting PDCP entity: numbers and stamps SDUs as they enter RLC.
#[derive(Debug, Default)]
pub(crate) struct PdcpTx {
    next_count: u64,
}

impl PdcpTx {
    /// Stamp `packet` with the RLC entry time and return the next COUNT (TS
    /// 38.323 §5.2.1). The COUNT is only used up by [`PdcpTx::commit`], once
    /// RLC has accepted the SDU, so the receiver never waits for the COUNT of a
    /// tail-dropped packet.
    #[inline]
    pub fn stamp(&self, now_ns: u64, packet: &mut Packet) -> u64 {
        packet.meta.ran_entry_ns = now_ns;
        self.next_count
    }

    #[inline]
    pub fn commit(&mut self) {
        self.next_count += 1;
    }
}

/// A COUNT the receiver has seen ahead of the next one it expects.
#[derive(Debug)]
enum Ahead {
    /// Waiting for the COUNTs before it.
    Held(Sdu),
    /// Will never arrive (AQM drop, UM loss): delivery just moves past it.
    Gone,
}

/// Receiving PDCP entity (TS 38.323 §5.2.2): delivers SDUs in COUNT order,
/// holding those that arrive ahead of a missing COUNT, and discards an SDU
/// whose COUNT it already has (a copy forwarded at handover, docs/models/ran.md#attach-detach-and-forwarding).
///
/// Every COUNT resolves: a leg hands each SDU it accepted either up (here) or
/// reports it gone ([`PdcpRx::skip`]), or the detach that ends the leg returns
/// it for another leg. On a single leg SDUs arrive in COUNT order, so nothing
/// is ever held there; PDCP's t-Reordering is therefore not modelled.
#[derive(Debug, Default)]
pub(crate) struct PdcpRx {
    /// RX_DELIV: the first COUNT not yet delivered (or skipped).
    next_count: u64,
    /// Entry i is COUNT `next_count + i`; entry 0, when present, is empty.
    ahead: VecDeque<Option<Ahead>>,
}

impl PdcpRx {
    /// An SDU from a leg. `deliver` gets it and every held SDU it releases, in
    /// COUNT order. Returns false, delivering nothing, for a duplicate.
    #[inline]
    pub fn receive(&mut self, sdu: Sdu, mut deliver: impl FnMut(Sdu)) -> bool {
        let Some(i) = sdu.count.checked_sub(self.next_count) else {
            return false;
        };
        if i == 0 {
            deliver(sdu);
            self.next_count += 1;
            if !self.ahead.is_empty() {
                self.ahead.pop_front();
                self.release(deliver);
            }
            return true;
        }
        let slot = self.slot(i as usize);
        match slot {
            Some(Ahead::Held(_)) => false,
            // A copy of an SDU another leg lost still carries the data.
            Some(Ahead::Gone) | None => {
                *slot = Some(Ahead::Held(sdu));
                true
            }
        }
    }

    /// The SDU with `count` will never arrive; delivery moves past it. An SDU
    /// with that COUNT already held (a copy that got through elsewhere) stays.
    #[inline]
    pub fn skip(&mut self, count: u64, deliver: impl FnMut(Sdu)) {
        let Some(i) = count.checked_sub(self.next_count) else {
            return;
        };
        if i == 0 {
            self.next_count += 1;
            if !self.ahead.is_empty() {
                self.ahead.pop_front();
                self.release(deliver);
            }
            return;
        }
        let slot = self.slot(i as usize);
        if slot.is_none() {
            *slot = Some(Ahead::Gone);
        }
    }

    /// SDUs held waiting for a missing COUNT.
    pub fn held_sdus(&self) -> usize {
        self.ahead.iter().filter(|a| matches!(a, Some(Ahead::Held(_)))).count()
    }

    fn slot(&mut self, i: usize) -> &mut Option<Ahead> {
        if self.ahead.len() <= i {
            self.ahead.resize_with(i + 1, || None);
        }
        &mut self.ahead[i]
    }

    /// Delivers from the front while the next COUNT is resolved.
    fn release(&mut self, mut deliver: impl FnMut(Sdu)) {
        while let Some(Some(_)) = self.ahead.front() {
            if let Some(Some(Ahead::Held(sdu))) = self.ahead.pop_front() {
                deliver(sdu);
            }
            self.next_count += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::UdpHeader;

    use super::*;

    fn sdu(count: u64) -> Sdu {
        let packet = Packet::udp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, UdpHeader { src_port: 1, dst_port: 2 }, 100);
        Sdu { packet, count, bytes: packet.wire_bytes() }
    }

    #[test]
    fn receiver_reorders_skips_and_discards_duplicates() {
        let mut rx = PdcpRx::default();
        let mut got = Vec::new();
        assert!(rx.receive(sdu(0), |s| got.push(s.count)));
        assert!(rx.receive(sdu(3), |s| got.push(s.count)), "held behind 1 and 2");
        rx.skip(2, |s| got.push(s.count));
        assert_eq!((got.as_slice(), rx.held_sdus()), ([0].as_slice(), 1));
        assert!(!rx.receive(sdu(3), |s| got.push(s.count)), "a copy of a held SDU");
        assert!(rx.receive(sdu(1), |s| got.push(s.count)));
        assert_eq!(got, [0, 1, 3], "1 releases 3 past the skipped 2");
        assert!(!rx.receive(sdu(1), |s| got.push(s.count)), "a copy of a delivered SDU");
        rx.skip(5, |s| got.push(s.count));
        assert!(rx.receive(sdu(5), |s| got.push(s.count)), "a copy of an SDU lost elsewhere still delivers");
        assert!(rx.receive(sdu(4), |s| got.push(s.count)));
        assert_eq!(got, [0, 1, 3, 4, 5]);
        assert_eq!(rx.held_sdus(), 0);
    }
}
