//! The network: nodes with interfaces, each interface with its own IPv4 address; hops of
//! explicit kinds (a wired link, a UE's radio downlink or uplink); and a routing table that
//! gives the next hop by (node, destination interface) and may change during a run (the core
//! re-routes a UE's traffic at handover, a test moves a flow onto another path).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Interface k has address 10.0.0.1 + k, so the destination interface of a packet is a
/// subtraction, not a lookup. The scenario's nodes get their first interface in scenario
/// order, so node i answers at 10.0.0.1 + i.
const FIRST_ADDRESS: u32 = 0x0A00_0001;

/// Where a node sends a packet next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// No route: the packet is discarded.
    Unreachable,
    /// Into the queue of one direction of a wired link (index into the engine's links).
    Link(u32),
    /// Into the gNB's PDCP toward the UE (index into the scenario's `ues`).
    RadioDownlink(u32),
    /// Into the UE's PDCP toward its gNB.
    RadioUplink(u32),
}

/// One network interface: the node it belongs to and its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    pub node: u32,
    pub address: Ipv4Addr,
}

pub struct Node {
    pub name: String,
    /// This node's interfaces (indices into the network's interfaces), the first one being
    /// the address its endpoints bind to.
    pub interfaces: Vec<u32>,
    /// Endpoints bound on this node.
    pub endpoints: Vec<u32>,
}

/// An edge of the topology: `hop` carries packets from node `from` to node `to`.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub hop: Hop,
}

pub struct Network {
    pub nodes: Vec<Node>,
    interfaces: Vec<Interface>,
    /// Next hop from node n toward interface k at `n * interfaces.len() + k`.
    routes: Vec<Hop>,
    /// Route changes planned for later in the run: (node, destination interface, hop).
    planned: Vec<(u32, u32, Hop)>,
    /// Per interface: where its own node sends every packet from that address, whatever the
    /// destination (policy routing, as `ip rule from ADDRESS` on a device with several radios).
    source_routes: Vec<Option<Hop>>,
    /// Whether any source route is set (the common case skips the lookup).
    source_routed: bool,
}

impl Network {
    /// One node per name, each with one interface; no routes yet.
    pub fn new(names: impl IntoIterator<Item = String>) -> Network {
        let mut network = Network {
            nodes: Vec::new(),
            interfaces: Vec::new(),
            routes: Vec::new(),
            planned: Vec::new(),
            source_routes: Vec::new(),
            source_routed: false,
        };
        for name in names {
            let node = network.nodes.len() as u32;
            network.nodes.push(Node { name, interfaces: Vec::new(), endpoints: Vec::new() });
            network.add_interface(node);
        }
        network
    }

    /// Gives `node` one more interface (a UE with an mmWave and an LTE radio has two) and
    /// returns its address. Routes toward it follow its node's until set otherwise.
    pub fn add_interface(&mut self, node: u32) -> Ipv4Addr {
        let k = self.interfaces.len();
        let address = Ipv4Addr::from(FIRST_ADDRESS + k as u32);
        self.interfaces.push(Interface { node, address });
        self.source_routes.push(None);
        self.nodes[node as usize].interfaces.push(k as u32);
        if !self.routes.is_empty() {
            // One more column per row, a copy of the column of the node's first interface.
            let like = self.nodes[node as usize].interfaces[0] as usize;
            let routes: Vec<Hop> = self.routes.chunks(k).flat_map(|row| row.iter().copied().chain([row[like]])).collect();
            self.routes = routes;
        }
        address
    }

    /// The address `node`'s endpoints bind to (its first interface).
    pub fn address(&self, node: u32) -> Ipv4Addr {
        self.interfaces[self.nodes[node as usize].interfaces[0] as usize].address
    }

    pub fn node_by_name(&self, name: &str) -> Option<u32> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as u32)
    }

    /// The interface that owns `address`, if any.
    #[inline]
    pub fn interface_of(&self, address: Ipv4Addr) -> Option<u32> {
        let index = u32::from(address).wrapping_sub(FIRST_ADDRESS);
        ((index as usize) < self.interfaces.len()).then_some(index)
    }

    /// The address of interface `k`.
    pub fn interface_address(&self, k: u32) -> Ipv4Addr {
        self.interfaces[k as usize].address
    }

    /// The node that owns `address`, if any.
    #[inline]
    pub fn node_of(&self, address: Ipv4Addr) -> Option<u32> {
        self.interface_of(address).map(|k| self.interfaces[k as usize].node)
    }

    /// Minimum-hop routes between every pair of nodes over `edges`; ties go to the edge listed
    /// first, so routes are deterministic. Replaces every route.
    pub fn compute_routes(&mut self, edges: &[Edge]) {
        let nodes = self.nodes.len();
        let mut outgoing: Vec<Vec<&Edge>> = vec![Vec::new(); nodes];
        for edge in edges {
            outgoing[edge.from as usize].push(edge);
        }
        let width = self.interfaces.len();
        self.routes = vec![Hop::Unreachable; nodes * width];
        for source in 0..nodes {
            let mut first = vec![Hop::Unreachable; nodes];
            let mut seen = vec![false; nodes];
            seen[source] = true;
            let mut frontier = VecDeque::from([source as u32]);
            while let Some(n) = frontier.pop_front() {
                for edge in &outgoing[n as usize] {
                    let to = edge.to as usize;
                    if !seen[to] {
                        seen[to] = true;
                        first[to] = if n as usize == source { edge.hop } else { first[n as usize] };
                        frontier.push_back(edge.to);
                    }
                }
            }
            for (k, interface) in self.interfaces.iter().enumerate() {
                self.routes[source * width + k] = first[interface.node as usize];
            }
        }
    }

    /// The next hop from `node` toward interface `destination`.
    #[inline]
    pub fn next_hop(&self, node: u32, destination: u32) -> Hop {
        self.routes[node as usize * self.interfaces.len() + destination as usize]
    }

    /// The next hop at `node` of a packet from `source` toward interface `destination`: the
    /// source route of `source`'s interface when `node` owns it, else the routing table's.
    #[inline]
    pub fn next_hop_from(&self, node: u32, source: Ipv4Addr, destination: u32) -> Hop {
        if self.source_routed {
            if let Some(k) = self.interface_of(source) {
                if let (true, Some(hop)) = (self.interfaces[k as usize].node == node, self.source_routes[k as usize]) {
                    return hop;
                }
            }
        }
        self.next_hop(node, destination)
    }

    /// Every packet from interface `k`'s address leaves its node by `hop`.
    pub fn set_source_route(&mut self, k: u32, hop: Hop) {
        self.source_routes[k as usize] = Some(hop);
        self.source_routed = true;
    }

    /// Whether `a` can reach every interface of `b`.
    pub fn reaches(&self, a: u32, b: u32) -> bool {
        self.nodes[b as usize].interfaces.iter().all(|&k| self.next_hop(a, k) != Hop::Unreachable)
    }

    /// From now on `node` sends packets for `destination` (an address of this network) to
    /// `hop`. Packets already queued on the old hop are not affected.
    pub fn set_route(&mut self, node: u32, destination: Ipv4Addr, hop: Hop) -> Result<(), RouteError> {
        let (node, k) = self.route_key(node, destination)?;
        self.routes[node as usize * self.interfaces.len() + k as usize] = hop;
        Ok(())
    }

    /// Every node's route toward interface `destination` becomes its route toward node `via`;
    /// `via` itself uses `last`. A handover turns the routes toward a UE's radio to its new
    /// serving cell this way (the caller then points the old cell at the new one over X2).
    pub fn route_via(&mut self, destination: u32, via: u32, last: Hop) {
        let width = self.interfaces.len();
        let via_interface = self.nodes[via as usize].interfaces[0] as usize;
        for n in 0..self.nodes.len() {
            let hop = if n == via as usize { last } else { self.routes[n * width + via_interface] };
            self.routes[n * width + destination as usize] = hop;
        }
    }

    /// From now on `node` sends packets for interface `destination` to `hop`.
    pub fn set_interface_route(&mut self, node: u32, destination: u32, hop: Hop) {
        self.routes[node as usize * self.interfaces.len() + destination as usize] = hop;
    }

    /// Checks a route change now and keeps it for [`Network::apply_planned`] later (the
    /// driver decides when); returns its index.
    pub fn plan(&mut self, node: u32, destination: Ipv4Addr, hop: Hop) -> Result<u32, RouteError> {
        let (node, k) = self.route_key(node, destination)?;
        self.planned.push((node, k, hop));
        Ok(self.planned.len() as u32 - 1)
    }

    pub fn apply_planned(&mut self, change: u32) {
        let (node, k, hop) = self.planned[change as usize];
        self.routes[node as usize * self.interfaces.len() + k as usize] = hop;
    }

    fn route_key(&self, node: u32, destination: Ipv4Addr) -> Result<(u32, u32), RouteError> {
        let k = self.interface_of(destination).ok_or(RouteError::UnknownAddress(destination))?;
        if node as usize >= self.nodes.len() {
            return Err(RouteError::UnknownNode(node));
        }
        Ok((node, k))
    }
}

/// A route change that names something the network does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    UnknownAddress(Ipv4Addr),
    UnknownNode(u32),
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteError::UnknownAddress(a) => write!(f, "no interface has address {a}"),
            RouteError::UnknownNode(n) => write!(f, "no node {n}"),
        }
    }
}

impl std::error::Error for RouteError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(n: usize) -> Network {
        Network::new((0..n).map(|i| format!("n{i}")))
    }

    fn edges(pairs: &[(u32, u32)]) -> Vec<Edge> {
        pairs.iter().enumerate().map(|(i, &(from, to))| Edge { from, to, hop: Hop::Link(i as u32) }).collect()
    }

    #[test]
    fn routes_follow_the_shortest_path() {
        // 0 - 1 - 2 and a longer detour 0 - 3 - 4 - 2; node 5 is isolated.
        let mut net = network(6);
        net.compute_routes(&edges(&[(0, 1), (1, 2), (0, 3), (3, 4), (4, 2), (2, 1), (1, 0)]));
        assert_eq!(net.next_hop(0, 2), Hop::Link(0));
        assert_eq!(net.next_hop(0, 4), Hop::Link(2));
        assert_eq!(net.next_hop(2, 0), Hop::Link(5));
        assert_eq!(net.next_hop(4, 0), Hop::Link(4));
        assert_eq!(net.next_hop(0, 5), Hop::Unreachable);
        assert_eq!(net.next_hop(5, 0), Hop::Unreachable);
        assert!(net.reaches(0, 4) && !net.reaches(0, 5));
    }

    #[test]
    fn addresses_map_back_to_nodes() {
        let net = network(8);
        assert_eq!(net.node_of(net.address(7)), Some(7));
        assert_eq!(net.node_of(Ipv4Addr::from(u32::from(net.address(7)) + 1)), None);
        assert_eq!(net.node_of(Ipv4Addr::new(192, 168, 0, 1)), None);
    }

    #[test]
    fn a_second_interface_has_its_own_address_and_its_own_route() {
        let mut net = network(3);
        net.compute_routes(&edges(&[(0, 1), (1, 2), (0, 2)]));
        let second = net.add_interface(2);
        assert_ne!(second, net.address(2));
        assert_eq!(net.node_of(second), Some(2));
        let k = net.interface_of(second).unwrap();
        // Until told otherwise it is reached like its node; existing routes are kept.
        assert_eq!(net.next_hop(0, k), Hop::Link(2));
        assert_eq!(net.next_hop(0, 1), Hop::Link(0));
        net.set_route(0, second, Hop::Link(0)).unwrap();
        assert_eq!(net.next_hop(0, k), Hop::Link(0));
        assert_eq!(net.next_hop(0, 2), Hop::Link(2), "the node's first interface keeps its route");
    }

    #[test]
    fn route_changes_name_what_is_wrong() {
        let mut net = network(2);
        net.compute_routes(&edges(&[(0, 1)]));
        assert_eq!(
            net.set_route(0, Ipv4Addr::new(192, 168, 0, 1), Hop::Link(0)),
            Err(RouteError::UnknownAddress(Ipv4Addr::new(192, 168, 0, 1)))
        );
        assert_eq!(net.set_route(9, net.address(1), Hop::Link(0)), Err(RouteError::UnknownNode(9)));
    }
}
