//! UDP sources (constant bit rate, saturating) and sink.
//!
//! A saturating source is a constant-bit-rate source whose rate is far above
//! the path capacity: the bottleneck queue then stays full and the sink sees
//! the maximum achievable rate.

use std::fmt;
use std::net::SocketAddrV4;

use millinet_wire::{Packet, Tag, UdpHeader, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};

#[derive(Clone, Debug, PartialEq)]
pub struct UdpSourceConfig {
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    /// The sending rate counted over whole IP datagrams (IPv4 + UDP headers +
    /// payload), so that it compares directly with a link's rate.
    pub rate_bps: u64,
    pub payload_bytes: u32,
    /// The first packet departs at `start_ns`; none departs at or after `stop_ns`.
    pub start_ns: u64,
    pub stop_ns: u64,
    /// Scenario flow index written into each packet's `Meta` (measurement only).
    pub flow: u32,
}

/// The largest UDP payload an IPv4 datagram (total length ≤ 65535) can carry.
pub const MAX_PAYLOAD_BYTES: u32 = u16::MAX as u32 - IPV4_HEADER_BYTES - UDP_HEADER_BYTES;

/// Why a source could not be created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UdpError {
    ZeroRate,
    PayloadTooLarge { payload_bytes: u32 },
}

impl fmt::Display for UdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UdpError::ZeroRate => f.write_str("UDP source rate_bps must be positive"),
            UdpError::PayloadTooLarge { payload_bytes } => {
                write!(f, "UDP payload_bytes {payload_bytes} exceeds the IPv4 maximum of {MAX_PAYLOAD_BYTES}")
            }
        }
    }
}

impl std::error::Error for UdpError {}

pub struct UdpSource {
    cfg: UdpSourceConfig,
    /// Template for every packet; only `ip_id` changes.
    template: Packet,
    wire_bits: u64,
    /// Index of the next packet to send.
    next_index: u64,
    next_departure_ns: u64,
    sent_bytes: u64,
}

impl UdpSource {
    pub fn new(cfg: UdpSourceConfig) -> Result<UdpSource, UdpError> {
        if cfg.rate_bps == 0 {
            return Err(UdpError::ZeroRate);
        }
        if cfg.payload_bytes > MAX_PAYLOAD_BYTES {
            return Err(UdpError::PayloadTooLarge { payload_bytes: cfg.payload_bytes });
        }
        let header = UdpHeader { src_port: cfg.local.port(), dst_port: cfg.remote.port() };
        let mut template = Packet::udp(*cfg.local.ip(), *cfg.remote.ip(), header, cfg.payload_bytes);
        template.meta.tag = Tag::flow(cfg.flow);
        let wire_bits = template.wire_bytes() as u64 * 8;
        let next_departure_ns = cfg.start_ns;
        Ok(UdpSource { cfg, template, wire_bits, next_index: 0, next_departure_ns, sent_bytes: 0 })
    }

    /// When the next packet departs, or `None` once the source has stopped.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        (self.next_departure_ns < self.cfg.stop_ns).then_some(self.next_departure_ns)
    }

    /// Emits every packet whose departure time is at or before `now_ns` (a late
    /// call catches up with a burst; an early one emits nothing).
    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        while self.next_departure_ns <= now_ns && self.next_departure_ns < self.cfg.stop_ns {
            let mut p = self.template;
            // RFC 6864 §4.1: the IPv4 ID only needs to be unique for fragments, and a counter is what hosts use.
            p.ip_id = self.next_index as u16;
            out.push(p);
            self.sent_bytes += self.wire_bits / 8;
            self.next_index += 1;
            self.next_departure_ns = self.departure_ns(self.next_index);
        }
    }

    pub fn sent_packets(&self) -> u64 {
        self.next_index
    }

    /// Bytes sent, counted over whole IP datagrams as the rate is.
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    /// Packet k departs at start + floor(k · bits / rate), computed from k each
    /// time rather than by adding a rounded interval, so the rounding error
    /// stays below one nanosecond forever instead of growing with k.
    fn departure_ns(&self, k: u64) -> u64 {
        let offset = k as u128 * self.wire_bits as u128 * 1_000_000_000 / self.cfg.rate_bps as u128;
        self.cfg.start_ns.saturating_add(offset.min(u64::MAX as u128) as u64)
    }
}

/// Counts what arrives for a UDP flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpSink {
    pub received_packets: u64,
    /// Whole IP datagrams, as `UdpSource::sent_bytes`.
    pub received_bytes: u64,
    pub received_payload_bytes: u64,
}

impl UdpSink {
    pub fn new() -> UdpSink {
        UdpSink::default()
    }

    pub fn on_packet(&mut self, pkt: &Packet) {
        self.received_packets += 1;
        self.received_bytes += pkt.wire_bytes() as u64;
        self.received_payload_bytes += pkt.payload_bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    const S: u64 = 1_000_000_000;

    fn cfg(rate_bps: u64, payload_bytes: u32, start_ns: u64, stop_ns: u64) -> UdpSourceConfig {
        UdpSourceConfig {
            local: SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4000),
            remote: SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 5000),
            rate_bps,
            payload_bytes,
            start_ns,
            stop_ns,
            flow: 3,
        }
    }

    /// Runs the source as an event loop would, returning the departure times.
    fn run(src: &mut UdpSource, sink: &mut UdpSink) -> Vec<u64> {
        let mut times = Vec::new();
        let mut out = Vec::new();
        while let Some(t) = src.next_deadline_ns() {
            out.clear();
            src.on_timeout(t, &mut out);
            assert!(!out.is_empty(), "woken at {t} for nothing");
            for p in &out {
                sink.on_packet(p);
                times.push(t);
            }
        }
        times
    }

    #[test]
    fn one_second_carries_the_rate_within_one_packet() {
        for (rate_bps, payload) in [(1_000_000, 1000), (7_777_777, 1372), (1_000_000_000, 1472), (40_000_000_000, 1472)] {
            let mut src = UdpSource::new(cfg(rate_bps, payload, 3 * S, 4 * S)).unwrap();
            let mut sink = UdpSink::new();
            let times = run(&mut src, &mut sink);
            let wire_bytes = payload as u64 + 28;
            let ideal = rate_bps as f64 / (wire_bytes * 8) as f64;
            assert!((times.len() as f64 - ideal).abs() <= 1.0, "{rate_bps}: {} packets, ideal {ideal}", times.len());
            assert_eq!(times[0], 3 * S);
            assert!(*times.last().unwrap() < 4 * S);
            assert_eq!(src.sent_packets(), times.len() as u64);
            assert_eq!(src.sent_bytes(), times.len() as u64 * wire_bytes);
            assert_eq!(sink.received_packets, src.sent_packets());
            assert_eq!(sink.received_bytes, src.sent_bytes());
            assert_eq!(sink.received_payload_bytes, times.len() as u64 * payload as u64);
        }
    }

    #[test]
    fn no_drift_over_100_seconds() {
        // 1500-byte datagrams at 7 Mbit/s: 1714.28... µs apart, not a whole number of ns.
        let mut src = UdpSource::new(cfg(7_000_000, 1472, 0, 100 * S)).unwrap();
        let times = run(&mut src, &mut UdpSink::new());
        let exact = |k: u64| k as f64 * 12_000.0 / 7e6 * 1e9;
        for (k, &t) in times.iter().enumerate() {
            assert!((t as f64 - exact(k as u64)).abs() < 1.0, "packet {k} at {t}, exact {}", exact(k as u64));
        }
        let ideal = 100.0 * 7e6 / 12_000.0;
        assert!((times.len() as f64 - ideal).abs() <= 1.0, "{} packets, ideal {ideal}", times.len());
    }

    #[test]
    fn late_calls_catch_up_and_packets_are_stamped() {
        let mut src = UdpSource::new(cfg(12_000_000, 1472, 0, S)).unwrap();
        let mut out = Vec::new();
        src.on_timeout(10_000_000 - 1, &mut out);
        // 1 ms per packet: departures 0..=9 ms are due before 10 ms.
        assert_eq!(out.len(), 10);
        assert_eq!(src.next_deadline_ns(), Some(10_000_000));
        assert!(out.iter().enumerate().all(|(k, p)| p.ip_id == k as u16 && p.meta.tag == Tag::flow(3) && p.wire_bytes() == 1500));
        assert_eq!(out[0].ports(), (4000, 5000));
        src.on_timeout(u64::MAX, &mut out);
        assert_eq!(out.len(), 1000);
        assert_eq!(src.next_deadline_ns(), None);
    }

    #[test]
    fn rejects_impossible_configurations() {
        assert_eq!(UdpSource::new(cfg(0, 1000, 0, S)).err(), Some(UdpError::ZeroRate));
        let too_large = UdpSource::new(cfg(1, 65_508, 0, S)).err().expect("too large");
        assert_eq!(too_large.to_string(), "UDP payload_bytes 65508 exceeds the IPv4 maximum of 65507");
        assert!(UdpSource::new(cfg(1, 65_507, 0, S)).is_ok());
    }
}
