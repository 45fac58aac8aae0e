//! The link emulator: the gNB namespace's userspace data path, driven by a real clock.
//!
//! Frames the server's stack sends come out of the server-side TUN device; they cross the
//! wired hops of the scenario's path, then the radio — the very `Ran` the simulator builds
//! from the same scenario and seed, fed each frame as a `Packet` that names its buffer and
//! advanced with `advance_to(now)` slot by slot — and are written to the UE-side TUN device
//! when the RAN delivers them. The UE's frames take the reverse path. A frame that does not
//! fit a queue is cut into its TCP segments, and those that fit are kept.
//!
//! An MP-TCP flow has a path per radio of its device, each with a UE address and a UE-side
//! device of its own: a downlink frame takes the path of its destination address, an uplink
//! frame that of the device it came from, and paths share the hops they have in common.
//!
//! With milliProxy on the path (`proxy.node`), the link runs the real daemon's packet path
//! (`millinet_proxyd::Datapath`, the proxy crate's core on real bytes) at that node: every
//! frame reaching the node in either direction passes through it, and what it emits goes on
//! toward the UE or the server from there. It gets the UE's telemetry every T_info, D_info
//! after sampling, as the wire format's datagrams, and the host's CLOCK_MONOTONIC as its time.
//!
//! The loop sleeps until the next due instant (a slot boundary, a hop's next arrival, a
//! delivery, a sample) or until a frame arrives, and records how late it ever was.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::mpsc::{Receiver, SyncSender};

use millinet_proxyd::{ChecksumState, Datapath, Emitted, Input, Toward};
use millinet_ran::{CellId, Ran, RanOutput, UeId};
use millinet_scenario::rng::Stream;
use millinet_wire::{Packet, PayloadId, TELEMETRY_DATAGRAM_BYTES};

use crate::error::EmuError;
use crate::frames::Frames;
use crate::hop::Hop;
use crate::plan::MAX_PATHS;
use crate::telemetry::TelemetryPublisher;
use crate::tun::Tun;
use millinet_wire::gso::{VnetHeader, VNET_HEADER_BYTES};

/// Frames waiting for the server-side writer thread at most (a second of ACKs at 64 k/s).
const SERVER_WRITE_QUEUE_FRAMES: usize = 65_536;

/// Frames read from one device before the loop attends to the rest.
const READ_BATCH: usize = 64;

/// The longest a frame may take to serialise on a wired hop and still leave it as one unit:
/// the timing granularity of the emulated links (100 µs: ten trains per ms at any rate).
const TRAIN_NS: u64 = 100_000;

/// The radio part of the paths: per path, the UE (a radio of the device) and its cell.
pub struct Radio {
    pub ran: Ran<Stream>,
    pub ues: Vec<UeId>,
    pub cells: Vec<CellId>,
}

/// One way between the server and the UE.
pub struct Path {
    /// Its wired hops from the server: indices into the link's hops.
    pub hops: Vec<usize>,
    /// The UE's address on it.
    pub ue_ip: Ipv4Addr,
    /// The link's device toward the UE on this path.
    pub device: Tun,
}

/// milliProxy at the node where downlink stage `down_stage` begins.
pub struct ProxyStage {
    pub datapath: Datapath,
    pub down_stage: usize,
    /// CLOCK_MONOTONIC at the link's time 0: the datapath's clock, as the telemetry's.
    pub monotonic_start_ns: u64,
}

/// The kernel split proxy (crate::split_proxy) at the node where downlink stage `down_stage`
/// begins: frames reaching the node in either direction are written to `device`, which the
/// testbed routes into the proxy's namespace; what the proxy sends comes back out of it and
/// goes on toward the UE or the server by its destination.
pub struct SplitStage {
    pub device: Tun,
    pub down_stage: usize,
}

/// Where a frame crosses the proxy's node.
#[derive(Clone, Copy)]
enum Crossing {
    Down,
    Up,
}

/// One row of the `ues` table.
#[derive(Clone, Copy, Debug)]
pub struct UeSample {
    pub t_ns: u64,
    /// The UE (scenario `[[ues]]` entry) and its cell (`[[cells]]` entry).
    pub ue: u32,
    pub cell: u32,
    pub sinr_db: f64,
    pub rate_bps: f64,
    pub los: bool,
    pub outage: bool,
    pub rlc_bytes: u64,
    /// Mean RAN latency of the frames delivered in the step (NaN without one).
    pub ran_latency_ms: f64,
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

/// One row of the `proxy` table (the simulator's columns).
#[derive(Clone, Copy, Debug)]
pub struct ProxySample {
    pub t_ns: u64,
    pub fw_bytes: u64,
    pub buffered_bytes: u64,
    pub in_flight_bytes: u64,
    /// NaN before the first estimate.
    pub rtt_min_ms: f64,
}

/// One row of the `queues` table.
#[derive(Clone, Copy, Debug)]
pub struct QueueSample {
    pub t_ns: u64,
    pub queue: u32,
    pub bytes: u64,
    pub packets: u64,
    /// The rate the hop serialises at (it changes on switching and capacity-process links).
    pub rate_bps: u64,
}

/// What the link measured about itself and the path.
#[derive(Debug, Default)]
pub struct LinkReport {
    pub ue_samples: Vec<UeSample>,
    pub queue_samples: Vec<QueueSample>,
    pub proxy_samples: Vec<ProxySample>,
    /// Per path, per frame the RAN delivered downlink: PDCP entry to delivery, ns.
    pub ran_latency_ns: Vec<Vec<u64>>,
    /// How late frames left the link: the emulation is faithful while this stays small.
    pub lateness: Lateness,
    pub frames_down: u64,
    pub frames_up: u64,
    /// Frames the split proxy sent into the link.
    pub frames_from_proxy: u64,
    /// Frames cut into segments because a queue could not take them whole.
    pub split_frames: u64,
    /// Frames the models do not carry (not TCP/UDP over IPv4), dropped and counted.
    pub unparsed_frames: u64,
    /// Frames the RAN dropped (RLC overflow after splitting, AQM, UM losses).
    pub ran_dropped_frames: u64,
    /// Frames a TUN device refused.
    pub write_failures: u64,
    /// Telemetry datagrams sent, and those no one received.
    pub telemetry_sent: u64,
    pub telemetry_unsent: u64,
}

pub struct Link {
    server_side: Tun,
    paths: Vec<Path>,
    frames: Frames,
    /// Every wired hop toward the UE, and `up[i]` the way back over `down[i]`'s link.
    down: Vec<Hop>,
    up: Vec<Hop>,
    radio: Option<Radio>,
    ran_out: RanOutput,
    /// Per path, delivered by the RAN (or at the end of a wired path), written when their
    /// time comes.
    air_down: Vec<VecDeque<(u64, Packet)>>,
    air_up: Vec<VecDeque<(u64, Packet)>>,
    parts: Vec<PayloadId>,
    /// Frames of one read, before they get their arrival times.
    batch: Vec<Packet>,
    /// Frames read, with their arrival times, not yet run.
    arrivals: VecDeque<(u64, Side, Packet)>,
    /// When each side (`Side::index`) was last read.
    last_read_ns: [u64; Side::MAX],
    /// When the link last wrote a frame to each side: what it reads there later may be the
    /// endpoint's answer to that frame, so it cannot have arrived before.
    last_write_ns: [u64; Side::MAX],
    sample_step_ns: u64,
    next_sample_ns: u64,
    /// Per path, the RAN latency summed over the step's frames, and their count.
    step_latency: Vec<(u64, u64)>,
    /// The UE's telemetry for a proxy, when asked for.
    pub telemetry: Option<TelemetryPublisher>,
    telemetry_due: Vec<(u64, [u8; TELEMETRY_DATAGRAM_BYTES])>,
    pub proxy: Option<ProxyStage>,
    pub split: Option<SplitStage>,
    /// What the proxy emitted in one call, before it is routed.
    proxied: Vec<(Toward, Packet)>,
    /// Frames for the server-side device's writer thread, with their due times, while `run`
    /// runs.
    server_writes: Option<SyncSender<(u64, Vec<u8>)>>,
    pub report: LinkReport,
}

impl Link {
    /// A link over `paths`, whose hops index `down` and `up` (`up[i]` runs back over the
    /// link of `down[i]`); `radio` ends each path over its radio.
    pub fn new(server_side: Tun, paths: Vec<Path>, down: Vec<Hop>, up: Vec<Hop>, radio: Option<Radio>, sample_step_ns: u64) -> Link {
        let n = paths.len();
        assert!((1..=MAX_PATHS).contains(&n), "a link has 1 to {MAX_PATHS} paths (the plan's limit), not {n}");
        Link {
            server_side,
            paths,
            frames: Frames::default(),
            down,
            up,
            radio,
            ran_out: RanOutput::default(),
            air_down: (0..n).map(|_| VecDeque::new()).collect(),
            air_up: (0..n).map(|_| VecDeque::new()).collect(),
            parts: Vec::new(),
            batch: Vec::new(),
            arrivals: VecDeque::new(),
            last_read_ns: [0; Side::MAX],
            last_write_ns: [0; Side::MAX],
            sample_step_ns,
            next_sample_ns: 0,
            step_latency: vec![(0, 0); n],
            telemetry: None,
            telemetry_due: Vec::new(),
            proxy: None,
            split: None,
            proxied: Vec::new(),
            server_writes: None,
            report: LinkReport { ran_latency_ns: vec![Vec::new(); n], ..LinkReport::default() },
        }
    }

    pub fn hops(&self) -> (&[Hop], &[Hop]) {
        (&self.down, &self.up)
    }

    pub fn radio(&self) -> Option<&Radio> {
        self.radio.as_ref()
    }

    /// Runs until `clock()` reaches `end_ns`. `clock` gives ns since the emulation's start.
    ///
    /// Frames toward the server are written by a thread of their own: a write into a TUN
    /// device runs the receiving stacks in the writer's context (forwarding, the server's
    /// TCP processing each ACK and sending more), and with milliProxy relaying one ACK per
    /// server segment (milliproxy.md §2) that work would otherwise hold up the link.
    /// The writer inherits the link's real-time priority (at ordinary priority the endpoints'
    /// threads delay it by up to a hundred ms at 2 Gbit/s of milliProxy traffic) and measures
    /// how late it writes, so the report's lateness covers that too.
    pub fn run(&mut self, clock: &(dyn Fn() -> u64 + Sync), end_ns: u64) -> Result<(), EmuError> {
        let writer_tun = self.server_side.try_clone()?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, Vec<u8>)>(SERVER_WRITE_QUEUE_FRAMES);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || write_frames(writer_tun, rx, clock));
            self.server_writes = Some(tx);
            let result = self.run_loop(clock, end_ns);
            self.server_writes = None;
            let (refused, lateness) = writer.join().expect("the writer does not panic")?;
            self.report.write_failures += refused;
            self.report.lateness.merge(lateness);
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
                self.wait(wake - now)?;
            }
        }
    }

    /// Everything due by `now`: read what arrived, then run what is due in time order — the
    /// frames read, the hops' arrivals, the RAN's slots and deliveries, the telemetry and the
    /// proxy's timers — so that every model, and the proxy's clock, only ever moves forward.
    fn step(&mut self, now: u64) -> Result<(), EmuError> {
        self.read_arrivals(now)?;
        while let Some((t, event)) = self.next_event(now) {
            match event {
                Event::Slot => self.run_slot(t),
                Event::AirDown(path) => {
                    let (at, packet) = self.air_down[path].pop_front().expect("a delivery");
                    if self.radio.is_some() {
                        let latency = at - packet.meta.ran_entry_ns;
                        self.report.ran_latency_ns[path].push(latency);
                        let step = &mut self.step_latency[path];
                        *step = (step.0 + latency, step.1 + 1);
                    }
                    self.deliver(Side::Ue(path), now, at, packet)?;
                }
                Event::AirUp(path) => {
                    let (at, packet) = self.air_up[path].pop_front().expect("a delivery");
                    self.enter_wired_up(path, 0, at, now, packet)?;
                }
                Event::UpHop(i) => {
                    if let Some((at, packet)) = self.up[i].pop_due(t) {
                        let path = self.path_of(packet.src);
                        let route = &self.paths[path].hops;
                        let stage = route.len() - route.iter().position(|&h| h == i).expect("the hop is on the path");
                        self.enter_wired_up(path, stage, at, now, packet)?;
                    }
                }
                Event::DownHop(i) => {
                    if let Some((at, packet)) = self.down[i].pop_due(t) {
                        let path = self.path_of(packet.dst);
                        let stage = 1 + self.paths[path].hops.iter().position(|&h| h == i).expect("the hop is on the path");
                        self.enter_down(path, stage, at, now, packet)?;
                    }
                }
                Event::Read => {
                    let (at, side, packet) = self.arrivals.pop_front().expect("a frame read");
                    match side {
                        Side::Server => {
                            let path = self.path_of(packet.dst);
                            self.enter_down(path, 0, at, now, packet)?
                        }
                        Side::Ue(path) => self.enter_up(path, at, packet),
                        Side::Proxy => self.enter_from_split_proxy(at, now, packet)?,
                    }
                }
                Event::Telemetry => {
                    let radio = self.radio.as_ref().expect("telemetry of the radio path");
                    let telemetry = self.telemetry.as_mut().expect("a publisher");
                    telemetry.step(t, &radio.ran, radio.ues[0], &mut self.telemetry_due);
                    self.proxy_telemetry(t, now)?;
                }
                Event::ProxyTimer => self.proxy_timers(t, now)?,
            }
        }
        if now >= self.next_sample_ns {
            self.sample(now);
            self.next_sample_ns = (now / self.sample_step_ns + 1) * self.sample_step_ns;
        }
        Ok(())
    }

    /// The RAN's slots due by `t`: what they deliver goes to its path's queues.
    fn run_slot(&mut self, t: u64) {
        let radio = self.radio.as_mut().expect("a slot of the radio path");
        radio.ran.advance_to(t, &mut self.ran_out);
        for d in self.ran_out.downlink.drain(..) {
            let path = radio.ues.iter().position(|&u| u == d.ue).expect("a UE of the paths");
            self.air_down[path].push_back((d.at_ns, d.packet));
        }
        for d in self.ran_out.uplink.drain(..) {
            let path = radio.ues.iter().position(|&u| u == d.ue).expect("a UE of the paths");
            self.air_up[path].push_back((d.at_ns, d.packet));
        }
        for dropped in self.ran_out.dropped.drain(..) {
            self.report.ran_dropped_frames += 1;
            self.frames.release(dropped.packet.meta.payload);
        }
    }

    /// The path of the UE address `ip` (the first path for any other).
    fn path_of(&self, ip: Ipv4Addr) -> usize {
        self.paths.iter().position(|p| p.ue_ip == ip).unwrap_or(0)
    }

    /// Reads what waits on every device into `arrivals`, in arrival order.
    fn read_arrivals(&mut self, now: u64) -> Result<(), EmuError> {
        let mut batch = std::mem::take(&mut self.batch);
        let (leftover, mut sides_read) = (self.arrivals.len(), 0);
        let sides =
            std::iter::once(Side::Server).chain((0..self.paths.len()).map(Side::Ue)).chain(self.split.is_some().then_some(Side::Proxy));
        for side in sides {
            for _ in 0..READ_BATCH {
                let Some(packet) = self.read(side)? else { break };
                batch.push(packet);
            }
            // The frames of one read arrived since the previous one; without the kernel's
            // timestamps they are spread evenly over that time, in their order, so that a
            // link that was late does not turn what the sender sent over milliseconds into one
            // burst at the next queue; never before the link's last write to that side, which
            // they may answer (an ACK written late, the server's data in reply).
            let previous = std::mem::replace(&mut self.last_read_ns[side.index()], now).max(self.last_write_ns[side.index()]).min(now);
            let n = batch.len() as u64;
            match side {
                Side::Server => self.report.frames_down += n,
                Side::Ue(_) => self.report.frames_up += n,
                Side::Proxy => self.report.frames_from_proxy += n,
            }
            sides_read += (n > 0) as usize;
            for (k, packet) in batch.drain(..).enumerate() {
                self.arrivals.push_back((previous + (now - previous) * (k as u64 + 1) / n, side, packet));
            }
        }
        self.batch = batch;
        // The sides' frames in one time order (each side's already is).
        if sides_read > 1 || (sides_read == 1 && leftover > 0) {
            self.arrivals.make_contiguous().sort_by_key(|(at, side, _)| (*at, side.index()));
        }
        Ok(())
    }

    /// The earliest thing due by `now`, with its time; at equal times the RAN's slot first, then
    /// what leaves toward the endpoints, what crosses the hops, what was read, telemetry, timers.
    fn next_event(&self, now: u64) -> Option<(u64, Event)> {
        let mut best: Option<(u64, Event)> = None;
        let mut consider = |t: Option<u64>, event: Event| {
            if let Some(t) = t.filter(|&t| t <= now && best.is_none_or(|(b, _)| t < b)) {
                best = Some((t, event));
            }
        };
        if let Some(radio) = &self.radio {
            consider(radio.cells.iter().map(|&c| radio.ran.next_deadline_ns(c)).min(), Event::Slot);
        }
        for path in 0..self.paths.len() {
            consider(self.air_down[path].front().map(|(at, _)| *at), Event::AirDown(path));
            consider(self.air_up[path].front().map(|(at, _)| *at), Event::AirUp(path));
        }
        for (i, hop) in self.up.iter().enumerate() {
            consider(hop.next_deadline_ns(), Event::UpHop(i));
        }
        for (i, hop) in self.down.iter().enumerate() {
            consider(hop.next_deadline_ns(), Event::DownHop(i));
        }
        consider(self.arrivals.front().map(|(at, _, _)| *at), Event::Read);
        if self.radio.is_some() {
            consider(self.telemetry.as_ref().map(TelemetryPublisher::next_deadline_ns), Event::Telemetry);
        }
        if let Some(proxy) = &self.proxy {
            consider(proxy.datapath.next_deadline_ns().map(|t| t.saturating_sub(proxy.monotonic_start_ns)), Event::ProxyTimer);
        }
        best
    }

    /// A downlink packet reaches stage `stage` of `path` at `at`, through the proxy if it
    /// sits there (a proxy sits on a flow of one path).
    fn enter_down(&mut self, path: usize, stage: usize, at: u64, now: u64, packet: Packet) -> Result<(), EmuError> {
        match (&self.proxy, &self.split) {
            (Some(p), _) if p.down_stage == stage => self.through_proxy(Crossing::Down, at, now, packet),
            (_, Some(split)) if split.down_stage == stage => self.deliver(Side::Proxy, now, at, packet),
            _ => {
                self.continue_down(path, stage, at, packet);
                Ok(())
            }
        }
    }

    /// A downlink packet goes on from stage `stage` of `path`: its wired hops, then the radio.
    fn continue_down(&mut self, path: usize, stage: usize, at: u64, packet: Packet) {
        if let Some(&hop) = self.paths[path].hops.get(stage) {
            match self.train_segments(hop, &packet) {
                Some(segments) => self.split_into(packet, segments, |link, train| {
                    link.offer_to_hop(hop, at, train);
                    true
                }),
                None => self.offer_to_hop(hop, at, packet),
            }
            return;
        }
        match &mut self.radio {
            Some(radio) => {
                // Slots before the packet's arrival run first, so a link that fell behind
                // catches up in time order instead of sending the packet in the past.
                radio.ran.advance_to(at, &mut self.ran_out);
                let ue = radio.ues[path];
                if !radio.ran.enqueue_downlink(at, ue, packet) {
                    self.report.split_frames += 1;
                    self.split_into(packet, 1, |link, part| link.radio.as_mut().expect("radio path").ran.enqueue_downlink(at, ue, part));
                }
            }
            // A wired path ends at the UE-side device.
            None => self.air_down[path].push_back((at, packet)),
        }
    }

    fn enter_up(&mut self, path: usize, at: u64, packet: Packet) {
        match &mut self.radio {
            Some(radio) => {
                radio.ran.advance_to(at, &mut self.ran_out);
                if !radio.ran.enqueue_uplink(at, radio.ues[path], packet) {
                    self.report.ran_dropped_frames += 1;
                    self.frames.release(packet.meta.payload);
                }
            }
            None => self.air_up[path].push_back((at, packet)),
        }
    }

    /// Wired hop `hop` takes `packet` whole, or as many of its segments as fit.
    fn offer_to_hop(&mut self, hop: usize, at: u64, packet: Packet) {
        if let Err(packet) = self.down[hop].offer(at, packet) {
            self.report.split_frames += 1;
            self.split_into(packet, 1, |link, part| link.down[hop].offer_or_drop(at, part));
        }
    }

    /// A GSO frame whose serialisation at hop `hop` would outlast [`TRAIN_NS`] leaves as
    /// trains of this many segments, each delivered when its last byte is through: the
    /// receiver then sees, and acknowledges, the segments about when a real link would hand
    /// them over, not all at the end of the frame.
    fn train_segments(&self, hop: usize, packet: &Packet) -> Option<usize> {
        let hop = &self.down[hop];
        if hop.serialisation_ns(packet.wire_bytes()) <= TRAIN_NS {
            return None;
        }
        let segment = self.frames.gso_segment_bytes(packet.meta.payload)? as u32;
        let segment_wire_bytes = packet.wire_bytes() - packet.payload_bytes + segment;
        let per_train = (hop.bytes_in_ns(TRAIN_NS) / segment_wire_bytes as u64).max(1) as usize;
        Some(per_train)
    }

    /// An uplink packet reaches up stage `stage` of `path`, the wired hops counted from the UE
    /// (past the last one: the server side), through the proxy if it sits there.
    fn enter_wired_up(&mut self, path: usize, stage: usize, at: u64, now: u64, packet: Packet) -> Result<(), EmuError> {
        let hops = self.paths[path].hops.len();
        match (&self.proxy, &self.split) {
            (Some(p), _) if hops - p.down_stage == stage => self.through_proxy(Crossing::Up, at, now, packet),
            (_, Some(split)) if hops - split.down_stage == stage => self.deliver(Side::Proxy, now, at, packet),
            _ => self.continue_up(path, stage, at, now, packet),
        }
    }

    /// A frame the split proxy sent goes on from its node: toward the UE if addressed to it,
    /// else toward the server.
    fn enter_from_split_proxy(&mut self, at: u64, now: u64, packet: Packet) -> Result<(), EmuError> {
        let stage = self.split.as_ref().expect("frames from the split proxy's device").down_stage;
        if packet.dst == self.paths[0].ue_ip {
            self.continue_down(0, stage, at, packet);
            Ok(())
        } else {
            self.continue_up(0, self.paths[0].hops.len() - stage, at, now, packet)
        }
    }

    fn continue_up(&mut self, path: usize, stage: usize, at: u64, now: u64, packet: Packet) -> Result<(), EmuError> {
        let route = &self.paths[path].hops;
        if stage == route.len() {
            return self.deliver(Side::Server, now, at, packet);
        }
        let hop = route[route.len() - 1 - stage];
        if !self.up[hop].offer_or_drop(at, packet) {
            self.frames.release(packet.meta.payload);
        }
        Ok(())
    }

    /// The frame crosses the proxy's node: the datapath reads it and says what leaves.
    fn through_proxy(&mut self, crossing: Crossing, at: u64, now: u64, packet: Packet) -> Result<(), EmuError> {
        let Some(proxy) = &mut self.proxy else { return Ok(()) };
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
            self.proxied.push((
                match crossing {
                    Crossing::Down => Toward::Ue,
                    Crossing::Up => Toward::Server,
                },
                packet,
            ));
        } else {
            self.frames.release(id);
        }
        self.route_proxied(at, now)
    }

    /// Telemetry records that came due at `t` go to the proxy, if there is one.
    fn proxy_telemetry(&mut self, t: u64, now: u64) -> Result<(), EmuError> {
        let Some(proxy) = &mut self.proxy else {
            self.telemetry_due.clear();
            return Ok(());
        };
        let (frames, proxied) = (&mut self.frames, &mut self.proxied);
        for (_, datagram) in self.telemetry_due.drain(..) {
            proxy.datapath.on_telemetry(proxy.monotonic_start_ns + t, &datagram, &mut |emitted| route_emitted(frames, proxied, emitted));
        }
        self.route_proxied(t, now)
    }

    /// The proxy's timer (local retransmission, idle sweep) due at `t`.
    fn proxy_timers(&mut self, t: u64, now: u64) -> Result<(), EmuError> {
        let Some(proxy) = &mut self.proxy else { return Ok(()) };
        let (frames, proxied) = (&mut self.frames, &mut self.proxied);
        proxy.datapath.on_timeout(proxy.monotonic_start_ns + t, &mut |emitted| route_emitted(frames, proxied, emitted));
        self.route_proxied(t, now)
    }

    /// What the proxy emitted goes on from its node, toward the UE or the server. Consecutive
    /// segments toward the UE travel as one GSO frame when the kernel would cut it back into
    /// exactly them (`Frames::append`), as the server's own frames do.
    fn route_proxied(&mut self, at: u64, now: u64) -> Result<(), EmuError> {
        let Some(stage) = self.proxy.as_ref().map(|p| p.down_stage) else { return Ok(()) };
        let mut proxied = std::mem::take(&mut self.proxied);
        let mut toward_ue: Option<Packet> = None;
        let mut result = Ok(());
        for (toward, packet) in proxied.drain(..) {
            match toward {
                Toward::Ue => match toward_ue {
                    Some(run) if self.frames.append(run.meta.payload, packet.meta.payload) => {
                        toward_ue = self.frames.describe(run.meta.payload);
                    }
                    Some(run) => {
                        self.continue_down(0, stage, at, run);
                        toward_ue = Some(packet);
                    }
                    None => toward_ue = Some(packet),
                },
                Toward::Server => result = result.and(self.continue_up(0, self.paths[0].hops.len() - stage, at, now, packet)),
            }
        }
        if let Some(run) = toward_ue {
            self.continue_down(0, stage, at, run);
        }
        self.proxied = proxied;
        result
    }

    /// Cuts `packet`'s frame into pieces of `segments` segments and offers each to `admit`;
    /// what it refuses is dropped.
    fn split_into(&mut self, packet: Packet, segments: usize, mut admit: impl FnMut(&mut Link, Packet) -> bool) {
        let mut parts = std::mem::take(&mut self.parts);
        self.frames.split(packet.meta.payload, segments, &mut parts);
        for &id in &parts {
            let Some(part) = self.frames.describe(id) else {
                self.frames.release(id);
                continue;
            };
            if !admit(self, part) {
                self.frames.release(id);
            }
        }
        parts.clear();
        self.parts = parts;
    }

    fn read(&mut self, side: Side) -> Result<Option<Packet>, EmuError> {
        loop {
            let id = self.frames.alloc();
            let tun = match side {
                Side::Server => &mut self.server_side,
                Side::Ue(path) => &mut self.paths[path].device,
                Side::Proxy => &mut self.split.as_mut().expect("a split proxy's device").device,
            };
            let Some(len) = tun.read(self.frames.buffer_mut(id))? else {
                self.frames.release(id);
                return Ok(None);
            };
            self.frames.set_len(id, len);
            match self.frames.describe(id) {
                Some(packet) => return Ok(Some(packet)),
                None => {
                    self.report.unparsed_frames += 1;
                    self.frames.release(id);
                }
            }
        }
    }

    /// Writes a packet's frame out of the link, `now`, for a packet due at `due`.
    fn deliver(&mut self, side: Side, now: u64, due: u64, packet: Packet) -> Result<(), EmuError> {
        let id = packet.meta.payload;
        self.last_write_ns[side.index()] = now;
        let written = match side {
            Side::Server => {
                let writes = self.server_writes.as_ref().expect("the writer runs while the link does");
                writes.try_send((due, self.frames.frame(id).to_vec())).is_ok()
            }
            Side::Ue(path) => {
                self.report.lateness.record(now.saturating_sub(due));
                self.paths[path].device.write(self.frames.frame(id))?
            }
            Side::Proxy => {
                self.report.lateness.record(now.saturating_sub(due));
                self.split.as_mut().expect("a split proxy's device").device.write(self.frames.frame(id))?
            }
        };
        self.report.write_failures += !written as u64;
        self.frames.release(id);
        Ok(())
    }

    fn sample(&mut self, now: u64) {
        let t_ns = now / self.sample_step_ns * self.sample_step_ns;
        if let Some(radio) = &self.radio {
            for (path, (&ue, &cell)) in radio.ues.iter().zip(&radio.cells).enumerate() {
                let telemetry = radio.ran.telemetry(now, ue);
                let state = radio.ran.link_state(ue);
                let (sum, n) = std::mem::take(&mut self.step_latency[path]);
                self.report.ue_samples.push(UeSample {
                    t_ns,
                    ue: ue.0,
                    cell: cell.0,
                    sinr_db: telemetry.sinr_db,
                    rate_bps: telemetry.rate_bps,
                    los: state.is_some_and(|s| s.los),
                    outage: telemetry.outage,
                    rlc_bytes: telemetry.rlc_bytes,
                    ran_latency_ms: if n == 0 { f64::NAN } else { sum as f64 / n as f64 / 1e6 },
                });
            }
        }
        if let Some(proxy) = &self.proxy {
            for (_, x) in proxy.datapath.proxy().flow_samples(proxy.monotonic_start_ns + now) {
                self.report.proxy_samples.push(ProxySample {
                    t_ns,
                    fw_bytes: x.window_bytes,
                    buffered_bytes: x.buffered_bytes,
                    in_flight_bytes: x.in_flight_bytes,
                    rtt_min_ms: x.rtt_min_ns.map_or(f64::NAN, |ns| ns as f64 / 1e6),
                });
            }
        }
        // Queue ids as in the summary: per wired link, downlink then uplink.
        for i in 0..self.down.len() {
            for (k, hop) in [(2 * i, &mut self.down[i]), (2 * i + 1, &mut self.up[i])] {
                let (bytes, packets) = hop.queued(now);
                let rate_bps = hop.link.rate_bps();
                self.report.queue_samples.push(QueueSample { t_ns, queue: k as u32, bytes, packets, rate_bps });
            }
        }
    }

    fn next_deadline_ns(&self) -> u64 {
        let mut due = self.next_sample_ns;
        if let Some(radio) = &self.radio {
            due = radio.cells.iter().fold(due, |due, &c| due.min(radio.ran.next_deadline_ns(c)));
        }
        if let Some(telemetry) = &self.telemetry {
            due = due.min(telemetry.next_deadline_ns());
        }
        if let Some(proxy) = &self.proxy {
            if let Some(t) = proxy.datapath.next_deadline_ns() {
                due = due.min(t.saturating_sub(proxy.monotonic_start_ns));
            }
        }
        for hop in self.down.iter().chain(&self.up) {
            if let Some(at) = hop.next_deadline_ns() {
                due = due.min(at);
            }
        }
        for air in self.air_down.iter().chain(&self.air_up) {
            if let Some(&(at, _)) = air.front() {
                due = due.min(at);
            }
        }
        due
    }

    /// Sleeps up to `timeout_ns`, or until a frame arrives on any device.
    fn wait(&self, timeout_ns: u64) -> Result<(), EmuError> {
        let poll = |fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // A negative fd is ignored: the split proxy's device when there is none, paths past
        // the link's.
        let mut fds = [poll(-1); Side::MAX];
        fds[0] = poll(self.server_side.fd());
        fds[1] = poll(self.split.as_ref().map_or(-1, |s| s.device.fd()));
        for (fd, path) in fds[2..].iter_mut().zip(&self.paths) {
            *fd = poll(path.device.fd());
        }
        let timeout = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as i64, tv_nsec: (timeout_ns % 1_000_000_000) as i64 };
        // SAFETY: valid pollfds (a negative fd is ignored) and a timespec that outlive the call.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(EmuError::os("waiting for frames"));
        }
        Ok(())
    }
}

/// A datagram the proxy made becomes a frame, queued for routing from the proxy's node.
fn route_emitted(frames: &mut Frames, proxied: &mut Vec<(Toward, Packet)>, emitted: Emitted) {
    if let Emitted::Datagram { bytes, toward } = emitted {
        proxied.extend(frames.from_datagram(bytes).map(|p| (toward, p)));
    }
}

/// What the link's step runs next.
#[derive(Clone, Copy, Debug)]
enum Event {
    Slot,
    AirDown(usize),
    AirUp(usize),
    UpHop(usize),
    DownHop(usize),
    Read,
    Telemetry,
    ProxyTimer,
}

/// Writes the frames it is given until the link hangs up; returns how many the device
/// refused and how late it wrote them.
fn write_frames(mut tun: Tun, frames: Receiver<(u64, Vec<u8>)>, clock: &(dyn Fn() -> u64 + Sync)) -> Result<(u64, Lateness), EmuError> {
    let mut refused = 0;
    let mut lateness = Lateness::default();
    for (due, frame) in frames {
        lateness.record(clock().saturating_sub(due));
        refused += !tun.write(&frame)? as u64;
    }
    Ok((refused, lateness))
}

/// A device of the link: toward the server, the UE on a path, or the split proxy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Server,
    Ue(usize),
    Proxy,
}

impl Side {
    /// Devices a link has at most: the server's, the split proxy's, one per path.
    const MAX: usize = 2 + MAX_PATHS;

    /// Its index among the devices (for ordering and bookkeeping).
    fn index(self) -> usize {
        match self {
            Side::Server => 0,
            Side::Proxy => 1,
            Side::Ue(path) => 2 + path,
        }
    }
}
