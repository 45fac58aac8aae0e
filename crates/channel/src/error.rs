//! The error of a bad model configuration: which field, what value, what is allowed.

use std::fmt;

/// A configuration value the channel models cannot work with.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// Dotted path of the field inside the config, e.g. `mobility.speed_mps`.
    pub field: String,
    /// The offending value as written by `Debug`.
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, value: impl fmt::Debug, expected: impl Into<String>) -> Self {
        ConfigError { field: field.into(), value: format!("{value:?}"), expected: expected.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: expected {}", self.field, self.value, self.expected)
    }
}

impl std::error::Error for ConfigError {}

/// `Ok` when `v` is finite and ≥ `min`, else the error for `field`.
pub(crate) fn check_at_least(field: &str, v: f64, min: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v >= min {
        Ok(())
    } else {
        Err(ConfigError::new(field, v, format!("a finite number ≥ {min}")))
    }
}

/// `Ok` when `v` is finite and > 0, else the error for `field`.
pub(crate) fn check_positive(field: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(field, v, "a finite number > 0"))
    }
}
