//! The event loop: stations joined by links, one event at a time.

use millinet_wire::Packet;

use crate::link::Link;
use crate::timed::TimedQueue;

/// Anything the driver runs: packets and the time in, packets and the next deadline out.
pub trait Station {
    /// `packet` arrived on `port` at `now_ns`.
    fn on_packet(&mut self, now_ns: u64, port: usize, packet: Packet, out: &mut Outbox<'_>);
    /// The deadline from `next_deadline_ns` is due.
    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>);
    /// The earliest time `on_deadline` must be called, if any.
    fn next_deadline_ns(&self) -> Option<u64>;
}

/// One port of one station: the station's index in the slice given to [`Driver::step`], and
/// a port number of the station's choosing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub station: usize,
    pub port: usize,
}

/// A link, as returned by [`Driver::connect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkId(usize);

/// What a station sends during one call, and what it may see of its outgoing links.
pub struct Outbox<'a> {
    now_ns: u64,
    station: usize,
    wires: &'a [Wire],
    packets: &'a mut Vec<(usize, Packet)>,
}

impl Outbox<'_> {
    /// Sends `packet` out of `port` (into the link leaving it, once the call returns).
    pub fn send(&mut self, port: usize, packet: Packet) {
        self.packets.push((port, packet));
    }

    /// Sends all of `packets` out of `port`, in order, leaving `packets` empty.
    pub fn send_all(&mut self, port: usize, packets: &mut Vec<Packet>) {
        self.packets.extend(packets.drain(..).map(|p| (port, p)));
    }

    /// Wire bytes queued or in transmission on the link leaving `port`.
    pub fn queued_bytes(&self, port: usize) -> u64 {
        self.wires[wire_index(self.wires, Port { station: self.station, port })].link.queued_bytes(self.now_ns)
    }
}

/// One packet as it left a station.
#[derive(Clone, Debug)]
pub struct Sent {
    pub time_ns: u64,
    /// The sending station.
    pub from: usize,
    pub port: usize,
    /// As the link's filter left it.
    pub packet: Packet,
    pub dropped: bool,
}

struct Wire {
    from: Port,
    to: Port,
    link: Link,
}

fn wire_index(wires: &[Wire], from: Port) -> usize {
    wires.iter().position(|w| w.from == from).unwrap_or_else(|| panic!("no link leaves {from:?}"))
}

/// The links between stations and the packets on them. The stations stay with the test (it
/// reads their state between steps) and are lent to each [`Driver::step`].
#[derive(Default)]
pub struct Driver {
    now_ns: u64,
    wires: Vec<Wire>,
    /// Packets on their way, with the port they arrive at; equal arrival times keep send
    /// order.
    arrivals: TimedQueue<(Port, Packet)>,
    /// Record every packet sent (memory grows with the run).
    pub record: bool,
    sent: Vec<Sent>,
    pending: Vec<(usize, Packet)>,
}

impl Driver {
    pub fn new() -> Driver {
        Driver::default()
    }

    /// Joins `from` to `to` by `link`; a port has at most one outgoing link.
    pub fn connect(&mut self, from: Port, to: Port, link: Link) -> LinkId {
        assert!(self.wires.iter().all(|w| w.from != from), "{from:?} already has a link");
        self.wires.push(Wire { from, to, link });
        LinkId(self.wires.len() - 1)
    }

    pub fn link(&self, id: LinkId) -> &Link {
        &self.wires[id.0].link
    }

    pub fn link_mut(&mut self, id: LinkId) -> &mut Link {
        &mut self.wires[id.0].link
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Packets sent while `record` was on.
    pub fn sent(&self) -> &[Sent] {
        &self.sent
    }

    /// Sends what `from` emitted outside a driver call (e.g. an application write between
    /// steps), at the current time.
    pub fn inject(&mut self, from: Port, packets: &mut Vec<Packet>) {
        self.pending.extend(packets.drain(..).map(|p| (from.port, p)));
        self.flush(from.station);
    }

    /// Runs the earliest event if it is due at or before `limit_ns` and returns true;
    /// otherwise moves the clock to `limit_ns` (if later) and returns false.
    ///
    /// At equal times, packets arrive before deadlines fire (so a timer that an arriving
    /// packet re-arms does not fire spuriously); packets in send order; deadlines in the
    /// order of `stations`.
    pub fn step(&mut self, limit_ns: u64, stations: &mut [&mut dyn Station]) -> bool {
        let arrival_ns = self.arrivals.next_deadline_ns();
        let deadline = stations.iter().enumerate().filter_map(|(i, s)| Some((s.next_deadline_ns()?, i))).min();
        let next = match (arrival_ns, deadline) {
            (Some(a), Some((d, i))) if d < a => Some((d, Some(i))),
            (Some(a), _) => Some((a, None)),
            (None, Some((d, i))) => Some((d, Some(i))),
            (None, None) => None,
        };
        let Some((t, deadline_of)) = next.filter(|&(t, _)| t <= limit_ns) else {
            self.now_ns = self.now_ns.max(limit_ns);
            return false;
        };
        assert!(t >= self.now_ns, "time went backwards: {t} < {}", self.now_ns);
        self.now_ns = t;
        let station = match deadline_of {
            Some(i) => {
                stations[i].on_deadline(t, &mut Outbox { now_ns: t, station: i, wires: &self.wires, packets: &mut self.pending });
                i
            }
            None => {
                let (to, packet) = self.arrivals.pop_due(t).expect("an arrival is due");
                let outbox = &mut Outbox { now_ns: t, station: to.station, wires: &self.wires, packets: &mut self.pending };
                stations[to.station].on_packet(t, to.port, packet, outbox);
                to.station
            }
        };
        self.flush(station);
        true
    }

    /// Puts what `station` sent into the links leaving its ports.
    fn flush(&mut self, station: usize) {
        for (port, mut packet) in self.pending.drain(..) {
            let from = Port { station, port };
            let index = wire_index(&self.wires, from);
            let wire = &mut self.wires[index];
            let arrival_ns = wire.link.admit(self.now_ns, &mut packet);
            if self.record {
                self.sent.push(Sent { time_ns: self.now_ns, from: station, port, packet, dropped: arrival_ns.is_none() });
            }
            if let Some(at_ns) = arrival_ns {
                self.arrivals.push(at_ns, (wire.to, packet));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::UdpHeader;

    use super::*;

    fn packet(id: u16) -> Packet {
        let mut p = Packet::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), UdpHeader { src_port: 1, dst_port: 2 }, 100);
        p.ip_id = id;
        p
    }

    /// Sends its script at its deadlines; logs what arrives and when its deadlines fire.
    #[derive(Default)]
    struct Probe {
        /// (time, packet ids to send out of port 0), in time order.
        script: Vec<(u64, Vec<u16>)>,
        log: Vec<(u64, Option<u16>)>,
    }

    impl Station for Probe {
        fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, _out: &mut Outbox<'_>) {
            self.log.push((now_ns, Some(packet.ip_id)));
        }
        fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
            self.log.push((now_ns, None));
            for id in self.script.remove(0).1 {
                out.send(0, packet(id));
            }
        }
        fn next_deadline_ns(&self) -> Option<u64> {
            self.script.first().map(|s| s.0)
        }
    }

    fn port(station: usize) -> Port {
        Port { station, port: 0 }
    }

    #[test]
    fn equal_times_deliver_packets_in_send_order_before_deadlines_in_station_order() {
        let mut driver = Driver::new();
        driver.connect(port(0), port(2), Link::new(10));
        driver.connect(port(1), port(2), Link::new(5));
        driver.connect(port(2), port(0), Link::new(1));
        // Station 1 sends later over a shorter link: its packet arrives at 15 with station
        // 0's, and was sent after it.
        let mut a = Probe { script: vec![(5, vec![1, 2]), (15, vec![])], ..Probe::default() };
        let mut b = Probe { script: vec![(10, vec![3]), (15, vec![])], ..Probe::default() };
        let mut sink = Probe { script: vec![(15, vec![])], ..Probe::default() };
        while driver.step(100, &mut [&mut a, &mut b, &mut sink]) {}
        assert_eq!(sink.log, [(15, Some(1)), (15, Some(2)), (15, Some(3)), (15, None)]);
        assert_eq!(a.log, [(5, None), (15, None)]);
        assert_eq!(b.log, [(10, None), (15, None)]);
        assert_eq!(driver.now_ns(), 100, "idle: the clock moves to the limit");
    }

    #[test]
    fn a_step_stops_at_the_limit_without_running_a_later_event() {
        let mut driver = Driver::new();
        driver.connect(port(0), port(0), Link::new(1));
        let mut probe = Probe { script: vec![(50, vec![])], ..Probe::default() };
        assert!(!driver.step(49, &mut [&mut probe]));
        assert_eq!((driver.now_ns(), probe.log.len()), (49, 0));
        assert!(driver.step(50, &mut [&mut probe]));
        assert_eq!(probe.log, [(50, None)]);
        assert!(!driver.step(u64::MAX, &mut [&mut probe]), "nothing left, even with no limit");
    }

    #[test]
    fn filter_drops_are_counted_recorded_and_never_arrive() {
        let mut driver = Driver::new();
        let drop_odd: crate::Filter = Box::new(|_, p| p.ip_id % 2 == 0);
        let link = driver.connect(port(0), port(1), Link::new(3).with_filter(drop_odd));
        driver.connect(port(1), port(0), Link::new(3));
        driver.record = true;
        let mut source = Probe { script: vec![(0, vec![1, 2, 3, 4])], ..Probe::default() };
        let mut sink = Probe::default();
        while driver.step(100, &mut [&mut source, &mut sink]) {}
        assert_eq!(sink.log, [(3, Some(2)), (3, Some(4))]);
        assert_eq!(driver.link(link).dropped_by_filter, 2);
        let dropped: Vec<(u16, bool)> = driver.sent().iter().map(|s| (s.packet.ip_id, s.dropped)).collect();
        assert_eq!(dropped, [(1, true), (2, false), (3, true), (4, false)]);
    }

    #[test]
    fn a_station_sees_the_backlog_of_its_outgoing_link_and_injected_packets_queue_on_it() {
        struct Reporter(Option<u64>, Vec<u64>);
        impl Station for Reporter {
            fn on_packet(&mut self, _: u64, _: usize, _: Packet, _: &mut Outbox<'_>) {}
            fn on_deadline(&mut self, _: u64, out: &mut Outbox<'_>) {
                self.1.push(out.queued_bytes(0));
                self.0 = None;
            }
            fn next_deadline_ns(&self) -> Option<u64> {
                self.0
            }
        }
        let mut driver = Driver::new();
        // 128 bytes at 1 Gbit/s: 1024 ns each.
        driver.connect(port(0), port(0), Link::new(0).with_rate(1_000_000_000, 10));
        let mut reporter = Reporter(Some(1500), Vec::new());
        driver.inject(port(0), &mut vec![packet(1), packet(2)]);
        while driver.step(1500, &mut [&mut reporter]) {}
        assert_eq!(reporter.1, [128], "at 1500 ns the second packet is still on the wire");
    }
}
