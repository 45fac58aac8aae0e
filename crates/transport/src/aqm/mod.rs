//! Active queue management (docs/models/transport.md §10). Drop-tail is the queue's own
//! capacity limit; an AQM only decides, packet by packet at dequeue, whether the
//! packet leaving the queue is delivered, dropped or CE-marked. The interface is wire's
//! (shared with ran's RLC buffers); the implementations live here.

mod codel;
mod dualpi2;

pub use codel::Codel;
pub use dualpi2::{DualPi2, DualPi2Config};
pub use millinet_wire::aqm::{Aqm, Verdict};
