//! Extension points of a connection, so that an MP-TCP subflow (RFC 8684) is a plain
//! `TcpConnection` plus hooks rather than a fork of it: MP_CAPABLE / MP_JOIN ride on the
//! SYN exchange (RFC 8684 §3.1, §3.2), DSS mappings and data ACKs on every segment (§3.3),
//! and the window a subflow advertises is the connection-level one (§3.3.5).
//!
//! The hooks work on the header, whatever option fields it has. A connection without hooks
//! pays one branch per call into it.

use millinet_wire::TcpHeader;

/// Called by the connection at the points below. Every method defaults to doing nothing.
pub trait ConnectionHooks {
    /// Our SYN (active open) or SYN-ACK (passive open) is about to leave, first
    /// transmission or retransmission: add options.
    fn syn_out(&mut self, _header: &mut TcpHeader) {}

    /// A segment with SYN arrived (the peer's SYN or SYN-ACK), before the connection
    /// negotiates from it.
    fn syn_in(&mut self, _header: &TcpHeader) {}

    /// A segment without SYN is about to leave (data, pure ACK, FIN, window probe):
    /// add or change options. `payload_bytes` is its data length.
    fn segment_out(&mut self, _header: &mut TcpHeader, _payload_bytes: u32) {}

    /// A segment without SYN arrived, before the connection processes it.
    fn segment_in(&mut self, _header: &TcpHeader, _payload_bytes: u32) {}

    /// A cap on the receive window the connection advertises (beyond its own free buffer),
    /// read whenever the application or the network calls into the connection. MP-TCP
    /// subflows advertise the data-level window (RFC 8684 §3.3.5). None: no cap.
    fn rcv_window_cap_bytes(&self) -> Option<u64> {
        None
    }
}
