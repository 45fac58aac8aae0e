//! The proxy between a real TCP server and UE: end-to-end semantics, exact byte stream,
//! coalescing, window rewriting, RTT estimation, local repair.

mod common;

use common::*;
use millinet_proxy::{PolicySpec, ProxyConfig};

#[test]
fn lossy_ue_hop_keeps_end_to_end_semantics_and_the_byte_stream() {
    let bytes = 30_000_000;
    let mut setup = Setup::new(bytes);
    setup.ue_link_rate_bps = Some(200_000_000);
    setup.ue_link_filter = random_data_loss(0.01, 7);
    // The achievable rate swings 400 ↔ 50 Mbit/s every 25 ms: when FW shrinks the proxy
    // holds data, and sends it coalesced as the UE's ACKs free the window.
    setup.telemetry_rate_bps = Some(|t| if (t / (25 * MS)) % 2 == 0 { 400_000_000 } else { 50_000_000 });
    let mut sim = Sim::new(setup);
    sim.run(60_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes, "UE got {} of {bytes}", sim.delivered());
    assert!(sim.proxy.max_segment_bytes > 1400, "no coalescing happened: {:?}", sim.proxy.stats());
    assert!(sim.proxy.relayed_acks > sim.proxy.coalesced_segments, "one ACK per original boundary expected");
    let st = *sim.proxy.stats();
    assert!(st.local_retransmissions > 0, "{st:?}");
    assert_eq!(st.flows_created, 1);
}

#[test]
fn rtt_estimate_matches_the_base_rtt() {
    let bytes = 5_000_000;
    let mut setup = Setup::new(bytes);
    setup.proxy = ProxyConfig { policy: PolicySpec::new("static").with("fw_bytes", 4e6), ..ProxyConfig::default() };
    let mut sim = Sim::new(setup);
    sim.run(10_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    let key = sim.proxy.flow_keys().next().expect("flow still open");
    let st = sim.proxy.flow_stats(sim.now_ns(), &key).unwrap();
    let min = st.rtt.min_ns.unwrap() as i64;
    // 2 · 10 ms server side + 2 · 5 ms UE side.
    assert!((min - 30 * MS as i64).abs() <= MS as i64, "RTT_min {min} ns, rtt {:?}", st.rtt);
    assert!((st.rtt.down_ns.unwrap() as i64 - 10 * MS as i64).abs() <= MS as i64, "{:?}", st.rtt);
}

#[test]
fn rtt_estimate_without_timestamps() {
    let bytes = 3_000_000;
    let mut setup = Setup::new(bytes);
    setup.ue.timestamps = false;
    setup.proxy = ProxyConfig { policy: PolicySpec::new("static").with("fw_bytes", 4e6), ..ProxyConfig::default() };
    let mut sim = Sim::new(setup);
    sim.run(10_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    let key = sim.proxy.flow_keys().next().unwrap();
    let min = sim.proxy.flow_stats(sim.now_ns(), &key).unwrap().rtt.min_ns.unwrap() as i64;
    assert!((min - 30 * MS as i64).abs() <= MS as i64, "RTT_min {min} ns");
}

#[test]
fn local_repair_on_three_dup_acks_spares_the_server() {
    let bytes = 3_000_000;
    let mut setup = Setup::new(bytes);
    setup.proxy = ProxyConfig { suppress_dup_acks_while_repairing: true, ..ProxyConfig::default() };
    setup.ue_link_filter = drop_data_packets(vec![12]);
    let mut sim = Sim::new(setup);
    sim.run(20_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    assert_eq!(sim.proxy.stats().local_retransmissions, 1, "{:?}", sim.proxy.stats());
    assert_eq!(sim.server.stats().retransmitted_segments, 0, "{:?}", sim.server.stats());
    assert!(sim.proxy.stats().dup_acks_suppressed >= 3);
}

#[test]
fn relayed_window_follows_the_flow_window() {
    let bytes = 2_000_000;
    let mut setup = Setup::new(bytes);
    setup.proxy = ProxyConfig { policy: PolicySpec::new("static").with("fw_bytes", 100_000.0), ..ProxyConfig::default() };
    let mut sim = Sim::new(setup);
    sim.run(60_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    let key = sim.proxy.flow_keys().next().unwrap();
    let st = sim.proxy.flow_stats(sim.now_ns(), &key).unwrap();
    assert!(st.last_relayed_window_bytes <= 100_000 && st.last_relayed_window_bytes > 90_000, "{st:?}");
    // Window-limited to 100 kB per 30 ms: about 3.3 MB/s, so 2 MB take ≥ 0.5 s.
    assert!(sim.now_ns() > 500 * MS, "finished at {} ns", sim.now_ns());
}

#[test]
fn coalesces_when_the_flow_window_reopens() {
    let bytes = 20_000_000;
    let mut setup = Setup::new(bytes);
    setup.ue_link_rate_bps = Some(400_000_000);
    setup.telemetry_rate_bps = Some(|t| if (t / (25 * MS)) % 2 == 0 { 400_000_000 } else { 50_000_000 });
    let mut sim = Sim::new(setup);
    sim.run(60_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    assert!(sim.proxy.max_segment_bytes > 1400, "no coalescing happened: {:?} {:?}", sim.proxy.stats(), sim.server.stats());
}

#[test]
fn fin_exchange_removes_the_instance() {
    let bytes = 1_000_000;
    let mut sim = Sim::new(Setup::new(bytes));
    sim.run(10_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    assert_eq!(sim.proxy.flow_count(), 1);
    sim.close_both();
    sim.run(sim.now_ns() + 500 * MS, u64::MAX);
    assert_eq!(sim.proxy.flow_count(), 0, "{:?}", sim.proxy.stats());
    assert_eq!(sim.proxy.stats().flows_closed, 1);
    assert_eq!(sim.proxy.stats().buffer_bytes, 0);
}

#[test]
fn a_flow_window_above_the_buffer_is_capped_so_the_server_never_overruns_it() {
    // FW 4 MB, buffer 300 kB, UE hop 50 Mbit/s: an uncapped window lets the server's slow
    // start overrun the buffer and lose segments.
    let bytes = 10_000_000;
    let mut setup = Setup::new(bytes);
    setup.ue_link_rate_bps = Some(50_000_000);
    setup.proxy =
        ProxyConfig { flow_buffer_bytes: 300_000, policy: PolicySpec::new("static").with("fw_bytes", 4e6), ..ProxyConfig::default() };
    let mut sim = Sim::new(setup);
    sim.run(60_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    assert_eq!(sim.proxy.stats().buffer_full_drops, 0, "{:?}", sim.proxy.stats());
    assert_eq!(sim.server.stats().retransmitted_segments, 0);
    let key = sim.proxy.flow_keys().next().unwrap();
    assert!(sim.proxy.flow_stats(sim.now_ns(), &key).unwrap().last_relayed_window_bytes <= 300_000);
}
