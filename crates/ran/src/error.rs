//! Errors of the RAN's public API besides configuration values.

use std::fmt;

use crate::config::ConfigError;
use crate::{CellId, UeId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RanError {
    /// A configuration value the models cannot work with.
    Config(ConfigError),
    UnknownUe(UeId),
    UnknownCell(CellId),
    /// The UE already has a leg on that cell.
    AlreadyAttached {
        ue: UeId,
        cell: CellId,
    },
    /// The UE has no leg on that cell.
    NotAttached {
        ue: UeId,
        cell: CellId,
    },
    /// The UE has no leg at all to carry its bearer.
    Detached(UeId),
    /// The UE already has a radio link to that cell (a leg or a neighbour).
    AlreadyMeasured {
        ue: UeId,
        cell: CellId,
    },
    /// The UE has no neighbour radio link to that cell to hand over to.
    NotMeasured {
        ue: UeId,
        cell: CellId,
    },
}

impl fmt::Display for RanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RanError::Config(e) => e.fmt(f),
            RanError::UnknownUe(ue) => write!(f, "no UE {}", ue.0),
            RanError::UnknownCell(c) => write!(f, "no cell {}", c.0),
            RanError::AlreadyAttached { ue, cell } => {
                write!(f, "UE {} is already attached to cell {}", ue.0, cell.0)
            }
            RanError::NotAttached { ue, cell } => {
                write!(f, "UE {} is not attached to cell {}", ue.0, cell.0)
            }
            RanError::Detached(ue) => write!(f, "UE {} is attached to no cell", ue.0),
            RanError::AlreadyMeasured { ue, cell } => {
                write!(f, "UE {} has a radio link to cell {} already", ue.0, cell.0)
            }
            RanError::NotMeasured { ue, cell } => {
                write!(f, "UE {} has no neighbour radio link to cell {}", ue.0, cell.0)
            }
        }
    }
}

impl std::error::Error for RanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RanError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for RanError {
    fn from(e: ConfigError) -> Self {
        RanError::Config(e)
    }
}
