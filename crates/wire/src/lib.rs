//! Packet and header representations shared by every model.
//!
//! The simulator carries headers as typed fields and payload as a length only
//! (the application byte stream is identified by sequence numbers); `emit`
//! turns a packet into real IPv4/TCP/UDP bytes for captures and for the
//! emulator, and `parse` reads real bytes back.

pub mod accecn;
pub mod aqm;
pub mod checksum;
pub mod emit;
pub mod gso;
pub mod mptcp;
mod packet;
pub mod parse;
mod sealed_telemetry;
mod tcp;
pub mod telemetry;

pub use emit::{emit, emit_headers, header_bytes, rewrite_ecn, rewrite_tcp_window, EmitError, MAX_HEADER_BYTES};
pub use packet::{
    Meta, OtherHeader, Packet, PayloadId, Tag, Transport, UdpHeader, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, IPV4_HEADER_BYTES,
    UDP_HEADER_BYTES,
};
pub use parse::{parse, ParseError};
pub use sealed_telemetry::{OpenError, ReplayGuard, Sealed, TelemetryKey, MIN_KEY_BYTES, SEALED_TELEMETRY_BYTES};
pub use tcp::{
    OptionArea, RawOptionError, RawOptions, SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps, MAX_SACK_BLOCKS, MAX_TCP_OPTION_BYTES,
    OPTION_AREA_BYTES, TCP_HEADER_BYTES,
};
pub use telemetry::{Telemetry, TelemetryDecodeError, TELEMETRY_DATAGRAM_BYTES};

/// Sequence-number arithmetic modulo 2^32 (RFC 9293 §3.4).
pub mod seq {
    /// `a < b` in sequence space.
    #[inline]
    pub fn lt(a: u32, b: u32) -> bool {
        (a.wrapping_sub(b) as i32) < 0
    }
    /// `a <= b` in sequence space.
    #[inline]
    pub fn le(a: u32, b: u32) -> bool {
        (a.wrapping_sub(b) as i32) <= 0
    }
    /// `a > b` in sequence space.
    #[inline]
    pub fn gt(a: u32, b: u32) -> bool {
        lt(b, a)
    }
    /// `a >= b` in sequence space.
    #[inline]
    pub fn ge(a: u32, b: u32) -> bool {
        le(b, a)
    }
    /// The later of two sequence numbers.
    #[inline]
    pub fn max(a: u32, b: u32) -> u32 {
        if lt(a, b) {
            b
        } else {
            a
        }
    }
}
