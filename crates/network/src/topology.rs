//! The topology: nodes with interfaces, each interface with its own IPv4 address; hops of
//! explicit kinds (a wired link, a UE's radio downlink or uplink); and a routing table that
//! gives the next hop by (node, destination interface) and may change during a run (the core
//! re-routes a UE's traffic at handover, a test moves a flow onto another path).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use millinet_ran::UeId;

use crate::ids::{InterfaceId, LinkId, NodeId};

/// Interface k has address 10.0.0.1 + k, so the destination interface of a packet is a
/// subtraction, not a lookup. The scenario's nodes get their first interface in scenario
/// order, so node i answers at 10.0.0.1 + i.
const FIRST_ADDRESS: u32 = 0x0A00_0001;

/// Where a node sends a packet next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// No route: the packet is discarded.
    Unreachable,
    /// Into the queue of one direction of a wired link.
    Link(LinkId),
    /// Into the gNB's PDCP toward the UE radio.
    RadioDownlink(UeId),
    /// Into the UE radio's PDCP toward its gNB.
    RadioUplink(UeId),
}

/// One network interface: the node it belongs to and its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    pub node: NodeId,
    pub address: Ipv4Addr,
}

pub struct Node {
    pub name: String,
    /// This node's interfaces, the first one being the address its endpoints bind to.
    pub interfaces: Vec<InterfaceId>,
}

/// An edge of the topology: `hop` carries packets from node `from` to node `to`.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub from: NodeId,
    pub to: NodeId,
    pub hop: Hop,
}

/// A route change kept for later (the driver decides when): its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PlannedRoute(pub u32);

pub struct Topology {
    pub nodes: Vec<Node>,
    interfaces: Vec<Interface>,
    /// Next hop from node n toward interface k at `n * interfaces.len() + k`.
    routes: Vec<Hop>,
    /// Route changes planned for later in the run: (node, destination interface, hop).
    planned: Vec<(NodeId, InterfaceId, Hop)>,
    /// Per interface: where its own node sends every packet from that address, whatever the
    /// destination (policy routing, as `ip rule from ADDRESS` on a device with several radios).
    source_routes: Vec<Option<Hop>>,
    /// Whether any source route is set (the common case skips the lookup).
    source_routed: bool,
}

impl Topology {
    /// One node per name, each with one interface; no routes yet.
    pub fn new(names: impl IntoIterator<Item = String>) -> Topology {
        let mut topology = Topology {
            nodes: Vec::new(),
            interfaces: Vec::new(),
            routes: Vec::new(),
            planned: Vec::new(),
            source_routes: Vec::new(),
            source_routed: false,
        };
        for name in names {
            let node = NodeId(topology.nodes.len() as u32);
            topology.nodes.push(Node { name, interfaces: Vec::new() });
            topology.add_interface(node);
        }
        topology
    }

    /// Gives `node` one more interface (a UE with an mmWave and an LTE radio has two) and
    /// returns it. Routes toward it follow its node's until set otherwise.
    pub fn add_interface(&mut self, node: NodeId) -> InterfaceId {
        let k = self.interfaces.len();
        let address = Ipv4Addr::from(FIRST_ADDRESS + k as u32);
        self.interfaces.push(Interface { node, address });
        self.source_routes.push(None);
        self.nodes[node.index()].interfaces.push(InterfaceId(k as u32));
        if !self.routes.is_empty() {
            // One more column per row, a copy of the column of the node's first interface.
            let like = self.nodes[node.index()].interfaces[0].index();
            let routes: Vec<Hop> = self.routes.chunks(k).flat_map(|row| row.iter().copied().chain([row[like]])).collect();
            self.routes = routes;
        }
        InterfaceId(k as u32)
    }

    /// The address `node`'s endpoints bind to (its first interface).
    pub fn address(&self, node: NodeId) -> Ipv4Addr {
        self.interfaces[self.nodes[node.index()].interfaces[0].index()].address
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| NodeId(i as u32))
    }

    pub fn name(&self, node: NodeId) -> &str {
        &self.nodes[node.index()].name
    }

    /// The interface that owns `address`, if any.
    #[inline]
    pub fn interface_of(&self, address: Ipv4Addr) -> Option<InterfaceId> {
        let index = u32::from(address).wrapping_sub(FIRST_ADDRESS);
        ((index as usize) < self.interfaces.len()).then_some(InterfaceId(index))
    }

    /// The address of interface `k`.
    pub fn interface_address(&self, k: InterfaceId) -> Ipv4Addr {
        self.interfaces[k.index()].address
    }

    /// The node that owns `address`, if any.
    #[inline]
    pub fn node_of(&self, address: Ipv4Addr) -> Option<NodeId> {
        self.interface_of(address).map(|k| self.interfaces[k.index()].node)
    }

    /// Minimum-hop routes between every pair of nodes over `edges`; ties go to the edge listed
    /// first, so routes are deterministic. Replaces every route.
    pub fn compute_routes(&mut self, edges: &[Edge]) {
        let nodes = self.nodes.len();
        let mut outgoing: Vec<Vec<&Edge>> = vec![Vec::new(); nodes];
        for edge in edges {
            outgoing[edge.from.index()].push(edge);
        }
        let width = self.interfaces.len();
        self.routes = vec![Hop::Unreachable; nodes * width];
        for source in 0..nodes {
            let mut first = vec![Hop::Unreachable; nodes];
            let mut seen = vec![false; nodes];
            seen[source] = true;
            let mut frontier = VecDeque::from([source]);
            while let Some(n) = frontier.pop_front() {
                for edge in &outgoing[n] {
                    let to = edge.to.index();
                    if !seen[to] {
                        seen[to] = true;
                        first[to] = if n == source { edge.hop } else { first[n] };
                        frontier.push_back(to);
                    }
                }
            }
            for (k, interface) in self.interfaces.iter().enumerate() {
                self.routes[source * width + k] = first[interface.node.index()];
            }
        }
    }

    /// The next hop from `node` toward interface `destination`.
    #[inline]
    pub fn next_hop(&self, node: NodeId, destination: InterfaceId) -> Hop {
        self.routes[node.index() * self.interfaces.len() + destination.index()]
    }

    /// The next hop at `node` of a packet from `source` toward interface `destination`: the
    /// source route of `source`'s interface when `node` owns it, else the routing table's.
    #[inline]
    pub fn next_hop_from(&self, node: NodeId, source: Ipv4Addr, destination: InterfaceId) -> Hop {
        if self.source_routed {
            if let Some(k) = self.interface_of(source) {
                if let (true, Some(hop)) = (self.interfaces[k.index()].node == node, self.source_routes[k.index()]) {
                    return hop;
                }
            }
        }
        self.next_hop(node, destination)
    }

    /// Every packet from interface `k`'s address leaves its node by `hop`.
    pub fn set_source_route(&mut self, k: InterfaceId, hop: Hop) {
        self.source_routes[k.index()] = Some(hop);
        self.source_routed = true;
    }

    /// Whether `a` can reach every interface of `b`.
    pub fn reaches(&self, a: NodeId, b: NodeId) -> bool {
        self.nodes[b.index()].interfaces.iter().all(|&k| self.next_hop(a, k) != Hop::Unreachable)
    }

    /// From now on `node` sends packets for `destination` (an address of this network) to
    /// `hop`. Packets already queued on the old hop are not affected.
    pub fn set_route(&mut self, node: NodeId, destination: Ipv4Addr, hop: Hop) -> Result<(), RouteError> {
        let (node, k) = self.route_key(node, destination)?;
        self.set_interface_route(node, k, hop);
        Ok(())
    }

    /// Every node's route toward interface `destination` becomes its route toward node `via`;
    /// `via` itself uses `last`. A handover turns the routes toward a UE's radio to its new
    /// serving cell this way (the caller then points the old cell at the new one over X2).
    pub fn route_via(&mut self, destination: InterfaceId, via: NodeId, last: Hop) {
        let width = self.interfaces.len();
        let via_interface = self.nodes[via.index()].interfaces[0].index();
        for n in 0..self.nodes.len() {
            let hop = if n == via.index() { last } else { self.routes[n * width + via_interface] };
            self.routes[n * width + destination.index()] = hop;
        }
    }

    /// From now on `node` sends packets for interface `destination` to `hop`.
    pub fn set_interface_route(&mut self, node: NodeId, destination: InterfaceId, hop: Hop) {
        self.routes[node.index() * self.interfaces.len() + destination.index()] = hop;
    }

    /// Checks a route change now and keeps it for [`Topology::apply_planned`] later.
    pub fn plan(&mut self, node: NodeId, destination: Ipv4Addr, hop: Hop) -> Result<PlannedRoute, RouteError> {
        let key = self.route_key(node, destination)?;
        self.planned.push((key.0, key.1, hop));
        Ok(PlannedRoute(self.planned.len() as u32 - 1))
    }

    pub fn apply_planned(&mut self, change: PlannedRoute) {
        let (node, k, hop) = self.planned[change.0 as usize];
        self.set_interface_route(node, k, hop);
    }

    fn route_key(&self, node: NodeId, destination: Ipv4Addr) -> Result<(NodeId, InterfaceId), RouteError> {
        let k = self.interface_of(destination).ok_or(RouteError::UnknownAddress(destination))?;
        if node.index() >= self.nodes.len() {
            return Err(RouteError::UnknownNode(node));
        }
        Ok((node, k))
    }
}

/// A route change that names something the network does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    UnknownAddress(Ipv4Addr),
    UnknownNode(NodeId),
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteError::UnknownAddress(a) => write!(f, "no interface has address {a}"),
            RouteError::UnknownNode(n) => write!(f, "no node {}", n.0),
        }
    }
}

impl std::error::Error for RouteError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(n: usize) -> Topology {
        Topology::new((0..n).map(|i| format!("n{i}")))
    }

    fn edges(pairs: &[(u32, u32)]) -> Vec<Edge> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, &(from, to))| Edge { from: NodeId(from), to: NodeId(to), hop: Hop::Link(LinkId(i as u32)) })
            .collect()
    }

    fn link(i: u32) -> Hop {
        Hop::Link(LinkId(i))
    }

    /// Node i's first interface is interface i.
    fn first(i: u32) -> InterfaceId {
        InterfaceId(i)
    }

    #[test]
    fn routes_follow_the_shortest_path() {
        // 0 - 1 - 2 and a longer detour 0 - 3 - 4 - 2; node 5 is isolated.
        let mut net = topology(6);
        net.compute_routes(&edges(&[(0, 1), (1, 2), (0, 3), (3, 4), (4, 2), (2, 1), (1, 0)]));
        assert_eq!(net.next_hop(NodeId(0), first(2)), link(0));
        assert_eq!(net.next_hop(NodeId(0), first(4)), link(2));
        assert_eq!(net.next_hop(NodeId(2), first(0)), link(5));
        assert_eq!(net.next_hop(NodeId(4), first(0)), link(4));
        assert_eq!(net.next_hop(NodeId(0), first(5)), Hop::Unreachable);
        assert_eq!(net.next_hop(NodeId(5), first(0)), Hop::Unreachable);
        assert!(net.reaches(NodeId(0), NodeId(4)) && !net.reaches(NodeId(0), NodeId(5)));
    }

    #[test]
    fn addresses_map_back_to_nodes() {
        let net = topology(8);
        assert_eq!(net.node_of(net.address(NodeId(7))), Some(NodeId(7)));
        assert_eq!(net.node_of(Ipv4Addr::from(u32::from(net.address(NodeId(7))) + 1)), None);
        assert_eq!(net.node_of(Ipv4Addr::new(192, 168, 0, 1)), None);
    }

    #[test]
    fn a_second_interface_has_its_own_address_and_its_own_route() {
        let mut net = topology(3);
        net.compute_routes(&edges(&[(0, 1), (1, 2), (0, 2)]));
        let k = net.add_interface(NodeId(2));
        let second = net.interface_address(k);
        assert_ne!(second, net.address(NodeId(2)));
        assert_eq!(net.node_of(second), Some(NodeId(2)));
        // Until told otherwise it is reached like its node; existing routes are kept.
        assert_eq!(net.next_hop(NodeId(0), k), link(2));
        assert_eq!(net.next_hop(NodeId(0), first(1)), link(0));
        net.set_route(NodeId(0), second, link(0)).unwrap();
        assert_eq!(net.next_hop(NodeId(0), k), link(0));
        assert_eq!(net.next_hop(NodeId(0), first(2)), link(2), "the node's first interface keeps its route");
    }

    #[test]
    fn route_changes_name_what_is_wrong() {
        let mut net = topology(2);
        net.compute_routes(&edges(&[(0, 1)]));
        assert_eq!(
            net.set_route(NodeId(0), Ipv4Addr::new(192, 168, 0, 1), link(0)),
            Err(RouteError::UnknownAddress(Ipv4Addr::new(192, 168, 0, 1)))
        );
        assert_eq!(net.set_route(NodeId(9), net.address(NodeId(1)), link(0)), Err(RouteError::UnknownNode(NodeId(9))));
    }
}
