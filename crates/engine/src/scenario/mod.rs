//! Scenario files: schema, loading with `--set` overrides, and validation.

mod load;
pub mod radio;
mod schema;
mod validate;

pub use load::{load, Loaded};
pub use schema::*;
