//! gNB MAC schedulers (docs/models/ran.md#scheduler): which UEs get how much of a slot. One trait,
//! one file per scheduler, one line per scheduler in [`REGISTRY`].
//!
//! UEs are named by their position in the cell (attach order), which changes
//! only when a UE before them detaches.
//!
//! The cell hands a scheduler only the UEs that can use the slot (data queued,
//! not in outage, a free HARQ process) after HARQ retransmissions have taken
//! their resources; the scheduler splits what is left. The cell turns a share
//! into bytes = R(reported SINR) × slot × share.

mod proportional_fair;
mod round_robin;
mod tdma;

pub use proportional_fair::ProportionalFair;
pub use round_robin::RoundRobin;
pub use tdma::Tdma;

/// A UE that could use the slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Position of the UE in the cell.
    pub ue: usize,
    /// Achievable rate over a full slot, R(reported SINR), in this direction.
    pub rate_bps: f64,
    /// Share of a full slot that would empty its queue (may exceed 1).
    pub need_share: f64,
}

/// Resources given to one UE in this slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grant {
    pub ue: usize,
    pub share: f64,
}

/// Bits a UE was sent in a slot (new data and HARQ retransmissions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Served {
    pub ue: usize,
    pub bits: u64,
}

pub trait Scheduler: Send {
    /// A UE joined the cell, at the next position.
    fn add_ue(&mut self) {}

    /// The UE at `position` left the cell; those after it move up by one.
    fn remove_ue(&mut self, _position: usize) {}

    /// Split `share` (≤ 1) of the slot starting at `now_ns` among
    /// `candidates` (in UE order, never empty) by pushing grants whose shares
    /// sum to at most `share`.
    fn allocate(&mut self, now_ns: u64, share: f64, candidates: &[Candidate], grants: &mut Vec<Grant>);

    /// The slot `[now_ns, now_ns + slot_ns)` is over; `served` lists the UEs
    /// that were sent something. Slots the engine skipped (idle cell) are
    /// simply absent.
    fn end_slot(&mut self, _now_ns: u64, _slot_ns: u64, _served: &[Served]) {}
}

/// Builds a scheduler with its default parameters.
pub type Constructor = fn() -> Box<dyn Scheduler>;

/// Name → constructor. Adding a scheduler is adding a file and a line here.
pub static REGISTRY: &[(&str, Constructor)] = &[
    ("round_robin", || Box::new(RoundRobin::default())),
    ("proportional_fair", || Box::new(ProportionalFair::new(proportional_fair::DEFAULT_TIME_CONSTANT_NS))),
    ("tdma", || Box::new(Tdma::default())),
];

/// The scheduler registered under `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Scheduler>> {
    REGISTRY.iter().find(|(n, _)| *n == name).map(|(_, make)| make())
}

/// Registered names, for error messages and documentation.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|(n, _)| *n)
}
