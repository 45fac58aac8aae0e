//! Active queue management (CoDel, RFC 8289).
