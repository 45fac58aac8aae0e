//! The radio access network inside the simulation: the scenario's cells and UEs
//! translated into one `ran::Ran` (a `channel::LinkChannel` and CQI reporter per
//! UE leg), plus the nodes they sit on.
//!
//! The engine drives each cell with one event per slot: it delivers what the
//! previous slot decoded (TBs are decoded at the end of their slot, which is the
//! start of the next) and then advances the cell over the current slot.

use std::path::Path;

use millinet_channel::{CqiReporter, LinkChannel, LinkRngs};
use millinet_ran::{CellId, LegRadio, Ran, RanOutput};
use millinet_scenario::translate::radio::{cell_config, cqi_config, link_config, obstacles, outage_threshold_db, ue_config};
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
    /// Node each UE sits on, by `UeId`.
    pub ue_nodes: Vec<u32>,
    /// Per cell: decoded in its previous slot, delivered at the start of its next.
    pub decoded: Vec<RanOutput>,
}

/// Builds every cell with its UEs. `node_index` maps node names to indices.
pub fn build(s: &Scenario, base_dir: &Path, node_index: &dyn Fn(&str) -> u32) -> Result<RadioNet, Error> {
    let obstacles = obstacles(s, &mut rng::stream(s.seed, "obstacles"))?;
    let mut ran = Ran::new();
    for (i, c) in s.cells.iter().enumerate() {
        ran.add_cell(cell_config(i, c, outage_threshold_db(s, c))?, rng::stream(s.seed, &format!("cell{i}/harq")))
            .map_err(|e| ConfigError::at(&format!("cells.{i}"), &e))?;
    }
    for (i, u) in s.ues.iter().enumerate() {
        let k = s.cells.iter().position(|c| c.node == u.cell).expect("validated");
        let c = &s.cells[k];
        let link = link_config(i, u, c, outage_threshold_db(s, c), &obstacles, base_dir)?;
        let rngs = LinkRngs::from_stream(rng::stream(s.seed, &format!("ue{i}/channel")));
        let channel = LinkChannel::new(&link, rngs).map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
        let cqi = CqiReporter::new(cqi_config(c)).map_err(|e| ConfigError::at(&format!("cells.{k}"), &e))?;
        let (ue, cell) = (ran.add_ue(), CellId(k as u32));
        let attached = ran.attach(ue, cell, ue_config(u), LegRadio { channel, cqi });
        attached.map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
        if u.rlc_aqm == Aqm::Codel {
            ran.set_aqm(ue, cell, millinet_ran::Direction::Downlink, Box::new(rlc_codel())).expect("attached just now");
        }
    }
    Ok(RadioNet {
        ran,
        cell_nodes: s.cells.iter().map(|c| node_index(&c.node)).collect(),
        ue_nodes: s.ues.iter().map(|u| node_index(&u.node)).collect(),
        decoded: s.cells.iter().map(|_| RanOutput::default()).collect(),
    })
}
