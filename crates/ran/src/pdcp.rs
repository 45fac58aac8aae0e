//! PDCP (TS 38.323) as far as the transport sees it: the entry stamp that
//! defines RAN latency (ran.md §5) and duplicate discard at the receiver.

use millinet_wire::Packet;

/// Transmitting PDCP entity: numbers and stamps SDUs as they enter RLC.
#[derive(Debug, Default)]
pub(crate) struct PdcpTx {
    next_count: u64,
}

impl PdcpTx {
    /// Stamp `packet` with the RLC entry time and give it the next COUNT
    /// (TS 38.323 §5.2.1).
    #[inline]
    pub fn stamp(&mut self, now_ns: u64, packet: &mut Packet) -> u64 {
        packet.meta.ran_entry_ns = now_ns;
        let count = self.next_count;
        self.next_count += 1;
        count
    }
}

/// Receiving PDCP entity. RLC already delivers in order, so a COUNT below the
/// next expected one can only be a duplicate (e.g. forwarded at handover,
/// ran.md §5/§7) and is discarded (TS 38.323 §5.2.2).
#[derive(Debug, Default)]
pub(crate) struct PdcpRx {
    next_count: u64,
}

impl PdcpRx {
    /// Whether the SDU with `count` is new; advances the expected COUNT.
    #[inline]
    pub fn accept(&mut self, count: u64) -> bool {
        if count < self.next_count {
            return false;
        }
        self.next_count = count + 1;
        true
    }
}
