//! TCP connection: one endpoint (sender and receiver halves) per RFC 9293,
//! with SACK (RFC 2018/6675), NewReno (RFC 6582), RTO (RFC 6298), timestamps and
//! window scaling (RFC 7323), delayed ACK (RFC 5681 §4.2), persist timer.

use std::net::SocketAddrV4;
use std::ops::Range;

use millinet_wire::Packet;

/// RFC 6582 §4: how the RTO timer is handled on partial ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewRenoVariant {
    /// Reset the RTO timer only on the first partial ACK.
    Impatient,
    /// Reset the RTO timer on every partial ACK.
    SlowButSteady,
}

/// When cwnd may grow on an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndGrowth {
    /// Only while the sender is cwnd-limited (Linux `tcp_is_cwnd_limited`).
    WhenCwndLimited,
    /// On every ACK (ns-3 and older simulators).
    Always,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Congestion control name, looked up in `cc::REGISTRY`.
    pub cc: String,
    pub mss_bytes: u32,
    pub initial_window_segments: u32,
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ns: u64,
    pub initial_rto_ns: u64,
    pub min_rto_ns: u64,
    pub max_rto_ns: u64,
    /// Receive buffer; the advertised window is its free space.
    pub rcv_buf_bytes: u64,
    pub newreno_variant: NewRenoVariant,
    pub cwnd_growth: CwndGrowth,
    /// Initial send sequence number (RFC 9293 §3.4.1); the caller draws it, the model has no randomness.
    pub iss: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: "cubic".to_string(),
            mss_bytes: 1400,
            initial_window_segments: 10,
            sack: true,
            timestamps: true,
            window_scaling: true,
            delayed_ack: false,
            delayed_ack_timeout_ns: 40_000_000,
            initial_rto_ns: 1_000_000_000,
            min_rto_ns: 200_000_000,
            max_rto_ns: 120_000_000_000,
            rcv_buf_bytes: 1 << 30,
            newreno_variant: NewRenoVariant::Impatient,
            cwnd_growth: CwndGrowth::WhenCwndLimited,
            iss: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

/// What stopped the sender from sending more (transport.md outputs: `limited_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitedBy {
    Cwnd = 0,
    Rwnd = 1,
    App = 2,
    Pacing = 3,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpStats {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt_ns: u64,
    pub rttvar_ns: u64,
    pub rto_ns: u64,
    pub bytes_in_flight: u64,
    pub pacing_rate_bps: u64,
    /// Bytes cumulatively acknowledged by the peer (sender side).
    pub acked_bytes: u64,
    /// Bytes delivered in order to the application (receiver side).
    pub delivered_bytes: u64,
    pub retransmitted_segments: u64,
    pub fast_retransmits: u64,
    pub rtos: u64,
    pub spurious_rtos: u64,
    /// Number of RTT samples taken so far and the latest one.
    pub rtt_samples: u64,
    pub last_rtt_ns: u64,
    /// Time spent limited by cwnd, rwnd, the application and pacing, indexed by `LimitedBy`.
    pub limited_ns: [u64; 4],
}

pub struct TcpConnection {
    _private: (),
}

impl TcpConnection {
    /// Active open: returns the connection and emits the SYN into `out`.
    pub fn connect(cfg: TcpConfig, local: SocketAddrV4, remote: SocketAddrV4, now_ns: u64, out: &mut Vec<Packet>) -> Result<TcpConnection, String> {
        let _ = (cfg, local, remote, now_ns, out);
        todo!()
    }

    /// Passive open: waits for a SYN to `local` from anyone.
    pub fn listen(cfg: TcpConfig, local: SocketAddrV4) -> Result<TcpConnection, String> {
        let _ = (cfg, local);
        todo!()
    }

    /// A segment addressed to this connection arrived.
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        let _ = (now_ns, pkt, out);
        todo!()
    }

    /// The deadline returned by `next_timeout_ns` has passed (it may be called late or
    /// spuriously; the connection checks its own deadlines).
    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let _ = (now_ns, out);
        todo!()
    }

    /// The earliest time at which `on_timeout` must be called, if any.
    pub fn next_timeout_ns(&self) -> Option<u64> {
        todo!()
    }

    /// The application appends `bytes` to the send stream (u64::MAX: unlimited, bulk).
    pub fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>) {
        let _ = (now_ns, bytes, out);
        todo!()
    }

    /// The application will write nothing more: FIN after the last byte.
    pub fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let _ = (now_ns, out);
        todo!()
    }

    /// Stream offsets delivered in order to the application since the last call.
    pub fn take_delivered(&mut self) -> Range<u64> {
        todo!()
    }

    pub fn state(&self) -> TcpState {
        todo!()
    }

    pub fn stats(&self) -> &TcpStats {
        todo!()
    }

    pub fn local(&self) -> SocketAddrV4 {
        todo!()
    }

    pub fn remote(&self) -> Option<SocketAddrV4> {
        todo!()
    }
}
