//! The radio access network inside the network: the scenario's cells and UEs translated
//! into one `ran::Ran` (a `channel::LinkChannel` and CQI reporter per radio link of a UE to a
//! cell), the nodes they sit on, the interface of each UE radio and each UE's serving-cell
//! decision.
//!
//! Each cell runs one slot at a time: at a slot's start the network delivers what the
//! previous slot decoded (TBs are decoded at the end of their slot, which is the start of the
//! next) and then advances the cell over the current slot.

use std::path::Path;

use millinet_ran::{CellId, Ran, RanOutput, ServingCellControl, UeId};
use millinet_scenario::rng::Stream;
use millinet_scenario::translate::radio::build_ran;
use millinet_scenario::{ConfigError, Scenario};

use crate::ids::{InterfaceId, NodeId};

/// The scenario's RAN: cell k is scenario cell k, UE k is scenario UE k (its `UeId`, stable
/// across cells).
pub struct RadioNet {
    pub ran: Ran<Stream>,
    /// Node of each gNB, by `CellId`.
    pub cell_nodes: Vec<NodeId>,
    /// Node each UE sits on, by `UeId` (a device with several radios is several UEs on one
    /// node).
    pub ue_nodes: Vec<NodeId>,
    /// The network interface of each UE's radio, by `UeId` (set when the topology is built).
    pub ue_interfaces: Vec<InterfaceId>,
    /// Per cell: decoded in its previous slot, delivered at the start of its next.
    pub decoded: Vec<RanOutput>,
    /// Per UE: its serving-cell decision, for a UE that measures more than one cell.
    pub serving: Vec<Option<ServingCellControl>>,
}

impl RadioNet {
    /// Builds every cell with its UEs. `node_index` maps node names to nodes.
    pub fn build(s: &Scenario, base_dir: &Path, node_index: &dyn Fn(&str) -> NodeId) -> Result<RadioNet, ConfigError> {
        let (ran, serving) = build_ran(s, base_dir)?;
        Ok(RadioNet {
            ran,
            cell_nodes: s.cells.iter().map(|c| node_index(&c.node)).collect(),
            ue_nodes: s.ues.iter().map(|u| node_index(&u.node)).collect(),
            ue_interfaces: Vec::new(),
            decoded: s.cells.iter().map(|_| RanOutput::default()).collect(),
            serving,
        })
    }

    /// The cell carrying UE `ue`'s bearer now.
    pub fn serving_cell(&self, ue: UeId) -> CellId {
        self.ran.cells_of(ue)[0]
    }

    /// The node of the cell carrying UE `ue`'s bearer now.
    pub fn serving_node(&self, ue: UeId) -> NodeId {
        self.cell_nodes[self.serving_cell(ue).0 as usize]
    }

    /// The UE radio with interface `k`, if one has it.
    pub fn ue_with_interface(&self, k: InterfaceId) -> Option<UeId> {
        self.ue_interfaces.iter().position(|&i| i == k).map(|i| UeId(i as u32))
    }
}
