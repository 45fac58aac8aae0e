//! The one error every trace reader returns.

use std::fmt;

/// A trace that cannot be used, located at its first bad line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// The file could not be read at all (only from the `load_*` helpers).
    Unreadable { path: String, reason: String },
    /// Line `line` (1-based) has `field` = `value`, but `expected` was needed.
    BadLine { file: String, line: usize, field: String, value: String, expected: String },
}

impl TraceError {
    pub(crate) fn bad(file: &str, line: usize, field: &str, value: &str, expected: impl Into<String>) -> Self {
        TraceError::BadLine { file: file.to_string(), line, field: field.to_string(), value: value.to_string(), expected: expected.into() }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Unreadable { path, reason } => {
                write!(f, "{path}: cannot read the trace: {reason}")
            }
            TraceError::BadLine { file, line, field, value, expected } => {
                write!(f, "{file}: line {line}: {field} = {value:?}: expected {expected}")
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// Read a whole trace file, naming the path if that fails.
pub(crate) fn read(path: &std::path::Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|e| TraceError::Unreadable { path: path.display().to_string(), reason: e.to_string() })
}
