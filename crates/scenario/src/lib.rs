//! Scenario files: schema, loading with `--set` overrides, and validation. Every mistake
//! becomes one [`ConfigError`] that names the file and line (or the override), the key,
//! the bad value and what is allowed. [`translate`] turns a loaded [`Scenario`] into the
//! models' configurations, which the engine (and later the emulator) build their models from.

mod error;
mod load;
pub mod profile;
pub mod radio;
pub mod rng;
mod schema;
pub mod translate;
mod validate;

pub use error::ConfigError;
pub use load::{load, load_proxy_text, load_text, Loaded};
pub use schema::*;
