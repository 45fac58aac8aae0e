//! Active queue management (transport.md §5). Drop-tail is the queue's own
//! capacity limit; an AQM only decides, packet by packet at dequeue, whether the
//! packet leaving the queue is delivered or dropped.

mod codel;

pub use codel::Codel;

/// What happens to the packet being dequeued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Deliver,
    Drop,
}
