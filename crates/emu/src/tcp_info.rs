//! The kernel's `struct tcp_info` (<linux/tcp.h>), read with getsockopt(TCP_INFO): what a real
//! socket reports of its congestion window, RTT, delivery rate, retransmissions and RTOs.

use std::os::fd::RawFd;

use millinet_network::series::FlowRow;

use crate::error::EmuError;

/// The layout of <linux/tcp.h> up to `tcpi_total_rto_time` (Linux 6.7); the fields this
/// crate reads are named, the rest keep their place.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited: u8,
    pub rto_us: u32,
    pub ato_us: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt_us: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time_ms: u32,
}

/// Bytes of the structure up to and including `total_rto_time_ms`: a kernel that returns
/// fewer has no RTO counter.
const WITH_RTO_COUNTERS: usize = std::mem::size_of::<TcpInfo>();

impl TcpInfo {
    /// Reads the socket's TCP_INFO. Refused when the kernel is older than Linux 6.7 (no RTO
    /// counter), since the summary's `rtos` would be made up.
    pub fn read(fd: RawFd) -> Result<TcpInfo, EmuError> {
        let mut info = TcpInfo::default();
        let mut len = WITH_RTO_COUNTERS as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `info`, which is that large.
        let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut TcpInfo).cast(), &mut len) };
        if r != 0 {
            return Err(EmuError::os("getsockopt(TCP_INFO)"));
        }
        if (len as usize) < WITH_RTO_COUNTERS {
            return Err(EmuError::System(format!(
                "this kernel's TCP_INFO has {len} bytes, without the RTO counters of Linux 6.7 ({WITH_RTO_COUNTERS} bytes)"
            )));
        }
        Ok(info)
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }

    /// The slow-start threshold in bytes; the kernel's "infinite" (0x7fffffff) stays huge.
    pub fn ssthresh_bytes(&self) -> u64 {
        self.snd_ssthresh as u64 * self.snd_mss as u64
    }

    pub fn bytes_in_flight(&self) -> u64 {
        // RFC 6675 pipe as Linux counts it: unacked − (SACKed + lost) + retransmitted.
        (self.unacked as u64 + self.retrans as u64).saturating_sub(self.sacked as u64 + self.lost as u64) * self.snd_mss as u64
    }

    /// The `flows` table's row: the simulator's columns from the kernel's fields.
    pub fn flow_row(&self) -> FlowRow {
        FlowRow {
            cwnd_bytes: self.cwnd_bytes(),
            ssthresh_bytes: self.ssthresh_bytes(),
            srtt_ns: u64::from(self.rtt_us) * 1000,
            pacing_rate_bps: self.pacing_rate.saturating_mul(8),
            bytes_in_flight: self.bytes_in_flight(),
            acked_bytes: self.bytes_acked,
            // The kernel's "none yet" is ~0.
            min_rtt_ns: (self.min_rtt_us != u32::MAX && self.min_rtt_us > 0).then(|| u64::from(self.min_rtt_us) * 1000),
            delivery_rate_bps: self.delivery_rate.saturating_mul(8),
            retransmits: u64::from(self.total_retrans),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_matches_linux_6_7() {
        // <linux/tcp.h>: tcpi_rehash ends at byte 240, then two u16 RTO counters and the u32
        // RTO time.
        assert_eq!(std::mem::offset_of!(TcpInfo, total_rto), 240);
        assert_eq!(std::mem::offset_of!(TcpInfo, total_retrans), 100);
        assert_eq!(std::mem::offset_of!(TcpInfo, pacing_rate), 104);
        assert_eq!(std::mem::offset_of!(TcpInfo, min_rtt_us), 148);
        assert_eq!(std::mem::offset_of!(TcpInfo, delivery_rate), 160);
        assert_eq!(WITH_RTO_COUNTERS, 248);
    }

    #[test]
    fn a_loopback_connection_reports_itself() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        use std::os::fd::AsRawFd;
        let info = TcpInfo::read(client.as_raw_fd()).unwrap();
        assert_eq!(info.state, 1, "TCP_ESTABLISHED");
        assert!(info.snd_mss > 0 && info.snd_cwnd >= 1);
        assert_eq!(info.total_rto, 0);
    }
}
