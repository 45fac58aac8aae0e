//! The daemon's packet path under churn: many short flows and UEs coming and going, each UE
//! reporting telemetry. Its state stays within `proxy.max_flows` flows and `proxy.max_ues`
//! telemetry records whatever the churn (docs/proxyd.md, "Memory"); `soak_rss_stays_flat`
//! (`make bench-proxyd-churn`) runs it long and prints the process's resident memory.

use std::net::Ipv4Addr;

use millinet_proxyd::{ChecksumState, DaemonConfig, Datapath, Input, Ipv4Network};
use millinet_wire::{emit, Packet, TcpFlags, TcpHeader, TcpOptions, Telemetry};

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const MS: u64 = 1_000_000;

struct Churn {
    dp: Datapath,
    buf: Vec<u8>,
    now_ns: u64,
}

impl Churn {
    fn new(overrides: &[&str]) -> Churn {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let proxy = DaemonConfig::load(None, &overrides).unwrap().build(None).unwrap();
        Churn { dp: Datapath::new(proxy, vec!["10.0.0.0/8".parse::<Ipv4Network>().unwrap()]), buf: vec![0; 4096], now_ns: 0 }
    }

    /// A segment of the UE's connection `(ue, port)` to the server's port 443.
    fn send(&mut self, (ue, port): (Ipv4Addr, u16), from_ue: bool, seq: u32, ack: u32, flags: TcpFlags, payload: &[u8]) {
        let (src, dst, sport, dport) = if from_ue { (ue, SERVER, port, 443) } else { (SERVER, ue, 443, port) };
        let options =
            if flags.contains(TcpFlags::SYN) { TcpOptions { mss: Some(1400), ..TcpOptions::default() } } else { TcpOptions::default() };
        let h = TcpHeader { src_port: sport, dst_port: dport, seq, ack, flags, window: 65_000, options };
        let n = emit(&Packet::tcp(src, dst, h, payload.len() as u32), payload, &mut self.buf).unwrap();
        let datagram = self.buf[..n].to_vec();
        self.dp.on_datagram(
            self.now_ns,
            Input { datagram: &datagram, checksum: ChecksumState::Complete, segment_bytes: None },
            &mut |_| {},
        );
    }

    /// One UE's telemetry record, then one short flow of it: handshake, 1000 bytes from the
    /// server acknowledged by the UE, and a reset from the UE.
    fn flow(&mut self, n: u32) {
        let ue = Ipv4Addr::from(0x0a00_0000 + n % (1 << 20));
        let port = 1024 + (n % 60_000) as u16;
        self.now_ns += MS;
        let record = Telemetry { t_ns: self.now_ns, rlc_bytes: 10_000, rate_bps: 1e9, sinr_db: 20.0, outage: false };
        self.dp.on_telemetry(self.now_ns, &record.encode(ue), &mut |_| {});
        self.send((ue, port), true, 100, 0, TcpFlags::SYN, &[]);
        self.send((ue, port), false, 5000, 101, TcpFlags::SYN | TcpFlags::ACK, &[]);
        self.send((ue, port), true, 101, 5001, TcpFlags::ACK, &[]);
        self.send((ue, port), false, 5001, 101, TcpFlags::ACK | TcpFlags::PSH, &[7; 1000]);
        self.send((ue, port), true, 101, 6001, TcpFlags::ACK, &[]);
        self.send((ue, port), true, 101, 6001, TcpFlags::RST | TcpFlags::ACK, &[]);
        self.dp.on_timeout(self.now_ns, &mut |_| {});
    }

    fn flows(&self) -> usize {
        self.dp.proxy().flow_samples(self.now_ns).len()
    }

    fn gauge(&self, name: &str) -> u64 {
        self.dp.proxy().summary().gauges.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn counter(&self, name: &str) -> u64 {
        self.dp.proxy().summary().counters.iter().find(|(n, _)| *n == name).unwrap().1
    }
}

#[test]
fn short_flows_of_ues_coming_and_going_stay_within_max_flows_and_max_ues() {
    let mut c = Churn::new(&["proxy.max_flows=64", "proxy.max_ues=32"]);
    for n in 0..5_000 {
        c.flow(n);
        assert!(c.flows() <= 64 && c.gauge("telemetry_ues") <= 32, "flow {n}: {} flows, {} UEs", c.flows(), c.gauge("telemetry_ues"));
    }
    // Every flow was proxied and removed by its reset; the newest 32 UEs' records are held.
    assert_eq!((c.counter("flows_created"), c.flows()), (5_000, 0));
    assert_eq!((c.gauge("telemetry_ues"), c.counter("telemetry_evicted")), (32, 5_000 - 32));
    assert_eq!(c.dp.stats.telemetry_received, 5_000);
    // Flows left open (no reset, the UE gone) are bounded too: the 65th is passed through.
    for n in 0..100u32 {
        let ue = Ipv4Addr::from(0x0a80_0000 + n);
        c.send((ue, 2000), true, 100, 0, TcpFlags::SYN, &[]);
        c.send((ue, 2000), false, 5000, 101, TcpFlags::SYN | TcpFlags::ACK, &[]);
    }
    assert_eq!((c.flows(), c.counter("flows_refused_limit")), (64, 36));
}

/// `make bench-proxyd-churn`: ten million short flows of a million UEs through the default
/// limits but 10 000 UEs' telemetry, the process's resident memory printed every million.
#[test]
#[ignore]
fn soak_rss_stays_flat() {
    let mut c = Churn::new(&["proxy.max_ues=10000"]);
    let rss_mb = || {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages as f64 * 4096.0 / 1e6
    };
    let started = std::time::Instant::now();
    println!("flows_done,rss_mb,flows_open,telemetry_ues,wall_s");
    for n in 0..10_000_000u32 {
        c.flow(n);
        if (n + 1) % 1_000_000 == 0 {
            println!("{},{:.1},{},{},{:.1}", n + 1, rss_mb(), c.flows(), c.gauge("telemetry_ues"), started.elapsed().as_secs_f64());
        }
    }
}
