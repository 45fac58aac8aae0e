//! The radio access network as one driven state machine (docs/models/ran.md): cells,
//! the UEs' bearers, the radio link of every leg, and the drive call
//! [`Ran::advance_to`] that runs every slot that is due.
//!
//! Per slot of a cell (its own grid, k · slot_ns from 0), for each attached UE
//! in attach order: channel state → CQI report → [`UeRadio`]; then
//! [`Cell::on_slot`] (AMC, scheduler, HARQ, RLC, PDCP); then the UE's radio
//! counters. Each cell has its own HARQ random stream, so a slot's outcome
//! does not depend on how the calls are spaced: advancing late, or over many
//! slots at once, gives the same outputs with the same times.

use millinet_channel::{CqiReporter, LinkChannel, LinkState};
use millinet_wire::aqm::Aqm;
use millinet_wire::Packet;
use rand_core::RngCore;

use crate::bearer::Bearer;
use crate::cell::{Cell, Detached, UeRadio};
use crate::config::{CellConfig, ConfigError, UeConfig};
use crate::error::RanError;
use crate::interference::{Beam, BeamGains, LinkSnr, SlotSinr, Victim};
use crate::output::{Direction, RanOutput};
use crate::rlc::Sdu;
use crate::stats::UeStats;
use crate::{CellId, UeId};
use millinet_wire::Telemetry;

/// The radio link of one leg: the channel between the UE and the cell, and the
/// UE's CQI reporting on it.
pub struct LegRadio {
    pub channel: LinkChannel,
    pub cqi: CqiReporter,
}

/// Per-UE radio counters over every slot of its serving cell (docs/outputs.md §2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RadioStats {
    pub slots: u64,
    pub los_slots: u64,
    pub outage_slots: u64,
    /// Σ R_e over those slots (telemetry's `rate_bps`), for the mean rate.
    pub rate_bps_sum: f64,
}

struct Leg {
    ue: UeId,
    radio: LegRadio,
    /// Before this time the leg is being set up (handover interruption): the
    /// cell buffers the UE's data but schedules nothing for it.
    resume_ns: u64,
    /// The channel at the latest slot.
    state: LinkState,
    /// SINR of the latest CQI report (−∞ before the first).
    reported_sinr_db: f64,
    /// Where cells interfere: the downlink SINR last computed, with its interference (without
    /// interference it is the SNR of `state`, read from there).
    sinr: SlotSinr,
    /// The leg's slots before this start are counted in its UE's [`RadioStats`] (while it
    /// carries the bearer); those since, with `state` and the cell's rate, which hold until
    /// the leg is next visited.
    counted_to_ns: u64,
}

impl Leg {
    /// The first slot start after `now_ns` at which the leg's radio may change: its channel,
    /// a CQI measurement or report, the end of its interruption.
    fn next_visit_ns(&self, now_ns: u64) -> u64 {
        let resume_ns = if self.resume_ns > now_ns { self.resume_ns } else { u64::MAX };
        self.radio.channel.next_change_ns().min(self.radio.cqi.next_event_ns()).min(resume_ns)
    }
}

/// One cell with what drives it.
struct Site<R> {
    cell: Cell,
    harq_rng: R,
    next_deadline_ns: u64,
    /// Same order as the cell's UEs.
    legs: Vec<Leg>,
    radio: Vec<UeRadio>,
    /// By position: the slot start at which the leg is next visited ([`Leg::next_visit_ns`]).
    /// A leg is not visited in the slots between: its radio holds, so an idle UE costs a
    /// comparison per slot (docs/models/ran.md#cost).
    visit_at: Vec<u64>,
    /// Positions visited in the slot scheduled last, ascending.
    due: Vec<usize>,
    /// Scratch: positions whose SINR a slot computes with interference.
    interfered: Vec<usize>,
    /// The other cells of its carrier (docs/models/ran.md#interference); empty: none interferes.
    interferers: Vec<CellId>,
    /// A slot scheduled (at this start time) and not yet sent, with what scheduling it
    /// output: a cell is scheduled ahead, at another cell's slot of the same time, when that
    /// cell needs its beams.
    scheduled: Option<u64>,
    scheduled_out: RanOutput,
    /// Changes whenever a UE attaches or detaches (the cell's positions change).
    version: u64,
    /// The beams of the slot scheduled last, with their targets' antennas (where cells
    /// interfere): what every victim of the instant sums over.
    beams: Vec<Beam>,
}

/// A cell a UE hears without a leg there: the radio link it measures it over, and what that
/// cell's beams do to it while the cell interferes.
struct Neighbour {
    cell: CellId,
    radio: LegRadio,
    gains: BeamGains,
    /// The link's SNR, kept until its channel may change ([`LinkChannel::next_change_ns`]):
    /// a UE sent to in every slot asks it of every interferer in every slot.
    snr: LinkSnr,
    snr_until_ns: u64,
}

impl Neighbour {
    fn new(cell: CellId, radio: LegRadio) -> Self {
        Neighbour { cell, radio, gains: BeamGains::default(), snr: LinkSnr::new(f64::NEG_INFINITY), snr_until_ns: 0 }
    }

    fn link_snr(&mut self, now_ns: u64) -> LinkSnr {
        if now_ns >= self.snr_until_ns {
            self.snr = LinkSnr::new(self.radio.channel.state(now_ns).sinr_db);
            self.snr_until_ns = self.radio.channel.next_change_ns();
        }
        self.snr
    }
}

impl<R> Site<R> {
    /// Add to `stats` the slots of the leg at `position` from its last count up to `to_ns`,
    /// at the channel state and rate it has held since; the rate is added slot by slot, so
    /// the sum is the one a visit every slot gave.
    fn count_slots(&self, position: usize, to_ns: u64, stats: &mut RadioStats) {
        let leg = &self.legs[position];
        let slots = (to_ns - leg.counted_to_ns) / self.cell.config().slot_ns;
        let rate_bps = self.cell.rate_bps_at(position);
        stats.slots += slots;
        stats.los_slots += slots * leg.state.los as u64;
        stats.outage_slots += slots * leg.state.outage as u64;
        for _ in 0..slots {
            stats.rate_bps_sum += rate_bps;
        }
    }

    /// The beams of the slot the cell scheduled last, by the UEs' positions now.
    fn aim_beams(&mut self) {
        self.beams.clear();
        let Some((_, _, transmissions)) = self.cell.beams() else { return };
        for t in transmissions {
            let Some(position) = self.cell.position_of(t.ue) else { continue };
            self.beams.push(Beam { position, share: t.share, target: self.legs[position].radio.channel.ue_antenna() });
        }
    }
}

struct UeContext {
    /// Cells with a leg of this UE, in attach order; the first carries the
    /// bearer's new data in both directions.
    cells: Vec<CellId>,
    /// Radio links to cells the UE measures without a leg there (docs/models/ran.md#handover-and-dual-connectivity).
    neighbours: Vec<Neighbour>,
    /// The configuration of its first leg; a handover gives the target leg the same.
    cfg: Option<UeConfig>,
    radio_stats: RadioStats,
    /// Counters of legs already detached.
    retired: UeStats,
}

pub struct Ran<R> {
    sites: Vec<Site<R>>,
    ues: Vec<UeContext>,
    /// By `UeId`; apart from `ues` so a cell can borrow them during a slot.
    bearers: Vec<Bearer>,
}

impl<R> Default for Ran<R> {
    fn default() -> Self {
        Ran { sites: Vec::new(), ues: Vec::new(), bearers: Vec::new() }
    }
}

impl<R: RngCore> Ran<R> {
    pub fn new() -> Self {
        Ran::default()
    }

    /// A gNB with its own HARQ random stream; ids 0, 1, 2, …
    pub fn add_cell(&mut self, cfg: CellConfig, harq_rng: R) -> Result<CellId, ConfigError> {
        let id = CellId(self.sites.len() as u32);
        let mut cell = Cell::new(cfg)?;
        cell.id = id;
        self.sites.push(Site {
            cell,
            harq_rng,
            next_deadline_ns: 0,
            legs: Vec::new(),
            radio: Vec::new(),
            visit_at: Vec::new(),
            due: Vec::new(),
            interfered: Vec::new(),
            interferers: Vec::new(),
            scheduled: None,
            scheduled_out: RanOutput::default(),
            version: 0,
            beams: Vec::new(),
        });
        Ok(id)
    }

    /// A UE with its bearer, attached nowhere yet; ids 0, 1, 2, …, kept for
    /// the whole run whatever cells it moves between.
    pub fn add_ue(&mut self) -> UeId {
        let id = UeId(self.ues.len() as u32);
        self.ues.push(UeContext {
            cells: Vec::new(),
            neighbours: Vec::new(),
            cfg: None,
            radio_stats: RadioStats::default(),
            retired: UeStats::default(),
        });
        self.bearers.push(Bearer::new());
        id
    }

    /// Give `ue` a leg on `cell` over `radio`. The first leg carries the bearer.
    /// A radio link the UE had to that cell as a neighbour is replaced by `radio`.
    pub fn attach(&mut self, ue: UeId, cell: CellId, cfg: UeConfig, radio: LegRadio) -> Result<(), RanError> {
        self.attach_leg(ue, cell, cfg, radio, 0)
    }

    fn attach_leg(&mut self, ue: UeId, cell: CellId, cfg: UeConfig, radio: LegRadio, resume_ns: u64) -> Result<(), RanError> {
        self.check_ue(ue)?;
        if cell.0 as usize >= self.sites.len() {
            return Err(RanError::UnknownCell(cell));
        }
        self.count_radio_slots(ue);
        let site = &mut self.sites[cell.0 as usize];
        site.cell.attach(ue, cfg)?;
        site.version += 1;
        site.legs.push(Leg {
            ue,
            radio,
            resume_ns,
            state: LinkState { los: true, outage: true, sinr_db: f64::NEG_INFINITY },
            reported_sinr_db: f64::NEG_INFINITY,
            sinr: SlotSinr::alone(f64::NEG_INFINITY),
            counted_to_ns: site.next_deadline_ns,
        });
        site.radio.push(UeRadio::OUTAGE);
        site.visit_at.push(0);
        let ctx = &mut self.ues[ue.index()];
        ctx.cells.push(cell);
        ctx.neighbours.retain(|n| n.cell != cell);
        ctx.cfg.get_or_insert(cfg);
        Ok(())
    }

    /// A radio link over which `ue` measures `cell` without a leg there (a
    /// handover candidate, docs/models/ran.md#handover-and-dual-connectivity).
    pub fn add_neighbour(&mut self, ue: UeId, cell: CellId, radio: LegRadio) -> Result<(), RanError> {
        self.check_ue(ue)?;
        if cell.0 as usize >= self.sites.len() {
            return Err(RanError::UnknownCell(cell));
        }
        let ctx = &mut self.ues[ue.index()];
        if ctx.cells.contains(&cell) || ctx.neighbours.iter().any(|n| n.cell == cell) {
            return Err(RanError::AlreadyMeasured { ue, cell });
        }
        ctx.neighbours.push(Neighbour::new(cell, radio));
        Ok(())
    }

    /// `cells` share a carrier: in every slot, each interferes with the UEs of the others
    /// (docs/models/ran.md#interference). A UE hears an interferer over its radio link to it
    /// ([`Ran::add_neighbour`]); one without such a link does not hear it.
    pub fn share_carrier(&mut self, cells: &[CellId]) -> Result<(), RanError> {
        if let Some(&unknown) = cells.iter().find(|c| c.0 as usize >= self.sites.len()) {
            return Err(RanError::UnknownCell(unknown));
        }
        for &c in cells {
            let others = cells.iter().copied().filter(|&o| o != c);
            let site = &mut self.sites[c.0 as usize];
            site.interferers.extend(others.filter(|o| !site.interferers.contains(o)).collect::<Vec<_>>());
        }
        Ok(())
    }

    /// The channel of every cell `ue` has a radio link to (legs first, then
    /// neighbours), evaluated at `now_ns`, appended to `out`.
    pub fn measure(&mut self, now_ns: u64, ue: UeId, out: &mut Vec<(CellId, LinkState)>) {
        let ctx = &mut self.ues[ue.index()];
        for &cell in &ctx.cells {
            let site = &mut self.sites[cell.0 as usize];
            let position = site.cell.position_of(ue).expect("a leg per attached cell");
            let leg = &mut site.legs[position];
            out.push((cell, leg.radio.channel.state(now_ns)));
        }
        for n in &mut ctx.neighbours {
            out.push((n.cell, n.radio.channel.state(now_ns)));
        }
    }

    /// Move `ue`'s bearer from its leg to the neighbour `to` at `now_ns` (a
    /// handover or a bearer switch, docs/models/ran.md#attach-detach-and-forwarding): the old leg is detached (its
    /// radio link stays, as a neighbour) and a new leg on `to` starts, which
    /// schedules nothing before `now_ns + interruption_ns`. Returns what the old
    /// leg had not delivered, for the caller to forward (see [`Ran::detach`]).
    pub fn hand_over(
        &mut self,
        now_ns: u64,
        ue: UeId,
        to: CellId,
        interruption_ns: u64,
        out: &mut RanOutput,
    ) -> Result<Detached, RanError> {
        let from = self.bearer_cell(ue)?;
        let ctx = &self.ues[ue.index()];
        if !ctx.neighbours.iter().any(|n| n.cell == to) {
            return Err(RanError::NotMeasured { ue, cell: to });
        }
        let cfg = ctx.cfg.expect("set by the first attach");
        let detached = self.detach(now_ns, ue, from, out)?;
        let ctx = &mut self.ues[ue.index()];
        let k = ctx.neighbours.iter().position(|n| n.cell == to).expect("checked above");
        let radio = ctx.neighbours.remove(k).radio;
        self.attach_leg(ue, to, cfg, radio, now_ns + interruption_ns)?;
        Ok(detached)
    }

    /// End `ue`'s leg on `cell` at `now_ns` (handover, docs/models/ran.md#attach-detach-and-forwarding); the UE keeps
    /// measuring the cell over the leg's radio link. Returns the
    /// SDUs that leg had not delivered, in order, with their COUNT: the caller
    /// forwards them to the UE's next leg with [`Ran::adopt`] (after the X2
    /// delay on the downlink). SDUs PDCP releases at the detach go to `out`.
    pub fn detach(&mut self, now_ns: u64, ue: UeId, cell: CellId, out: &mut RanOutput) -> Result<Detached, RanError> {
        self.check_ue(ue)?;
        let site = self.sites.get(cell.0 as usize).ok_or(RanError::UnknownCell(cell))?;
        let position = site.cell.position_of(ue).ok_or(RanError::NotAttached { ue, cell })?;
        self.count_radio_slots(ue);
        let site = &mut self.sites[cell.0 as usize];
        let detached = site.cell.detach(now_ns, ue, &mut self.bearers, out)?;
        let leg = site.legs.remove(position);
        site.radio.remove(position);
        site.visit_at.remove(position);
        site.due.retain(|&p| p != position);
        site.due.iter_mut().filter(|p| **p > position).for_each(|p| *p -= 1);
        site.version += 1;
        if !site.interferers.is_empty() {
            // Its UEs after it moved up: the beams of the instant keep their targets.
            site.aim_beams();
        }
        let ctx = &mut self.ues[ue.index()];
        ctx.cells.retain(|&c| c != cell);
        ctx.neighbours.push(Neighbour::new(cell, leg.radio));
        ctx.retired += &detached.stats;
        Ok(detached)
    }

    /// SDUs of `ue` returned by a detach reach its bearer's leg at `now_ns`
    /// and go ahead of its untransmitted data, keeping stamp and COUNT.
    pub fn adopt(&mut self, now_ns: u64, ue: UeId, direction: Direction, sdus: &[Sdu]) -> Result<(), RanError> {
        let cell = self.bearer_cell(ue)?;
        self.sites[cell.0 as usize].cell.adopt(now_ns, ue, direction, sdus)
    }

    /// Put an AQM on one of the buffers of `ue`'s leg on `cell`.
    pub fn set_aqm(&mut self, ue: UeId, cell: CellId, direction: Direction, aqm: Box<dyn Aqm>) -> Result<(), RanError> {
        let site = self.sites.get_mut(cell.0 as usize).ok_or(RanError::UnknownCell(cell))?;
        if !site.cell.is_attached(ue) {
            return Err(RanError::NotAttached { ue, cell });
        }
        site.cell.set_aqm(ue, direction, aqm);
        Ok(())
    }

    /// A packet from the core for `ue` reaches its bearer at `now_ns`. False
    /// when it is dropped: RLC buffer full, or the UE attached nowhere.
    #[inline]
    pub fn enqueue_downlink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        let Some(&cell) = self.ues[ue.index()].cells.first() else {
            return false;
        };
        self.sites[cell.0 as usize].cell.enqueue_downlink(now_ns, &mut self.bearers, ue, packet)
    }

    /// A packet from `ue`'s own stack reaches its bearer at `now_ns`.
    #[inline]
    pub fn enqueue_uplink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        let Some(&cell) = self.ues[ue.index()].cells.first() else {
            return false;
        };
        self.sites[cell.0 as usize].cell.enqueue_uplink(now_ns, &mut self.bearers, ue, packet)
    }

    /// Run, in time order (cells in id order at equal times), every slot of
    /// every cell that starts at or before `now_ns`. Outputs are appended to
    /// `out`, each with the time it takes effect (the end of its slot).
    pub fn advance_to(&mut self, now_ns: u64, out: &mut RanOutput) {
        loop {
            let due = self.sites.iter().enumerate().filter(|(_, s)| s.next_deadline_ns <= now_ns).min_by_key(|(_, s)| s.next_deadline_ns);
            let Some((c, _)) = due else { return };
            self.run_slot(c, out);
        }
    }

    /// [`Ran::advance_to`] for one cell only: a driver with one event per cell
    /// and slot calls this at [`Ran::next_deadline_ns`].
    pub fn advance_cell_to(&mut self, cell: CellId, now_ns: u64, out: &mut RanOutput) {
        let c = cell.0 as usize;
        while self.sites[c].next_deadline_ns <= now_ns {
            self.run_slot(c, out);
        }
    }

    /// Start of the next slot `cell` will run.
    pub fn next_deadline_ns(&self, cell: CellId) -> u64 {
        self.sites[cell.0 as usize].next_deadline_ns
    }

    fn run_slot(&mut self, c: usize, out: &mut RanOutput) {
        let now_ns = self.sites[c].next_deadline_ns;
        if self.sites[c].interferers.is_empty() {
            self.schedule(c, now_ns, false, out);
        } else {
            if self.sites[c].scheduled == Some(now_ns) {
                out.append(&mut self.sites[c].scheduled_out);
            } else {
                self.schedule(c, now_ns, true, out);
            }
            // The beams of this slot: every other cell of the carrier starting a slot now
            // decides it before this one is sent.
            for k in 0..self.sites[c].interferers.len() {
                let d = self.sites[c].interferers[k].0 as usize;
                let other = &mut self.sites[d];
                if other.next_deadline_ns == now_ns && other.scheduled != Some(now_ns) {
                    let mut pending = std::mem::take(&mut other.scheduled_out);
                    self.schedule(d, now_ns, true, &mut pending);
                    self.sites[d].scheduled_out = pending;
                }
            }
            self.interfere(c, now_ns);
        }
        let site = &mut self.sites[c];
        site.scheduled = None;
        for &position in &site.due {
            site.visit_at[position] = site.legs[position].next_visit_ns(now_ns);
        }
        // A downlink slot of a cell with interferers is received at the SINR `interfere` gave
        // the UEs sent to (outside an outage); otherwise at the channel's.
        let interfered = !site.interferers.is_empty() && matches!(site.cell.beams(), Some((_, Direction::Downlink, _)));
        let (radio, legs) = (&site.radio, &site.legs);
        let sinr_db = |position: usize| match radio[position].sinr_db {
            snr_db if interfered && snr_db != f64::NEG_INFINITY => legs[position].sinr.sinr_db,
            snr_db => snr_db,
        };
        site.cell.transmit(now_ns, sinr_db, &mut self.bearers, &mut site.harq_rng, out);
        site.next_deadline_ns = now_ns + site.cell.config().slot_ns;
    }

    /// Count the slots of `ue`'s bearer leg up to its cell's next slot in its [`RadioStats`],
    /// and start every leg of the UE counting from its cell's next slot: before its legs change.
    fn count_radio_slots(&mut self, ue: UeId) {
        let ctx = &mut self.ues[ue.index()];
        for (k, &cell) in ctx.cells.iter().enumerate() {
            let site = &mut self.sites[cell.0 as usize];
            let position = site.cell.position_of(ue).expect("a leg per attached cell");
            if k == 0 {
                site.count_slots(position, site.next_deadline_ns, &mut ctx.radio_stats);
            }
            site.legs[position].counted_to_ns = site.next_deadline_ns;
        }
    }

    /// Schedule cell `c`'s slot at `now_ns` from its UEs' channels and CQI reports. Without
    /// `interference`, the slot's SINR is the SNR and the CQI report measures it now; with
    /// it, both wait for [`Ran::interfere`], once every cell of the carrier has decided.
    ///
    /// Only the legs due a visit ([`Site::visit_at`]) are evaluated; the others' radio holds.
    fn schedule(&mut self, c: usize, now_ns: u64, interference: bool, out: &mut RanOutput) {
        let site = &mut self.sites[c];
        let cell = CellId(c as u32);
        site.due.clear();
        site.due.extend(site.visit_at.iter().enumerate().filter(|&(_, &at)| at <= now_ns).map(|(position, _)| position));
        for &position in &site.due {
            // The slots since the last visit, at the radio they had.
            let ctx = &mut self.ues[site.legs[position].ue.index()];
            if ctx.cells.first() == Some(&cell) {
                site.count_slots(position, now_ns, &mut ctx.radio_stats);
            }
            let leg = &mut site.legs[position];
            let radio = &mut site.radio[position];
            leg.counted_to_ns = now_ns;
            leg.state = leg.radio.channel.state(now_ns);
            let report = if interference { leg.radio.cqi.reported(now_ns) } else { leg.radio.cqi.update(now_ns, leg.state.sinr_db) };
            if let Some(reported) = report {
                leg.reported_sinr_db = reported;
            }
            let actual = if leg.state.outage { f64::NEG_INFINITY } else { leg.state.sinr_db };
            *radio =
                if now_ns < leg.resume_ns { UeRadio::OUTAGE } else { UeRadio { reported_sinr_db: leg.reported_sinr_db, sinr_db: actual } };
            site.cell.set_radio(position, *radio);
        }
        site.cell.schedule(now_ns, &mut self.bearers, out);
        site.scheduled = Some(now_ns);
        if interference {
            site.aim_beams();
        }
    }

    /// The downlink SINR of each UE of cell `c` in its slot at `now_ns`, with the interference
    /// of the other cells of its carrier as they transmit then: the actual SINR of a downlink
    /// slot and what the CQI report measures. Uplink slots keep the SNR (uplink interference,
    /// from other cells' UEs, is not modelled).
    fn interfere(&mut self, c: usize, now_ns: u64) {
        let (sites, ues) = (&mut self.sites, &mut self.ues);
        let downlink = matches!(sites[c].cell.beams(), Some((_, Direction::Downlink, _)));
        // Only where the SINR is used: a UE sent to now, or one whose CQI report measures now
        // (a visit is due then). Others keep the SINR last computed (what the `ues` table
        // samples).
        let mut candidates = std::mem::take(&mut sites[c].interfered);
        candidates.clear();
        candidates.extend(&sites[c].due);
        if downlink {
            candidates.extend(sites[c].beams.iter().map(|b| b.position));
        }
        candidates.sort_unstable();
        candidates.dedup();
        for &i in &candidates {
            let leg = &sites[c].legs[i];
            let ue = leg.ue;
            let sent = downlink && sites[c].beams.iter().any(|b| b.position == i);
            if !sent && !leg.radio.cqi.measures_at(now_ns) {
                continue;
            }
            let snr_db = leg.state.sinr_db;
            let ctx = &mut ues[ue.index()];
            let victim = leg.radio.channel.ue_antenna().map(|at| Victim {
                at,
                panel: ctx.cfg.expect("set by the first attach").panel,
                serving: leg.radio.channel.cell_antenna(),
            });
            let mut interference_over_noise = 0.0;
            if let Some(victim) = victim {
                for &d in &sites[c].interferers {
                    let other = &sites[d.0 as usize];
                    let Some((start_ns, Direction::Downlink, transmissions)) = other.cell.beams() else { continue };
                    if !(start_ns <= now_ns && now_ns < start_ns + other.cell.config().slot_ns) || transmissions.is_empty() {
                        continue;
                    }
                    let Some(n) = ctx.neighbours.iter_mut().find(|n| n.cell == d) else { continue };
                    let link_snr = n.link_snr(now_ns);
                    interference_over_noise += n.gains.interference_over_noise(
                        other.version,
                        &victim,
                        n.radio.channel.cell_antenna(),
                        &other.cell.config().panel,
                        link_snr,
                        other.legs.len(),
                        &other.beams,
                    );
                }
            }
            let leg = &mut sites[c].legs[i];
            leg.sinr = SlotSinr::with(snr_db, interference_over_noise);
            leg.radio.cqi.measure(now_ns, leg.sinr.sinr_db);
        }
        sites[c].interfered = candidates;
    }

    pub fn num_cells(&self) -> usize {
        self.sites.len()
    }

    pub fn num_ues(&self) -> usize {
        self.ues.len()
    }

    pub fn cell(&self, cell: CellId) -> &Cell {
        &self.sites[cell.0 as usize].cell
    }

    /// Cells with a leg of `ue`; the first carries its bearer.
    pub fn cells_of(&self, ue: UeId) -> &[CellId] {
        &self.ues[ue.index()].cells
    }

    /// The milliProxy record of `ue` from the cell carrying its bearer; an
    /// outage record when it is attached nowhere.
    pub fn telemetry(&self, now_ns: u64, ue: UeId) -> Telemetry {
        match self.ues[ue.index()].cells.first() {
            Some(c) => self.sites[c.0 as usize].cell.telemetry(now_ns, ue),
            None => Telemetry { t_ns: now_ns, rlc_bytes: 0, rate_bps: 0.0, sinr_db: f64::NEG_INFINITY, outage: true },
        }
    }

    /// The channel of `ue`'s bearer leg at that cell's latest slot.
    pub fn link_state(&self, ue: UeId) -> Option<LinkState> {
        let c = *self.ues[ue.index()].cells.first()?;
        let site = &self.sites[c.0 as usize];
        site.cell.position_of(ue).map(|position| site.legs[position].state)
    }

    /// The downlink SINR of `ue`'s bearer leg at that cell's latest slot, with its SIR and
    /// INR (without interference: the SNR, +∞ and −∞).
    pub fn slot_sinr(&self, ue: UeId) -> Option<SlotSinr> {
        let c = *self.ues[ue.index()].cells.first()?;
        let site = &self.sites[c.0 as usize];
        let leg = &site.legs[site.cell.position_of(ue)?];
        Some(if site.interferers.is_empty() { SlotSinr::alone(leg.state.sinr_db) } else { leg.sinr })
    }

    /// Whether any cell shares its carrier with another (and so computes interference).
    pub fn has_interference(&self) -> bool {
        self.sites.iter().any(|s| !s.interferers.is_empty())
    }

    /// Over every slot run so far.
    pub fn radio_stats(&self, ue: UeId) -> RadioStats {
        let ctx = &self.ues[ue.index()];
        let mut stats = ctx.radio_stats;
        if let Some(&cell) = ctx.cells.first() {
            let site = &self.sites[cell.0 as usize];
            let position = site.cell.position_of(ue).expect("a leg per attached cell");
            site.count_slots(position, site.next_deadline_ns, &mut stats);
        }
        stats
    }

    /// Counters of every leg `ue` has had, current and detached.
    pub fn ue_stats(&self, ue: UeId) -> UeStats {
        let ctx = &self.ues[ue.index()];
        let mut total = ctx.retired;
        for c in &ctx.cells {
            total += &self.sites[c.0 as usize].cell.ue_stats(ue);
        }
        total
    }

    /// SDUs of `ue` accepted and not yet delivered, dropped or returned by a
    /// detach: in its legs, or held by its receiving PDCP. Conservation:
    /// offered = delivered + dropped + forwarded + held.
    pub fn held_sdus(&self, ue: UeId, direction: Direction) -> usize {
        let in_legs: usize = self.ues[ue.index()].cells.iter().map(|c| self.sites[c.0 as usize].cell.held_sdus(ue, direction)).sum();
        in_legs + self.bearers[ue.index()].held_sdus(direction)
    }

    fn check_ue(&self, ue: UeId) -> Result<(), RanError> {
        if ue.index() < self.ues.len() {
            Ok(())
        } else {
            Err(RanError::UnknownUe(ue))
        }
    }

    fn bearer_cell(&self, ue: UeId) -> Result<CellId, RanError> {
        self.check_ue(ue)?;
        self.ues[ue.index()].cells.first().copied().ok_or(RanError::Detached(ue))
    }
}
