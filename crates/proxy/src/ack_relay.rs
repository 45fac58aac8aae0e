//! ACK relay toward the server (docs/proxy.md#how-a-flow-is-handled, "ACK path"): one ACK per original server
//! segment boundary the UE's cumulative ACK covers, never beyond it, with the advertised
//! window overwritten by FW.

use millinet_wire::{Packet, PayloadId, TcpFlags};

/// The window field of a relayed ACK: FW in the scale the UE announced in its SYN (the
/// server believes it talks to the UE, RFC 7323 §2.3), capped at the 16-bit maximum and at
/// the UE's own field, so the relayed window never exceeds the UE's. The simulator's packets
/// carry no checksum; on real bytes `millinet_wire::rewrite_tcp_window` fixes it (RFC 1624).
#[inline]
pub fn window_field(fw_bytes: u64, ue_shift: u8, ue_field: u16) -> u16 {
    (fw_bytes >> ue_shift).min(u16::MAX as u64).min(ue_field as u64) as u16
}

/// A pure ACK derived from the UE's segment `ue`, acknowledging `ack`: no payload, no SYN/FIN,
/// no SACK blocks (those ride on the last ACK of a series, the UE's own), sequence number `seq`;
/// options the proxy does not model stay as the UE sent them.
pub fn pure_ack(ue: &Packet, seq: u32, ack: u32, window: u16) -> Packet {
    let mut p = *ue;
    if let Some(h) = p.tcp_header_mut() {
        h.seq = seq;
        h.ack = ack;
        h.window = window;
        // The ECN feedback (RFC 3168 ECE/CWR, or Accurate ECN's ACE field and option) is the
        // UE's, carried as it sent it.
        h.flags = TcpFlags::ACK | h.flags.masked(TcpFlags::ECN_BITS);
        h.options.sack_count = 0;
    }
    p.payload_bytes = 0;
    p.meta.payload = PayloadId::NONE;
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_wire::{SackBlock, TcpHeader};
    use std::net::Ipv4Addr;

    #[test]
    fn window_is_scaled_and_capped() {
        // 1 MB with shift 4 = 65 536 units → capped at 65 535, then at the UE's 1000.
        assert_eq!(window_field(1 << 20, 4, u16::MAX), u16::MAX);
        assert_eq!(window_field(1 << 20, 4, 1000), 1000);
        assert_eq!(window_field(160_000, 7, 60_000), 1250);
        assert_eq!(window_field(0, 7, 60_000), 0);
    }

    #[test]
    fn pure_ack_drops_payload_and_sack() {
        let mut h = TcpHeader { seq: 100, ack: 5, flags: TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN, window: 9, ..TcpHeader::default() };
        h.options.push_sack(SackBlock { left: 10, right: 20 });
        let ue = Packet::tcp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, h, 50);
        let p = pure_ack(&ue, 151, 7, 3);
        let ph = p.tcp_header().unwrap();
        assert_eq!((ph.seq, ph.ack, ph.window, ph.flags, ph.options.sack_count, p.payload_bytes), (151, 7, 3, TcpFlags::ACK, 0, 0));
    }
}
