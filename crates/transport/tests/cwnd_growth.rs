//! Cwnd growth while not cwnd-limited (docs/models/transport.md §3): by default cwnd grows only while
//! the sender fills it (Linux `tcp_is_cwnd_limited`); `CwndGrowth::Always` grows on every
//! ACK. Also checks the time-weighted `limited_ns` accounting.

mod common;

use common::*;
use millinet_transport::{CwndGrowth, LimitedBy, TcpConfig};

const MSS: u64 = 1400;

/// The server's application writes 2 segments every 20 ms for 2 s (far below what a
/// 10-segment window carries on a 20 ms path).
fn app_limited(growth: CwndGrowth) -> Harness {
    let server_cfg = TcpConfig { cc: "newreno".into(), cwnd_growth: growth, ..TcpConfig::default() };
    let mut h = Harness::new(server_cfg, TcpConfig::default(), Link::new(10 * MS), Link::new(10 * MS), 0, false);
    assert!(h.run_until(1_000 * MS, |h| h.server.state() == millinet_transport::TcpState::Established));
    for k in 1..=100 {
        h.server_send(2 * MSS);
        h.run_until(h.now_ns().max(k * 20 * MS), |_| false);
    }
    assert!(h.run_to_completion(10_000 * MS));
    h
}

#[test]
fn an_application_limited_sender_does_not_grow_cwnd_by_default() {
    let limited = app_limited(CwndGrowth::WhenCwndLimited);
    let s = limited.server.stats();
    // At most 6 segments were ever in flight; in slow start Linux lets cwnd reach twice
    // that, and no further.
    assert!(s.cwnd_bytes <= 12 * MSS, "growth bounded by use: {}", s.cwnd_bytes);
    let app_ns = s.limited_ns[LimitedBy::App as usize];
    let total_ns: u64 = s.limited_ns.iter().sum();
    assert!(app_ns as f64 > 0.95 * total_ns as f64, "limited by the application: {:?}", s.limited_ns);

    let always = app_limited(CwndGrowth::Always);
    let s = always.server.stats();
    // Every acknowledged byte grows cwnd in slow start: 200 segments acknowledged.
    assert_eq!(s.cwnd_bytes, 10 * MSS + 200 * MSS, "grows on every ACK");
    assert_eq!(always.delivered_bytes(), 200 * MSS);
}

#[test]
fn a_bulk_sender_grows_and_is_cwnd_limited() {
    let down = Link::new(10 * MS).with_rate(50_000_000, 10_000);
    let mut h = Harness::new(TcpConfig::default(), TcpConfig::default(), down, Link::new(10 * MS), u64::MAX, false);
    h.run_until(3_000 * MS, |_| false);
    let s = h.server.stats();
    assert!(s.cwnd_bytes > 100 * MSS, "cwnd grew: {}", s.cwnd_bytes);
    // Time is charged up to the server's last call (ACKs arrive every fraction of a ms).
    let charged: u64 = s.limited_ns.iter().sum();
    assert!(charged <= h.now_ns() && charged + 5 * MS >= h.now_ns(), "every nanosecond is charged to one cause: {charged}");
    // Until the handshake completes (30 ms) the sender has nothing to send (App); then cwnd binds.
    assert!(s.limited_ns[LimitedBy::App as usize] <= 31 * MS, "{:?}", s.limited_ns);
    assert!(s.limited_ns[LimitedBy::Cwnd as usize] >= 2_900 * MS, "{:?}", s.limited_ns);
}
