//! Every registered congestion control (docs/models/transport.md §6) delivers the byte stream intact
//! over a bottleneck whose rate switches between R and R/10 every second: the harness
//! checks that each range the application receives continues the stream and arrived in
//! data segments; here the total must equal what was written.

mod common;

use common::*;
use millinet_transport::cc::REGISTRY;
use millinet_transport::TcpConfig;

const RATE_BPS: u64 = 20_000_000;
const FILE_BYTES: u64 = 8_000_000;

#[test]
fn all_algorithms_deliver_the_stream_over_a_switching_bottleneck() {
    let names: Vec<&str> = REGISTRY.iter().map(|entry| entry.0).collect();
    assert_eq!(names, ["newreno", "cubic", "highspeed", "bbr", "dctcp", "prague", "lia", "olia", "balia"]);
    for name in names {
        let cfg = TcpConfig { cc: name.into(), ..TcpConfig::default() };
        // 100 packets of buffer: about 3 BDPs at R, 30 at R/10 (20 ms RTT).
        let down = Link::new(10 * MS).with_rate(RATE_BPS, 100);
        let mut h = Harness::new(cfg, TcpConfig::default(), down, Link::new(10 * MS), FILE_BYTES, true);
        let mut second = 0;
        while h.delivered_bytes() < FILE_BYTES && second < 60 {
            second += 1;
            h.down_mut().rate_bps = Some(if second % 2 == 1 { RATE_BPS } else { RATE_BPS / 10 });
            h.run_until(second * 1_000 * MS, |h| h.delivered_bytes() >= FILE_BYTES);
        }
        let s = h.server.stats();
        eprintln!(
            "{name}: {} bytes in {:.2} s, {} queue drops, {} fast retransmits, {} RTOs",
            h.delivered_bytes(),
            h.delivered_at_ns().unwrap_or(0) as f64 / 1e9,
            h.down().dropped_by_queue,
            s.fast_retransmits,
            s.rtos
        );
        assert_eq!(h.delivered_bytes(), FILE_BYTES, "{name}: the whole stream, in order");
        assert!(h.down().dropped_by_queue > 0 || name == "bbr", "{name}: the rate drops cost losses");
    }
}
