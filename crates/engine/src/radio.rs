//! The radio access network inside the simulation: the scenario's cells and UEs
//! translated into one `ran::Ran` (a `channel::LinkChannel` and CQI reporter per
//! radio link of a UE to a cell), plus the nodes they sit on and each UE's serving-cell
//! decision.
//!
//! The engine drives each cell with one event per slot: it delivers what the
//! previous slot decoded (TBs are decoded at the end of their slot, which is the
//! start of the next) and then advances the cell over the current slot.

use std::path::Path;

use millinet_channel::{CqiReporter, LinkChannel, LinkRngs};
use millinet_ran::{CellId, LegRadio, Ran, RanOutput, ServingCellControl};
use millinet_scenario::radio::CellKind;
use millinet_scenario::translate::radio::{
    cell_config, cqi_config, handover_config, link_config, measured_cells, obstacles, outage_threshold_db, ue_config,
};
use millinet_scenario::translate::rlc_codel;
use millinet_scenario::ConfigError;

use crate::rng::{self, Stream};
use crate::scenario::{Aqm, Scenario};
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
    let obstacles = obstacles(s, &mut rng::stream(s.seed, "obstacles"))?;
    let mut ran = Ran::new();
    for (i, c) in s.cells.iter().enumerate() {
        ran.add_cell(cell_config(i, c, outage_threshold_db(s, c))?, rng::stream(s.seed, &format!("cell{i}/harq")))
            .map_err(|e| ConfigError::at(&format!("cells.{i}"), &e))?;
    }
    let mut serving = Vec::new();
    for (i, u) in s.ues.iter().enumerate() {
        let ue = ran.add_ue();
        let measured = measured_cells(s, u);
        for (n, &k) in measured.iter().enumerate() {
            let c = &s.cells[k];
            let link = link_config(i, u, c, outage_threshold_db(s, c), &obstacles, base_dir)?;
            // The first serving cell's link keeps the stream name of the single-cell runs.
            let stream = if n == 0 { format!("ue{i}/channel") } else { format!("ue{i}/channel/cell{k}") };
            let rngs = LinkRngs::from_stream(rng::stream(s.seed, &stream));
            let channel = LinkChannel::new(&link, rngs).map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
            let cqi = CqiReporter::new(cqi_config(c)).map_err(|e| ConfigError::at(&format!("cells.{k}"), &e))?;
            let (cell, radio) = (CellId(k as u32), LegRadio { channel, cqi });
            let added = if n == 0 { ran.attach(ue, cell, ue_config(u), radio) } else { ran.add_neighbour(ue, cell, radio) };
            added.map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
        }
        let cell = CellId(measured[0] as u32);
        if u.rlc_aqm == Aqm::Codel {
            ran.set_aqm(ue, cell, millinet_ran::Direction::Downlink, Box::new(rlc_codel())).expect("attached just now");
        }
        let anchor = s.cells.iter().position(|c| c.node == u.anchor && c.kind == CellKind::Lte).map(|k| CellId(k as u32));
        let control = ServingCellControl::new(handover_config(&s.handover), anchor).map_err(|e| ConfigError::at("handover", &e))?;
        serving.push((measured.len() > 1).then_some(control));
    }
    Ok(RadioNet {
        ran,
        cell_nodes: s.cells.iter().map(|c| node_index(&c.node)).collect(),
        ue_nodes: s.ues.iter().map(|u| node_index(&u.node)).collect(),
        ue_interfaces: Vec::new(),
        decoded: s.cells.iter().map(|_| RanOutput::default()).collect(),
        serving,
    })
}
