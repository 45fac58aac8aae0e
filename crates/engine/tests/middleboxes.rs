//! Any number of middleboxes at any nodes, all driven through the one `Middlebox` interface.

mod common;

use std::cell::Cell;
use std::net::Ipv4Addr;
use std::rc::Rc;

use millinet_engine::sim::Simulation;
use millinet_proxy::{Direction, FlowKey, FlowSample, Middlebox, PayloadPool, Summary};
use millinet_wire::{Packet, Telemetry};
use serde_json::Value;

/// Passes every packet on unchanged and counts what it saw.
struct Counter {
    from_server: Rc<Cell<u64>>,
    from_ue: Rc<Cell<u64>>,
    telemetry: Rc<Cell<u64>>,
}

impl Middlebox for Counter {
    fn on_packet(&mut self, _: u64, packet: Packet, direction: Direction, _: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        let count = if direction == Direction::FromServer { &self.from_server } else { &self.from_ue };
        count.set(count.get() + 1);
        out.push(packet);
    }
    fn on_telemetry(&mut self, _: u64, _: Ipv4Addr, _: Telemetry, _: &mut dyn PayloadPool, _: &mut Vec<Packet>) {
        self.telemetry.set(self.telemetry.get() + 1);
    }
    fn on_timeout(&mut self, _: u64, _: &mut dyn PayloadPool, _: &mut Vec<Packet>) {}
    fn next_deadline_ns(&self) -> Option<u64> {
        None
    }
    fn uses_telemetry(&self) -> bool {
        true
    }
    fn flow_samples(&self, _: u64) -> Vec<(FlowKey, FlowSample)> {
        Vec::new()
    }
    fn summary(&self) -> Summary {
        Summary {
            kind: "counter",
            setting: ("none", String::new()),
            counters: vec![("from_server", self.from_server.get())],
            gauges: Vec::new(),
        }
    }
}

type Counts = (Rc<Cell<u64>>, Rc<Cell<u64>>, Rc<Cell<u64>>);

fn counter() -> (Box<dyn Middlebox>, Counts) {
    let counts: Counts = Default::default();
    let (a, b, c) = counts.clone();
    (Box::new(Counter { from_server: a, from_ue: b, telemetry: c }), counts)
}

fn simulation(overrides: &[&str]) -> Simulation {
    let path = common::scenario("milliproxy");
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let loaded = millinet_engine::scenario::load(&path, &overrides, None).unwrap();
    Simulation::new(loaded.scenario, &loaded.base_dir, &[]).unwrap()
}

fn run(mut sim: Simulation) -> Value {
    sim.run(&mut |_, _| {}, &mut |_| {});
    sim.summary("milliproxy")
}

#[test]
fn pass_through_middleboxes_on_two_nodes_see_every_packet_and_change_nothing() {
    let overrides = ["duration_s=1", "flows.0.cc=cubic"];
    let plain = run(simulation(&overrides));

    let mut sim = simulation(&overrides);
    let (at_pgw, pgw) = counter();
    let (at_gnb, gnb) = counter();
    sim.add_middlebox("pgw", at_pgw, 0, 1_000_000).unwrap();
    sim.add_middlebox("gnb", at_gnb, 0, 1_000_000).unwrap();
    let through = run(sim);

    assert_eq!(plain["flows"], through["flows"], "transparent middleboxes leave every flow measurement as it was");
    assert_eq!(plain["ues"], through["ues"]);
    // Every data segment crosses both nodes, every ACK too (none is lost on the wired hops).
    assert!(pgw.0.get() > 10_000 && pgw.1.get() > 1_000, "pgw saw {} / {}", pgw.0.get(), pgw.1.get());
    // Both see the same packets, but for those between the two nodes when the run ends: data
    // reaches the pgw first, ACKs the gNB first.
    let in_between = |first: u64, second: u64| first >= second && first - second < first / 100;
    assert!(in_between(pgw.0.get(), gnb.0.get()) && in_between(gnb.1.get(), pgw.1.get()), "pgw {pgw:?}, gnb {gnb:?}");
    // One record per UE every T_info = 1 ms over 1 s, at each.
    assert!((1000..=1001).contains(&pgw.2.get()) && pgw.2.get() == gnb.2.get(), "telemetry records: {}", pgw.2.get());
    let listed = through["middleboxes"].as_array().expect("added middleboxes are listed");
    assert_eq!(listed.iter().map(|m| m["node"].as_str().unwrap()).collect::<Vec<_>>(), ["pgw", "gnb"]);
    assert_eq!(listed[1]["from_server"].as_u64(), Some(gnb.0.get()));
    assert!(plain.get("middleboxes").is_none());
}

#[test]
fn a_middlebox_beside_the_scenarios_proxy_and_where_none_may_go() {
    let mut sim = simulation(&["duration_s=0.2", "proxy.node=gnb"]);
    let (at_pgw, pgw) = counter();
    sim.add_middlebox("pgw", at_pgw, 0, 1_000_000).unwrap();
    let (again, _) = counter();
    let err = sim.add_middlebox("gnb", again, 0, 1_000_000).unwrap_err().to_string();
    assert_eq!(err, "middlebox: node \"gnb\" has one already; allowed: one middlebox per node");
    let (nowhere, _) = counter();
    assert_eq!(sim.add_middlebox("mars", nowhere, 0, 1).unwrap_err().to_string(), "middlebox: no node \"mars\"");
    let summary = run(sim);
    assert_eq!(summary["proxy"]["kind"], "milliproxy");
    assert!(summary["proxy"]["segments_forwarded"].as_u64().unwrap() > 0);
    assert!(pgw.0.get() > 0, "the server's segments cross the pgw before milliProxy");
}
