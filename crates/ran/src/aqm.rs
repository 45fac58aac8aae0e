//! Hook for active queue management on an RLC transmission buffer
//! (transport.md §5). The ran crate cannot depend on transport, so the engine
//! implements this trait by wrapping the transport crate's CoDel. Without one,
//! the buffer is drop-tail (ran.md §4).

/// Decides at dequeue, as CoDel does (RFC 8289 §4.2).
pub trait BufferAqm: Send {
    /// Called when an SDU leaves the transmission buffer for its first
    /// transmission. `sojourn_ns` is its time in the buffer since the PDCP
    /// stamp; `backlog_bytes` is the occupancy B left behind it. Returns true
    /// to drop the SDU.
    fn on_dequeue(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64) -> bool;
}
