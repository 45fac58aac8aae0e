//! The one configuration-error type: whatever a user wrote that cannot be run.

use std::fmt;

/// A bad scenario file, override, trace or option: one line for the user that names where
/// (file and line, `--set`, or field path), the bad value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    pub fn new(message: impl Into<String>) -> ConfigError {
        ConfigError { message: message.into() }
    }

    /// The same error with `context: ` in front (e.g. the field a model's error belongs to).
    pub fn at(context: &str, error: &dyn fmt::Display) -> ConfigError {
        ConfigError { message: format!("{context}: {error}") }
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}
