//! The fields of Linux's `struct tcp_info` (`TCP_INFO`) that a millinet connection has, in
//! Linux's units, for the `%{ assert ... }%` blocks: windows in segments, times in
//! microseconds, rates in bytes per second. Fields millinet does not keep are not offered.

use millinet_transport::{LimitedBy, TcpState, TcpStats};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpiField {
    State,
    SndMss,
    SndCwnd,
    SndSsthresh,
    Rtt,
    RttVar,
    Rto,
    MinRtt,
    TotalRetrans,
    TotalRto,
    BytesAcked,
    BytesReceived,
    DeliveryRate,
    RwndLimited,
}

const FIELDS: [(&str, TcpiField); 14] = [
    ("tcpi_state", TcpiField::State),
    ("tcpi_snd_mss", TcpiField::SndMss),
    ("tcpi_snd_cwnd", TcpiField::SndCwnd),
    ("tcpi_snd_ssthresh", TcpiField::SndSsthresh),
    ("tcpi_rtt", TcpiField::Rtt),
    ("tcpi_rttvar", TcpiField::RttVar),
    ("tcpi_rto", TcpiField::Rto),
    ("tcpi_min_rtt", TcpiField::MinRtt),
    ("tcpi_total_retrans", TcpiField::TotalRetrans),
    ("tcpi_total_rto", TcpiField::TotalRto),
    ("tcpi_bytes_acked", TcpiField::BytesAcked),
    ("tcpi_bytes_received", TcpiField::BytesReceived),
    ("tcpi_delivery_rate", TcpiField::DeliveryRate),
    ("tcpi_rwnd_limited", TcpiField::RwndLimited),
];

/// Linux's TCP_INFINITE_SSTHRESH: the ssthresh reported before the first reduction.
const INFINITE_SSTHRESH: u64 = 0x7fff_ffff;

/// What the fields are computed from.
pub(crate) struct Snapshot {
    pub stats: TcpStats,
    pub state: TcpState,
    /// The MSS both ends agreed on (min of the two SYNs' announcements).
    pub mss_bytes: u64,
}

impl TcpiField {
    pub fn by_name(name: &str) -> Option<TcpiField> {
        FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    pub fn name(self) -> &'static str {
        FIELDS.iter().find(|(_, f)| *f == self).map_or("tcpi_?", |(n, _)| n)
    }

    /// Every field's name, comma-separated.
    pub fn names() -> String {
        FIELDS.map(|(n, _)| n).join(", ")
    }

    pub(crate) fn value(self, s: &Snapshot) -> i64 {
        let us = |ns: u64| ns / 1000;
        let segments = |bytes: u64| bytes / s.mss_bytes.max(1);
        let value = match self {
            TcpiField::State => linux_state(s.state),
            TcpiField::SndMss => s.mss_bytes,
            TcpiField::SndCwnd => segments(s.stats.cwnd_bytes),
            TcpiField::SndSsthresh => segments(s.stats.ssthresh_bytes).min(INFINITE_SSTHRESH),
            TcpiField::Rtt => us(s.stats.srtt_ns),
            TcpiField::RttVar => us(s.stats.rttvar_ns),
            TcpiField::Rto => us(s.stats.rto_ns),
            // Linux reports ~0 until the first sample.
            TcpiField::MinRtt if s.stats.rtt_samples == 0 => u32::MAX as u64,
            TcpiField::MinRtt => us(s.stats.min_rtt_ns),
            TcpiField::TotalRetrans => s.stats.retransmitted_segments,
            TcpiField::TotalRto => s.stats.rtos,
            TcpiField::BytesAcked => s.stats.acked_bytes,
            TcpiField::BytesReceived => s.stats.delivered_bytes,
            TcpiField::DeliveryRate => s.stats.delivery_rate_bps / 8,
            TcpiField::RwndLimited => us(s.stats.limited_ns[LimitedBy::Rwnd as usize]),
        };
        i64::try_from(value).unwrap_or(i64::MAX)
    }
}

/// Linux's numbering of the states (include/net/tcp_states.h).
fn linux_state(state: TcpState) -> u64 {
    match state {
        TcpState::Established => 1,
        TcpState::SynSent => 2,
        TcpState::SynReceived => 3,
        TcpState::FinWait1 => 4,
        TcpState::FinWait2 => 5,
        TcpState::TimeWait => 6,
        TcpState::Closed => 7,
        TcpState::CloseWait => 8,
        TcpState::LastAck => 9,
        TcpState::Listen => 10,
        TcpState::Closing => 11,
    }
}
