//! Handover and dual connectivity in the simulation (ran.md §7). Every measurement period
//! each UE that hears several cells measures them all and its `ServingCellControl` decides;
//! a switch is carried out here: the RAN moves the bearer to the target cell
//! (`Ran::hand_over`, which interrupts the new leg), the source cell's undelivered downlink
//! reaches the target after the X2 delay, and the routes toward the UE turn to the target
//! cell while the source cell sends what still reaches it over an X2 link to the target, so
//! nothing already in the core is lost.
//!
//! Order: packets the core sent before the switch take the old path and X2, those sent after
//! it the new path, which is shorter, so the target would get them out of order. As in
//! 3GPP (TS 38.300 §9.2.3.2.1, TS 36.300 §10.1.2.2.1) the node where the paths part sends an
//! end marker down the old path when it switches, and the target holds what arrives for the
//! UE over the new path until every end marker has come (or a timeout has passed).

use millinet_ran::{Direction, RanOutput, Sdu, Switch, SwitchKind};
use millinet_scenario::radio::HandoverSpec;
use millinet_scenario::translate::rlc_codel;
use millinet_wire::UdpHeader;

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
    /// Per UE: end markers still on their way, packets held until they come, and when the
    /// target gives up waiting.
    holds: Vec<Hold>,
    /// UEs with a hold in progress (0: the fast path of every packet skips all this).
    holding: u32,
    pub log: Vec<SwitchRecord>,
}

#[derive(Default)]
struct Hold {
    active: bool,
    markers: u32,
    packets: Vec<Packet>,
    deadline_ns: u64,
}

/// `meta.flow` of an end marker (no scenario flow has this index).
pub(super) const END_MARKER: u32 = u32::MAX - 1;

/// How long a target waits for end markers (one could be dropped by a full queue).
const HOLD_TIMEOUT_NS: u64 = 100_000_000;

impl Handovers {
    pub fn new(h: &HandoverSpec, ues: usize) -> Handovers {
        Handovers {
            period_ns: seconds_to_ns(h.measurement_period_s).max(1),
            interruption_ns: seconds_to_ns(h.interruption_s),
            switch_interruption_ns: seconds_to_ns(h.switch_interruption_s),
            x2_delay_ns: seconds_to_ns(h.x2_delay_s),
            x2_rate_bps: h.x2_rate_bps.round() as u64,
            in_transit: Vec::new(),
            x2_links: Vec::new(),
            measured: Vec::new(),
            holds: (0..ues).map(|_| Hold::default()).collect(),
            holding: 0,
            log: Vec::new(),
        }
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// Whether the target holds new-path packets for UE `k` (see the module's header).
    #[inline]
    pub fn holds(&self, k: u32) -> bool {
        self.holding > 0 && self.holds[k as usize].active
    }

    /// Whether link `l` is an X2 link (only asked while some hold is in progress).
    #[inline]
    pub fn is_x2(&self, l: u32) -> bool {
        self.holding > 0 && self.x2_links.iter().any(|&(_, _, x2)| x2 == l)
    }

    pub fn hold(&mut self, k: u32, packet: Packet) {
        self.holds[k as usize].packets.push(packet);
    }
}

impl Simulation {
    /// UE `k` measures every cell it hears; a decision is carried out at once.
    pub(super) fn measure(&mut self, k: u32) {
        let ue = UeId(k);
        if self.handovers.holds(k) && self.now_ns >= self.handovers.holds[k as usize].deadline_ns {
            self.release_held(ue);
        }
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
        // What an earlier handover's target still held goes to the leg that is about to leave.
        self.release_held(ue);
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
        // Routes: toward the UE's radio via its new cell; the old cell forwards over X2.
        let (source, target) = (self.radio.cell_nodes[from.0 as usize], self.radio.cell_nodes[switch.to.0 as usize]);
        let interface = self.radio.ue_interfaces[ue.index()];
        let old: Vec<Hop> = (0..self.network.nodes.len() as u32).map(|n| self.network.next_hop(n, interface)).collect();
        self.network.route_via(interface, target, Hop::RadioDownlink(ue.0));
        let x2 = self.x2_link(source, target);
        self.network.set_interface_route(source, interface, Hop::Link(x2));
        // End markers from where the paths part: the nodes that fed the source directly.
        let mut markers = 0;
        for (n, hop) in old.into_iter().enumerate() {
            let Hop::Link(l) = hop else { continue };
            if self.links[l as usize].to_node != source || self.network.next_hop(n as u32, interface) == hop {
                continue;
            }
            let to = self.network.interface_address(interface);
            let mut marker = Packet::udp(self.network.address(n as u32), to, UdpHeader { src_port: 0, dst_port: 0 }, 0);
            marker.meta.flow = END_MARKER;
            self.links[l as usize].enqueue(now, marker, &mut LinkEvents { queue: &mut self.events, link: l });
            markers += 1;
        }
        if markers > 0 {
            let hold = &mut self.handovers.holds[ue.index()];
            hold.active = true;
            hold.markers = markers;
            hold.deadline_ns = now + HOLD_TIMEOUT_NS;
            self.handovers.holding += 1;
        }
    }

    /// An end marker reached `node`: the UE's serving cell counts it, any other node passes
    /// it on toward the UE.
    pub(super) fn end_marker(&mut self, node: u32, marker: Packet) {
        let Some(k) = self.network.interface_of(marker.dst).and_then(|i| self.radio.ue_interfaces.iter().position(|&u| u == i)) else {
            return;
        };
        let ue = UeId(k as u32);
        let serving = self.radio.cell_nodes[self.radio.ran.cells_of(ue)[0].0 as usize];
        if node != serving {
            self.forward(node, marker);
            return;
        }
        let hold = &mut self.handovers.holds[k];
        if hold.active {
            hold.markers -= 1;
            if hold.markers == 0 {
                self.release_held(ue);
            }
        }
    }

    /// The target stops holding: what it held enters the UE's bearer, in arrival order.
    fn release_held(&mut self, ue: UeId) {
        let hold = &mut self.handovers.holds[ue.index()];
        if !hold.active {
            return;
        }
        hold.active = false;
        let packets = std::mem::take(&mut hold.packets);
        self.handovers.holding -= 1;
        for packet in packets {
            self.radio.ran.enqueue_downlink(self.now_ns, ue, packet);
        }
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
            limit_packets: u64::MAX,
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
