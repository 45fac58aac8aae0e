//! The part of an RLC transmission buffer that has not been transmitted yet:
//! whole SDUs in arrival order with a running byte count, so the occupancy
//! B that milliProxy reads (docs/models/ran.md#rlc) costs nothing to observe.

use std::collections::VecDeque;

use millinet_wire::Packet;

/// An SDU as RLC holds it: the IP packet, its PDCP COUNT and its size. Detach
/// hands undelivered ones back as they are, so that another leg can carry them
/// with their COUNT (docs/models/ran.md#attach-detach-and-forwarding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdu {
    pub(crate) packet: Packet,
    /// PDCP COUNT (TS 38.323 §7.1), carried for duplicate discard at the receiver.
    pub(crate) count: u64,
    /// `packet.wire_bytes()`, computed once.
    pub(crate) bytes: u32,
}

impl Sdu {
    /// The IP packet; `meta.ran_entry_ns` holds the PDCP stamp.
    pub fn packet(&self) -> &Packet {
        &self.packet
    }

    /// PDCP COUNT.
    pub fn count(&self) -> u64 {
        self.count
    }
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

    /// Puts `sdus` (in order) ahead of everything queued.
    pub fn push_front(&mut self, sdus: &[Sdu]) {
        for sdu in sdus.iter().rev() {
            self.bytes += u64::from(sdu.bytes);
            self.queue.push_front(*sdu);
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Sdu> {
        let sdu = self.queue.pop_front()?;
        self.bytes -= u64::from(sdu.bytes);
        Some(sdu)
    }
}
