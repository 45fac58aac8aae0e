//! `millinet calibrate` (docs/models/channel.md §13): the channel crate drops the UEs of TR
//! 38.901's large-scale calibration; this returns their results as columns.

use millinet_channel::calibration::{drop, CalibrationConfig};
use millinet_channel::Scenario;
use millinet_engine::rng;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::ScenarioError;

/// One calibration drop of `scenario` ("uma" or "umi") at 30 GHz with `ues_per_sector` UEs in
/// each of the 57 sectors: a dict of columns `coupling_loss_db`, `sir_db`, `sinr_db`, `indoor`
/// and `los`, one row per UE.
#[pyfunction]
#[pyo3(signature = (scenario, ues_per_sector, seed=1))]
fn calibration_drop<'py>(py: Python<'py>, scenario: &str, ues_per_sector: usize, seed: u64) -> PyResult<Bound<'py, PyDict>> {
    let which = match scenario {
        "uma" => Scenario::Uma,
        "umi" => Scenario::UmiStreetCanyon,
        other => return Err(ScenarioError::new_err(format!("calibration scenario {other:?}: allowed: uma, umi"))),
    };
    if ues_per_sector == 0 {
        return Err(ScenarioError::new_err("ues_per_sector = 0: expected an integer ≥ 1"));
    }
    let config = CalibrationConfig::tr38901(which, ues_per_sector);
    let results = py.allow_threads(|| drop(&config, &mut rng::stream(seed, &format!("calibration/{scenario}"))));
    let columns = PyDict::new(py);
    columns.set_item("coupling_loss_db", results.iter().map(|u| u.coupling_loss_db).collect::<Vec<_>>())?;
    columns.set_item("sir_db", results.iter().map(|u| u.sir_db).collect::<Vec<_>>())?;
    columns.set_item("sinr_db", results.iter().map(|u| u.sinr_db).collect::<Vec<_>>())?;
    columns.set_item("indoor", results.iter().map(|u| u.indoor).collect::<Vec<_>>())?;
    columns.set_item("los", results.iter().map(|u| u.los).collect::<Vec<_>>())?;
    Ok(columns)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(calibration_drop, m)?)
}
