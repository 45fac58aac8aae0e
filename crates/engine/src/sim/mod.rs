//! The simulation: assembles the network, hosts, RAN and middleboxes from a scenario and
//! drives the sans-IO models from the event queue, moving packets between them (docs/engine.md,
//! "Who drives whom"). Hosts, sampling and the summary live in modules of their own.

use std::net::SocketAddrV4;

use millinet_proxy::{Direction as ProxyDirection, Middlebox};
use millinet_ran::{CellId, RanOutput, UeId};
use millinet_scenario::translate::{app_spec, link_params, mptcp_config, seconds_to_ns, tcp_config, LinkRate};
use millinet_transport::app::{AppAction, FlowId};
use millinet_transport::mptcp::MptcpConnection;
use millinet_transport::udp::{UdpSink, UdpSource, UdpSourceConfig};
use millinet_transport::{TcpConnection, TcpState, TcpStats};
use millinet_wire::Packet;
use rand_core::RngCore;

use crate::event::{Event, EventQueue, LinkEvents, TimerSlots};
use crate::link::{Link, LinkParams};
use crate::metrics::LogHistogram;
use crate::middlebox::{self, DelayedTelemetry, Site};
use crate::network::{Edge, Hop, Network};
use crate::output::Table;
use crate::pcap::PcapWriter;
use crate::radio::{self, RadioNet};
use crate::rng;
use crate::scenario::{App, Aqm, FlowKind, Scenario};
use crate::series::{Goodput, Has, Mobility, Series, CHUNK_ROWS};
use crate::Error;

mod handover;
mod hosts;
mod sampling;
mod summary;

use handover::{Handovers, END_MARKER};
use hosts::{mptcp_at, receiver_port, sender_port, Endpoint, Flow, Model, Role, RttSamples, SampledBytes, SERVER_PORT};

const NO_MIDDLEBOX: u32 = u32::MAX;

/// Who a timer slot belongs to.
#[derive(Clone, Copy)]
enum TimerOwner {
    Endpoint(u32),
    Middlebox(u32),
}

/// Per-UE measurements of delivered packets (ran counts the per-slot radio ones).
#[derive(Default)]
struct UeMetrics {
    ran_latency: LogHistogram,
    /// Latency sum and count since the last sample (for the time series).
    window_latency_ns: u64,
    window_deliveries: u64,
}

pub struct Simulation {
    pub scenario: Scenario,
    now_ns: u64,
    end_ns: u64,
    sample_step_ns: u64,
    goodput_bin_ns: u64,
    events: EventQueue,
    timers: TimerSlots,
    timer_owners: Vec<TimerOwner>,
    /// The middleboxes, the scenario's `[proxy]` first when it has one.
    middleboxes: Vec<Site>,
    /// Per node: the index of its middlebox, or `NO_MIDDLEBOX`.
    middlebox_at: Vec<u32>,
    /// Whether `middleboxes[0]` is the scenario's `[proxy]` (summary.json's `proxy`).
    scenario_proxy: bool,
    /// Per node: whether it is a UE or, without UEs, a flow's receiver (packets toward it go
    /// "from the server" through a proxy).
    ue_node: Vec<bool>,
    network: Network,
    links: Vec<Link>,
    /// The node each link leaves from.
    link_from: Vec<u32>,
    /// Links whose rate changes over time (switching bottlenecks, capacity processes).
    link_rates: Vec<(u32, LinkRate)>,
    endpoints: Vec<Endpoint>,
    flows: Vec<Flow>,
    captures: Vec<Option<PcapWriter>>,
    /// The mmWave network: the RAN with its cells and UEs (UE k of the scenario is `UeId(k)`).
    radio: RadioNet,
    handovers: Handovers,
    /// Set while a packet that came over an X2 link is handled (it passes a handover's hold).
    arriving_over_x2: bool,
    ue_metrics: Vec<UeMetrics>,
    scratch: Vec<Packet>,
    next_uid: u64,
    series: Series,
}

impl Simulation {
    /// Builds the network. `pcap` lists (node name, file path) captures.
    pub fn new(scenario: Scenario, base_dir: &std::path::Path, pcap: &[(String, std::path::PathBuf)]) -> Result<Simulation, Error> {
        let node_index = |name: &str| scenario.nodes.iter().position(|n| n.name == name).expect("validated") as u32;
        let mut links = Vec::new();
        let mut link_rates = Vec::new();
        for (i, spec) in scenario.links.iter().enumerate() {
            let (a, b) = (node_index(&spec.a), node_index(&spec.b));
            for (from, to) in [(a, b), (b, a)] {
                let id = links.len() as u32;
                if let Some(rate) = LinkRate::new(i, spec, from == a, scenario.seed, base_dir)? {
                    link_rates.push((id, rate));
                }
                let name = format!("{}->{}", scenario.nodes[from as usize].name, scenario.nodes[to as usize].name);
                links.push((from, Link::new(link_params(spec, name, to))));
            }
        }
        let mut radio = radio::build(&scenario, base_dir, &node_index)?;
        let mut edges: Vec<Edge> =
            links.iter().enumerate().map(|(i, (from, l))| Edge { from: *from, to: l.to_node, hop: Hop::Link(i as u32) }).collect();
        let mut network = Network::new(scenario.nodes.iter().map(|n| n.name.clone()));
        // A device's first radio answers at its node's address and carries the node's routes;
        // each further radio gets an address of its own, routed over that radio both ways.
        let mut further = Vec::new();
        for (k, &ue_node) in radio.ue_nodes.iter().enumerate() {
            let gnb = radio.cell_nodes[radio.ran.cells_of(UeId(k as u32))[0].0 as usize];
            if radio.ue_nodes[..k].contains(&ue_node) {
                let address = network.add_interface(ue_node);
                radio.ue_interfaces.push(network.interface_of(address).expect("just added"));
                further.push((k as u32, gnb));
            } else {
                radio.ue_interfaces.push(network.nodes[ue_node as usize].interfaces[0]);
                edges.push(Edge { from: gnb, to: ue_node, hop: Hop::RadioDownlink(k as u32) });
                edges.push(Edge { from: ue_node, to: gnb, hop: Hop::RadioUplink(k as u32) });
            }
        }
        network.compute_routes(&edges);
        for (k, gnb) in further {
            let interface = radio.ue_interfaces[k as usize];
            network.route_via(interface, gnb, Hop::RadioDownlink(k));
            network.set_source_route(interface, Hop::RadioUplink(k));
        }

        // Every name is checked before any file is created, so a rejected run writes nothing.
        let capture_nodes = pcap
            .iter()
            .map(|(name, _)| {
                network.node_by_name(name).ok_or_else(|| {
                    let known: Vec<&str> = network.nodes.iter().map(|n| n.name.as_str()).collect();
                    Error::config(format!("--pcap {name}: no such node; allowed: {}", known.join(", ")))
                })
            })
            .collect::<Result<Vec<u32>, Error>>()?;
        let mut captures: Vec<Option<PcapWriter>> = (0..network.nodes.len()).map(|_| None).collect();
        for (&i, (_, path)) in capture_nodes.iter().zip(pcap) {
            captures[i as usize] = Some(PcapWriter::create(path).map_err(Error::Io)?);
        }

        let mut sim = Simulation {
            now_ns: 0,
            end_ns: seconds_to_ns(scenario.duration_s),
            sample_step_ns: seconds_to_ns(scenario.outputs.sample_step_s).max(1),
            goodput_bin_ns: seconds_to_ns(scenario.outputs.goodput_bin_s).max(1),
            events: EventQueue::default(),
            timers: TimerSlots::default(),
            timer_owners: Vec::new(),
            middleboxes: Vec::new(),
            middlebox_at: vec![NO_MIDDLEBOX; scenario.nodes.len()],
            scenario_proxy: false,
            // A proxy's UE side: the UEs' nodes; on a wired-only path (the spep study), the
            // nodes that receive a flow's data, as a UE does.
            ue_node: (0..scenario.nodes.len() as u32)
                .map(|i| match scenario.ues.is_empty() {
                    false => scenario.ues.iter().any(|u| node_index(&u.node) == i),
                    true => scenario.flows.iter().any(|f| node_index(&f.dst) == i),
                })
                .collect(),
            network,
            link_from: links.iter().map(|(from, _)| *from).collect(),
            links: links.into_iter().map(|(_, l)| l).collect(),
            link_rates,
            endpoints: Vec::new(),
            flows: Vec::new(),
            captures,
            ue_metrics: (0..radio.ue_nodes.len()).map(|_| UeMetrics::default()).collect(),
            radio,
            handovers: Handovers::new(&scenario.handover, scenario.ues.len()),
            arriving_over_x2: false,
            scratch: Vec::with_capacity(64),
            next_uid: 0,
            series: Series::default(),
            scenario: scenario.clone(),
        };

        for (i, spec) in scenario.flows.iter().enumerate() {
            let (src, dst) = (node_index(&spec.src), node_index(&spec.dst));
            if !sim.network.reaches(src, dst) || !sim.network.reaches(dst, src) {
                return Err(Error::config(format!(
                    "flows.{i}: no path between {:?} and {:?}; allowed: nodes joined by [[links]] in both directions",
                    spec.src, spec.dst
                )));
            }
            let flow = FlowId(i as u32);
            let start_ns = seconds_to_ns(spec.start_s);
            let sender_addr = SocketAddrV4::new(sim.network.address(src), sender_port(flow));
            let receiver_addr = SocketAddrV4::new(sim.receiver_address(dst, spec.dst_radio), receiver_port(flow));
            let (sender, receiver) = match spec.kind {
                FlowKind::Tcp => {
                    let iss = rng::stream(scenario.seed, &format!("flow{i}/sender-iss")).next_u32();
                    let listener =
                        TcpConnection::listen(tcp_config(spec, iss), sender_addr).map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    // The receiver connects at the flow's start (Event::FlowStart).
                    sim.events.schedule(start_ns, Event::FlowStart(flow));
                    (sim.add_endpoint(src, flow, Role::Sender, Model::Tcp(listener)), u32::MAX)
                }
                FlowKind::Mptcp => {
                    let cfg = mptcp_config(spec, rng::stream(scenario.seed, &format!("flow{i}/sender-mptcp")).next_u64());
                    let listener = MptcpConnection::listen(cfg).map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    sim.events.schedule(start_ns, Event::FlowStart(flow));
                    (sim.add_endpoint(src, flow, Role::Sender, Model::Mptcp { port: sender_addr.port(), conn: listener }), u32::MAX)
                }
                FlowKind::Udp => {
                    let source = UdpSource::new(UdpSourceConfig {
                        local: sender_addr,
                        remote: receiver_addr,
                        rate_bps: spec.udp_rate_bps.round() as u64,
                        payload_bytes: spec.packet_bytes,
                        start_ns,
                        stop_ns: sim.end_ns,
                        flow: flow.0,
                    })
                    .map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    let sink = Model::UdpSink { port: receiver_addr.port(), sink: UdpSink::new() };
                    let sender = sim.add_endpoint(src, flow, Role::Sender, Model::UdpSource(source));
                    let receiver = sim.add_endpoint(dst, flow, Role::Receiver, sink);
                    (sender, receiver)
                }
            };
            let bins = (sim.end_ns.div_ceil(sim.goodput_bin_ns)) as usize;
            sim.flows.push(Flow {
                spec: spec.clone(),
                sender,
                receiver,
                start_ns,
                app: (spec.kind != FlowKind::Udp).then(|| app_spec(spec).build(start_ns)),
                app_started: false,
                app_deadline_ns: None,
                delivered_bytes: 0,
                rtt: Vec::new(),
                ran_latency: LogHistogram::default(),
                goodput_bins: vec![0; bins],
                reorder: SampledBytes::default(),
            });
        }
        // UDP sources wait for their first departure.
        for e in 0..sim.endpoints.len() as u32 {
            let ep = &sim.endpoints[e as usize];
            sim.timers.set(&mut sim.events, ep.timer, ep.model.next_timeout_ns());
        }
        for (link, rate) in &sim.link_rates {
            sim.events.schedule(rate.next_ns(), Event::LinkRate(*link));
        }
        for c in 0..sim.radio.cell_nodes.len() as u32 {
            sim.events.schedule(0, Event::Slot(c));
        }
        for k in 0..sim.radio.serving.len() as u32 {
            if sim.radio.serving[k as usize].is_some() {
                sim.events.schedule(sim.handovers.period_ns(), Event::Measure(k));
            }
        }
        if !scenario.proxy.node.is_empty() {
            let iss_secret = rng::stream(scenario.seed, "proxy/iss-secret").next_u64();
            let (proxy, d_info_ns, t_info_ns) = middlebox::from_scenario(&scenario.proxy, iss_secret)?;
            sim.add_middlebox(&scenario.proxy.node, proxy, d_info_ns, t_info_ns)?;
            sim.scenario_proxy = true;
        }
        sim.events.schedule(0, Event::Sample);
        Ok(sim)
    }

    /// The address of radio `radio` of the device on `node` (its n-th UE), or of the node.
    fn receiver_address(&self, node: u32, radio: u32) -> std::net::Ipv4Addr {
        let interface = self.radio.ue_nodes.iter().zip(&self.radio.ue_interfaces).filter(|(&n, _)| n == node).nth(radio as usize);
        interface.map_or(self.network.address(node), |(_, &k)| self.network.interface_address(k))
    }

    /// The UE radio that has `address`, if one has.
    fn radio_at(&self, address: std::net::Ipv4Addr) -> Option<UeId> {
        let k = self.radio.ue_interfaces.iter().position(|&i| self.network.interface_address(i) == address)?;
        Some(UeId(k as u32))
    }

    fn add_endpoint(&mut self, node: u32, flow: FlowId, role: Role, model: Model) -> u32 {
        let id = self.endpoints.len() as u32;
        let timer = self.timers.add();
        self.timer_owners.push(TimerOwner::Endpoint(id));
        self.endpoints.push(Endpoint { node, flow, role, timer, model });
        self.network.nodes[node as usize].endpoints.push(id);
        id
    }

    /// At `at_ns`, node `node` starts sending packets for node `destination` over its link
    /// to the neighbour `next` (a path change; packets already queued go on as they were).
    pub fn change_route_at(&mut self, at_ns: u64, node: &str, destination: &str, next: &str) -> Result<(), Error> {
        let net = &self.network;
        let find = |name: &str| net.node_by_name(name).ok_or_else(|| Error::config(format!("route change: no node {name:?}")));
        let (from, to, via) = (find(node)?, find(destination)?, find(next)?);
        let link = (0..self.links.len() as u32)
            .find(|&l| self.link_from[l as usize] == from && self.links[l as usize].to_node == via)
            .ok_or_else(|| Error::config(format!("route change: no link from {node:?} to {next:?}")))?;
        let change =
            self.network.plan(from, self.network.address(to), Hop::Link(link)).map_err(|e| Error::config(format!("route change: {e}")))?;
        self.events.schedule(at_ns, Event::RouteChange(change));
        Ok(())
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    pub fn events_processed(&self) -> u64 {
        self.events.processed()
    }

    /// Runs to the end; `progress(sim_s, total_s)` is called every 2^16 events and
    /// `series(tables)` with every chunk of the time series (the last one at the end).
    pub fn run(&mut self, progress: &mut dyn FnMut(f64, f64), series: &mut dyn FnMut(Vec<Table>)) {
        let total_s = self.end_ns as f64 / 1e9;
        while let Some((now_ns, event)) = self.events.pop_until(self.end_ns) {
            self.now_ns = now_ns;
            match event {
                Event::LinkTransmitted(l) => {
                    self.links[l as usize].on_transmitted(now_ns, &mut LinkEvents { queue: &mut self.events, link: l })
                }
                Event::LinkArrival(l) => {
                    let link = &mut self.links[l as usize];
                    let packet = link.on_arrival(&mut LinkEvents { queue: &mut self.events, link: l });
                    let node = link.to_node;
                    if self.handovers.is_x2(l) {
                        self.arriving_over_x2 = true;
                        self.arrive(node, packet);
                        self.arriving_over_x2 = false;
                    } else {
                        self.arrive(node, packet);
                    }
                }
                Event::Timer(slot, generation) => {
                    if self.timers.surfaced(&mut self.events, slot, generation, now_ns) {
                        let mut out = std::mem::take(&mut self.scratch);
                        match self.timer_owners[slot as usize] {
                            TimerOwner::Endpoint(e) => {
                                self.endpoints[e as usize].model.on_timeout(now_ns, &mut out);
                                self.after_endpoint(e, out);
                            }
                            TimerOwner::Middlebox(m) => {
                                self.middleboxes[m as usize].middlebox.on_timeout(now_ns, &mut out);
                                self.after_middlebox(m, out);
                            }
                        }
                    }
                }
                Event::Sample => {
                    self.sample();
                    if self.series.rows() >= CHUNK_ROWS {
                        series(self.take_chunk(false));
                    }
                }
                Event::LinkRate(l) => {
                    let (_, rate) = self.link_rates.iter_mut().find(|r| r.0 == l).expect("a link with a rate schedule");
                    rate.update(now_ns, &mut self.links[l as usize]);
                    self.events.schedule(rate.next_ns(), Event::LinkRate(l));
                }
                Event::FlowStart(f) => self.start_flow(f),
                Event::AppDeadline(f) => self.app_deadline(f),
                Event::Slot(c) => self.slot(c),
                Event::Telemetry(m) => self.telemetry(m),
                Event::RouteChange(change) => self.network.apply_planned(change),
                Event::Measure(ue) => self.measure(ue),
                Event::X2Forward(index) => self.x2_forward(index),
            }
            if self.events.processed() & 0xFFFF == 0 {
                progress(now_ns as f64 / 1e9, total_s);
            }
        }
        self.now_ns = self.end_ns;
        series(self.take_chunk(true));
        progress(total_s, total_s);
    }

    /// The receiver opens the connection toward the sender (a download).
    fn start_flow(&mut self, f: FlowId) {
        let i = f.index();
        let spec = &self.flows[i].spec;
        let (src, dst) = (
            self.endpoints[self.flows[i].sender as usize].node,
            self.scenario.nodes.iter().position(|n| n.name == spec.dst).expect("validated") as u32,
        );
        let remote = SocketAddrV4::new(self.network.address(src), sender_port(f));
        let mut out = std::mem::take(&mut self.scratch);
        let model = if spec.kind == FlowKind::Mptcp {
            // A subflow per radio of the device, from each radio's address.
            let radios = self.radio.ue_nodes.iter().filter(|&&n| n == dst).count().max(1) as u32;
            let paths: Vec<_> = (0..radios).map(|r| (SocketAddrV4::new(self.receiver_address(dst, r), receiver_port(f)), remote)).collect();
            let cfg = mptcp_config(spec, rng::stream(self.scenario.seed, &format!("flow{i}/receiver-mptcp")).next_u64());
            let conn = MptcpConnection::connect(cfg, &paths, self.now_ns, &mut out)
                .expect("configuration validated when the listener was created");
            Model::Mptcp { port: receiver_port(f), conn }
        } else {
            let iss = rng::stream(self.scenario.seed, &format!("flow{i}/receiver-iss")).next_u32();
            let local = SocketAddrV4::new(self.receiver_address(dst, spec.dst_radio), receiver_port(f));
            let conn = TcpConnection::connect(tcp_config(spec, iss), local, remote, self.now_ns, &mut out)
                .expect("configuration validated when the listener was created");
            Model::Tcp(conn)
        };
        let receiver = self.add_endpoint(dst, f, Role::Receiver, model);
        self.flows[i].receiver = receiver;
        self.after_endpoint(receiver, out);
    }

    /// A flow's application reached its deadline.
    fn app_deadline(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.index()];
        if flow.app_deadline_ns != Some(self.now_ns) {
            return;
        }
        flow.app_deadline_ns = None;
        let action = flow.app.as_mut().expect("only applications have deadlines").on_deadline(self.now_ns);
        let sender = flow.sender;
        let mut out = std::mem::take(&mut self.scratch);
        self.apply_app_action(sender, action, &mut out);
        self.after_endpoint(sender, out);
        self.schedule_app_deadline(f);
    }

    /// What the application asked, done on its flow's sending connection.
    fn apply_app_action(&mut self, sender: u32, action: AppAction, out: &mut Vec<Packet>) {
        let model = &mut self.endpoints[sender as usize].model;
        if let Some(bytes) = action.write_bytes {
            model.send(self.now_ns, bytes, out);
        }
        if action.close {
            model.close(self.now_ns, out);
        }
    }

    /// Schedules the application's deadline if it changed.
    fn schedule_app_deadline(&mut self, f: FlowId) {
        let flow = &mut self.flows[f.index()];
        let wanted_ns = flow.app.as_ref().and_then(|app| app.next_deadline_ns());
        if wanted_ns != flow.app_deadline_ns {
            flow.app_deadline_ns = wanted_ns;
            if let Some(t) = wanted_ns {
                self.events.schedule(t, Event::AppDeadline(f));
            }
        }
    }

    /// A packet reaches a node: delivered to an endpoint there, or forwarded.
    #[inline]
    fn arrive(&mut self, node: u32, packet: Packet) {
        if packet.meta.flow == END_MARKER {
            self.end_marker(node, packet);
            return;
        }
        if let Some(w) = &mut self.captures[node as usize] {
            w.write(self.now_ns, &packet);
        }
        if self.network.node_of(packet.dst) != Some(node) {
            let m = self.middlebox_at[node as usize];
            if m != NO_MIDDLEBOX && packet.tcp_header().is_some() {
                let downstream = self.network.node_of(packet.dst).is_some_and(|d| self.ue_node[d as usize]);
                let direction = if downstream { ProxyDirection::FromServer } else { ProxyDirection::FromUe };
                let mut out = std::mem::take(&mut self.scratch);
                self.middleboxes[m as usize].middlebox.on_packet(self.now_ns, packet, direction, &mut out);
                self.after_middlebox(m, out);
            } else {
                self.forward(node, packet);
            }
            return;
        }
        let (src_port, dst_port) = packet.ports();
        // Few endpoints per node: a scan beats hashing.
        let found = self.network.nodes[node as usize]
            .endpoints
            .iter()
            .copied()
            .find(|&e| self.endpoints[e as usize].model.accepts(packet.src, src_port, dst_port));
        if let Some(e) = found {
            let mut out = std::mem::take(&mut self.scratch);
            self.endpoints[e as usize].model.on_packet(self.now_ns, &packet, &mut out);
            self.after_endpoint(e, out);
        }
    }

    #[inline]
    fn forward(&mut self, node: u32, mut packet: Packet) {
        let Some(dst) = self.network.interface_of(packet.dst) else { return };
        if packet.ttl == 0 {
            return;
        }
        packet.ttl -= 1;
        // Drops in an RLC buffer are counted by the RLC entity itself.
        match self.network.next_hop_from(node, packet.src, dst) {
            Hop::Unreachable => {}
            Hop::Link(link) => {
                self.links[link as usize].enqueue(self.now_ns, packet, &mut LinkEvents { queue: &mut self.events, link });
            }
            Hop::RadioDownlink(k) => {
                if self.handovers.holds(k) && !self.arriving_over_x2 {
                    self.handovers.hold(k, packet);
                } else {
                    self.radio.ran.enqueue_downlink(self.now_ns, UeId(k), packet);
                }
            }
            Hop::RadioUplink(k) => {
                self.radio.ran.enqueue_uplink(self.now_ns, UeId(k), packet);
            }
        }
    }

    /// Delivers what the cell decoded in its previous slot, then runs this slot.
    fn slot(&mut self, c: u32) {
        let mut decoded = std::mem::take(&mut self.radio.decoded[c as usize]);
        self.deliver(CellId(c), &mut decoded);
        let cell = CellId(c);
        self.radio.ran.advance_cell_to(cell, self.now_ns, &mut decoded);
        self.radio.decoded[c as usize] = decoded;
        self.events.schedule(self.radio.ran.next_slot_ns(cell), Event::Slot(c));
    }

    /// Hands what cell `cell` delivered now to the UEs (downlink) and to the cell's node
    /// (uplink), and leaves `delivered` empty.
    fn deliver(&mut self, cell: CellId, delivered: &mut RanOutput) {
        for d in delivered.downlink.drain(..) {
            debug_assert_eq!(d.at_ns, self.now_ns, "delivered now");
            let latency_ns = d.at_ns - d.packet.meta.ran_entry_ns;
            let node = self.radio.ue_nodes[d.ue.index()];
            let m = &mut self.ue_metrics[d.ue.index()];
            m.ran_latency.record(latency_ns);
            m.window_latency_ns += latency_ns;
            m.window_deliveries += 1;
            if let Some(f) = self.flows.get_mut(d.packet.meta.flow as usize) {
                f.ran_latency.record(latency_ns);
            }
            self.arrive(node, d.packet);
        }
        let gnb = self.radio.cell_nodes[cell.0 as usize];
        for d in delivered.uplink.drain(..) {
            self.arrive(gnb, d.packet);
        }
        delivered.clear();
    }

    /// Sends what middlebox `m` emitted from its node and re-arms its timer.
    fn after_middlebox(&mut self, m: u32, mut out: Vec<Packet>) {
        let site = &self.middleboxes[m as usize];
        let node = site.node;
        self.timers.set(&mut self.events, site.timer, site.middlebox.next_timeout_ns());
        for mut packet in out.drain(..) {
            packet.meta.uid = self.next_uid;
            self.next_uid += 1;
            if packet.meta.flow == u32::MAX {
                // A packet the proxy made itself (split-TCP): the flow is the server port's.
                let (src_port, dst_port) = packet.ports();
                let toward_ue = self.network.node_of(packet.dst).is_some_and(|d| self.ue_node[d as usize]);
                let server_port = if toward_ue { src_port } else { dst_port };
                packet.meta.flow = server_port.wrapping_sub(SERVER_PORT) as u32;
            }
            if let Some(w) = &mut self.captures[node as usize] {
                w.write(self.now_ns, &packet);
            }
            self.forward(node, packet);
        }
        self.scratch = out;
    }

    /// Every T_info the gNBs' telemetry of each UE goes to middlebox `m` (milliproxy.md §3).
    fn telemetry(&mut self, m: u32) {
        let site = &mut self.middleboxes[m as usize];
        let mut out = std::mem::take(&mut self.scratch);
        for (k, &interface) in self.radio.ue_interfaces.iter().enumerate() {
            let record = self.radio.ran.telemetry(self.now_ns, UeId(k as u32));
            site.middlebox.on_telemetry(self.now_ns, self.network.interface_address(interface), record, &mut out);
        }
        let next = self.now_ns + site.t_info_ns;
        self.events.schedule(next, Event::Telemetry(m));
        self.after_middlebox(m, out);
    }

    /// Puts `middlebox` on node `node`: from now on it gets every TCP packet crossing that node
    /// (not addressed to it) and, in a run with cells, the UEs' telemetry every `t_info_ns`,
    /// each record `d_info_ns` after its sample time. One middlebox per node.
    pub fn add_middlebox(&mut self, node: &str, middlebox: Box<dyn Middlebox>, d_info_ns: u64, t_info_ns: u64) -> Result<(), Error> {
        let n = self.network.node_by_name(node).ok_or_else(|| Error::config(format!("middlebox: no node {node:?}")))?;
        if self.middlebox_at[n as usize] != NO_MIDDLEBOX {
            return Err(Error::config(format!("middlebox: node {node:?} has one already; allowed: one middlebox per node")));
        }
        let m = self.middleboxes.len() as u32;
        let timer = self.timers.add();
        self.timer_owners.push(TimerOwner::Middlebox(m));
        let t_info_ns = t_info_ns.max(1);
        self.middleboxes.push(Site { node: n, middlebox: DelayedTelemetry::new(middlebox, d_info_ns), timer, t_info_ns });
        self.middlebox_at[n as usize] = m;
        if !self.radio.cell_nodes.is_empty() {
            self.events.schedule(self.now_ns, Event::Telemetry(m));
        }
        Ok(())
    }

    /// After any call into an endpoint: send its packets, re-arm its timer, and
    /// take the measurements and application steps that follow.
    fn after_endpoint(&mut self, e: u32, mut out: Vec<Packet>) {
        let node = self.endpoints[e as usize].node;
        let flow = self.endpoints[e as usize].flow;
        for mut packet in out.drain(..) {
            packet.meta.uid = self.next_uid;
            packet.meta.flow = flow.0;
            self.next_uid += 1;
            if let Some(w) = &mut self.captures[node as usize] {
                w.write(self.now_ns, &packet);
            }
            self.forward(node, packet);
        }
        self.scratch = out;
        let ep = &mut self.endpoints[e as usize];
        self.timers.set(&mut self.events, ep.timer, ep.model.next_timeout_ns());
        match ep.role {
            Role::Sender => self.after_sender(e),
            Role::Receiver => self.after_receiver(e),
        }
    }

    fn after_sender(&mut self, e: u32) {
        let ep = &self.endpoints[e as usize];
        let f = &mut self.flows[ep.flow.index()];
        let mut k = 0;
        while let Some(tcp) = ep.model.subflow(k) {
            if k == f.rtt.len() {
                f.rtt.push(RttSamples::default());
            }
            let (count, last_rtt_ns) = tcp.rtt_samples();
            let samples = &mut f.rtt[k];
            if count != samples.seen {
                samples.seen = count;
                samples.histogram.record(last_rtt_ns);
            }
            k += 1;
        }
        // The application starts once the (first) subflow is up.
        let Some(tcp) = ep.model.subflow(0) else { return };
        if !f.app_started && tcp.state() == TcpState::Established {
            f.app_started = true;
            let flow = ep.flow;
            let action = f.app.as_mut().expect("a TCP flow has an application").on_established(self.now_ns);
            let mut out = std::mem::take(&mut self.scratch);
            self.apply_app_action(e, action, &mut out);
            self.schedule_app_deadline(flow);
            self.after_endpoint(e, out);
        }
    }

    fn after_receiver(&mut self, e: u32) {
        let ep = &mut self.endpoints[e as usize];
        let flow = ep.flow;
        let f = &mut self.flows[flow.index()];
        let delivered = match &mut ep.model {
            Model::Tcp(c) => c.take_delivered(),
            Model::Mptcp { conn, .. } => conn.take_delivered(),
            Model::UdpSink { sink, .. } => f.delivered_bytes..sink.received_payload_bytes,
            Model::UdpSource(_) => unreachable!("sources do not receive"),
        };
        if delivered.is_empty() {
            return;
        }
        assert_eq!(delivered.start, f.delivered_bytes, "flow {}: the application must receive the stream in order", flow.0);
        f.delivered_bytes = delivered.end;
        let bin = ((self.now_ns / self.goodput_bin_ns) as usize).min(f.goodput_bins.len() - 1);
        f.goodput_bins[bin] += delivered.end - delivered.start;
        let Some(app) = f.app.as_mut() else { return };
        let action = app.on_delivered(self.now_ns, f.delivered_bytes);
        if !action.is_none() {
            let sender = f.sender;
            let mut out = std::mem::take(&mut self.scratch);
            self.apply_app_action(sender, action, &mut out);
            self.after_endpoint(sender, out);
        }
        self.schedule_app_deadline(flow);
    }

    pub fn finish_captures(&mut self) -> Result<(), Error> {
        for w in self.captures.iter_mut().flatten() {
            w.finish().map_err(Error::Io)?;
        }
        Ok(())
    }
}
