//! The radio access network inside the simulation: the scenario's cells and UEs
//! translated into one `ran::Ran` (a `channel::LinkChannel` and CQI reporter per
//! radio link of a UE to a cell), plus the nodes they sit on and each UE's serving-cell
//! decision.
//!
//! The engine drives each cell with one event per slot: it delivers what the
//! previous slot decoded (TBs are decoded at the end of their slot, which is the
//! start of the next) and then advances the cell over the current slot.

use std::path::Path;

use millinet_ran::{Ran, RanOutput, ServingCellControl};
use millinet_scenario::translate::radio::build_ran;

use crate::rng::Stream;
use crate::scenario::Scenario;
use crate::Error;

/// The scenario's RAN: cell k is scenario cell k, UE k is scenario UE k (its
/// `UeId`, stable across cells).
pub struct RadioNet {
    pub ran: Ran<Stream>,
    /// Node of each gNB, by `CellId`.
    pub cell_nodes: Vec<u32>,
    /// Node each UE sits on, by `UeId` (a device with several radios is several UEs on one
    /// node).
    pub ue_nodes: Vec<u32>,
    /// The network interface of each UE's radio, by `UeId` (set when the network is built).
    pub ue_interfaces: Vec<u32>,
    /// Per cell: decoded in its previous slot, delivered at the start of its next.
    pub decoded: Vec<RanOutput>,
    /// Per UE: its serving-cell decision, for a UE that measures more than one cell.
    pub serving: Vec<Option<ServingCellControl>>,
}

/// Builds every cell with its UEs. `node_index` maps node names to indices.
pub fn build(s: &Scenario, base_dir: &Path, node_index: &dyn Fn(&str) -> u32) -> Result<RadioNet, Error> {
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
