//! The network: what carries packets between hosts. It moves a packet from node to node by
//! the topology's routes — onto a wired link, into a cell's RAN, through a handover's X2
//! forwarding — and hands it to its driver where a host or a middlebox must see it. It keeps no
//! clock and schedules nothing itself: every call gets the time, and what must happen later
//! is asked of the driver as a wake-up ([`Driver::wake_at`]).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;

use millinet_proxy::Direction;
use millinet_ran::{CellId, RanOutput, Telemetry, UeId};
use millinet_scenario::translate::{link_opportunities, link_params, LinkRate, RlcAqm};
use millinet_scenario::{ConfigError, Scenario};
use millinet_transport::link::{transmission_ns, Link, LinkParams, LinkTimers};
use millinet_wire::{Packet, Tag};

use crate::ids::{LinkId, NodeId, SiteId};
use crate::metrics::LogHistogram;
use crate::mobility::Handovers;
use crate::radio::RadioNet;
use crate::topology::{Edge, Hop, PlannedRoute, Topology};

/// What the network asks to be woken for: the driver calls [`Network::on_event`] with it at
/// the time it was asked for (the simulator from its event queue, the emulator from its clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NetEvent {
    /// A link finished serialising its head packet (AQM queues).
    LinkTransmitted(LinkId),
    /// The oldest packet in a link's propagation pipe reaches the far end.
    LinkArrival(LinkId),
    /// A link changes its rate (switching bottlenecks, capacity processes).
    LinkRate(LinkId),
    /// A cell delivers what its previous slot decoded and runs the next slot.
    Slot(CellId),
    /// A planned route change takes effect.
    RouteChange(PlannedRoute),
    /// A UE measures every cell it hears (handover, docs/models/ran.md).
    Measure(UeId),
    /// Downlink data a handover's source cell forwarded reaches the target (index of the
    /// forwarding).
    X2Forward(u32),
}

/// The side of the network that keeps the time and the hosts: the simulator's engine or the
/// emulator. The network calls it back where a packet leaves the network's care.
pub trait Driver {
    /// Call [`Network::on_event`] with `event` at `at_ns`.
    fn wake_at(&mut self, at_ns: u64, event: NetEvent);
    /// A packet addressed to `node` reached it.
    fn to_host(&mut self, network: &mut Network, now_ns: u64, node: NodeId, packet: Packet);
    /// A TCP packet crosses the node of middlebox site `site` (not addressed to the node).
    fn to_middlebox(&mut self, network: &mut Network, now_ns: u64, site: SiteId, direction: Direction, packet: Packet);
    /// A packet reached `node`, which is watched ([`Network::watch`]); called before anything
    /// else happens to it there.
    fn seen(&mut self, now_ns: u64, node: NodeId, packet: &Packet);

    /// Whether the driver holds packets' bytes (the emulator: `meta.payload` names a frame,
    /// possibly a GSO frame of several TCP segments) and is asked what follows; the
    /// simulator's packets name none, and its network compiles without those questions.
    const HOLDS_FRAMES: bool = false;

    /// The wire bytes of one TCP segment of `packet`, if it is a frame of several.
    fn segment_wire_bytes(&self, _packet: &Packet) -> Option<u32> {
        None
    }
    /// Cuts `packet` into frames of at most `segments` TCP segments each, appended to `parts`
    /// in sequence order (a frame of one segment whole).
    fn split(&mut self, packet: Packet, _segments: usize, parts: &mut Vec<Packet>) {
        parts.push(packet);
    }
    /// The network dropped `packet` (a full queue, no route, an RLC drop): its bytes may go.
    fn discard(&mut self, _packet: Packet) {}
}

/// The longest a frame may take to serialise on a wired link and still cross it as one unit:
/// the timing granularity of links carrying GSO frames (100 µs: ten trains per ms at any rate).
const TRAIN_NS: u64 = 100_000;

/// Link `link`'s wake-ups, asked of the driver.
pub(crate) struct LinkWakes<'a, D> {
    pub(crate) driver: &'a mut D,
    pub(crate) link: LinkId,
}

impl<D: Driver> LinkTimers for LinkWakes<'_, D> {
    #[inline]
    fn transmitted_at(&mut self, at_ns: u64) {
        self.driver.wake_at(at_ns, NetEvent::LinkTransmitted(self.link));
    }

    #[inline]
    fn arrival_at(&mut self, at_ns: u64) {
        self.driver.wake_at(at_ns, NetEvent::LinkArrival(self.link));
    }
}

/// Per-UE measurements of delivered packets (the RAN counts the per-slot radio ones).
#[derive(Default)]
pub(crate) struct UeMetrics {
    pub ran_latency: LogHistogram,
    /// Latency sum and count since the last sample (for the time series).
    pub window_latency_ns: u64,
    pub window_deliveries: u64,
}

pub struct Network {
    pub(crate) topology: Topology,
    pub(crate) links: Vec<Link>,
    /// The node each link leaves from.
    pub(crate) link_from: Vec<NodeId>,
    /// Links whose rate changes over time (switching bottlenecks, capacity processes).
    link_rates: Vec<(LinkId, LinkRate)>,
    /// The mmWave network: the RAN with its cells and UEs (UE k of the scenario is `UeId(k)`).
    pub(crate) radio: RadioNet,
    pub(crate) handovers: Handovers,
    /// Set while a packet that came over an X2 link is handled (it passes a handover's hold).
    arriving_over_x2: bool,
    /// Per node: the middlebox site on it.
    site_at: Vec<Option<SiteId>>,
    /// Per site: its node.
    sites: Vec<NodeId>,
    /// Per node: whether it is a UE or, without UEs, a flow's receiver (packets toward it go
    /// "from the server" through a middlebox).
    ue_side: Vec<bool>,
    /// Per node: whether the driver sees every packet reaching it ([`Driver::seen`]).
    watched: Vec<bool>,
    pub(crate) ue_metrics: Vec<UeMetrics>,
    /// Per scenario flow: the RAN latency of its packets delivered over a radio downlink.
    pub(crate) flow_ran_latency: Vec<LogHistogram>,
    /// Per UE: the AQM of its RLC downlink (a new leg after a handover gets one too).
    ue_aqm: Vec<RlcAqm>,
    seed: u64,
    /// Node names of the scenario's UEs and of the cell each was configured on (summary.json).
    pub(crate) ue_names: Vec<(String, String)>,
    /// Scratch for cutting frames (trains, then single segments).
    trains: Vec<Packet>,
    segments: Vec<Packet>,
}

impl Network {
    /// Builds the scenario's nodes, links, cells and UEs with their routes. Nothing runs until
    /// [`Network::start`].
    pub fn new(scenario: &Scenario, base_dir: &Path) -> Result<Network, ConfigError> {
        // By name once: scenarios with a thousand UEs name their nodes thousands of times.
        let index_of: HashMap<&str, NodeId> = scenario.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), NodeId(i as u32))).collect();
        let node_index = |name: &str| index_of[name];
        let mut links = Vec::new();
        let mut link_rates = Vec::new();
        for (i, spec) in scenario.links.iter().enumerate() {
            let (a, b) = (node_index(&spec.a), node_index(&spec.b));
            for (from, to) in [(a, b), (b, a)] {
                let id = LinkId(links.len() as u32);
                if let Some(rate) = LinkRate::new(i, spec, from == a, scenario.seed, base_dir)? {
                    link_rates.push((id, rate));
                }
                let name = format!("{}->{}", scenario.nodes[from.index()].name, scenario.nodes[to.index()].name);
                let direction = if from == a { "a_to_b" } else { "b_to_a" };
                let params = link_params(spec, name, to.0, scenario.seed, &format!("links/{i}/{direction}/aqm"));
                let opportunities = link_opportunities(i, spec, from == a, base_dir)?;
                links.push((from, Link::new(LinkParams { opportunities, ..params })));
            }
        }
        let mut radio = RadioNet::build(scenario, base_dir, &node_index)?;
        let mut edges: Vec<Edge> = links
            .iter()
            .enumerate()
            .map(|(i, (from, l))| Edge { from: *from, to: NodeId(l.to_node), hop: Hop::Link(LinkId(i as u32)) })
            .collect();
        let mut topology = Topology::new(scenario.nodes.iter().map(|n| n.name.clone()));
        // A device's first radio answers at its node's address and carries the node's routes;
        // each further radio gets an address of its own, routed over that radio both ways.
        let mut further = Vec::new();
        for k in 0..radio.ue_nodes.len() {
            let ue = UeId(k as u32);
            let ue_node = radio.ue_nodes[k];
            let gnb = radio.serving_node(ue);
            if radio.ue_nodes[..k].contains(&ue_node) {
                radio.ue_interfaces.push(topology.add_interface(ue_node));
                further.push((ue, gnb));
            } else {
                radio.ue_interfaces.push(topology.nodes[ue_node.index()].interfaces[0]);
                edges.push(Edge { from: gnb, to: ue_node, hop: Hop::RadioDownlink(ue) });
                edges.push(Edge { from: ue_node, to: gnb, hop: Hop::RadioUplink(ue) });
            }
        }
        topology.compute_routes(&edges);
        for (ue, gnb) in further {
            let interface = radio.ue_interfaces[ue.index()];
            topology.route_via(interface, gnb, Hop::RadioDownlink(ue));
            topology.set_source_route(interface, Hop::RadioUplink(ue));
        }
        let nodes = scenario.nodes.len();
        Ok(Network {
            // A middlebox's UE side: the UEs' nodes; on a wired-only path (the spep study), the
            // nodes that receive a flow's data, as a UE does.
            ue_side: {
                let mut ue_side = vec![false; nodes];
                let names: Vec<&str> = match scenario.ues.is_empty() {
                    false => scenario.ues.iter().map(|u| u.node.as_str()).collect(),
                    true => scenario.flows.iter().map(|f| f.dst.as_str()).collect(),
                };
                for name in names {
                    ue_side[node_index(name).index()] = true;
                }
                ue_side
            },
            topology,
            link_from: links.iter().map(|(from, _)| *from).collect(),
            links: links.into_iter().map(|(_, l)| l).collect(),
            link_rates,
            ue_metrics: (0..radio.ue_nodes.len()).map(|_| UeMetrics::default()).collect(),
            radio,
            handovers: Handovers::new(&scenario.handover, scenario.ues.len()),
            arriving_over_x2: false,
            site_at: vec![None; nodes],
            sites: Vec::new(),
            watched: vec![false; nodes],
            flow_ran_latency: scenario.flows.iter().map(|_| LogHistogram::default()).collect(),
            ue_aqm: scenario.ues.iter().map(RlcAqm::of).collect(),
            seed: scenario.seed,
            ue_names: scenario.ues.iter().map(|u| (u.node.clone(), u.cell.clone())).collect(),
            trains: Vec::new(),
            segments: Vec::new(),
        })
    }

    /// Asks for the first wake-ups: rate changes, every cell's first slot, every measuring
    /// UE's first measurement.
    pub fn start<D: Driver>(&mut self, driver: &mut D) {
        for (link, rate) in &self.link_rates {
            driver.wake_at(rate.next_deadline_ns(), NetEvent::LinkRate(*link));
        }
        for c in 0..self.radio.cell_nodes.len() as u32 {
            driver.wake_at(0, NetEvent::Slot(CellId(c)));
        }
        for k in 0..self.radio.serving.len() as u32 {
            if self.radio.serving[k as usize].is_some() {
                driver.wake_at(self.handovers.period_ns(), NetEvent::Measure(UeId(k)));
            }
        }
    }

    /// Runs what the network asked to be woken for.
    #[inline]
    pub fn on_event<D: Driver>(&mut self, now_ns: u64, event: NetEvent, driver: &mut D) {
        match event {
            NetEvent::LinkTransmitted(l) => {
                self.links[l.index()].on_transmitted(now_ns, &mut LinkWakes { driver, link: l });
            }
            NetEvent::LinkArrival(l) => {
                let link = &mut self.links[l.index()];
                let packet = link.on_arrival(&mut LinkWakes { driver: &mut *driver, link: l });
                let node = NodeId(link.to_node);
                if self.handovers.is_x2(l) {
                    self.arriving_over_x2 = true;
                    self.arrive(now_ns, node, packet, driver);
                    self.arriving_over_x2 = false;
                } else {
                    self.arrive(now_ns, node, packet, driver);
                }
            }
            NetEvent::LinkRate(l) => {
                let (_, rate) = self.link_rates.iter_mut().find(|r| r.0 == l).expect("a link with a rate schedule");
                rate.update(now_ns, &mut self.links[l.index()]);
                driver.wake_at(rate.next_deadline_ns(), NetEvent::LinkRate(l));
            }
            NetEvent::Slot(c) => self.slot(now_ns, c, driver),
            NetEvent::RouteChange(change) => self.topology.apply_planned(change),
            NetEvent::Measure(ue) => self.measure(now_ns, ue, driver),
            NetEvent::X2Forward(index) => self.x2_forward(now_ns, index),
        }
    }

    /// A packet reaches a node: handed to the driver for a host or a middlebox there, or
    /// forwarded.
    #[inline]
    pub(crate) fn arrive<D: Driver>(&mut self, now_ns: u64, node: NodeId, packet: Packet, driver: &mut D) {
        if packet.meta.tag == Tag::END_MARKER {
            self.end_marker(now_ns, node, packet, driver);
            return;
        }
        if self.watched[node.index()] {
            driver.seen(now_ns, node, &packet);
        }
        if self.topology.node_of(packet.dst) == Some(node) {
            driver.to_host(self, now_ns, node, packet);
            return;
        }
        match self.site_at[node.index()] {
            Some(site) if packet.tcp_header().is_some() => {
                let direction = if self.is_toward_ue(packet.dst) { Direction::FromServer } else { Direction::FromUe };
                driver.to_middlebox(self, now_ns, site, direction, packet);
            }
            _ => self.send(now_ns, node, packet, driver),
        }
    }

    /// `packet` leaves `node` by the node's route: what a host or a middlebox there sends, and
    /// what the node forwards.
    #[inline]
    pub fn send<D: Driver>(&mut self, now_ns: u64, node: NodeId, mut packet: Packet, driver: &mut D) {
        if D::HOLDS_FRAMES && !packet.meta.payload.is_none() {
            self.forward_frame(now_ns, node, packet, driver);
            return;
        }
        // Drops in an RLC buffer are counted by the RLC entity itself.
        match self.route(node, &mut packet) {
            Hop::Unreachable => {}
            Hop::Link(link) => {
                self.links[link.index()].enqueue(now_ns, packet, &mut LinkWakes { driver, link });
            }
            Hop::RadioDownlink(ue) if self.holds(ue) => self.handovers.hold(ue, packet),
            Hop::RadioDownlink(ue) => {
                self.radio.ran.enqueue_downlink(now_ns, ue, packet);
            }
            Hop::RadioUplink(ue) => {
                self.radio.ran.enqueue_uplink(now_ns, ue, packet);
            }
        }
    }

    /// Where `packet` leaves `node` (its TTL taken one down): unreachable without an
    /// interface at its destination or with its TTL spent.
    #[inline]
    fn route(&self, node: NodeId, packet: &mut Packet) -> Hop {
        let Some(dst) = self.topology.interface_of(packet.dst) else { return Hop::Unreachable };
        if packet.ttl == 0 {
            return Hop::Unreachable;
        }
        packet.ttl -= 1;
        self.topology.next_hop_from(node, packet.src, dst)
    }

    /// Whether a handover's target holds what reaches UE `ue` over the new path now.
    #[inline]
    fn holds(&self, ue: UeId) -> bool {
        self.handovers.holds(ue) && !self.arriving_over_x2
    }

    /// [`Network::send`] for a packet whose bytes the driver holds: a frame is cut where a
    /// queue cannot take it whole, and what is dropped is handed back.
    #[cold]
    #[inline(never)]
    fn forward_frame<D: Driver>(&mut self, now_ns: u64, node: NodeId, mut packet: Packet, driver: &mut D) {
        match self.route(node, &mut packet) {
            Hop::Unreachable => driver.discard(packet),
            Hop::Link(link) => self.enqueue_frame(now_ns, link, packet, driver),
            Hop::RadioDownlink(ue) if self.holds(ue) => self.handovers.hold(ue, packet),
            Hop::RadioDownlink(ue) => {
                if self.radio.ran.enqueue_downlink(now_ns, ue, packet) {
                    return;
                }
                // The RLC buffer had no room for the whole frame: what fits of its segments.
                let mut segments = std::mem::take(&mut self.segments);
                driver.split(packet, 1, &mut segments);
                for segment in segments.drain(..) {
                    if !self.radio.ran.enqueue_downlink(now_ns, ue, segment) {
                        driver.discard(segment);
                    }
                }
                self.segments = segments;
            }
            Hop::RadioUplink(ue) => {
                if !self.radio.ran.enqueue_uplink(now_ns, ue, packet) {
                    driver.discard(packet);
                }
            }
        }
    }

    /// A frame onto wired link `link`. One that would take longer than [`TRAIN_NS`] to
    /// serialise crosses as trains of segments, each delivered when its last byte is through:
    /// the receiver sees, and acknowledges, segments about when a real link would hand them
    /// over, not all at the end of the frame. A train the queue cannot take whole is cut into
    /// its segments, and those that fit are kept.
    fn enqueue_frame<D: Driver>(&mut self, now_ns: u64, link: LinkId, packet: Packet, driver: &mut D) {
        let rate_bps = self.links[link.index()].rate_bps();
        let mut trains = std::mem::take(&mut self.trains);
        match driver.segment_wire_bytes(&packet) {
            Some(segment_bytes) if transmission_ns(packet.wire_bytes(), rate_bps) > TRAIN_NS => {
                let train_bytes = (TRAIN_NS as u128 * rate_bps as u128 / 8_000_000_000) as u64;
                driver.split(packet, (train_bytes / u64::from(segment_bytes)).max(1) as usize, &mut trains);
            }
            _ => trains.push(packet),
        }
        let mut segments = std::mem::take(&mut self.segments);
        for train in trains.drain(..) {
            let l = &mut self.links[link.index()];
            if l.accepts(now_ns, train.wire_bytes()) {
                l.enqueue(now_ns, train, &mut LinkWakes { driver: &mut *driver, link });
                continue;
            }
            driver.split(train, 1, &mut segments);
            for segment in segments.drain(..) {
                if !self.links[link.index()].enqueue(now_ns, segment, &mut LinkWakes { driver: &mut *driver, link }) {
                    driver.discard(segment);
                }
            }
        }
        self.trains = trains;
        self.segments = segments;
    }

    /// Delivers what the cell decoded in its previous slot, then runs this slot.
    fn slot<D: Driver>(&mut self, now_ns: u64, cell: CellId, driver: &mut D) {
        let c = cell.0 as usize;
        let mut decoded = std::mem::take(&mut self.radio.decoded[c]);
        self.deliver(now_ns, cell, &mut decoded, driver);
        self.radio.ran.advance_cell_to(cell, now_ns, &mut decoded);
        self.radio.decoded[c] = decoded;
        driver.wake_at(self.radio.ran.next_deadline_ns(cell), NetEvent::Slot(cell));
    }

    /// Hands what cell `cell` delivered now to the UEs (downlink) and to the cell's node
    /// (uplink), and leaves `delivered` empty.
    pub(crate) fn deliver<D: Driver>(&mut self, now_ns: u64, cell: CellId, delivered: &mut RanOutput, driver: &mut D) {
        for d in delivered.downlink.drain(..) {
            debug_assert_eq!(d.at_ns, now_ns, "delivered now");
            let latency_ns = d.at_ns - d.packet.meta.ran_entry_ns;
            let node = self.radio.ue_nodes[d.ue.index()];
            // A frame of several TCP segments (the emulator's GSO frames) counts as each of
            // them, so the latency is a mean over packets in both drivers, whatever the frames'
            // sizes: pieces cut at a full RLC buffer would otherwise outweigh whole frames.
            let packets = match D::HOLDS_FRAMES {
                true => driver.segment_wire_bytes(&d.packet).map_or(1, |segment| u64::from(d.packet.wire_bytes().div_ceil(segment))),
                false => 1,
            };
            let m = &mut self.ue_metrics[d.ue.index()];
            m.ran_latency.record_n(latency_ns, packets);
            m.window_latency_ns += latency_ns * packets;
            m.window_deliveries += packets;
            if let Some(f) = d.packet.meta.tag.flow_index().and_then(|i| self.flow_ran_latency.get_mut(i)) {
                f.record_n(latency_ns, packets);
            }
            self.arrive(now_ns, node, d.packet, driver);
        }
        let gnb = self.radio.cell_nodes[cell.0 as usize];
        for d in delivered.uplink.drain(..) {
            self.arrive(now_ns, gnb, d.packet, driver);
        }
        if D::HOLDS_FRAMES {
            for d in delivered.dropped.drain(..) {
                driver.discard(d.packet);
            }
        }
        delivered.clear();
    }

    /// Puts a middlebox site on `node`: from now on every TCP packet crossing it (not
    /// addressed to it) goes to [`Driver::to_middlebox`]. One site per node.
    pub fn add_site(&mut self, node: &str) -> Result<SiteId, ConfigError> {
        let n = self.node(node).map_err(|_| ConfigError::new(format!("middlebox: no node {node:?}")))?;
        if self.site_at[n.index()].is_some() {
            return Err(ConfigError::new(format!("middlebox: node {node:?} has one already; allowed: one middlebox per node")));
        }
        let site = SiteId(self.sites.len() as u32);
        self.sites.push(n);
        self.site_at[n.index()] = Some(site);
        Ok(site)
    }

    /// The node of middlebox site `site`.
    pub fn site_node(&self, site: SiteId) -> NodeId {
        self.sites[site.index()]
    }

    /// The driver sees every packet reaching `node` from now on ([`Driver::seen`]).
    pub fn watch(&mut self, node: NodeId) {
        self.watched[node.index()] = true;
    }

    /// The node named `name`, or an error listing the names there are.
    pub fn node(&self, name: &str) -> Result<NodeId, ConfigError> {
        self.topology.node_by_name(name).ok_or_else(|| {
            let known: Vec<&str> = self.topology.nodes.iter().map(|n| n.name.as_str()).collect();
            ConfigError::new(format!("no node {name:?}; allowed: {}", known.join(", ")))
        })
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn nodes(&self) -> usize {
        self.topology.nodes.len()
    }

    /// The address `node`'s hosts bind to.
    pub fn address(&self, node: NodeId) -> Ipv4Addr {
        self.topology.address(node)
    }

    /// Whether a packet to `address` heads for a UE (or a flow's receiver on a wired path).
    #[inline]
    pub fn is_toward_ue(&self, address: Ipv4Addr) -> bool {
        self.topology.node_of(address).is_some_and(|d| self.ue_side[d.index()])
    }

    /// Whether `a` and `b` reach each other.
    pub fn connects(&self, a: NodeId, b: NodeId) -> bool {
        self.topology.reaches(a, b) && self.topology.reaches(b, a)
    }

    /// The UE radios, in scenario order.
    pub fn ues(&self) -> usize {
        self.radio.ue_nodes.len()
    }

    /// The address of radio `radio` of the device on `node` (its n-th UE), or of the node.
    pub fn receiver_address(&self, node: NodeId, radio: u32) -> Ipv4Addr {
        let interface = self.radio.ue_nodes.iter().zip(&self.radio.ue_interfaces).filter(|(&n, _)| n == node).nth(radio as usize);
        interface.map_or(self.topology.address(node), |(_, &k)| self.topology.interface_address(k))
    }

    /// The radios of the device on `node` (at least one address: the node's).
    pub fn radios_of(&self, node: NodeId) -> u32 {
        self.radio.ue_nodes.iter().filter(|&&n| n == node).count().max(1) as u32
    }

    /// The UE radio that has `address`, if one has.
    pub fn radio_at(&self, address: Ipv4Addr) -> Option<UeId> {
        self.topology.interface_of(address).and_then(|k| self.radio.ue_with_interface(k))
    }

    /// The node name of the cell carrying UE `ue`'s bearer now.
    pub fn serving_cell_name(&self, ue: UeId) -> &str {
        self.topology.name(self.radio.serving_node(ue))
    }

    /// Every UE radio's telemetry record now, with the radio's address (docs/telemetry.md's
    /// per-UE records, what a middlebox is fed every T_info).
    pub fn telemetry(&self, now_ns: u64) -> impl Iterator<Item = (Ipv4Addr, Telemetry)> + '_ {
        self.radio
            .ue_interfaces
            .iter()
            .enumerate()
            .map(move |(k, &interface)| (self.topology.interface_address(interface), self.radio.ran.telemetry(now_ns, UeId(k as u32))))
    }

    /// Whether cells interfere (docs/models/ran.md#interference).
    pub fn has_interference(&self) -> bool {
        self.radio.ran.has_interference()
    }

    /// Whether the network has cells (and so telemetry).
    pub fn has_cells(&self) -> bool {
        !self.radio.cell_nodes.is_empty()
    }

    /// Checks a change of `node`'s route toward `destination` onto its link to the neighbour
    /// `next`, to be applied when the driver wakes the network with the returned event (a
    /// path change; packets already queued go on as they were).
    pub fn plan_route_change(&mut self, node: &str, destination: &str, next: &str) -> Result<NetEvent, ConfigError> {
        let find = |name: &str| self.node(name).map_err(|e| ConfigError::at("route change", &e));
        let (from, to, via) = (find(node)?, find(destination)?, find(next)?);
        let link = (0..self.links.len())
            .find(|&l| self.link_from[l] == from && self.links[l].to_node == via.0)
            .ok_or_else(|| ConfigError::new(format!("route change: no link from {node:?} to {next:?}")))?;
        let change = self
            .topology
            .plan(from, self.topology.address(to), Hop::Link(LinkId(link as u32)))
            .map_err(|e| ConfigError::at("route change", &e))?;
        Ok(NetEvent::RouteChange(change))
    }

    /// The AQM of `ue`'s RLC downlink on a leg it takes at `now_ns` (a handover's target).
    pub(crate) fn ue_rlc_aqm(&self, ue: UeId, now_ns: u64) -> Option<Box<dyn millinet_transport::aqm::Aqm>> {
        self.ue_aqm[ue.index()].build(self.seed, &format!("ue{}/rlc-aqm/{now_ns}", ue.index()))
    }

    /// Measures the RAN latency of flows `0..flows` too: a driver that finds its flows as it
    /// runs (the emulator with users' programs) adds them as it goes.
    pub fn track_flows(&mut self, flows: usize) {
        if self.flow_ran_latency.len() < flows {
            self.flow_ran_latency.resize_with(flows, LogHistogram::default);
        }
    }

    /// Whether what `from` sends to `to` passes node `via` on the routes as they are now
    /// (either end counts): the flows a middlebox there sees.
    pub fn route_crosses(&self, from: NodeId, to: Ipv4Addr, via: NodeId) -> bool {
        let Some(destination) = self.topology.interface_of(to) else { return false };
        let source = self.address(from);
        let mut node = from;
        // A route visits each node at most once.
        for _ in 0..self.topology.nodes.len() {
            if node == via {
                return true;
            }
            node = match self.topology.next_hop_from(node, source, destination) {
                Hop::Unreachable => return false,
                Hop::Link(link) => NodeId(self.links[link.index()].to_node),
                Hop::RadioDownlink(ue) => self.radio.ue_nodes[ue.index()],
                Hop::RadioUplink(ue) => self.radio.serving_node(ue),
            };
            if self.topology.node_of(to) == Some(node) {
                return node == via;
            }
        }
        false
    }
}
