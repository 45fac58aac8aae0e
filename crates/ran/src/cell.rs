//! One gNB cell: MAC scheduler, HARQ and RLC of the legs of the UEs attached
//! to it, both directions (docs/models/ran.md). The UEs' bearers (PDCP) are not the
//! cell's: the caller passes them in, indexed by `UeId`. [`crate::Ran`] calls
//! [`Cell::on_slot`] once per slot.

use millinet_wire::Packet;
use rand_core::RngCore;

use crate::active::ActiveSet;
use crate::amc::{self, AmcChoice};
use millinet_wire::aqm::Aqm;

use crate::bearer::Bearer;
use crate::config::{CellConfig, ConfigError, UeConfig};
use crate::error::RanError;
use crate::harq::{HarqEntity, Outcome};
use crate::output::{Delivery, Direction, Dropped, RanOutput};
use crate::pdcp::{PdcpRx, PdcpTx};
use crate::rlc::{RlcEntity, RlcSink, Sdu};
use crate::scheduler::{self, Candidate, Grant, Scheduler, Served};
use crate::stats::{DirStats, DropReason, UeStats};
use crate::tdd::{SlotPlan, Tdd, TddConfig};
use crate::uplink::SchedulingRequest;
use crate::{CellId, UeId, SHARE_EPS};
use millinet_wire::Telemetry;

/// Radio state of one UE for one slot, computed by the caller with the
/// channel crate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UeRadio {
    /// SINR carried by the last CQI report the gNB has received (dB): AMC and
    /// scheduling use it.
    pub reported_sinr_db: f64,
    /// Actual SINR during this slot (dB): decides HARQ success. −∞ or below the
    /// outage threshold means no signal.
    pub sinr_db: f64,
}

impl UeRadio {
    /// No report yet and no signal.
    pub const OUTAGE: UeRadio = UeRadio { reported_sinr_db: f64::NEG_INFINITY, sinr_db: f64::NEG_INFINITY };
}

/// One direction of a UE's leg on this cell: RLC + HARQ (the bearer's PDCP is
/// the UE's).
struct Link {
    rlc: RlcEntity,
    harq: HarqEntity,
    aqm: Option<Box<dyn Aqm>>,
    stats: DirStats,
    /// Last slot this direction got resources (counts `slots_scheduled` once).
    scheduled_slot: Option<u64>,
}

impl Link {
    fn new(cfg: &UeConfig, limit_bytes: u64, processes: usize) -> Self {
        Link {
            rlc: RlcEntity::new(cfg, limit_bytes),
            harq: HarqEntity::new(processes),
            aqm: None,
            stats: DirStats::default(),
            scheduled_slot: None,
        }
    }

    /// PDCP stamps the SDU and hands it to RLC; false when the buffer refused it.
    // On every radio packet's path: inlined rather than called.
    #[inline]
    fn enqueue(&mut self, now_ns: u64, pdcp: &mut PdcpTx, mut packet: Packet) -> bool {
        let bytes = packet.wire_bytes();
        self.stats.sdus_offered += 1;
        self.stats.bytes_offered += u64::from(bytes);
        let count = pdcp.stamp(now_ns, &mut packet);
        let accepted = self.rlc.enqueue(Sdu { packet, count, bytes });
        if accepted {
            pdcp.commit();
        } else {
            self.stats.count_drop(DropReason::Overflow);
        }
        accepted
    }

    fn is_idle(&self, now_ns: u64) -> bool {
        self.rlc.is_idle() && self.harq.is_idle(now_ns)
    }

    /// Nothing a slot could act on: no data on either side of RLC, no TB in HARQ (a process
    /// still waiting for its feedback matters only to data that would come).
    fn is_empty(&self) -> bool {
        self.rlc.is_idle() && !self.harq.holds_tb()
    }
}

/// The receiving side's exit: the bearer's PDCP (in-order delivery, duplicate
/// discard), counters, output. Everything it records takes effect at `at_ns`.
struct Sink<'a> {
    ue: UeId,
    cell: CellId,
    at_ns: u64,
    direction: Direction,
    pdcp_rx: &'a mut PdcpRx,
    stats: &'a mut DirStats,
    delivered: &'a mut Vec<Delivery>,
    dropped: &'a mut Vec<Dropped>,
}

impl Sink<'_> {
    fn record_drop(&mut self, sdu: Sdu, reason: DropReason) {
        self.stats.count_drop(reason);
        self.dropped.push(Dropped {
            ue: self.ue,
            cell: self.cell,
            at_ns: self.at_ns,
            direction: self.direction,
            reason,
            packet: sdu.packet,
        });
    }
}

/// What PDCP hands to the layer above: counted and output.
fn hand_up<'a>((ue, cell, at_ns): (UeId, CellId, u64), stats: &'a mut DirStats, delivered: &'a mut Vec<Delivery>) -> impl FnMut(Sdu) + 'a {
    move |sdu| {
        stats.sdus_delivered += 1;
        stats.bytes_delivered += u64::from(sdu.bytes);
        delivered.push(Delivery { ue, cell, at_ns, packet: sdu.packet });
    }
}

impl RlcSink for Sink<'_> {
    fn deliver(&mut self, sdu: Sdu) {
        let to = (self.ue, self.cell, self.at_ns);
        if !self.pdcp_rx.receive(sdu, hand_up(to, self.stats, self.delivered)) {
            self.record_drop(sdu, DropReason::Duplicate);
        }
    }

    fn drop_sdu(&mut self, sdu: Sdu, reason: DropReason) {
        self.record_drop(sdu, reason);
        let to = (self.ue, self.cell, self.at_ns);
        self.pdcp_rx.skip(sdu.count, hand_up(to, self.stats, self.delivered));
    }

    fn marked(&mut self, _sdu: &Sdu) {
        self.stats.aqm_marks += 1;
    }
}

/// Split borrows of one link, its UE's bearer and the output it writes to.
macro_rules! sink {
    ($ue:expr, $cell:expr, $at_ns:expr, $dir:expr, $link:expr, $bearer:expr, $out:expr) => {
        Sink {
            ue: $ue,
            cell: $cell,
            at_ns: $at_ns,
            direction: $dir,
            pdcp_rx: $bearer.rx($dir),
            stats: &mut $link.stats,
            delivered: match $dir {
                Direction::Downlink => &mut $out.downlink,
                Direction::Uplink => &mut $out.uplink,
            },
            dropped: &mut $out.dropped,
        }
    };
}

/// A UE's leg on this cell.
struct Ue {
    id: UeId,
    radio: UeRadio,
    /// AMC for `radio.reported_sinr_db`; `None` in outage. Recomputed only
    /// when a new report arrives (every CQI period, not every slot).
    amc: Option<AmcChoice>,
    dl: Link,
    ul: Link,
    sr: SchedulingRequest,
}

impl Ue {
    fn link(&mut self, direction: Direction) -> &mut Link {
        match direction {
            Direction::Downlink => &mut self.dl,
            Direction::Uplink => &mut self.ul,
        }
    }

    /// Whether this UE could use a slot of `direction` at `now_ns`.
    fn wants(&self, direction: Direction, now_ns: u64) -> bool {
        if self.amc.is_none() {
            return false;
        }
        let link = match direction {
            Direction::Downlink => &self.dl,
            Direction::Uplink => &self.ul,
        };
        link.harq.retx_due(now_ns) || self.has_new_data(direction, link, now_ns)
    }

    /// New data (or RLC retransmissions) the gNB may schedule, with a HARQ process free for it.
    fn has_new_data(&self, direction: Direction, link: &Link, now_ns: u64) -> bool {
        link.rlc.queued_bytes() > 0
            && (direction == Direction::Downlink || self.sr.granted(now_ns))
            && link.harq.free_process(now_ns).is_some()
    }
}

/// What a detach hands back (docs/models/ran.md#attach-detach-and-forwarding).
#[derive(Debug, Default)]
pub struct Detached {
    /// Downlink SDUs not delivered to the UE, in order, with their COUNT: for
    /// the caller to forward (X2) to the UE's next leg with [`crate::Ran::adopt`].
    pub downlink: Vec<Sdu>,
    /// Uplink SDUs the gNB has not received in sequence, in order: the UE's
    /// PDCP sends them again on its next leg (TS 38.323 §5.1.2).
    pub uplink: Vec<Sdu>,
    /// The leg's final counters.
    pub stats: UeStats,
}

pub struct Cell {
    pub(crate) id: CellId,
    cfg: CellConfig,
    /// Legs in attach order (the scheduler's positions).
    ues: Vec<Ue>,
    /// UeId → position in `ues`; `u32::MAX` when not attached.
    position: Vec<u32>,
    /// Positions with data or a TB: the only UEs a slot visits.
    active: ActiveSet,
    dl_scheduler: Box<dyn Scheduler>,
    ul_scheduler: Box<dyn Scheduler>,
    tdd: Tdd,
    /// UE that goes first for HARQ retransmissions; rotates every slot so no
    /// UE's retransmissions always win when they do not all fit.
    retx_first: usize,
    /// The slot scheduled last: its start, direction and transmissions. They are sent once
    /// the slot's SINRs are known ([`Cell::transmit`]) and stay listed, as the beams the cell
    /// points during that slot, until the next one is scheduled.
    slot: Option<(u64, Direction)>,
    transmissions: Vec<Transmission>,
    // Scratch vectors reused every slot.
    visit: Vec<usize>,
    candidates: Vec<Candidate>,
    grants: Vec<Grant>,
    served: Vec<Served>,
}

/// A TB a slot carries: HARQ process `process` of `ue`'s link, on `share` of the slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transmission {
    pub ue: UeId,
    process: usize,
    pub share: f64,
}

impl Cell {
    pub fn new(cfg: CellConfig) -> Result<Cell, ConfigError> {
        cfg.validate()?;
        let make = || scheduler::by_name(&cfg.scheduler).expect("validated");
        Ok(Cell {
            id: CellId(0),
            position: Vec::new(),
            active: ActiveSet::default(),
            dl_scheduler: make(),
            ul_scheduler: make(),
            cfg,
            ues: Vec::new(),
            tdd: Tdd::default(),
            retx_first: 0,
            slot: None,
            transmissions: Vec::new(),
            visit: Vec::new(),
            candidates: Vec::new(),
            grants: Vec::new(),
            served: Vec::new(),
        })
    }

    pub fn config(&self) -> &CellConfig {
        &self.cfg
    }

    pub fn id(&self) -> CellId {
        self.id
    }

    /// Attach `ue` with a new leg (empty RLC and HARQ). Its bearer is the
    /// caller's `bearers[ue]` from then on.
    pub fn attach(&mut self, ue: UeId, cfg: UeConfig) -> Result<(), RanError> {
        if self.position_of(ue).is_some() {
            return Err(RanError::AlreadyAttached { ue, cell: self.id });
        }
        cfg.validate()?;
        let p = self.cfg.harq.processes;
        if self.position.len() <= ue.index() {
            self.position.resize(ue.index() + 1, u32::MAX);
        }
        self.position[ue.index()] = self.ues.len() as u32;
        self.active.grow_to(self.ues.len() + 1);
        self.ues.push(Ue {
            id: ue,
            radio: UeRadio::OUTAGE,
            amc: None,
            dl: Link::new(&cfg, cfg.dl_buffer_bytes, p),
            ul: Link::new(&cfg, cfg.ul_buffer_bytes, p),
            sr: SchedulingRequest::default(),
        });
        self.dl_scheduler.add_ue();
        self.ul_scheduler.add_ue();
        Ok(())
    }

    /// End `ue`'s leg at `now_ns`: RLC re-establishment on both sides
    /// ([`RlcEntity::re_establish`]). What PDCP releases by it goes to `out`
    /// at `now_ns`; the undelivered SDUs come back in order.
    pub fn detach(&mut self, now_ns: u64, ue: UeId, bearers: &mut [Bearer], out: &mut RanOutput) -> Result<Detached, RanError> {
        let pos = self.position_of(ue).ok_or(RanError::NotAttached { ue, cell: self.id })?;
        let mut u = self.ues.remove(pos);
        self.position[ue.index()] = u32::MAX;
        for later in &self.ues[pos..] {
            self.position[later.id.index()] -= 1;
        }
        self.active.remove_shifting(pos);
        self.dl_scheduler.remove_ue(pos);
        self.ul_scheduler.remove_ue(pos);
        if self.retx_first >= self.ues.len() {
            self.retx_first = 0;
        }
        let mut detached = Detached::default();
        let bearer = &mut bearers[ue.index()];
        for dir in [Direction::Downlink, Direction::Uplink] {
            let forward = match dir {
                Direction::Downlink => &mut detached.downlink,
                Direction::Uplink => &mut detached.uplink,
            };
            let link = u.link(dir);
            let kept = link.rlc.re_establish(&mut sink!(ue, self.id, now_ns, dir, link, bearer, out), forward);
            link.stats.sdus_forwarded += kept;
        }
        detached.stats = UeStats { downlink: u.dl.stats, uplink: u.ul.stats };
        Ok(detached)
    }

    /// SDUs forwarded from `ue`'s previous leg go ahead of everything this leg
    /// has not sent yet, keeping their PDCP stamp and COUNT.
    pub fn adopt(&mut self, now_ns: u64, ue: UeId, direction: Direction, sdus: &[Sdu]) -> Result<(), RanError> {
        let pos = self.position_of(ue).ok_or(RanError::NotAttached { ue, cell: self.id })?;
        if sdus.is_empty() {
            return Ok(());
        }
        self.active.insert(pos);
        let u = &mut self.ues[pos];
        let was_empty = u.ul.rlc.queued_bytes() == 0;
        let link = u.link(direction);
        link.rlc.adopt(sdus);
        link.stats.sdus_offered += sdus.len() as u64;
        link.stats.bytes_offered += sdus.iter().map(|s| u64::from(s.bytes)).sum::<u64>();
        if direction == Direction::Uplink {
            u.sr.on_enqueue(now_ns, was_empty, self.cfg.sr_delay_ns);
        }
        Ok(())
    }

    /// Attached UEs in attach order.
    pub fn ues(&self) -> impl Iterator<Item = UeId> + '_ {
        self.ues.iter().map(|u| u.id)
    }

    pub fn num_ues(&self) -> usize {
        self.ues.len()
    }

    pub fn is_attached(&self, ue: UeId) -> bool {
        self.position_of(ue).is_some()
    }

    #[inline]
    pub(crate) fn position_of(&self, ue: UeId) -> Option<usize> {
        position_in(&self.position, ue)
    }

    /// The leg of an attached UE; panics otherwise (a caller's bookkeeping error).
    #[inline]
    fn ue(&self, ue: UeId) -> &Ue {
        &self.ues[self.position_of(ue).expect("UE attached to this cell")]
    }

    /// The per-packet path: an unattached UE's position (`u32::MAX`) fails the
    /// bounds check just like an unknown id.
    #[inline]
    fn ue_mut(&mut self, ue: UeId) -> &mut Ue {
        &mut self.ues[self.position[ue.index()] as usize]
    }

    /// Put an AQM on one of the UE's transmission buffers (drop-tail without).
    pub fn set_aqm(&mut self, ue: UeId, direction: Direction, aqm: Box<dyn Aqm>) {
        self.ue_mut(ue).link(direction).aqm = Some(aqm);
    }

    /// A packet from the core for `ue` reaches PDCP at the gNB. Returns false
    /// when the RLC buffer is full and the packet is dropped.
    #[inline]
    pub fn enqueue_downlink(&mut self, now_ns: u64, bearers: &mut [Bearer], ue: UeId, packet: Packet) -> bool {
        let pdcp = bearers[ue.index()].tx(Direction::Downlink);
        let position = self.position[ue.index()] as usize;
        self.active.insert(position);
        self.ues[position].dl.enqueue(now_ns, pdcp, packet)
    }

    /// A packet from the UE's own stack (ACKs, uplink payload) reaches PDCP at
    /// the UE. Returns false when the UE's buffer is full.
    #[inline]
    pub fn enqueue_uplink(&mut self, now_ns: u64, bearers: &mut [Bearer], ue: UeId, packet: Packet) -> bool {
        let sr_delay_ns = self.cfg.sr_delay_ns;
        let pdcp = bearers[ue.index()].tx(Direction::Uplink);
        let position = self.position[ue.index()] as usize;
        self.active.insert(position);
        let u = &mut self.ues[position];
        let was_empty = u.ul.rlc.queued_bytes() == 0;
        let accepted = u.ul.enqueue(now_ns, pdcp, packet);
        if accepted {
            u.sr.on_enqueue(now_ns, was_empty, sr_delay_ns);
        }
        accepted
    }

    /// Run the slot `[now_ns, now_ns + slot_ns)`: [`Cell::schedule`] it, then
    /// [`Cell::transmit`] it at the SINRs of `radio`. Returns the direction it served.
    pub fn on_slot(
        &mut self,
        now_ns: u64,
        radio: &[UeRadio],
        bearers: &mut [Bearer],
        rng: &mut impl RngCore,
        out: &mut RanOutput,
    ) -> Direction {
        assert_eq!(radio.len(), self.ues.len(), "one UeRadio per UE");
        for (position, &r) in radio.iter().enumerate() {
            self.set_radio(position, r);
        }
        let direction = self.schedule(now_ns, bearers, out);
        self.transmit(now_ns, |position| radio[position].sinr_db, bearers, rng, out);
        direction
    }

    /// The radio state of the UE at `position` (attach order, [`Cell::ues`]) from now on: its
    /// AMC follows a new CQI report. The caller sets it when it changes, whether or not the UE
    /// has traffic (its telemetry reports the rate).
    #[inline]
    pub fn set_radio(&mut self, position: usize, radio: UeRadio) {
        let ue = &mut self.ues[position];
        if ue.radio.reported_sinr_db.to_bits() != radio.reported_sinr_db.to_bits() {
            ue.amc = amc::choose(&self.cfg.link, self.cfg.outage_sinr_db, radio.reported_sinr_db);
        }
        ue.radio = radio;
    }

    /// Decide the slot `[now_ns, now_ns + slot_ns)` (docs/models/ran.md#scheduler): RLC timers,
    /// the TDD direction, HARQ retransmissions first, then new data through the scheduler (AMC
    /// on the reported SINRs [`Cell::set_radio`] set), whose TBs RLC builds now; `bearers` are
    /// all UEs' bearers by `UeId`. Only UEs with data or a TB are visited: for the others
    /// every step is empty. Nothing is sent yet: the decision does not depend on the slot's
    /// actual SINR, which interference from the other cells' decisions of the same slot sets.
    /// What the decision outputs (AQM drops, RLC timers) is appended to `out`, at the end of
    /// the slot.
    pub fn schedule(&mut self, now_ns: u64, bearers: &mut [Bearer], out: &mut RanOutput) -> Direction {
        let slot_ns = self.cfg.slot_ns;
        let at_ns = now_ns + slot_ns;
        let cell = self.id;

        self.visit.clear();
        let (ues, visit) = (&mut self.ues, &mut self.visit);
        self.active.retain(|position| {
            let ue = &mut ues[position];
            // RLC timers on both sides: status reports (AM), reordering (UM).
            let id = ue.id;
            let bearer = &mut bearers[id.index()];
            for dir in [Direction::Downlink, Direction::Uplink] {
                let link = ue.link(dir);
                let nacked = link.rlc.on_timers(now_ns, &mut sink!(id, cell, at_ns, dir, link, bearer, out));
                link.stats.rlc_retx_segments += nacked.segments;
                link.stats.rlc_retx_bytes += nacked.bytes;
            }
            let active = !(ue.dl.is_empty() && ue.ul.is_empty());
            if active {
                visit.push(position);
            }
            active
        });

        let plan = match &self.cfg.tdd {
            TddConfig::Dynamic { .. } => {
                let wants = |dir| self.visit.iter().any(|&p| self.ues[p].wants(dir, now_ns));
                let (dl, ul) = (wants(Direction::Downlink), wants(Direction::Uplink));
                self.tdd.plan(&self.cfg.tdd, now_ns / slot_ns, dl, ul)
            }
            pattern => self.tdd.plan(pattern, now_ns / slot_ns, false, false),
        };
        self.transmissions.clear();
        self.slot = Some((now_ns, plan.direction));
        self.allocate(now_ns, plan, bearers, out);
        plan.direction
    }

    /// Give the slot's resources to HARQ retransmissions first, then to new
    /// data through the scheduler: the slot's transmissions.
    fn allocate(&mut self, now_ns: u64, plan: SlotPlan, bearers: &mut [Bearer], out: &mut RanOutput) {
        let dir = plan.direction;
        let slot_ns = self.cfg.slot_ns;
        let slot_s = slot_ns as f64 * 1e-9;
        let rate_scale = match dir {
            Direction::Downlink => 1.0,
            Direction::Uplink => self.cfg.ul_fraction,
        };
        let mut left = plan.share;
        let cell = self.id;

        // HARQ retransmissions go first (TS 38.321 §5.3.2.1: a pending
        // retransmission is served before new data), with their original size.
        // In position order from `retx_first`, wrapping round.
        let n = self.ues.len();
        let split = self.visit.partition_point(|&p| p < self.retx_first);
        for &i in self.visit[split..].iter().chain(&self.visit[..split]) {
            let ue = &mut self.ues[i];
            if ue.amc.is_none() {
                continue;
            }
            let id = ue.id;
            let link = ue.link(dir);
            while let Some(p) = link.harq.due_retx(now_ns, left) {
                let share = link.harq.process(p).share;
                left -= share;
                link.harq.claim_retx(p, &mut link.stats);
                self.transmissions.push(Transmission { ue: id, process: p, share });
                note_scheduled(link, now_ns, share);
            }
        }
        if n > 0 {
            self.retx_first = (self.retx_first + 1) % n;
        }

        if left > SHARE_EPS {
            self.candidates.clear();
            for &i in &self.visit {
                let ue = &self.ues[i];
                let Some(amc) = ue.amc else { continue };
                let link = match dir {
                    Direction::Downlink => &ue.dl,
                    Direction::Uplink => &ue.ul,
                };
                if !ue.has_new_data(dir, link, now_ns) {
                    continue;
                }
                let rate_bps = amc.rate_bps * rate_scale;
                let need_share = link.rlc.queued_bytes() as f64 * 8.0 / (rate_bps * slot_s);
                self.candidates.push(Candidate { ue: i, rate_bps, need_share });
            }
            if !self.candidates.is_empty() {
                self.grants.clear();
                let sched = match dir {
                    Direction::Downlink => &mut self.dl_scheduler,
                    Direction::Uplink => &mut self.ul_scheduler,
                };
                sched.allocate(now_ns, left, &self.candidates, &mut self.grants);
                for g in &self.grants {
                    let ue = &mut self.ues[g.ue];
                    let amc = ue.amc.expect("candidates are not in outage");
                    // Bytes = R × slot × share, rounded down (never more than
                    // the rate); the tiny slack absorbs float error when the
                    // share was computed to empty the queue exactly.
                    let tbs = (amc.rate_bps * rate_scale * slot_s * g.share / 8.0 + 1e-6).floor();
                    let budget = tbs.min(u32::MAX as f64) as u32;
                    if budget == 0 {
                        continue;
                    }
                    let id = ue.id;
                    let bearer = &mut bearers[id.index()];
                    let link = ue.link(dir);
                    let p = link.harq.free_process(now_ns).expect("candidates have a free process");
                    let used = link.rlc.build_tb(
                        now_ns,
                        budget,
                        link.aqm.as_deref_mut(),
                        link.harq.tb_mut(p),
                        &mut sink!(id, cell, now_ns + slot_ns, dir, link, bearer, out),
                    );
                    if used == 0 {
                        continue; // the AQM dropped everything there was
                    }
                    link.harq.start(p, used, g.share, amc.sinr_req_db);
                    self.transmissions.push(Transmission { ue: id, process: p, share: g.share });
                    note_scheduled(link, now_ns, g.share);
                }
            }
        }
    }

    /// Send the transmissions of the slot scheduled at `now_ns`, in the order they were
    /// scheduled, while the UE at position `p` has the actual SINR `sinr_db(p)` (HARQ decides
    /// with it; `rng` is the HARQ error stream). What is decoded is appended to `out`, at the
    /// end of the slot. A UE detached since the slot was scheduled took its TBs with it.
    pub fn transmit(
        &mut self,
        now_ns: u64,
        sinr_db: impl Fn(usize) -> f64,
        bearers: &mut [Bearer],
        rng: &mut impl RngCore,
        out: &mut RanOutput,
    ) {
        let Some((scheduled_ns, dir)) = self.slot else { return };
        debug_assert_eq!(scheduled_ns, now_ns, "the slot sent is the one scheduled");
        let cell = self.id;
        self.served.clear();
        for t in &self.transmissions {
            let Some(position) = position_in(&self.position, t.ue) else {
                continue;
            };
            let ue = &mut self.ues[position];
            let bearer = &mut bearers[t.ue.index()];
            let link = ue.link(dir);
            self.served.push(transmit(
                (position, t.ue, cell),
                dir,
                link,
                bearer,
                t.process,
                now_ns,
                sinr_db(position),
                &self.cfg,
                rng,
                out,
            ));
        }
        let sched = match dir {
            Direction::Downlink => &mut self.dl_scheduler,
            Direction::Uplink => &mut self.ul_scheduler,
        };
        sched.end_slot(now_ns, self.cfg.slot_ns, &self.served);
    }

    /// The slot scheduled last, `(start, direction)`, and the beams it points: each
    /// transmission's UE with its share of the slot.
    pub fn beams(&self) -> Option<(u64, Direction, &[Transmission])> {
        self.slot.map(|(start, dir)| (start, dir, self.transmissions.as_slice()))
    }

    /// The milliProxy telemetry record of `ue` (docs/telemetry.md).
    pub fn telemetry(&self, now_ns: u64, ue: UeId) -> Telemetry {
        let u = self.ue(ue);
        Telemetry {
            t_ns: now_ns,
            rlc_bytes: u.dl.rlc.queued_bytes(),
            rate_bps: u.amc.map_or(0.0, |a| a.rate_bps),
            sinr_db: u.radio.reported_sinr_db,
            outage: u.amc.is_none(),
        }
    }

    /// R_e of the leg at `position` (attach order), as in its telemetry.
    #[inline]
    pub(crate) fn rate_bps_at(&self, position: usize) -> f64 {
        self.ues[position].amc.map_or(0.0, |a| a.rate_bps)
    }

    /// RLC occupancy B of one direction: bytes awaiting (re)transmission.
    pub fn rlc_bytes(&self, ue: UeId, direction: Direction) -> u64 {
        self.link(ue, direction).rlc.queued_bytes()
    }

    /// SDUs accepted and neither delivered nor dropped yet (in the buffer, in
    /// HARQ or waiting for reassembly).
    pub fn held_sdus(&self, ue: UeId, direction: Direction) -> usize {
        self.link(ue, direction).rlc.held_sdus()
    }

    /// Bytes in TBs held by HARQ processes.
    pub fn harq_bytes(&self, ue: UeId, direction: Direction) -> u64 {
        self.link(ue, direction).harq.bytes_in_flight()
    }

    pub fn ue_stats(&self, ue: UeId) -> UeStats {
        let u = self.ue(ue);
        UeStats { downlink: u.dl.stats, uplink: u.ul.stats }
    }

    /// Sum over the cell's UEs.
    pub fn cell_stats(&self) -> UeStats {
        let mut total = UeStats::default();
        for u in &self.ues {
            total += &UeStats { downlink: u.dl.stats, uplink: u.ul.stats };
        }
        total
    }

    /// Nothing queued, in flight or timed in any UE: the engine may stop
    /// calling `on_slot` until the next enqueue (every model state is kept in
    /// absolute time, so skipped slots change nothing).
    pub fn is_idle(&self, now_ns: u64) -> bool {
        self.ues.iter().all(|u| u.dl.is_idle(now_ns) && u.ul.is_idle(now_ns))
    }

    fn link(&self, ue: UeId, direction: Direction) -> &Link {
        let u = self.ue(ue);
        match direction {
            Direction::Downlink => &u.dl,
            Direction::Uplink => &u.ul,
        }
    }
}

/// Send the TB in HARQ process `p` of the UE at `position` with id `ue` and
/// act on the outcome: decoded → RLC receives it at the end of the slot; given
/// up → RLC learns of the loss.
#[allow(clippy::too_many_arguments)]
fn transmit(
    (position, ue, cell): (usize, UeId, CellId),
    dir: Direction,
    link: &mut Link,
    bearer: &mut Bearer,
    p: usize,
    now_ns: u64,
    sinr_now_db: f64,
    cfg: &CellConfig,
    rng: &mut impl RngCore,
    out: &mut RanOutput,
) -> Served {
    let decoded_ns = now_ns + cfg.slot_ns;
    let outcome = link.harq.transmit(p, now_ns, sinr_now_db, cfg.outage_sinr_db, &cfg.harq, rng, &mut link.stats);
    let bits = u64::from(link.harq.process(p).tb_bytes) * 8;
    match outcome {
        Outcome::Decoded => {
            let tb = &link.harq.process(p).tb;
            link.rlc.on_received(decoded_ns, tb, &mut sink!(ue, cell, decoded_ns, dir, link, bearer, out));
            link.harq.release(p);
        }
        Outcome::GiveUp => {
            link.rlc.on_lost(decoded_ns, &link.harq.process(p).tb);
            link.harq.release(p);
        }
        Outcome::Retry => {}
    }
    Served { ue: position, bits }
}

/// `ue`'s position in a cell's `position` table, if attached.
#[inline]
fn position_in(position: &[u32], ue: UeId) -> Option<usize> {
    position.get(ue.index()).filter(|&&p| p != u32::MAX).map(|&p| p as usize)
}

fn note_scheduled(link: &mut Link, now_ns: u64, share: f64) {
    link.stats.slot_share += share;
    if link.scheduled_slot != Some(now_ns) {
        link.scheduled_slot = Some(now_ns);
        link.stats.slots_scheduled += 1;
    }
}
