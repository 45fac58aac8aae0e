//! Scenario files: schema, loading with `--set` overrides, and validation. Every mistake
//! becomes one [`ConfigError`] that names the file and line (or the override), the key,
//! the bad value and what is allowed. The engine (and later the emulator) build their
//! models from a loaded [`Scenario`].

mod error;
mod load;
pub mod radio;
mod schema;
mod validate;

pub use error::ConfigError;
pub use load::{load, Loaded};
pub use schema::*;
