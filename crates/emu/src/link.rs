//! The link emulator: the emulator's driver of the network layer, on a real clock.
//!
//! Frames the hosts' kernels send come out of their TUN devices; each enters the network at
//! its host's node (`Network::send`) as a `Packet` that names its frame buffer, and crosses
//! the very network the simulator builds from the same scenario and seed: its wired links,
//! its cells and UE radios, its handovers and routes. What the network delivers to a host's
//! node is written into that host's device when its time comes. A GSO frame travels as one
//! unit and is cut into its segments only where a queue must drop part of it (the network
//! asks the link to cut, `Driver::split`).
//!
//! With milliProxy on the path (`proxy.node`, a middlebox site of the network), the link runs
//! the real daemon's packet path (`millinet_proxyd::Datapath`, the proxy crate's core on real
//! bytes) there: every frame crossing the node passes through it, and what it emits goes on
//! from the node. It gets the UEs' telemetry every T_info, D_info after sampling, as the wire
//! format's datagrams, and the host's CLOCK_MONOTONIC as its time.
//!
//! The loop sleeps until the network's next wake-up (a slot boundary, a link's arrival, a
//! handover step), a telemetry record, a proxy timer or a sample, or until a frame arrives,
//! and records how late it ever wrote a frame.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::mpsc::{Receiver, SyncSender};

use millinet_network::series::Series;
use millinet_network::{Driver, NetEvent, Network, NodeId, SiteId};
use millinet_proxy::Direction;
use millinet_proxyd::{ChecksumState, Datapath, Emitted, Input, Toward};
use millinet_wire::gso::{VnetHeader, VNET_HEADER_BYTES};
use millinet_wire::{Packet, PayloadId, Tag, ECN_CE, TELEMETRY_DATAGRAM_BYTES};

use crate::connections::{Connection, Connections};
use crate::error::EmuError;
use crate::frames::Frames;
use crate::telemetry::TelemetryPublisher;
use crate::tun::Tun;

/// Frames waiting for a host's writer thread at most (a second of ACKs at 64 k/s).
const WRITE_QUEUE_FRAMES: usize = 65_536;

/// A frame for a writer thread, with the time it was due.
type DueFrame = (u64, Vec<u8>);

/// Frames read from one device before the loop attends to the rest.
const READ_BATCH: usize = 64;

/// A host's device: its node, and whether a thread of its own writes to it. A write into a
/// TUN device runs the receiving stack in the writer's context; for a server that is its TCP
/// processing each ACK and sending more, which would otherwise hold up the link (with
/// milliProxy relaying one ACK per server segment, docs/proxy.md, "How a flow is handled"). The writer inherits the
/// link's real-time priority and measures how late it writes, so the report covers it too.
pub struct Host {
    pub node: NodeId,
    pub device: Tun,
    pub threaded: bool,
}

/// milliProxy on the network's site `site`.
pub struct ProxyStage {
    pub datapath: Datapath,
    pub site: SiteId,
    /// CLOCK_MONOTONIC at the link's time 0: the datapath's clock, as the telemetry's.
    pub monotonic_start_ns: u64,
}

/// The latest any frame left the link after its due time, and how many left over 1 ms late.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lateness {
    pub max_ns: u64,
    pub over_1ms: u64,
}

impl Lateness {
    fn record(&mut self, late_ns: u64) {
        self.max_ns = self.max_ns.max(late_ns);
        self.over_1ms += (late_ns > 1_000_000) as u64;
    }

    fn merge(&mut self, other: Lateness) {
        self.max_ns = self.max_ns.max(other.max_ns);
        self.over_1ms += other.over_1ms;
    }
}

/// What the link measured about itself.
#[derive(Debug, Default)]
pub struct LinkReport {
    /// How late frames left the link: the emulation is faithful while this stays small.
    pub lateness: Lateness,
    /// Per host: frames read from its device, and written to it.
    pub frames_read: Vec<u64>,
    pub frames_written: Vec<u64>,
    /// Frames cut into pieces because a queue could not take them whole, or to cross a link
    /// in trains.
    pub split_frames: u64,
    /// Frames the models do not carry (not IPv4), dropped and counted.
    pub unparsed_frames: u64,
    /// Frames the network dropped (a full queue, an RLC drop, no route).
    pub dropped_frames: u64,
    /// Frames a TUN device refused.
    pub write_failures: u64,
    /// Telemetry datagrams sent, and those no one received.
    pub telemetry_sent: u64,
    pub telemetry_unsent: u64,
    /// With users' programs: every connection the link carried.
    pub connections: Vec<Connection>,
}

/// How the link tells which flow a frame belongs to (the network measures each flow's RAN
/// latency by that).
pub enum Classifier {
    /// The scenario's `n` flows: a frame to or from flow i's server port
    /// (`plan::server_port(i)`) is flow i's.
    ServerPorts(usize),
    /// Users' programs: each connection the link sees is a flow, numbered as first seen.
    Connections(Connections),
}

/// A wake-up the network asked for: ordered by time, then by when it was asked (sequences
/// differ, so the event itself never decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Wake {
    at_ns: u64,
    sequence: u64,
    event: NetEvent,
}

pub struct Link {
    pub network: Network,
    driver: LinkDriver,
}

/// Everything of the link but the network: the emulator's side of `Driver`.
struct LinkDriver {
    hosts: Vec<Host>,
    /// Per node: its host, if it is one.
    host_of: Vec<Option<usize>>,
    frames: Frames,
    wakes: BinaryHeap<Reverse<Wake>>,
    next_sequence: u64,
    /// The real clock at the current step: how late a frame written now is.
    now_ns: u64,
    /// Frames of one read, before they get their arrival times.
    batch: Vec<Packet>,
    /// Frames read, with their arrival times and hosts, not yet run.
    arrivals: VecDeque<(u64, usize, Packet)>,
    /// Per host: when its device was last read, and last written: what the link reads there
    /// later may be the host's answer to that frame, so it cannot have arrived before.
    last_read_ns: Vec<u64>,
    last_write_ns: Vec<u64>,
    /// When the loop's last wait for frames ended (see [`ReadWindow`]).
    woke_ns: u64,
    parts: Vec<PayloadId>,
    proxy: Option<ProxyStage>,
    /// What the proxy emitted in one call, before it is routed.
    proxied: Vec<(Toward, Packet)>,
    telemetry: Option<TelemetryPublisher>,
    telemetry_due: Vec<(u64, [u8; TELEMETRY_DATAGRAM_BYTES])>,
    sample_step_ns: u64,
    next_sample_ns: u64,
    series: Series,
    /// Per host with a writer thread, its queue while `run` runs.
    writers: Vec<Option<SyncSender<DueFrame>>>,
    /// The first error of a device, raised after the step it happened in.
    error: Option<EmuError>,
    classifier: Classifier,
    report: LinkReport,
}

impl Link {
    /// A link that carries `network` between `hosts`, telling flows apart by `classifier`.
    pub fn new(network: Network, hosts: Vec<Host>, sample_step_ns: u64, classifier: Classifier) -> Link {
        let mut host_of = vec![None; network.nodes()];
        for (h, host) in hosts.iter().enumerate() {
            host_of[host.node.index()] = Some(h);
        }
        let n = hosts.len();
        let mut link = Link {
            network,
            driver: LinkDriver {
                host_of,
                frames: Frames::default(),
                wakes: BinaryHeap::new(),
                next_sequence: 0,
                now_ns: 0,
                batch: Vec::new(),
                arrivals: VecDeque::new(),
                last_read_ns: vec![0; n],
                last_write_ns: vec![0; n],
                woke_ns: 0,
                parts: Vec::new(),
                proxy: None,
                proxied: Vec::new(),
                telemetry: None,
                telemetry_due: Vec::new(),
                sample_step_ns,
                next_sample_ns: 0,
                series: Series::default(),
                writers: (0..n).map(|_| None).collect(),
                classifier,
                error: None,
                report: LinkReport { frames_read: vec![0; n], frames_written: vec![0; n], ..LinkReport::default() },
                hosts,
            },
        };
        link.network.start(&mut link.driver);
        link
    }

    pub fn set_proxy(&mut self, proxy: ProxyStage) {
        self.driver.proxy = Some(proxy);
    }

    pub fn proxy(&self) -> Option<&ProxyStage> {
        self.driver.proxy.as_ref()
    }

    pub fn set_telemetry(&mut self, telemetry: TelemetryPublisher) {
        self.driver.telemetry = Some(telemetry);
    }

    pub fn telemetry(&self) -> Option<&TelemetryPublisher> {
        self.driver.telemetry.as_ref()
    }

    /// What the link measured, and the rows it sampled.
    pub fn finish(self) -> (Network, LinkReport, Series) {
        let mut report = self.driver.report;
        if let Some(t) = &self.driver.telemetry {
            (report.telemetry_sent, report.telemetry_unsent) = (t.sent, t.unsent);
        }
        if let Classifier::Connections(c) = self.driver.classifier {
            report.connections = c.list;
        }
        (self.network, report, self.driver.series)
    }

    /// Runs until `clock()` reaches `end_ns`. `clock` gives ns since the emulation's start.
    pub fn run(&mut self, clock: &(dyn Fn() -> u64 + Sync), end_ns: u64) -> Result<(), EmuError> {
        let devices: Vec<(usize, Tun)> = (self.driver.hosts.iter().enumerate())
            .filter(|(_, h)| h.threaded)
            .map(|(k, h)| h.device.try_clone().map(|d| (k, d)))
            .collect::<Result<_, _>>()?;
        std::thread::scope(|scope| {
            let mut writers = Vec::new();
            for (k, device) in devices {
                let (tx, rx) = std::sync::mpsc::sync_channel::<DueFrame>(WRITE_QUEUE_FRAMES);
                writers.push(scope.spawn(move || write_frames(device, rx, clock)));
                self.driver.writers[k] = Some(tx);
            }
            let result = self.run_loop(clock, end_ns);
            self.driver.writers.iter_mut().for_each(|w| *w = None);
            for writer in writers {
                let (refused, lateness) = writer.join().expect("a writer does not panic")?;
                self.driver.report.write_failures += refused;
                self.driver.report.lateness.merge(lateness);
            }
            result
        })
    }

    fn run_loop(&mut self, clock: &(dyn Fn() -> u64 + Sync), end_ns: u64) -> Result<(), EmuError> {
        loop {
            let now = clock();
            if now >= end_ns {
                return Ok(());
            }
            self.step(now)?;
            let wake = self.next_deadline_ns().min(end_ns);
            let now = clock();
            if wake > now {
                self.driver.wait(wake - now)?;
                self.driver.woke_ns = clock();
            }
        }
    }

    /// Everything due by `now`: read what arrived, then run what is due in time order — the
    /// network's wake-ups, the frames read, the telemetry and the proxy's timers — so that
    /// every model, and the proxy's clock, only ever moves forward.
    fn step(&mut self, now: u64) -> Result<(), EmuError> {
        let (network, d) = (&mut self.network, &mut self.driver);
        d.now_ns = now;
        d.read_arrivals(network, now)?;
        loop {
            // At equal times the network first, then what was read, telemetry, timers.
            let wake = d.wakes.peek().map(|w| w.0.at_ns).filter(|&t| t <= now);
            let read = d.arrivals.front().map(|a| a.0).filter(|&t| t <= now);
            let telemetry = d.telemetry.as_ref().map(TelemetryPublisher::next_deadline_ns).filter(|&t| t <= now);
            let timer = d.proxy_deadline_ns().filter(|&t| t <= now);
            let first = [wake, read, telemetry, timer].into_iter().flatten().min();
            let Some(t) = first else { break };
            if wake == Some(t) {
                let Reverse(w) = d.wakes.pop().expect("a wake-up");
                network.on_event(t, w.event, d);
            } else if read == Some(t) {
                let (at, host, packet) = d.arrivals.pop_front().expect("a frame read");
                let node = d.hosts[host].node;
                network.send(at, node, packet, d);
            } else if telemetry == Some(t) {
                let publisher = d.telemetry.as_mut().expect("a publisher");
                publisher.step(t, network.telemetry(t), &mut d.telemetry_due);
                d.proxy_telemetry(network, t);
            } else {
                d.proxy_timers(network, t);
            }
            if let Some(e) = d.error.take() {
                return Err(e);
            }
        }
        if now >= d.next_sample_ns {
            d.sample(network, now);
            d.next_sample_ns = (now / d.sample_step_ns + 1) * d.sample_step_ns;
        }
        Ok(())
    }

    fn next_deadline_ns(&self) -> u64 {
        let d = &self.driver;
        let mut due = d.next_sample_ns;
        if let Some(w) = d.wakes.peek() {
            due = due.min(w.0.at_ns);
        }
        if let Some(telemetry) = &d.telemetry {
            due = due.min(telemetry.next_deadline_ns());
        }
        if let Some(t) = d.proxy_deadline_ns() {
            due = due.min(t);
        }
        due
    }
}

impl Driver for LinkDriver {
    const HOLDS_FRAMES: bool = true;

    fn wake_at(&mut self, at_ns: u64, event: NetEvent) {
        self.wakes.push(Reverse(Wake { at_ns, sequence: self.next_sequence, event }));
        self.next_sequence += 1;
    }

    fn to_host(&mut self, _: &mut Network, now_ns: u64, node: NodeId, packet: Packet) {
        match self.host_of[node.index()] {
            Some(host) => self.deliver(host, now_ns, packet),
            None => self.frames.release(packet.meta.payload),
        }
    }

    fn to_middlebox(&mut self, network: &mut Network, now_ns: u64, site: SiteId, direction: Direction, packet: Packet) {
        self.through_proxy(network, site, direction, now_ns, packet);
    }

    fn seen(&mut self, _: u64, _: NodeId, _: &Packet) {}

    fn segment_wire_bytes(&self, packet: &Packet) -> Option<u32> {
        let segment = self.frames.gso_segment_bytes(packet.meta.payload)?;
        Some(packet.wire_bytes() - packet.payload_bytes + u32::from(segment))
    }

    fn split(&mut self, packet: Packet, segments: usize, parts: &mut Vec<Packet>) {
        if self.frames.gso_segment_bytes(packet.meta.payload).is_none() {
            parts.push(packet);
            return;
        }
        self.report.split_frames += 1;
        let mut ids = std::mem::take(&mut self.parts);
        self.frames.split(packet.meta.payload, segments, &mut ids);
        for id in ids.drain(..) {
            match self.frames.describe(id) {
                // A piece is of the frame's flow.
                Some(mut part) => {
                    part.meta.tag = packet.meta.tag;
                    parts.push(part);
                }
                None => self.frames.release(id),
            }
        }
        self.parts = ids;
    }

    fn discard(&mut self, packet: Packet) {
        self.report.dropped_frames += 1;
        if let Classifier::Connections(c) = &mut self.classifier {
            c.on_dropped(&packet);
        }
        self.frames.release(packet.meta.payload);
    }
}

impl LinkDriver {
    /// When the proxy's timer is due, on the link's clock.
    fn proxy_deadline_ns(&self) -> Option<u64> {
        let proxy = self.proxy.as_ref()?;
        proxy.datapath.next_deadline_ns().map(|t| t.saturating_sub(proxy.monotonic_start_ns))
    }

    /// Reads what waits on every device into `arrivals`, in arrival order.
    fn read_arrivals(&mut self, network: &mut Network, now: u64) -> Result<(), EmuError> {
        let mut batch = std::mem::take(&mut self.batch);
        let (leftover, mut hosts_read) = (self.arrivals.len(), 0);
        for host in 0..self.hosts.len() {
            for _ in 0..READ_BATCH {
                let Some(packet) = self.read(network, host, now)? else { break };
                batch.push(packet);
            }
            let n = batch.len() as u64;
            let window =
                ReadWindow::new(std::mem::replace(&mut self.last_read_ns[host], now), self.last_write_ns[host], self.woke_ns, now, n);
            self.report.frames_read[host] += n;
            hosts_read += (n > 0) as usize;
            for (k, packet) in batch.drain(..).enumerate() {
                self.arrivals.push_back((window.arrival_ns(k as u64), host, packet));
            }
        }
        self.batch = batch;
        // The hosts' frames in one time order (each host's already is).
        if hosts_read > 1 || (hosts_read == 1 && leftover > 0) {
            self.arrivals.make_contiguous().sort_by_key(|(at, host, _)| (*at, *host));
        }
        Ok(())
    }

    fn read(&mut self, network: &mut Network, host: usize, now: u64) -> Result<Option<Packet>, EmuError> {
        loop {
            let id = self.frames.alloc();
            let Some(len) = self.hosts[host].device.read(self.frames.buffer_mut(id))? else {
                self.frames.release(id);
                return Ok(None);
            };
            self.frames.set_len(id, len);
            match self.frames.describe(id) {
                Some(mut packet) => {
                    packet.meta.tag = match &mut self.classifier {
                        Classifier::ServerPorts(flows) => flow_of(&packet, *flows),
                        Classifier::Connections(c) => {
                            let tag = c.on_sent(now, &packet, |address| network.is_toward_ue(address));
                            network.track_flows(c.list.len());
                            tag
                        }
                    };
                    return Ok(Some(packet));
                }
                None => {
                    self.report.unparsed_frames += 1;
                    self.frames.release(id);
                }
            }
        }
    }

    /// Writes a packet's frame, due at `due`, into host `host`'s device.
    fn deliver(&mut self, host: usize, due: u64, packet: Packet) {
        let id = packet.meta.payload;
        let now = self.now_ns;
        if let Classifier::Connections(c) = &mut self.classifier {
            c.on_delivered(now, &packet);
        }
        self.last_write_ns[host] = now;
        self.report.frames_written[host] += 1;
        if packet.ecn == ECN_CE {
            // A queue of the models CE-marked it (an AQM's mark, docs/models/transport.md §10):
            // the real packet says so too.
            self.frames.set_ecn(id, ECN_CE);
        }
        let written = match &self.writers[host] {
            Some(writer) => writer.try_send((due, self.frames.frame(id).to_vec())).is_ok(),
            None => {
                self.report.lateness.record(now.saturating_sub(due));
                match self.hosts[host].device.write(self.frames.frame(id)) {
                    Ok(written) => written,
                    Err(e) => {
                        self.error.get_or_insert(e);
                        true
                    }
                }
            }
        };
        self.report.write_failures += !written as u64;
        self.frames.release(id);
    }

    /// The frame crosses the proxy's node: the datapath reads it and says what leaves.
    fn through_proxy(&mut self, network: &mut Network, site: SiteId, direction: Direction, at: u64, packet: Packet) {
        let Some(proxy) = &mut self.proxy else { return };
        let id = packet.meta.payload;
        let (buffer, len) = self.frames.take(id);
        let frame = &buffer[..len];
        let vnet = VnetHeader::parse(frame);
        let input = Input {
            datagram: &frame[VNET_HEADER_BYTES..],
            checksum: if vnet.flags & VnetHeader::NEEDS_CSUM != 0 { ChecksumState::Partial } else { ChecksumState::Complete },
            segment_bytes: (vnet.is_tcp_gso() && vnet.gso_size > 0).then_some(vnet.gso_size),
        };
        let mut original = false;
        let (frames, proxied) = (&mut self.frames, &mut self.proxied);
        proxy.datapath.on_datagram(proxy.monotonic_start_ns + at, input, &mut |emitted| match emitted {
            Emitted::Original => original = true,
            emitted => route_emitted(frames, proxied, emitted),
        });
        self.frames.put_back(id, buffer);
        if original {
            let toward = match direction {
                Direction::FromServer => Toward::Ue,
                Direction::FromUe => Toward::Server,
            };
            self.proxied.push((toward, packet));
        } else {
            self.frames.release(id);
        }
        self.route_proxied(network, site, at);
    }

    /// Telemetry records that came due at `t` go to the proxy, if there is one.
    fn proxy_telemetry(&mut self, network: &mut Network, t: u64) {
        let Some(proxy) = &mut self.proxy else {
            self.telemetry_due.clear();
            return;
        };
        let site = proxy.site;
        let (frames, proxied) = (&mut self.frames, &mut self.proxied);
        for (_, datagram) in self.telemetry_due.drain(..) {
            proxy.datapath.on_telemetry(proxy.monotonic_start_ns + t, &datagram, &mut |emitted| route_emitted(frames, proxied, emitted));
        }
        self.route_proxied(network, site, t);
    }

    /// The proxy's timer (local retransmission, idle sweep) due at `t`.
    fn proxy_timers(&mut self, network: &mut Network, t: u64) {
        let Some(proxy) = &mut self.proxy else { return };
        let site = proxy.site;
        let (frames, proxied) = (&mut self.frames, &mut self.proxied);
        proxy.datapath.on_timeout(proxy.monotonic_start_ns + t, &mut |emitted| route_emitted(frames, proxied, emitted));
        self.route_proxied(network, site, t);
    }

    /// What the proxy emitted goes on from its node. Consecutive segments toward the UE travel
    /// as one GSO frame when the kernel would cut it back into exactly them (`Frames::append`),
    /// as the server's own frames do.
    fn route_proxied(&mut self, network: &mut Network, site: SiteId, at: u64) {
        let node = network.site_node(site);
        let mut proxied = std::mem::take(&mut self.proxied);
        let mut toward_ue: Option<Packet> = None;
        for (toward, mut packet) in proxied.drain(..) {
            // What the proxy made is of the flow it belongs to, as what it passed on.
            packet.meta.tag = match &self.classifier {
                Classifier::ServerPorts(flows) => flow_of(&packet, *flows),
                Classifier::Connections(c) => c.tag_of(&packet, |address| network.is_toward_ue(address)),
            };
            match toward {
                Toward::Ue => match toward_ue {
                    Some(run) if self.frames.append(run.meta.payload, packet.meta.payload) => {
                        toward_ue = self.frames.describe(run.meta.payload).map(|mut joined| {
                            joined.meta.tag = run.meta.tag;
                            joined
                        });
                    }
                    Some(run) => {
                        network.send(at, node, run, self);
                        toward_ue = Some(packet);
                    }
                    None => toward_ue = Some(packet),
                },
                Toward::Server => network.send(at, node, packet, self),
            }
        }
        if let Some(run) = toward_ue {
            network.send(at, node, run, self);
        }
        self.proxied = proxied;
    }

    /// The network's rows (queues, UEs) and the proxy's at the step boundary of `now`.
    fn sample(&mut self, network: &mut Network, now: u64) {
        let t = (now / self.sample_step_ns * self.sample_step_ns) as f64 / 1e9;
        network.sample(now, t, &mut self.series);
        if let Some(proxy) = &self.proxy {
            let s = &mut self.series;
            for (key, x) in proxy.datapath.proxy().flow_samples(proxy.monotonic_start_ns + now) {
                s.proxy_t.push(t);
                s.proxy_flow.push(u32::from(key.server.port().wrapping_sub(crate::plan::server_port(0))));
                s.proxy_fw_bytes.push(x.window_bytes);
                s.proxy_buffered_bytes.push(x.buffered_bytes);
                s.proxy_in_flight_bytes.push(x.in_flight_bytes);
                s.proxy_rtt_min_ms.push(x.rtt_min_ns.map_or(f64::NAN, |ns| ns as f64 / 1e6));
            }
        }
    }

    /// Sleeps up to `timeout_ns`, or until a frame arrives on any device.
    fn wait(&self, timeout_ns: u64) -> Result<(), EmuError> {
        let mut fds: Vec<libc::pollfd> =
            self.hosts.iter().map(|h| libc::pollfd { fd: h.device.fd(), events: libc::POLLIN, revents: 0 }).collect();
        let timeout = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as i64, tv_nsec: (timeout_ns % 1_000_000_000) as i64 };
        // SAFETY: valid pollfds and a timespec that outlive the call.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(EmuError::os("waiting for frames"));
        }
        Ok(())
    }
}

/// The scenario flow (of `flows`) a frame belongs to, by its server's port, so that the
/// network measures each flow's RAN latency as the simulator's does.
fn flow_of(packet: &Packet, flows: usize) -> Tag {
    let (src, dst) = packet.ports();
    let first = crate::plan::server_port(0);
    let flow = [src, dst].into_iter().map(|p| p.wrapping_sub(first) as usize).find(|&i| i < flows);
    flow.map_or(Tag::NONE, |i| Tag::flow(i as u32))
}

/// A datagram the proxy made becomes a frame, queued for routing from the proxy's node.
fn route_emitted(frames: &mut Frames, proxied: &mut Vec<(Toward, Packet)>, emitted: Emitted) {
    if let Emitted::Datagram { bytes, toward } = emitted {
        proxied.extend(frames.from_datagram(bytes).map(|p| (toward, p)));
    }
}

/// When the frames of one read from a host arrived, as far as the link can tell: TUN reads
/// carry no timestamp. They arrived since the previous read, so they are spread evenly over
/// that time, in their order, the last at the read: a link that was late does not turn what
/// the sender sent over milliseconds into one burst at the next queue. But never before the
/// link's last write to that host, which they may answer (an ACK written late, the server's
/// data in reply), nor before the loop's last wait ended: a frame arriving during a wait ends
/// it, so a burst that ended one (a window of segments written at once) came when it was
/// read. Spread back over the idle time before it, a burst crossed the path early and the
/// kernel measured a round trip up to 3 ms shorter than the path's delays.
#[derive(Clone, Copy, Debug)]
struct ReadWindow {
    from_ns: u64,
    now_ns: u64,
    frames: u64,
}

impl ReadWindow {
    fn new(last_read_ns: u64, last_write_ns: u64, woke_ns: u64, now_ns: u64, frames: u64) -> ReadWindow {
        ReadWindow { from_ns: last_read_ns.max(last_write_ns).max(woke_ns).min(now_ns), now_ns, frames }
    }

    /// The arrival time of the `k`-th frame of the read (from 0).
    fn arrival_ns(&self, k: u64) -> u64 {
        self.from_ns + (self.now_ns - self.from_ns) * (k + 1) / self.frames
    }
}

/// Writes the frames it is given until the link hangs up; returns how many the device
/// refused and how late it wrote them.
fn write_frames(mut tun: Tun, frames: Receiver<DueFrame>, clock: &(dyn Fn() -> u64 + Sync)) -> Result<(u64, Lateness), EmuError> {
    let mut refused = 0;
    let mut lateness = Lateness::default();
    for (due, frame) in frames {
        lateness.record(clock().saturating_sub(due));
        refused += !tun.write(&frame)? as u64;
    }
    Ok((refused, lateness))
}

#[cfg(test)]
mod tests {
    use super::ReadWindow;

    const MS: u64 = 1_000_000;

    fn arrivals(window: ReadWindow) -> Vec<u64> {
        (0..window.frames).map(|k| window.arrival_ns(k)).collect()
    }

    #[test]
    fn a_burst_that_ends_a_wait_arrived_after_the_wait() {
        // Idle since a read at 0, woken at 9 ms by ten segments: none arrived before 9 ms.
        let window = ReadWindow::new(0, 0, 9 * MS, 9 * MS + 50_000, 10);
        let times = arrivals(window);
        assert!(times.iter().all(|&t| t >= 9 * MS), "{times:?}");
        assert_eq!(*times.last().unwrap(), 9 * MS + 50_000);
    }

    #[test]
    fn a_busy_links_frames_are_spread_since_its_previous_read_but_not_before_its_last_write() {
        // No wait since the read at 5 ms (the link was busy until 9 ms): four frames over it.
        assert_eq!(arrivals(ReadWindow::new(5 * MS, 0, MS, 9 * MS, 4)), [6 * MS, 7 * MS, 8 * MS, 9 * MS]);
        // The link wrote to that host at 7 ms: what it reads now may answer that.
        assert_eq!(arrivals(ReadWindow::new(5 * MS, 7 * MS, MS, 9 * MS, 2)), [8 * MS, 9 * MS]);
    }
}
