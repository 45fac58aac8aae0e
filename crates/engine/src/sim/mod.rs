//! The simulation: the network layer (`millinet_network`) driven from one event queue, with
//! the hosts and middleboxes the scenario puts on its nodes (docs/engine.md, "Who drives
//! whom"). The network moves packets between nodes and asks to be woken; the engine turns its
//! wake-ups into events, runs the endpoints and middleboxes the network hands packets to, and
//! keeps the time. Hosts, sampling and the summary live in modules of their own.

use std::net::SocketAddrV4;

use millinet_network::{Driver, NetEvent, Network, NodeId, SiteId};
use millinet_proxy::{Direction as ProxyDirection, Middlebox};
use millinet_scenario::translate::{app_spec, mptcp_config, seconds_to_ns, tcp_config};
use millinet_transport::app::{AppAction, FlowId};
use millinet_transport::mptcp::MptcpConnection;
use millinet_transport::udp::{UdpSink, UdpSource, UdpSourceConfig};
use millinet_transport::{TcpConnection, TcpState, TcpStats};
use millinet_wire::{Packet, Tag};
use rand_core::RngCore;

use crate::event::{Event, EventQueue, TimerSlots};
use crate::metrics::LogHistogram;
use crate::middlebox::{self, DelayedTelemetry, Site};
use crate::output::Table;
use crate::pcap::PcapWriter;
use crate::rng;
use crate::scenario::{FlowKind, Scenario};
use crate::series::{Goodput, Has, Series, CHUNK_ROWS};
use crate::Error;

mod hosts;
mod sampling;
mod summary;

use hosts::{mptcp_at, receiver_port, sender_port, Endpoint, Flow, Model, Role, RttSamples, SampledBytes, SERVER_PORT};

/// Who a timer slot belongs to.
#[derive(Clone, Copy)]
enum TimerOwner {
    Endpoint(u32),
    Middlebox(SiteId),
}

pub struct Simulation {
    network: Network,
    engine: Engine,
}

/// The simulator's side of the network: the event queue and the clock, the hosts on the
/// nodes (endpoints and the flows' applications), the middleboxes on the network's sites,
/// captures, and the rows of the time series that are the hosts'.
struct Engine {
    scenario: Scenario,
    now_ns: u64,
    end_ns: u64,
    sample_step_ns: u64,
    goodput_bin_ns: u64,
    events: EventQueue,
    timers: TimerSlots,
    timer_owners: Vec<TimerOwner>,
    /// The middlebox of each site (by `SiteId`), the scenario's `[proxy]` first when it has
    /// one.
    middleboxes: Vec<Site>,
    /// Whether `middleboxes[0]` is the scenario's `[proxy]` (summary.json's `proxy`).
    scenario_proxy: bool,
    endpoints: Vec<Endpoint>,
    /// Per node: the endpoints bound on it.
    node_endpoints: Vec<Vec<u32>>,
    flows: Vec<Flow>,
    /// Per node: its capture, if asked for.
    captures: Vec<Option<PcapWriter>>,
    scratch: Vec<Packet>,
    next_uid: u64,
    series: Series,
}

impl Simulation {
    /// Builds the network. `pcap` lists (node name, file path) captures.
    pub fn new(scenario: Scenario, base_dir: &std::path::Path, pcap: &[(String, std::path::PathBuf)]) -> Result<Simulation, Error> {
        let mut network = Network::new(&scenario, base_dir)?;
        // Every name is checked before any file is created, so a rejected run writes nothing.
        let capture_nodes = pcap
            .iter()
            .map(|(name, _)| network.node(name).map_err(|e| Error::config(format!("--pcap {name}: {e}"))))
            .collect::<Result<Vec<NodeId>, Error>>()?;
        let mut captures: Vec<Option<PcapWriter>> = (0..network.nodes()).map(|_| None).collect();
        for (&node, (_, path)) in capture_nodes.iter().zip(pcap) {
            captures[node.index()] = Some(PcapWriter::create(path).map_err(Error::Io)?);
            network.watch(node);
        }
        let mut engine = Engine {
            now_ns: 0,
            end_ns: seconds_to_ns(scenario.duration_s),
            sample_step_ns: seconds_to_ns(scenario.outputs.sample_step_s).max(1),
            goodput_bin_ns: seconds_to_ns(scenario.outputs.goodput_bin_s).max(1),
            events: EventQueue::default(),
            timers: TimerSlots::default(),
            timer_owners: Vec::new(),
            middleboxes: Vec::new(),
            scenario_proxy: false,
            endpoints: Vec::new(),
            node_endpoints: vec![Vec::new(); network.nodes()],
            flows: Vec::new(),
            captures,
            scratch: Vec::with_capacity(64),
            next_uid: 0,
            series: Series::default(),
            scenario: scenario.clone(),
        };

        for (i, spec) in scenario.flows.iter().enumerate() {
            let (src, dst) = (network.node(&spec.src)?, network.node(&spec.dst)?);
            if !network.connects(src, dst) {
                return Err(Error::config(format!(
                    "flows.{i}: no path between {:?} and {:?}; allowed: nodes joined by [[links]] in both directions",
                    spec.src, spec.dst
                )));
            }
            let flow = FlowId(i as u32);
            let start_ns = seconds_to_ns(spec.start_s);
            let sender_addr = SocketAddrV4::new(network.address(src), sender_port(flow));
            let receiver_addr = SocketAddrV4::new(network.receiver_address(dst, spec.dst_radio), receiver_port(flow));
            let (sender, receiver) = match spec.kind {
                FlowKind::Tcp => {
                    let iss = rng::stream(scenario.seed, &format!("flow{i}/sender-iss")).next_u32();
                    let listener =
                        TcpConnection::listen(tcp_config(spec, iss), sender_addr).map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    // The receiver connects at the flow's start (Event::FlowStart).
                    engine.events.schedule(start_ns, Event::FlowStart(flow));
                    (engine.add_endpoint(src, flow, Role::Sender, Model::Tcp(listener)), None)
                }
                FlowKind::Mptcp => {
                    let cfg = mptcp_config(spec, rng::stream(scenario.seed, &format!("flow{i}/sender-mptcp")).next_u64());
                    let listener = MptcpConnection::listen(cfg).map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    engine.events.schedule(start_ns, Event::FlowStart(flow));
                    (engine.add_endpoint(src, flow, Role::Sender, Model::Mptcp { port: sender_addr.port(), conn: listener }), None)
                }
                FlowKind::Udp => {
                    let source = UdpSource::new(UdpSourceConfig {
                        local: sender_addr,
                        remote: receiver_addr,
                        rate_bps: spec.udp_rate_bps.round() as u64,
                        payload_bytes: spec.packet_bytes,
                        start_ns,
                        stop_ns: engine.end_ns,
                        flow: flow.0,
                    })
                    .map_err(|e| Error::config(format!("flows.{i}: {e}")))?;
                    let sink = Model::UdpSink { port: receiver_addr.port(), sink: UdpSink::new() };
                    let sender = engine.add_endpoint(src, flow, Role::Sender, Model::UdpSource(source));
                    let receiver = engine.add_endpoint(dst, flow, Role::Receiver, sink);
                    (sender, Some(receiver))
                }
            };
            let bins = (engine.end_ns.div_ceil(engine.goodput_bin_ns)) as usize;
            engine.flows.push(Flow {
                spec: spec.clone(),
                dst,
                sender,
                receiver,
                start_ns,
                app: (spec.kind != FlowKind::Udp).then(|| app_spec(spec).build(start_ns)),
                app_started: false,
                app_deadline_ns: None,
                delivered_bytes: 0,
                rtt: Vec::new(),
                goodput_bins: vec![0; bins],
                reorder: SampledBytes::default(),
            });
        }
        // UDP sources wait for their first departure.
        for e in 0..engine.endpoints.len() {
            let ep = &engine.endpoints[e];
            engine.timers.set(&mut engine.events, ep.timer, ep.model.next_deadline_ns());
        }
        network.start(&mut engine);
        let mut sim = Simulation { network, engine };
        if !scenario.proxy.node.is_empty() {
            let iss_secret = rng::stream(scenario.seed, "proxy/iss-secret").next_u64();
            let (proxy, d_info_ns, t_info_ns) = middlebox::from_scenario(&scenario.proxy, iss_secret)?;
            sim.add_middlebox(&scenario.proxy.node, proxy, d_info_ns, t_info_ns)?;
            sim.engine.scenario_proxy = true;
        }
        sim.engine.events.schedule(0, Event::Sample);
        Ok(sim)
    }

    /// At `at_ns`, node `node` starts sending packets for node `destination` over its link
    /// to the neighbour `next` (a path change; packets already queued go on as they were).
    pub fn change_route_at(&mut self, at_ns: u64, node: &str, destination: &str, next: &str) -> Result<(), Error> {
        let change = self.network.plan_route_change(node, destination, next)?;
        self.engine.events.schedule(at_ns, Event::Network(change));
        Ok(())
    }

    /// Puts `middlebox` on node `node`: from now on it gets every TCP packet crossing that node
    /// (not addressed to it) and, in a run with cells, the UEs' telemetry every `t_info_ns`,
    /// each record `d_info_ns` after its sample time. One middlebox per node.
    pub fn add_middlebox(&mut self, node: &str, middlebox: Box<dyn Middlebox>, d_info_ns: u64, t_info_ns: u64) -> Result<(), Error> {
        let site = self.network.add_site(node)?;
        let e = &mut self.engine;
        let timer = e.timers.add();
        e.timer_owners.push(TimerOwner::Middlebox(site));
        let t_info_ns = t_info_ns.max(1);
        e.middleboxes.push(Site { middlebox: DelayedTelemetry::new(middlebox, d_info_ns), timer, t_info_ns });
        if self.network.has_cells() {
            e.events.schedule(e.now_ns, Event::Telemetry(site));
        }
        Ok(())
    }

    pub fn now_ns(&self) -> u64 {
        self.engine.now_ns
    }

    pub fn events_processed(&self) -> u64 {
        self.engine.events.processed()
    }

    /// Runs to the end; `progress(sim_s, total_s)` is called every 2^16 events and
    /// `series(tables)` with every chunk of the time series (the last one at the end).
    pub fn run(&mut self, progress: &mut dyn FnMut(f64, f64), series: &mut dyn FnMut(Vec<Table>)) {
        let (network, engine) = (&mut self.network, &mut self.engine);
        let total_s = engine.end_ns as f64 / 1e9;
        while let Some((now_ns, event)) = engine.events.pop_until(engine.end_ns) {
            engine.now_ns = now_ns;
            match event {
                Event::Network(e) => network.on_event(now_ns, e, engine),
                Event::Timer(slot, generation) => {
                    if engine.timers.surfaced(&mut engine.events, slot, generation, now_ns) {
                        let mut out = std::mem::take(&mut engine.scratch);
                        match engine.timer_owners[slot as usize] {
                            TimerOwner::Endpoint(e) => {
                                engine.endpoints[e as usize].model.on_timeout(now_ns, &mut out);
                                engine.after_endpoint(network, e, out);
                            }
                            TimerOwner::Middlebox(m) => {
                                engine.middleboxes[m.index()].middlebox.on_timeout(now_ns, &mut out);
                                engine.after_middlebox(network, m, out);
                            }
                        }
                    }
                }
                Event::Sample => {
                    engine.sample(network);
                    if engine.series.rows() >= CHUNK_ROWS {
                        series(engine.take_chunk(network, false));
                    }
                }
                Event::FlowStart(f) => engine.start_flow(network, f),
                Event::AppDeadline(f) => engine.app_deadline(network, f),
                Event::Telemetry(m) => engine.telemetry(network, m),
            }
            if engine.events.processed() & 0xFFFF == 0 {
                progress(now_ns as f64 / 1e9, total_s);
            }
        }
        engine.now_ns = engine.end_ns;
        series(engine.take_chunk(network, true));
        progress(total_s, total_s);
    }

    pub fn finish_captures(&mut self) -> Result<(), Error> {
        for w in self.engine.captures.iter_mut().flatten() {
            w.finish().map_err(Error::Io)?;
        }
        Ok(())
    }
}

impl Driver for Engine {
    #[inline]
    fn wake_at(&mut self, at_ns: u64, event: NetEvent) {
        self.events.schedule(at_ns, Event::Network(event));
    }

    /// A packet for an endpoint on `node`.
    #[inline]
    fn to_host(&mut self, network: &mut Network, now_ns: u64, node: NodeId, packet: Packet) {
        let (src_port, dst_port) = packet.ports();
        // Few endpoints per node: a scan beats hashing.
        let found = self.node_endpoints[node.index()]
            .iter()
            .copied()
            .find(|&e| self.endpoints[e as usize].model.accepts(packet.src, src_port, dst_port));
        if let Some(e) = found {
            let mut out = std::mem::take(&mut self.scratch);
            self.endpoints[e as usize].model.on_packet(now_ns, &packet, &mut out);
            self.after_endpoint(network, e, out);
        }
    }

    #[inline]
    fn to_middlebox(&mut self, network: &mut Network, now_ns: u64, site: SiteId, direction: ProxyDirection, packet: Packet) {
        let mut out = std::mem::take(&mut self.scratch);
        self.middleboxes[site.index()].middlebox.on_packet(now_ns, packet, direction, &mut out);
        self.after_middlebox(network, site, out);
    }

    fn seen(&mut self, now_ns: u64, node: NodeId, packet: &Packet) {
        if let Some(w) = &mut self.captures[node.index()] {
            w.write(now_ns, packet);
        }
    }
}

impl Engine {
    fn add_endpoint(&mut self, node: NodeId, flow: FlowId, role: Role, model: Model) -> u32 {
        let id = self.endpoints.len() as u32;
        let timer = self.timers.add();
        self.timer_owners.push(TimerOwner::Endpoint(id));
        self.endpoints.push(Endpoint { node, flow, role, timer, model });
        self.node_endpoints[node.index()].push(id);
        id
    }

    /// The receiver opens the connection toward the sender (a download).
    fn start_flow(&mut self, network: &mut Network, f: FlowId) {
        let i = f.index();
        let (spec, dst) = (&self.flows[i].spec, self.flows[i].dst);
        let src = self.endpoints[self.flows[i].sender as usize].node;
        let remote = SocketAddrV4::new(network.address(src), sender_port(f));
        let mut out = std::mem::take(&mut self.scratch);
        let model = if spec.kind == FlowKind::Mptcp {
            // A subflow per radio of the device, from each radio's address.
            let paths: Vec<_> = (0..network.radios_of(dst))
                .map(|r| (SocketAddrV4::new(network.receiver_address(dst, r), receiver_port(f)), remote))
                .collect();
            let cfg = mptcp_config(spec, rng::stream(self.scenario.seed, &format!("flow{i}/receiver-mptcp")).next_u64());
            let conn = MptcpConnection::connect(cfg, &paths, self.now_ns, &mut out)
                .expect("configuration validated when the listener was created");
            Model::Mptcp { port: receiver_port(f), conn }
        } else {
            let iss = rng::stream(self.scenario.seed, &format!("flow{i}/receiver-iss")).next_u32();
            let local = SocketAddrV4::new(network.receiver_address(dst, spec.dst_radio), receiver_port(f));
            let conn = TcpConnection::connect(tcp_config(spec, iss), local, remote, self.now_ns, &mut out)
                .expect("configuration validated when the listener was created");
            Model::Tcp(conn)
        };
        let receiver = self.add_endpoint(dst, f, Role::Receiver, model);
        self.flows[i].receiver = Some(receiver);
        self.after_endpoint(network, receiver, out);
    }

    /// A flow's application reached its deadline.
    fn app_deadline(&mut self, network: &mut Network, f: FlowId) {
        let flow = &mut self.flows[f.index()];
        if flow.app_deadline_ns != Some(self.now_ns) {
            return;
        }
        flow.app_deadline_ns = None;
        let action = flow.app.as_mut().expect("only applications have deadlines").on_deadline(self.now_ns);
        let sender = flow.sender;
        let mut out = std::mem::take(&mut self.scratch);
        self.apply_app_action(sender, action, &mut out);
        self.after_endpoint(network, sender, out);
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

    /// Sends what the middlebox of `site` emitted from its node and re-arms its timer.
    fn after_middlebox(&mut self, network: &mut Network, site: SiteId, mut out: Vec<Packet>) {
        let m = &self.middleboxes[site.index()];
        let node = network.site_node(site);
        self.timers.set(&mut self.events, m.timer, m.middlebox.next_deadline_ns());
        for mut packet in out.drain(..) {
            packet.meta.uid = self.next_uid;
            self.next_uid += 1;
            if packet.meta.tag == Tag::NONE {
                // A packet the proxy made itself (split-TCP): the flow is the server port's.
                let (src_port, dst_port) = packet.ports();
                let server_port = if network.is_toward_ue(packet.dst) { src_port } else { dst_port };
                packet.meta.tag = Tag::flow(u32::from(server_port.wrapping_sub(SERVER_PORT)));
            }
            if let Some(w) = &mut self.captures[node.index()] {
                w.write(self.now_ns, &packet);
            }
            network.send(self.now_ns, node, packet, self);
        }
        self.scratch = out;
    }

    /// Every T_info the gNBs' telemetry of each UE goes to the middlebox of `site`
    /// (docs/telemetry.md).
    fn telemetry(&mut self, network: &mut Network, site: SiteId) {
        let m = &mut self.middleboxes[site.index()];
        let mut out = std::mem::take(&mut self.scratch);
        for (ue, record) in network.telemetry(self.now_ns) {
            m.middlebox.on_telemetry(self.now_ns, ue, record, &mut out);
        }
        let next = self.now_ns + m.t_info_ns;
        self.events.schedule(next, Event::Telemetry(site));
        self.after_middlebox(network, site, out);
    }

    /// After any call into an endpoint: send its packets, re-arm its timer, and
    /// take the measurements and application steps that follow.
    fn after_endpoint(&mut self, network: &mut Network, e: u32, mut out: Vec<Packet>) {
        let node = self.endpoints[e as usize].node;
        let flow = self.endpoints[e as usize].flow;
        for mut packet in out.drain(..) {
            packet.meta.uid = self.next_uid;
            packet.meta.tag = Tag::flow(flow.0);
            self.next_uid += 1;
            if let Some(w) = &mut self.captures[node.index()] {
                w.write(self.now_ns, &packet);
            }
            network.send(self.now_ns, node, packet, self);
        }
        self.scratch = out;
        let ep = &mut self.endpoints[e as usize];
        self.timers.set(&mut self.events, ep.timer, ep.model.next_deadline_ns());
        match ep.role {
            Role::Sender => self.after_sender(network, e),
            Role::Receiver => self.after_receiver(network, e),
        }
    }

    fn after_sender(&mut self, network: &mut Network, e: u32) {
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
            self.after_endpoint(network, e, out);
        }
    }

    fn after_receiver(&mut self, network: &mut Network, e: u32) {
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
            self.after_endpoint(network, sender, out);
        }
        self.schedule_app_deadline(flow);
    }
}
