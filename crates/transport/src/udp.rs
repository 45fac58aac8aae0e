//! UDP sources (constant bit rate, saturating) and sink.
