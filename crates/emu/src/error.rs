//! What can stop an emulation, typed: the caller tells a user's mistake (a scenario
//! error, or a scenario the emulator cannot host) from a failure of the host.

use millinet_scenario::ConfigError;

#[derive(Debug)]
pub enum EmuError {
    /// The scenario or an override is invalid (the same message as `millinet run`).
    Scenario(ConfigError),
    /// A valid scenario the emulator cannot host: names the field and what is missing.
    Unsupported { field: String, reason: String },
    /// The host refused something (a command, a system call): what and why.
    System(String),
}

impl EmuError {
    pub fn unsupported(field: impl Into<String>, reason: impl Into<String>) -> EmuError {
        EmuError::Unsupported { field: field.into(), reason: reason.into() }
    }

    /// A failed system call, with what it was for.
    pub fn os(what: &str) -> EmuError {
        EmuError::System(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmuError::Scenario(e) => write!(f, "{e}"),
            EmuError::Unsupported { field, reason } => write!(f, "{field}: the emulator cannot host this scenario: {reason}"),
            EmuError::System(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EmuError {}

impl From<ConfigError> for EmuError {
    fn from(e: ConfigError) -> EmuError {
        EmuError::Scenario(e)
    }
}
