//! Middleboxes placed on nodes, driven through the one `proxy::Middlebox` interface: the
//! scenario's `[proxy]` (milliProxy or the split-TCP baseline), and any others a caller adds
//! (`Simulation::add_middlebox`). Each is fed every TCP packet crossing its node that is not
//! addressed to the node and, when it uses them, the gNBs' telemetry records, each D_info
//! after the gNB sampled it (docs/proxy.md#what-milliproxy-is).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use millinet_network::records::middlebox_summary;
use millinet_proxy::{Direction, FlowKey, FlowSample, LengthOnly, Middlebox, NoPayloads, Proxy, SplitProxy};
use millinet_scenario::translate::proxy::{milliproxy_config, split_config};
use millinet_scenario::translate::seconds_to_ns;
use millinet_transport::deadline::earliest_ns;
use millinet_wire::{Packet, Telemetry};
use serde_json::Value;

use crate::scenario::{ProxyKind, ProxySpec};
use crate::Error;

/// The middlebox on one of the network's sites, with the timer slot the engine wakes it by.
pub struct Site {
    pub middlebox: DelayedTelemetry,
    pub timer: u32,
    /// T_info: how often the gNBs sample telemetry for it.
    pub t_info_ns: u64,
}

/// The middlebox with the telemetry on its way to it: a record sampled at t is handed over at
/// t + D_info. Held records count as deadlines, and every call into the middlebox first hands
/// over those due, so a record takes effect before anything else the middlebox sees at or
/// after its arrival time.
pub struct DelayedTelemetry {
    middlebox: Box<dyn Middlebox>,
    /// D_info: 0 at the gNB, a few ms at the edge.
    delay_ns: u64,
    /// (arrival time, UE, record), in arrival order: records are sampled in time order.
    in_transit: VecDeque<(u64, Ipv4Addr, Telemetry)>,
}

impl DelayedTelemetry {
    pub fn new(middlebox: Box<dyn Middlebox>, delay_ns: u64) -> DelayedTelemetry {
        DelayedTelemetry { middlebox, delay_ns, in_transit: VecDeque::new() }
    }

    pub fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, out: &mut Vec<Packet>) {
        self.hand_over_due(now_ns, out);
        self.middlebox.on_packet(now_ns, packet, direction, &mut NoPayloads, out);
    }

    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.hand_over_due(now_ns, out);
        self.middlebox.on_timeout(now_ns, &mut NoPayloads, out);
    }

    pub fn next_deadline_ns(&self) -> Option<u64> {
        earliest_ns(self.middlebox.next_deadline_ns(), self.in_transit.front().map(|&(at_ns, _, _)| at_ns))
    }

    /// A record the gNB sampled at `record.t_ns` (now, or earlier).
    pub fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, out: &mut Vec<Packet>) {
        if !self.middlebox.uses_telemetry() {
            return;
        }
        self.in_transit.push_back((record.t_ns + self.delay_ns, ue, record));
        self.hand_over_due(now_ns, out);
    }

    pub fn samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        self.middlebox.flow_samples(now_ns)
    }

    /// summary.json's object for it: the node, the middlebox's kind and setting, its counters.
    pub fn summary(&self, node: &str) -> Value {
        Value::Object(middlebox_summary(node, self.middlebox.summary()))
    }

    fn hand_over_due(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        while let Some(&(at_ns, ue, record)) = self.in_transit.front() {
            if at_ns > now_ns {
                return;
            }
            self.in_transit.pop_front();
            self.middlebox.on_telemetry(now_ns, ue, record, &mut NoPayloads, out);
        }
    }
}

/// The scenario's `[proxy]` with its D_info and T_info; `iss_secret` seeds the split proxy's
/// initial sequence numbers (from the run's seed).
pub fn from_scenario(p: &ProxySpec, iss_secret: u64) -> Result<(Box<dyn Middlebox>, u64, u64), Error> {
    let refused = |e: &dyn std::fmt::Display| Error::config(format!("proxy: {e}"));
    let middlebox: Box<dyn Middlebox> = match p.kind {
        ProxyKind::Milliproxy => Box::new(Proxy::<LengthOnly>::new(milliproxy_config(p)).map_err(|e| refused(&e))?),
        ProxyKind::Split => Box::new(SplitProxy::new(split_config(p, iss_secret)).map_err(|e| refused(&e))?),
    };
    Ok((middlebox, seconds_to_ns(p.d_info_s), seconds_to_ns(p.t_info_s).max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_proxy::{PayloadPool, Summary};
    use std::cell::RefCell;
    use std::rc::Rc;

    const UE: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

    /// (time, what, record sample time) of every call, in order.
    type Seen = Rc<RefCell<Vec<(u64, &'static str, u64)>>>;

    /// Records what reaches it, in order.
    struct Recorder {
        uses_telemetry: bool,
        seen: Seen,
    }

    impl Middlebox for Recorder {
        fn on_packet(&mut self, now_ns: u64, _: Packet, _: Direction, _: &mut dyn PayloadPool, _: &mut Vec<Packet>) {
            self.seen.borrow_mut().push((now_ns, "packet", 0));
        }
        fn on_telemetry(&mut self, now_ns: u64, _: Ipv4Addr, record: Telemetry, _: &mut dyn PayloadPool, _: &mut Vec<Packet>) {
            self.seen.borrow_mut().push((now_ns, "telemetry", record.t_ns));
        }
        fn on_timeout(&mut self, now_ns: u64, _: &mut dyn PayloadPool, _: &mut Vec<Packet>) {
            self.seen.borrow_mut().push((now_ns, "timeout", 0));
        }
        fn next_deadline_ns(&self) -> Option<u64> {
            Some(50)
        }
        fn uses_telemetry(&self) -> bool {
            self.uses_telemetry
        }
        fn flow_samples(&self, _: u64) -> Vec<(FlowKey, FlowSample)> {
            Vec::new()
        }
        fn summary(&self) -> Summary {
            Summary { kind: "recorder", setting: ("none", String::new()), counters: Vec::new(), gauges: Vec::new() }
        }
    }

    fn site(uses_telemetry: bool, delay_ns: u64) -> (DelayedTelemetry, Seen) {
        let seen = Rc::new(RefCell::new(Vec::new()));
        (DelayedTelemetry::new(Box::new(Recorder { uses_telemetry, seen: seen.clone() }), delay_ns), seen)
    }

    fn record(t_ns: u64) -> Telemetry {
        Telemetry { t_ns, ..Telemetry::default() }
    }

    fn packet() -> Packet {
        Packet::tcp(UE, Ipv4Addr::new(10, 0, 0, 1), Default::default(), 0)
    }

    #[test]
    fn records_arrive_d_info_after_their_sample_time_before_anything_else_then() {
        let (mut p, seen) = site(true, 3);
        let mut out = Vec::new();
        p.on_telemetry(10, UE, record(10), &mut out);
        p.on_telemetry(11, UE, record(11), &mut out);
        assert_eq!(p.next_deadline_ns(), Some(13), "the first record's arrival, before the middlebox's own 50");
        p.on_packet(12, packet(), Direction::FromUe, &mut out);
        // A packet at the arrival time: the record goes first.
        p.on_packet(13, packet(), Direction::FromUe, &mut out);
        assert_eq!(p.next_deadline_ns(), Some(14));
        p.on_timeout(14, &mut out);
        assert_eq!(p.next_deadline_ns(), Some(50));
        assert_eq!(
            *seen.borrow(),
            [(12, "packet", 0), (13, "telemetry", 10), (13, "packet", 0), (14, "telemetry", 11), (14, "timeout", 0)]
        );
    }

    #[test]
    fn without_delay_a_record_applies_at_once_and_unused_telemetry_is_not_held() {
        let (mut p, seen) = site(true, 0);
        p.on_telemetry(10, UE, record(10), &mut Vec::new());
        assert_eq!(*seen.borrow(), [(10, "telemetry", 10)]);
        let (mut p, seen) = site(false, 3);
        p.on_telemetry(10, UE, record(10), &mut Vec::new());
        p.on_timeout(20, &mut Vec::new());
        assert_eq!(p.next_deadline_ns(), Some(50), "no deadline for a record nobody reads");
        assert_eq!(*seen.borrow(), [(20, "timeout", 0)]);
    }
}
