//! The split-TCP baseline between a real TCP server and UE: the byte stream arrives intact,
//! but the server's data is acknowledged before the UE has it — the end-to-end check that
//! milliProxy passes fails here — and the buffer bounds what the server may send ahead.

mod common;

use common::*;
use millinet_proxy::{SplitConfig, SplitProxy};
use millinet_transport::TcpConfig;

fn setup(buffer_bytes: u64, bytes: u64) -> Setup<SplitConfig> {
    let cfg = SplitConfig {
        buffer_bytes,
        downstream: TcpConfig { cc: "newreno".into(), mss_bytes: 1400, ..TcpConfig::default() },
        ..SplitConfig::default()
    };
    let mut s = Setup::with_proxy(cfg, bytes);
    s.ue_link_rate_bps = Some(50_000_000);
    s
}

#[test]
fn split_tcp_acknowledges_data_before_the_ue_has_it() {
    let bytes = 4_000_000;
    let mut s = setup(10_000_000, bytes);
    s.ue_link_filter = random_data_loss(0.005, 3);
    let mut sim: Sim<SplitProxy> = Sim::new(s);
    sim.run(60_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes, "the UE receives the server's byte stream");
    assert!(sim.proxy.acks_beyond_ue > 100, "only {} ACKs ran ahead of the UE", sim.proxy.acks_beyond_ue);
    let st = *sim.proxy.stats();
    assert!(st.bytes_acked_early > bytes / 2, "{st:?}");
    assert_eq!(st.flows_created, 1);
    assert!(sim.proxy.max_segment_bytes <= 1400, "the proxy's own MSS toward the UE, not the UE's 20000");
}

#[test]
fn the_buffer_bounds_how_far_the_server_runs_ahead() {
    let buffer = 300_000;
    let bytes = 20_000_000;
    let mut sim: Sim<SplitProxy> = Sim::new(setup(buffer, bytes));
    let mut max_ahead = 0;
    for step in 1..=40 {
        sim.run(step * 50 * MS, bytes);
        // Sent by the server and not yet delivered to the UE.
        let server = sim.server.stats();
        let ahead = server.acked_bytes + server.bytes_in_flight - sim.delivered();
        let key = sim.proxy.flow_keys().next().expect("flow open");
        let fs = sim.proxy.flow_stats(&key).unwrap();
        assert!(fs.buffered_bytes <= buffer, "{fs:?}");
        assert_eq!(fs.buffered_bytes + fs.free_bytes, buffer);
        // The window offered to the server is the free buffer, and data in flight toward
        // the UE stays buffered until the UE acknowledges it.
        assert!(ahead <= buffer, "server sent {ahead} bytes beyond the UE at {} ms", sim.now_ns() / MS);
        max_ahead = max_ahead.max(ahead);
    }
    assert!(max_ahead > buffer / 2, "the buffer never filled: {max_ahead}");
    sim.run(600_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
}

#[test]
fn fins_cross_over_and_the_flow_is_removed() {
    let bytes = 1_000_000;
    let mut sim: Sim<SplitProxy> = Sim::new(setup(10_000_000, bytes));
    sim.run(10_000 * MS, bytes);
    assert_eq!(sim.delivered(), bytes);
    sim.close_both();
    sim.run(30_000 * MS, u64::MAX);
    assert_eq!(sim.proxy.stats().flows_closed, 1, "{:?}", sim.proxy.stats());
    assert_eq!(sim.proxy.flow_keys().count(), 0);
    assert_eq!(sim.proxy.stats().buffer_bytes, 0);
}
