//! Between the script's numbers and the wire's. As in packetdrill, a script counts sequence
//! numbers from the initial sequence numbers: the endpoint's (`LOCAL_ISN`, set as its
//! `TcpConfig::iss`) for what it sends and acknowledges in SACK blocks the script injects,
//! the injected peer's (`REMOTE_ISN`) for the rest. Timestamps: an outbound TS val is read
//! relative to the first one the script checked, and an inbound TS ecr is translated back to
//! the TS val the endpoint actually sent (packetdrill's mapping; with millinet's TS clock, the
//! virtual time in milliseconds, a script whose values are its times in milliseconds maps
//! one to one).

use millinet_wire::{
    emit_headers, Packet, TcpFlags, TcpHeader, TcpOptions, Timestamps, IPV4_HEADER_BYTES, MAX_HEADER_BYTES, TCP_HEADER_BYTES,
};

use crate::script::{Direction, Flags, PacketSpec, TcpOption};

/// The endpoint's initial sequence number: 4 KiB below 2^32, so that every script that sends
/// more than 4 KiB also checks the wrap of the sequence space (RFC 9293 §3.4).
pub(crate) const LOCAL_ISN: u32 = 0xffff_f000;
/// The injected peer's initial sequence number: 1 KiB below 2^32, for the same reason.
pub(crate) const REMOTE_ISN: u32 = 0xffff_fc00;

#[derive(Default)]
pub(crate) struct Mapping {
    /// (script TS val, actual TS val) of every outbound packet checked.
    ts_vals: Vec<(u32, u32)>,
    /// The first of them: later actual values are read relative to it.
    first_ts: Option<(u32, u32)>,
}

fn flags_of(wire: TcpFlags) -> Flags {
    Flags {
        syn: wire.contains(TcpFlags::SYN),
        fin: wire.contains(TcpFlags::FIN),
        rst: wire.contains(TcpFlags::RST),
        psh: wire.contains(TcpFlags::PSH),
        ack: wire.contains(TcpFlags::ACK),
    }
}

fn wire_flags(flags: Flags) -> TcpFlags {
    let bits = [
        (flags.syn, TcpFlags::SYN),
        (flags.fin, TcpFlags::FIN),
        (flags.rst, TcpFlags::RST),
        (flags.psh, TcpFlags::PSH),
        (flags.ack, TcpFlags::ACK),
    ];
    bits.into_iter().filter(|(set, _)| *set).fold(TcpFlags(0), |acc, (_, bit)| acc | bit)
}

/// The options of a packet the endpoint sent, in wire order with their padding: the bytes
/// millinet's emitter writes (Linux's layout), read back.
fn wire_options(pkt: &Packet) -> Result<Vec<TcpOption>, String> {
    let mut buf = [0u8; MAX_HEADER_BYTES];
    let len = emit_headers(pkt, &mut buf).map_err(|e| e.to_string())?;
    let mut bytes = &buf[(IPV4_HEADER_BYTES + TCP_HEADER_BYTES) as usize..len];
    let mut options = Vec::new();
    while let Some(&kind) = bytes.first() {
        if kind <= 1 {
            options.push(if kind == 0 { TcpOption::Eol } else { TcpOption::Nop });
            bytes = &bytes[1..];
            continue;
        }
        let size = bytes.get(1).map_or(0, |&l| l as usize);
        if size < 2 || size > bytes.len() {
            return Err(format!("malformed option of kind {kind}"));
        }
        let data = &bytes[2..size];
        let u32_at = |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        options.push(match (kind, size) {
            (2, 4) => TcpOption::Mss(u16::from_be_bytes([data[0], data[1]])),
            (3, 3) => TcpOption::WindowScale(data[0]),
            (4, 2) => TcpOption::SackPermitted,
            (8, 10) => TcpOption::Timestamp { val: u32_at(0), ecr: u32_at(4) },
            (5, _) if (size - 2) % 8 == 0 => TcpOption::Sack((0..(size - 2) / 8).map(|k| (u32_at(8 * k), u32_at(8 * k + 4))).collect()),
            _ => TcpOption::Other { kind },
        });
        bytes = &bytes[size..];
    }
    Ok(options)
}

impl Mapping {
    /// The TCP header of an inbound packet, between the given ports.
    pub fn inbound(&self, spec: &PacketSpec, src_port: u16, dst_port: u16) -> TcpHeader {
        let mut options = TcpOptions::default();
        for option in spec.options.iter().flatten() {
            match option {
                TcpOption::Mss(mss) => options.mss = Some(*mss),
                TcpOption::WindowScale(shift) => options.window_scale = Some(*shift),
                TcpOption::SackPermitted => options.sack_permitted = true,
                TcpOption::Timestamp { val, ecr } => {
                    let ecr = if spec.flags.ack { self.actual_ts_val(*ecr) } else { *ecr };
                    options.timestamps = Some(Timestamps { tsval: *val, tsecr: ecr });
                }
                TcpOption::Sack(blocks) => {
                    let blocks: Vec<_> = blocks
                        .iter()
                        .map(|&(l, r)| millinet_wire::SackBlock { left: l.wrapping_add(LOCAL_ISN), right: r.wrapping_add(LOCAL_ISN) })
                        .collect();
                    // The parser keeps the options within 40 bytes, hence at most 4 blocks.
                    options.set_sack(&blocks);
                }
                // Padding has no place in typed options; the others cannot be scripted.
                TcpOption::Nop | TcpOption::Eol | TcpOption::Other { .. } => {}
            }
        }
        TcpHeader {
            src_port,
            dst_port,
            seq: spec.seq.wrapping_add(REMOTE_ISN),
            ack: spec.ack.map_or(0, |a| a.wrapping_add(LOCAL_ISN)),
            flags: wire_flags(spec.flags),
            window: spec.win.unwrap_or(0),
            options,
        }
    }

    /// The TS val the endpoint sent for a script's TS val (packetdrill's rule): the one
    /// recorded for it, else one read relative to the first, else the value itself.
    fn actual_ts_val(&self, script_val: u32) -> u32 {
        if let Some(&(_, actual)) = self.ts_vals.iter().rev().find(|(s, _)| *s == script_val) {
            return actual;
        }
        match self.first_ts {
            Some((first_script, first_actual)) => script_val.wrapping_sub(first_script).wrapping_add(first_actual),
            None => script_val,
        }
    }

    /// A packet the endpoint sent, in the script's numbers. `expected` are the options of the
    /// `>` line it is checked against: its TS val is paired with the actual one.
    pub fn outbound(&mut self, pkt: &Packet, expected: Option<&[TcpOption]>) -> Result<PacketSpec, String> {
        let header = pkt.tcp_header().ok_or("the endpoint sent a packet that is not TCP")?;
        let mut options = wire_options(pkt)?;
        let script_ts = expected.into_iter().flatten().find_map(|o| match o {
            TcpOption::Timestamp { val, .. } => Some(*val),
            _ => None,
        });
        for option in &mut options {
            match option {
                TcpOption::Timestamp { val, .. } => {
                    if let Some(script_val) = script_ts {
                        self.ts_vals.push((script_val, *val));
                        self.first_ts.get_or_insert((script_val, *val));
                    }
                    if let Some((first_script, first_actual)) = self.first_ts {
                        *val = val.wrapping_sub(first_actual).wrapping_add(first_script);
                    }
                }
                TcpOption::Sack(blocks) => {
                    for (left, right) in blocks {
                        *left = left.wrapping_sub(REMOTE_ISN);
                        *right = right.wrapping_sub(REMOTE_ISN);
                    }
                }
                _ => {}
            }
        }
        let flags = flags_of(header.flags);
        Ok(PacketSpec {
            direction: Direction::Outbound,
            flags,
            seq: header.seq.wrapping_sub(LOCAL_ISN),
            len: pkt.payload_bytes,
            ack: flags.ack.then(|| header.ack.wrapping_sub(REMOTE_ISN)),
            win: Some(header.window),
            options: Some(options),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn numbers_round_trip_through_the_wire() {
        let mut mapping = Mapping::default();
        let spec = PacketSpec {
            direction: Direction::Inbound,
            flags: Flags { ack: true, ..Flags::default() },
            seq: 1,
            len: 0,
            ack: Some(5001),
            win: Some(257),
            options: Some(vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Sack(vec![(6001, 7001)])]),
        };
        let header = mapping.inbound(&spec, 1, 2);
        assert_eq!(header.seq, REMOTE_ISN.wrapping_add(1));
        assert_eq!(header.ack, 5001u32.wrapping_add(LOCAL_ISN), "past 2^32");
        assert_eq!(header.options.sack()[0].left, 6001u32.wrapping_add(LOCAL_ISN));

        // What the endpoint answers, as the script reads it: its own numbers from LOCAL_ISN.
        let reply = TcpHeader {
            seq: header.ack,
            ack: header.seq.wrapping_add(100),
            flags: TcpFlags::ACK,
            window: 9,
            options: TcpOptions { timestamps: Some(Timestamps { tsval: 1234, tsecr: 7 }), ..TcpOptions::default() },
            ..TcpHeader::default()
        };
        let pkt = Packet::tcp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, reply, 1000);
        let expected = [TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1200, ecr: 7 }];
        let seen = mapping.outbound(&pkt, Some(&expected)).expect("TCP");
        assert_eq!((seen.seq, seen.ack, seen.len, seen.win), (5001, Some(101), 1000, Some(9)));
        assert_eq!(seen.options, Some(expected.to_vec()), "the first TS val anchors the mapping");
        // An inbound echo of the script's 1200 is the endpoint's 1234; of 1210, 1244.
        let echo = |ecr| {
            let spec = PacketSpec { options: Some(vec![TcpOption::Timestamp { val: 9, ecr }]), ..spec.clone() };
            mapping.inbound(&spec, 1, 2).options.timestamps.expect("TS").tsecr
        };
        assert_eq!((echo(1200), echo(1210)), (1234, 1244));
    }
}
