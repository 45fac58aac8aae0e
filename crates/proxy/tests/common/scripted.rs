//! Scripted packets of one flow between the UE and the server, fed to a proxy by hand.

use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_proxy::{Direction, Middlebox, NoPayloads};
use millinet_wire::{Packet, TcpFlags, TcpHeader, TcpOptions, Timestamps};

pub use super::SERVER;
pub const UE_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
pub const SERVER_ISN: u32 = 5000;

pub fn ue(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(UE_IP, port)
}

pub fn seg(from: SocketAddrV4, to: SocketAddrV4, seq: u32, ack: u32, flags: TcpFlags, payload: u32, options: TcpOptions) -> Packet {
    let h = TcpHeader { src_port: from.port(), dst_port: to.port(), seq, ack, flags, window: 1000, options };
    Packet::tcp(*from.ip(), *to.ip(), h, payload)
}

pub fn syn_options(mss: u16) -> TcpOptions {
    TcpOptions {
        mss: Some(mss),
        window_scale: Some(7),
        sack_permitted: true,
        timestamps: Some(Timestamps { tsval: 1, tsecr: 0 }),
        ..TcpOptions::default()
    }
}

/// SYN from the UE at `port`, SYN-ACK from the server, ACK from the UE. Returns the outputs.
pub fn handshake(proxy: &mut impl Middlebox, now: u64, port: u16) -> Vec<Packet> {
    let mut out = Vec::new();
    proxy.on_packet(
        now,
        seg(ue(port), SERVER, 100, 0, TcpFlags::SYN, 0, syn_options(20_000)),
        Direction::FromUe,
        &mut NoPayloads,
        &mut out,
    );
    proxy.on_packet(
        now,
        seg(SERVER, ue(port), SERVER_ISN, 101, TcpFlags::SYN | TcpFlags::ACK, 0, syn_options(1400)),
        Direction::FromServer,
        &mut NoPayloads,
        &mut out,
    );
    proxy.on_packet(
        now,
        seg(ue(port), SERVER, 101, SERVER_ISN + 1, TcpFlags::ACK, 0, TcpOptions::default()),
        Direction::FromUe,
        &mut NoPayloads,
        &mut out,
    );
    out
}

pub fn data(port: u16, offset: u32, len: u32) -> Packet {
    seg(SERVER, ue(port), SERVER_ISN + 1 + offset, 101, TcpFlags::ACK, len, TcpOptions::default())
}
