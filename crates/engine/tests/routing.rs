//! Routes that change during a run: a flow's later packets take the new path and none
//! already queued on the old one is lost.

use millinet_engine::sim::Simulation;
use serde_json::Value;

/// server reaches client over r1 (5 ms a hop) or r2 (20 ms a hop); r1 is listed first, so
/// it carries both directions until a route changes. Queues are large enough to drop nothing. A 3 MB download at 100 Mbit/s lasts
/// well beyond the change at 0.2 s.
const DIAMOND: &str = r#"
duration_s = 2.0
seed = 3
[[nodes]]
name = "server"
[[nodes]]
name = "r1"
[[nodes]]
name = "r2"
[[nodes]]
name = "client"
[[links]]
a = "server"
b = "r1"
rate_bps = 1e8
delay_s = 0.005
queue_bytes = 10_000_000
[[links]]
a = "r1"
b = "client"
rate_bps = 1e8
delay_s = 0.005
queue_bytes = 10_000_000
[[links]]
a = "server"
b = "r2"
rate_bps = 1e8
delay_s = 0.020
queue_bytes = 10_000_000
[[links]]
a = "r2"
b = "client"
rate_bps = 1e8
delay_s = 0.020
queue_bytes = 10_000_000
[[flows]]
kind = "tcp"
src = "server"
dst = "client"
app = "file"
file_bytes = 3_000_000
cc = "cubic"
"#;

fn run(change_at_s: Option<f64>) -> Value {
    let (_dir, mut sim) = diamond();
    if let Some(t) = change_at_s {
        sim.change_route_at((t * 1e9) as u64, "server", "client", "r2").unwrap();
    }
    sim.run(&mut |_, _| {}, &mut |_| {});
    sim.summary("diamond")
}

/// The diamond network, loaded from a file in a directory removed when it is dropped.
fn diamond() -> (tempfile::TempDir, Simulation) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("diamond.toml");
    std::fs::write(&path, DIAMOND).unwrap();
    let loaded = millinet_engine::scenario::load(&path, &[], None).unwrap();
    let sim = Simulation::new(loaded.scenario, dir.path(), &[]).unwrap();
    (dir, sim)
}

fn queue<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["queues"].as_array().unwrap().iter().find(|q| q["name"] == name).unwrap_or_else(|| panic!("no queue {name}"))
}

fn n(q: &Value, key: &str) -> u64 {
    q[key].as_u64().unwrap()
}

#[test]
fn a_route_change_moves_later_packets_and_loses_none_already_queued() {
    let before = run(None);
    assert_eq!(n(queue(&before, "server->r2"), "arrived_packets"), 0, "r2 unused without a route change");

    let after = run(Some(0.2));
    let flow = &after["flows"][0];
    assert_eq!(flow["delivered_bytes"].as_u64(), Some(3_000_000), "the whole file arrives");
    // Packets on the empty new path overtake those queued on the old one, so the sender may
    // retransmit on reordering; what matters here is that no queue dropped anything.
    for q in after["queues"].as_array().unwrap() {
        assert_eq!(n(q, "dropped_packets"), 0, "{}", q["name"]);
    }
    let old = queue(&after, "server->r1");
    let new = queue(&after, "server->r2");
    assert!(n(old, "arrived_packets") > 0 && n(new, "arrived_packets") > 0, "both paths carried data");
    for q in [old, queue(&after, "r1->client")] {
        assert_eq!(n(q, "dropped_packets"), 0);
        assert_eq!(n(q, "arrived_packets"), n(q, "delivered_packets"), "{}: everything queued before the change arrived", q["name"]);
    }
    // ACKs keep the client's route through r1.
    assert_eq!(n(queue(&after, "r2->server"), "arrived_packets"), 0);
    assert!(n(queue(&after, "r1->server"), "arrived_packets") > 0);
}

#[test]
fn a_route_change_names_what_is_wrong() {
    let (_dir, mut sim) = diamond();
    let err = sim.change_route_at(0, "server", "client", "client").unwrap_err().to_string();
    assert_eq!(err, "route change: no link from \"server\" to \"client\"");
    let err = sim.change_route_at(0, "server", "nowhere", "r2").unwrap_err().to_string();
    assert_eq!(err, "route change: no node \"nowhere\"; allowed: server, r1, r2, client");
}
