//! Nodes, addresses and static shortest-path routing.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Node i has address 10.0.0.1 + i, so the destination node of a packet is an
/// subtraction, not a lookup.
const FIRST_ADDRESS: u32 = 0x0A00_0001;

pub const NO_ROUTE: u32 = u32::MAX;

pub fn address_of(node: u32) -> Ipv4Addr {
    Ipv4Addr::from(FIRST_ADDRESS + node)
}

#[inline]
pub fn node_of(address: Ipv4Addr, node_count: usize) -> Option<u32> {
    let index = u32::from(address).wrapping_sub(FIRST_ADDRESS);
    ((index as usize) < node_count).then_some(index)
}

pub struct Node {
    pub name: String,
    pub address: Ipv4Addr,
    /// Outgoing link toward each destination node (NO_ROUTE when unreachable).
    pub next_link: Vec<u32>,
    /// Endpoints bound on this node.
    pub endpoints: Vec<u32>,
}

/// For every node, the first link of a minimum-hop path to every other node.
/// Ties go to the link listed first, so routes are deterministic.
/// `links[i] = (from, to)`.
pub fn shortest_paths(node_count: usize, links: &[(u32, u32)]) -> Vec<Vec<u32>> {
    let mut outgoing: Vec<Vec<(u32, u32)>> = vec![Vec::new(); node_count];
    for (id, &(from, to)) in links.iter().enumerate() {
        outgoing[from as usize].push((id as u32, to));
    }
    (0..node_count)
        .map(|source| {
            let mut first = vec![NO_ROUTE; node_count];
            let mut seen = vec![false; node_count];
            seen[source] = true;
            let mut frontier = VecDeque::from([source as u32]);
            while let Some(n) = frontier.pop_front() {
                for &(link, to) in &outgoing[n as usize] {
                    if !seen[to as usize] {
                        seen[to as usize] = true;
                        first[to as usize] = if n as usize == source { link } else { first[n as usize] };
                        frontier.push_back(to);
                    }
                }
            }
            first
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_shortest_path() {
        // 0 - 1 - 2 and a longer detour 0 - 3 - 4 - 2; node 5 is isolated.
        let links = [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2), (2, 1), (1, 0)];
        let routes = shortest_paths(6, &links);
        assert_eq!(routes[0][2], 0);
        assert_eq!(routes[0][4], 2);
        assert_eq!(routes[2][0], 5);
        assert_eq!(routes[4][0], 4);
        assert_eq!(routes[0][5], NO_ROUTE);
        assert_eq!(routes[5][0], NO_ROUTE);
    }

    #[test]
    fn addresses_map_back_to_nodes() {
        assert_eq!(node_of(address_of(7), 8), Some(7));
        assert_eq!(node_of(address_of(8), 8), None);
        assert_eq!(node_of(Ipv4Addr::new(192, 168, 0, 1), 8), None);
    }
}
