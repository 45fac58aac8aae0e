//! The part of an RLC transmission buffer that has not been transmitted yet:
//! whole SDUs in arrival order with a running byte count, so the occupancy
//! B that milliProxy reads (ran.md §4) costs nothing to observe.

use std::collections::VecDeque;

use millinet_wire::Packet;

/// An SDU as RLC holds it: the IP packet, its PDCP COUNT and its size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sdu {
    pub packet: Packet,
    /// PDCP COUNT (TS 38.323 §7.1), carried for duplicate discard at the receiver.
    pub count: u64,
    /// `packet.wire_bytes()`, computed once.
    pub bytes: u32,
}

#[derive(Debug, Default)]
pub(crate) struct TxBuffer {
    queue: VecDeque<Sdu>,
    bytes: u64,
}

impl TxBuffer {
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    #[inline]
    pub fn push(&mut self, sdu: Sdu) {
        self.bytes += u64::from(sdu.bytes);
        self.queue.push_back(sdu);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Sdu> {
        let sdu = self.queue.pop_front()?;
        self.bytes -= u64::from(sdu.bytes);
        Some(sdu)
    }
}
