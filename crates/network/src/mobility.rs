//! Handover and dual connectivity, executed by the network for both drivers
//! (docs/models/ran.md, "Handover and dual connectivity"). Every measurement period each UE
//! that hears several cells measures them all and its `ServingCellControl` decides; a switch
//! is carried out here: the RAN moves the bearer to the target cell
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

use millinet_ran::{CellId, Direction, RanOutput, Sdu, Switch, SwitchKind, UeId};
use millinet_scenario::radio::HandoverSpec;
use millinet_scenario::translate::seconds_to_ns;
use millinet_transport::link::{Link, LinkParams};
use millinet_wire::{Packet, Tag, UdpHeader};

use crate::ids::{LinkId, NodeId};
use crate::network::{Driver, LinkWakes, NetEvent, Network};
use crate::topology::Hop;

/// One handover or bearer switch, as summary.json and the `mobility` table report it.
#[derive(Clone, Copy, Debug)]
pub struct SwitchRecord {
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
pub(crate) struct Handovers {
    period_ns: u64,
    interruption_ns: u64,
    switch_interruption_ns: u64,
    x2_delay_ns: u64,
    x2_rate_bps: u64,
    /// Downlink SDUs on their way over X2, by `NetEvent::X2Forward` index (taken on arrival).
    in_transit: Vec<Option<(UeId, Vec<Sdu>)>>,
    /// X2 links made so far: (source node, target node, link).
    x2_links: Vec<(NodeId, NodeId, LinkId)>,
    measured: Vec<(CellId, millinet_channel::LinkState)>,
    /// Per UE: end markers still on their way, packets held until they come, and when the
    /// target gives up waiting.
    holds: Vec<Hold>,
    /// UEs with a hold in progress (0: the fast path of every packet skips all this).
    holding: u32,
    pub(crate) log: Vec<SwitchRecord>,
}

#[derive(Default)]
struct Hold {
    active: bool,
    markers: u32,
    packets: Vec<Packet>,
    deadline_ns: u64,
}

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
    pub fn holds(&self, ue: UeId) -> bool {
        self.holding > 0 && self.holds[ue.index()].active
    }

    /// Whether link `l` is an X2 link (only asked while some hold is in progress).
    #[inline]
    pub fn is_x2(&self, l: LinkId) -> bool {
        self.holding > 0 && self.x2_links.iter().any(|&(_, _, x2)| x2 == l)
    }

    pub fn hold(&mut self, ue: UeId, packet: Packet) {
        self.holds[ue.index()].packets.push(packet);
    }
}

impl Network {
    /// UE `ue` measures every cell it hears; a decision is carried out at once.
    pub(crate) fn measure<D: Driver>(&mut self, now: u64, ue: UeId, driver: &mut D) {
        if self.handovers.holds(ue) && now >= self.handovers.holds[ue.index()].deadline_ns {
            self.release_held(now, ue);
        }
        let mut measured = std::mem::take(&mut self.handovers.measured);
        measured.clear();
        self.radio.ran.measure(now, ue, &mut measured);
        let serving = self.radio.serving_cell(ue);
        let control = self.radio.serving[ue.index()].as_mut().expect("only UEs with a decision measure");
        let decision = control.on_measurement(now, serving, &measured);
        self.handovers.measured = measured;
        if let Some(switch) = decision {
            self.switch_cell(now, ue, serving, switch, driver);
        }
        driver.wake_at(now + self.handovers.period_ns, NetEvent::Measure(ue));
    }

    fn switch_cell<D: Driver>(&mut self, now: u64, ue: UeId, from: CellId, switch: Switch, driver: &mut D) {
        // What an earlier handover's target still held goes to the leg that is about to leave.
        self.release_held(now, ue);
        let h = &self.handovers;
        let interruption_ns = if switch.kind == SwitchKind::Handover { h.interruption_ns } else { h.switch_interruption_ns };
        let mut released = RanOutput::default();
        let detached = self
            .radio
            .ran
            .hand_over(now, ue, switch.to, interruption_ns, &mut released)
            .expect("the decision names a cell the UE measures");
        // What the source's PDCP released at the detach is delivered now, where it is.
        self.deliver(now, from, &mut released, driver);
        // The UE's own PDCP sends its undelivered uplink again on the new leg at once.
        self.radio.ran.adopt(now, ue, Direction::Uplink, &detached.uplink).expect("attached just now");
        if let Some(aqm) = self.ue_rlc_aqm(ue, now) {
            self.radio.ran.set_aqm(ue, switch.to, Direction::Downlink, aqm).expect("attached just now");
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
            driver.wake_at(now + self.handovers.x2_delay_ns, NetEvent::X2Forward(index));
        }
        // Routes: toward the UE's radio via its new cell; the old cell forwards over X2.
        let (source, target) = (self.radio.cell_nodes[from.0 as usize], self.radio.cell_nodes[switch.to.0 as usize]);
        let interface = self.radio.ue_interfaces[ue.index()];
        let old: Vec<Hop> = (0..self.topology.nodes.len() as u32).map(|n| self.topology.next_hop(NodeId(n), interface)).collect();
        self.topology.route_via(interface, target, Hop::RadioDownlink(ue));
        let x2 = self.x2_link(source, target);
        self.topology.set_interface_route(source, interface, Hop::Link(x2));
        // End markers from where the paths part: the nodes that fed the source directly.
        let mut markers = 0;
        for (n, hop) in old.into_iter().enumerate() {
            let Hop::Link(l) = hop else { continue };
            let n = NodeId(n as u32);
            if self.links[l.index()].to_node != source.0 || self.topology.next_hop(n, interface) == hop {
                continue;
            }
            let to = self.topology.interface_address(interface);
            let mut marker = Packet::udp(self.topology.address(n), to, UdpHeader { src_port: 0, dst_port: 0 }, 0);
            marker.meta.tag = Tag::END_MARKER;
            self.links[l.index()].enqueue(now, marker, &mut LinkWakes { driver: &mut *driver, link: l });
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
    pub(crate) fn end_marker<D: Driver>(&mut self, now: u64, node: NodeId, marker: Packet, driver: &mut D) {
        let Some(ue) = self.topology.interface_of(marker.dst).and_then(|i| self.radio.ue_with_interface(i)) else {
            return;
        };
        if node != self.radio.serving_node(ue) {
            self.send(now, node, marker, driver);
            return;
        }
        let hold = &mut self.handovers.holds[ue.index()];
        if hold.active {
            hold.markers -= 1;
            if hold.markers == 0 {
                self.release_held(now, ue);
            }
        }
    }

    /// The target stops holding: what it held enters the UE's bearer, in arrival order.
    fn release_held(&mut self, now: u64, ue: UeId) {
        let hold = &mut self.handovers.holds[ue.index()];
        if !hold.active {
            return;
        }
        hold.active = false;
        let packets = std::mem::take(&mut hold.packets);
        self.handovers.holding -= 1;
        for packet in packets {
            self.radio.ran.enqueue_downlink(now, ue, packet);
        }
    }

    /// The X2 link from cell node `source` to `target`, made on first use.
    fn x2_link(&mut self, source: NodeId, target: NodeId) -> LinkId {
        if let Some(&(_, _, link)) = self.handovers.x2_links.iter().find(|(a, b, _)| (*a, *b) == (source, target)) {
            return link;
        }
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link::new(LinkParams {
            name: format!("x2 {}->{}", self.topology.name(source), self.topology.name(target)),
            to_node: target.0,
            rate_bps: self.handovers.x2_rate_bps,
            switch_rate_bps: self.handovers.x2_rate_bps,
            delay_ns: self.handovers.x2_delay_ns,
            limit_bytes: u64::MAX,
            limit_packets: u64::MAX,
            aqm: None,
            opportunities: None,
        }));
        self.link_from.push(source);
        self.handovers.x2_links.push((source, target, id));
        id
    }

    /// Forwarded downlink SDUs reach the UE's serving leg, ahead of what it has not sent.
    pub(crate) fn x2_forward(&mut self, now: u64, index: u32) {
        let (ue, sdus) = self.handovers.in_transit[index as usize].take().expect("each forwarding arrives once");
        self.radio.ran.adopt(now, ue, Direction::Downlink, &sdus).expect("a handover always leaves the UE a leg");
    }
}
