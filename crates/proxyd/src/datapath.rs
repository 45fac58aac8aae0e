//! The daemon's packet path: raw IPv4 datagrams in, what must leave the node out, with the
//! proxy core (`Middlebox`) in between. Sans-IO like the core: the caller gives the time.
//!
//! A datagram the core forwards untouched comes back as `Emitted::Original`, so a driver can
//! let the very packet go (an NFQUEUE accept, the same frame in the emulator) and pay nothing
//! for flows the proxy does not handle. Everything else — a SYN with its MSS clamped,
//! coalesced segments toward the UE, relayed ACKs with the flow window, local
//! retransmissions — is serialised anew with complete IPv4 and TCP checksums (RFC 791 §3.1,
//! RFC 9293 §3.1), whatever state the kernel left the input's checksum in.
//!
//! Bad input never reaches the core and never stops the path: a datagram that is not IPv4
//! TCP or UDP, is truncated or malformed, or fails its checksum is counted and forwarded as it
//! is (the endpoints' own stacks judge it, as they would without a proxy).

use std::net::Ipv4Addr;

use millinet_proxy::{Direction, Middlebox, PayloadPool};
use millinet_wire::{parse, OpenError, Packet, ParseError, ReplayGuard, Sealed, TcpFlags, Telemetry, TelemetryKey};

use crate::buffers::Buffers;
use crate::networks::Ipv4Network;

/// What the caller knows of the input's TCP/UDP checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumState {
    /// The field holds the full checksum: verify it.
    Complete,
    /// The kernel left it for the device to finish (CHECKSUM_PARTIAL: a locally made packet
    /// or a GSO frame): the field holds the pseudo-header sum only and cannot be verified.
    Partial,
}

/// One datagram crossing the node.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// The IPv4 datagram, from the version byte.
    pub datagram: &'a [u8],
    pub checksum: ChecksumState,
    /// The segment size of a GSO/GRO datagram that carries several TCP segments in one: the
    /// core is fed the segments the sender made, one by one.
    pub segment_bytes: Option<u16>,
}

/// Which way an emitted datagram goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toward {
    Ue,
    Server,
}

/// What must leave the node.
#[derive(Debug, PartialEq, Eq)]
pub enum Emitted<'a> {
    /// The input datagram, unchanged.
    Original,
    /// A datagram made here, checksums complete.
    Datagram { bytes: &'a [u8], toward: Toward },
}

/// The packet path's own counters (the core's are in its `Summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatapathStats {
    pub datagrams_from_server: u64,
    pub bytes_from_server: u64,
    pub datagrams_from_ue: u64,
    pub bytes_from_ue: u64,
    pub datagrams_emitted_toward_ue: u64,
    pub bytes_emitted_toward_ue: u64,
    pub datagrams_emitted_toward_server: u64,
    pub bytes_emitted_toward_server: u64,
    /// Inputs forwarded as they came (the core passed them, or they never reached it).
    pub datagrams_forwarded_unchanged: u64,
    /// Truncated or malformed IPv4/TCP/UDP headers, fragments, IPv4 options: forwarded.
    pub malformed: u64,
    /// A complete checksum that is wrong: forwarded, for the endpoint to drop.
    pub bad_checksum: u64,
    /// Neither TCP nor UDP (ICMP, ...), or not IPv4: forwarded.
    pub not_tcp: u64,
    /// Neither address on the UE side: forwarded.
    pub not_ue_traffic: u64,
    /// Outputs of the core that could not be serialised (dropped; never seen in tests).
    pub emit_failures: u64,
    pub telemetry_received: u64,
    /// Telemetry datagrams refused by the decoder (docs/telemetry.md).
    pub telemetry_malformed: u64,
    /// Sealed telemetry whose tag did not verify under the key: never applied.
    pub telemetry_forged: u64,
    /// Sealed telemetry at or below its publisher's highest sequence number: never applied.
    pub telemetry_replayed: u64,
    /// Sampling time (`t_ns`) of the newest telemetry record received.
    pub newest_telemetry_t_ns: Option<u64>,
}

pub struct Datapath {
    proxy: Box<dyn Middlebox + Send>,
    ue_networks: Vec<Ipv4Network>,
    buffers: Buffers,
    out: Vec<Packet>,
    wire: Vec<u8>,
    /// The core never sees time go back, whatever order the caller's inputs come in.
    now_ns: u64,
    /// The key of sealed telemetry and the publishers' sequence numbers, once given a key.
    sealed: Option<(TelemetryKey, ReplayGuard)>,
    pub stats: DatapathStats,
}

/// Publishers of sealed telemetry whose sequence numbers are remembered (a RAN site has a
/// handful of gNBs; an edge proxy serves a few hundred at most).
pub const SEALED_PUBLISHERS: usize = 1024;

impl Datapath {
    /// `ue_networks`: the UE side of the node; a datagram to them comes from a server.
    pub fn new(proxy: Box<dyn Middlebox + Send>, ue_networks: Vec<Ipv4Network>) -> Datapath {
        Datapath {
            proxy,
            ue_networks,
            buffers: Buffers::default(),
            out: Vec::new(),
            wire: vec![0; 1 << 16],
            now_ns: 0,
            sealed: None,
            stats: DatapathStats::default(),
        }
    }

    /// Takes sealed telemetry under `key` (docs/telemetry.md, "Over the network").
    pub fn with_telemetry_key(mut self, key: TelemetryKey) -> Datapath {
        self.sealed = Some((key, ReplayGuard::new(SEALED_PUBLISHERS)));
        self
    }

    pub fn proxy(&self) -> &dyn Middlebox {
        &*self.proxy
    }

    fn on_ue_side(&self, ip: Ipv4Addr) -> bool {
        self.ue_networks.iter().any(|n| n.contains(ip))
    }

    fn advance(&mut self, now_ns: u64) -> u64 {
        self.now_ns = self.now_ns.max(now_ns);
        self.now_ns
    }

    /// One datagram crossing the node; `emit` is called for each datagram that must leave.
    pub fn on_datagram(&mut self, now_ns: u64, input: Input, emit: &mut dyn FnMut(Emitted)) {
        let now_ns = self.advance(now_ns);
        let verify = input.checksum == ChecksumState::Complete;
        let (packet, payload) = match parse(input.datagram, verify) {
            Ok(parsed) => parsed,
            Err(e) => {
                match e {
                    ParseError::BadIpChecksum | ParseError::BadTransportChecksum => self.stats.bad_checksum += 1,
                    ParseError::NotIpv4 { .. } | ParseError::UnsupportedProtocol { .. } => self.stats.not_tcp += 1,
                    _ => self.stats.malformed += 1,
                }
                return self.forward_unchanged(emit);
            }
        };
        let Some(header) = packet.tcp_header().copied() else {
            self.stats.not_tcp += 1;
            return self.forward_unchanged(emit);
        };
        let direction = match (self.on_ue_side(packet.dst), self.on_ue_side(packet.src)) {
            (true, false) => Direction::FromServer,
            (false, true) => Direction::FromUe,
            _ => {
                self.stats.not_ue_traffic += 1;
                return self.forward_unchanged(emit);
            }
        };
        let bytes = input.datagram.len() as u64;
        match direction {
            Direction::FromServer => (self.stats.datagrams_from_server += 1, self.stats.bytes_from_server += bytes),
            Direction::FromUe => (self.stats.datagrams_from_ue += 1, self.stats.bytes_from_ue += bytes),
        };
        // The core gets the segments the sender made (a GSO/GRO datagram holds several): its
        // ACK relay works per original segment boundary (docs/proxy.md#how-a-flow-is-handled).
        let segment = input.segment_bytes.map_or(payload.len(), |s| s.max(1) as usize);
        let segments = payload.len().div_ceil(segment.max(1)).max(1);
        let mut untouched = true;
        for k in 0..segments {
            let part = &payload[(k * segment).min(payload.len())..((k + 1) * segment).min(payload.len())];
            let mut piece = packet;
            piece.payload_bytes = part.len() as u32;
            piece.meta.payload = self.buffers.hold(part);
            if segments > 1 {
                piece.ip_id = packet.ip_id.wrapping_add(k as u16);
                let h = piece.tcp_header_mut().expect("a TCP packet");
                h.seq = header.seq.wrapping_add((k * segment) as u32);
                // As the kernel's segmentation does: FIN and PSH on the last, CWR on the first.
                let mut flags = header.flags.0;
                if k + 1 < segments {
                    flags &= !(TcpFlags::FIN.0 | TcpFlags::PSH.0);
                }
                if k > 0 {
                    flags &= !TcpFlags::CWR.0;
                }
                h.flags = TcpFlags(flags);
            }
            let before = self.out.len();
            self.proxy.on_packet(now_ns, piece, direction, &mut self.buffers, &mut self.out);
            untouched &= self.out.len() == before + 1 && self.out[before] == piece;
        }
        // Every segment went on as it came: so does the datagram, whole.
        if untouched {
            self.out.clear();
            self.buffers.recycle();
            return self.forward_unchanged(emit);
        }
        self.emit_outputs(emit);
    }

    /// A telemetry datagram (docs/telemetry.md) from the gNB; a malformed one is counted and
    /// changes nothing.
    pub fn on_telemetry(&mut self, now_ns: u64, datagram: &[u8], emit: &mut dyn FnMut(Emitted)) {
        let Ok((ue, record)) = Telemetry::decode(datagram) else {
            self.stats.telemetry_malformed += 1;
            return;
        };
        self.on_record(now_ns, ue, record, emit);
    }

    /// A sealed telemetry datagram from across the network: applied only if its tag verifies
    /// under the key and its sequence number is new for its publisher, each refusal counted.
    /// Its record's time is on CLOCK_REALTIME; `realtime_minus_now_ns` is that clock minus the
    /// one `now_ns` is on, so that the core judges the record's age on its own clock.
    pub fn on_sealed_telemetry(&mut self, now_ns: u64, realtime_minus_now_ns: i128, datagram: &[u8], emit: &mut dyn FnMut(Emitted)) {
        let Some((key, guard)) = &mut self.sealed else {
            self.stats.telemetry_malformed += 1;
            return;
        };
        let sealed = match Sealed::open(datagram, key) {
            Ok(sealed) => sealed,
            Err(OpenError::Forged) => {
                self.stats.telemetry_forged += 1;
                return;
            }
            Err(OpenError::Malformed | OpenError::BadRecord(_)) => {
                self.stats.telemetry_malformed += 1;
                return;
            }
        };
        if !guard.accept(sealed.publisher, sealed.sequence) {
            self.stats.telemetry_replayed += 1;
            return;
        }
        let t_ns = (i128::from(sealed.record.t_ns) - realtime_minus_now_ns).clamp(0, i128::from(u64::MAX)) as u64;
        self.on_record(now_ns, sealed.ue, Telemetry { t_ns, ..sealed.record }, emit);
    }

    fn on_record(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, emit: &mut dyn FnMut(Emitted)) {
        let now_ns = self.advance(now_ns);
        self.stats.telemetry_received += 1;
        self.stats.newest_telemetry_t_ns = Some(self.stats.newest_telemetry_t_ns.map_or(record.t_ns, |t| t.max(record.t_ns)));
        self.proxy.on_telemetry(now_ns, ue, record, &mut self.buffers, &mut self.out);
        self.emit_outputs(emit);
    }

    /// The core's timers (local retransmission, idle sweep).
    pub fn on_timeout(&mut self, now_ns: u64, emit: &mut dyn FnMut(Emitted)) {
        let now_ns = self.advance(now_ns);
        if self.proxy.next_deadline_ns().is_some_and(|t| t <= now_ns) {
            self.proxy.on_timeout(now_ns, &mut self.buffers, &mut self.out);
            self.emit_outputs(emit);
        }
    }

    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.proxy.next_deadline_ns()
    }

    fn forward_unchanged(&mut self, emit: &mut dyn FnMut(Emitted)) {
        self.stats.datagrams_forwarded_unchanged += 1;
        emit(Emitted::Original);
    }

    fn emit_outputs(&mut self, emit: &mut dyn FnMut(Emitted)) {
        for packet in self.out.drain(..) {
            let payload = self.buffers.bytes(packet.meta.payload);
            let Ok(len) = millinet_wire::emit(&packet, payload, &mut self.wire) else {
                self.stats.emit_failures += 1;
                continue;
            };
            let toward = match self.ue_networks.iter().any(|n| n.contains(packet.dst)) {
                true => {
                    self.stats.datagrams_emitted_toward_ue += 1;
                    self.stats.bytes_emitted_toward_ue += len as u64;
                    Toward::Ue
                }
                false => {
                    self.stats.datagrams_emitted_toward_server += 1;
                    self.stats.bytes_emitted_toward_server += len as u64;
                    Toward::Server
                }
            };
            emit(Emitted::Datagram { bytes: &self.wire[..len], toward });
        }
        self.buffers.recycle();
    }
}
