//! Handover and dual connectivity in the simulation (ran.md §7). Every measurement period
//! each UE that hears several cells measures them all and its `ServingCellControl` decides;
//! a switch is carried out here: the RAN moves the bearer to the target cell
//! (`Ran::hand_over`, which interrupts the new leg), the source cell's undelivered downlink
//! reaches the target after the X2 delay, and the routes toward the UE turn to the target
//! cell while the source cell sends what still reaches it over an X2 link to the target, so
//! nothing already in the core is lost.

use millinet_ran::{Direction, RanOutput, Sdu, Switch, SwitchKind};
use millinet_scenario::radio::HandoverSpec;
use millinet_scenario::translate::rlc_codel;

use super::*;

/// One handover or bearer switch, as summary.json and the `mobility` table report it.
#[derive(Clone, Copy, Debug)]
pub(super) struct SwitchRecord {
    pub t_ns: u64,
    pub ue: UeId,
    pub kind: SwitchKind,
    pub from: CellId,
    pub to: CellId,
    pub interruption_ns: u64,
    /// Downlink SDUs (and their bytes) the source cell forwarded over X2.
    pub sdus_forwarded: u64,
    pub bytes_forwarded: u64,
}

/// The handover machinery's own state: timing parameters, forwardings in transit, the X2
/// links made so far and the log.
pub(super) struct Handovers {
    period_ns: u64,
    interruption_ns: u64,
    switch_interruption_ns: u64,
    x2_delay_ns: u64,
    x2_rate_bps: u64,
    /// Downlink SDUs on their way over X2, by `Event::X2Forward` index (taken on arrival).
    in_transit: Vec<Option<(UeId, Vec<Sdu>)>>,
    /// X2 links made so far: (source node, target node, link).
    x2_links: Vec<(u32, u32, u32)>,
    measured: Vec<(CellId, millinet_channel::LinkState)>,
    pub log: Vec<SwitchRecord>,
}

impl Handovers {
    pub fn new(h: &HandoverSpec) -> Handovers {
        Handovers {
            period_ns: seconds_to_ns(h.measurement_period_s).max(1),
            interruption_ns: seconds_to_ns(h.interruption_s),
            switch_interruption_ns: seconds_to_ns(h.switch_interruption_s),
            x2_delay_ns: seconds_to_ns(h.x2_delay_s),
            x2_rate_bps: h.x2_rate_bps.round() as u64,
            in_transit: Vec::new(),
            x2_links: Vec::new(),
            measured: Vec::new(),
            log: Vec::new(),
        }
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }
}

impl Simulation {
    /// UE `k` measures every cell it hears; a decision is carried out at once.
    pub(super) fn measure(&mut self, k: u32) {
        let ue = UeId(k);
        let mut measured = std::mem::take(&mut self.handovers.measured);
        measured.clear();
        self.radio.ran.measure(self.now_ns, ue, &mut measured);
        let serving = self.radio.ran.cells_of(ue)[0];
        let control = self.radio.serving[k as usize].as_mut().expect("only UEs with a decision measure");
        let decision = control.on_measurement(self.now_ns, serving, &measured);
        self.handovers.measured = measured;
        if let Some(switch) = decision {
            self.switch_cell(ue, serving, switch);
        }
        self.events.schedule(self.now_ns + self.handovers.period_ns, Event::Measure(k));
    }

    fn switch_cell(&mut self, ue: UeId, from: CellId, switch: Switch) {
        let now = self.now_ns;
        let h = &self.handovers;
        let interruption_ns = if switch.kind == SwitchKind::Handover { h.interruption_ns } else { h.switch_interruption_ns };
        let mut released = RanOutput::default();
        let detached = self
            .radio
            .ran
            .hand_over(now, ue, switch.to, interruption_ns, &mut released)
            .expect("the decision names a cell the UE measures");
        // What the source's PDCP released at the detach is delivered now, where it is.
        self.deliver(from, &mut released);
        // The UE's own PDCP sends its undelivered uplink again on the new leg at once.
        self.radio.ran.adopt(now, ue, Direction::Uplink, &detached.uplink).expect("attached just now");
        if self.scenario.ues[ue.index()].rlc_aqm == Aqm::Codel {
            self.radio.ran.set_aqm(ue, switch.to, Direction::Downlink, Box::new(rlc_codel())).expect("attached just now");
        }
        let bytes_forwarded = detached.downlink.iter().map(|s| u64::from(s.packet().wire_bytes())).sum();
        self.handovers.log.push(SwitchRecord {
            t_ns: now,
            ue,
            kind: switch.kind,
            from,
            to: switch.to,
            interruption_ns,
            sdus_forwarded: detached.downlink.len() as u64,
            bytes_forwarded,
        });
        if !detached.downlink.is_empty() {
            let index = self.handovers.in_transit.len() as u32;
            self.handovers.in_transit.push(Some((ue, detached.downlink)));
            self.events.schedule(now + self.handovers.x2_delay_ns, Event::X2Forward(index));
        }
        // Routes: toward the UE via its new cell; the old cell forwards over X2.
        let (source, target, ue_node) =
            (self.radio.cell_nodes[from.0 as usize], self.radio.cell_nodes[switch.to.0 as usize], self.radio.ue_nodes[ue.index()]);
        self.network.route_via(ue_node, target, Hop::RadioDownlink(ue.0));
        let x2 = self.x2_link(source, target);
        self.network.set_node_route(source, ue_node, Hop::Link(x2));
    }

    /// The X2 link from cell node `source` to `target`, made on first use.
    fn x2_link(&mut self, source: u32, target: u32) -> u32 {
        if let Some(&(_, _, link)) = self.handovers.x2_links.iter().find(|(a, b, _)| (*a, *b) == (source, target)) {
            return link;
        }
        let names = &self.network.nodes;
        let id = self.links.len() as u32;
        self.links.push(Link::new(LinkParams {
            name: format!("x2 {}->{}", names[source as usize].name, names[target as usize].name),
            to_node: target,
            rate_bps: self.handovers.x2_rate_bps,
            switch_rate_bps: self.handovers.x2_rate_bps,
            delay_ns: self.handovers.x2_delay_ns,
            limit_bytes: u64::MAX,
            aqm: None,
        }));
        self.link_from.push(source);
        self.handovers.x2_links.push((source, target, id));
        id
    }

    /// Forwarded downlink SDUs reach the UE's serving leg, ahead of what it has not sent.
    pub(super) fn x2_forward(&mut self, index: u32) {
        let (ue, sdus) = self.handovers.in_transit[index as usize].take().expect("each forwarding arrives once");
        self.radio.ran.adopt(self.now_ns, ue, Direction::Downlink, &sdus).expect("a handover always leaves the UE a leg");
    }
}
