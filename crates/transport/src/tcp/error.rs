//! Why a connection could not be created.

use std::fmt;

use super::MSS_RANGE_BYTES;
use crate::cc::UnknownCc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpError {
    MssOutOfRange { mss_bytes: u32 },
    UnknownCc(UnknownCc),
}

impl fmt::Display for TcpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpError::MssOutOfRange { mss_bytes } => {
                write!(f, "mss_bytes = {mss_bytes}: out of range; allowed: {}..={}", MSS_RANGE_BYTES.start(), MSS_RANGE_BYTES.end())
            }
            TcpError::UnknownCc(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TcpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TcpError::UnknownCc(e) => Some(e),
            TcpError::MssOutOfRange { .. } => None,
        }
    }
}

impl From<UnknownCc> for TcpError {
    fn from(e: UnknownCc) -> TcpError {
        TcpError::UnknownCc(e)
    }
}
