//! The one interface of active queue management (docs/models/transport.md §10), shared by
//! every queue that may have one: wired links in the engine and RLC
//! transmission buffers in ran. It lives here because both the transport crate
//! (which implements CoDel and DualPI2) and ran (which may not depend on transport) depend
//! on wire. Without an AQM a queue is drop-tail: its capacity limit is its own.

/// What happens to the packet being dequeued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Deliver,
    Drop,
    /// Deliver with the ECN field set to CE (RFC 3168 §5): given only for an ECN-capable
    /// packet, in place of a drop or as a scalable control's signal (RFC 9331 §5).
    Mark,
}

/// Decides at dequeue, as CoDel does (RFC 8289 §4.2): the queue removes a
/// packet, then asks. A queue that gets `Drop` removes the next packet and
/// asks again at the same `now_ns`, until one is delivered or it is empty.
pub trait Aqm: Send {
    /// `sojourn_ns` is how long the packet waited in the queue; `backlog_bytes`
    /// is what remains queued behind it; `ecn` is the packet's ECN field.
    fn on_dequeue(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64, ecn: u8) -> Verdict;
}
