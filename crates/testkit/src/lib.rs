//! One small sans-IO driver for the tests of transport, proxy and ran.
//!
//! A test builds *stations* (anything that takes packets and the time, returns packets and
//! states its next deadline: a TCP endpoint, a middlebox, a RAN) and joins their ports with
//! one-way [`Link`]s (delay, optional rate with a drop-tail queue, a filter that may drop or
//! rewrite). The [`Driver`] then runs the earliest event, one at a time, with a deterministic
//! order at equal times (see [`Driver::step`]), and can record every packet sent.
//! [`FaultInjector`] is a station that drops, corrupts, duplicates and delays what crosses it.
//! [`StreamCheck`] checks, independently of the model, that a receiving application gets the
//! stream in order, exactly once, and only bytes that arrived.
//!
//! This crate depends on millinet-wire only, so every model crate can use it as a
//! dev-dependency without a cycle.

mod driver;
mod faults;
mod link;
mod rng;
mod stream;
mod timed;

pub use driver::{Driver, LinkId, Outbox, Port, Sent, Station};
pub use faults::{FaultCounts, FaultInjector, Faults};
pub use link::{Filter, Link};
pub use rng::SplitMix64;
pub use stream::StreamCheck;

/// One millisecond in nanoseconds.
pub const MS: u64 = 1_000_000;
