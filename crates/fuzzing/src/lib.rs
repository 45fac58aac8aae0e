//! Fuzz harnesses of millinet: one function per target, taking the fuzzer's bytes and
//! panicking when an invariant of the target breaks. The cargo-fuzz targets in `fuzz/` are
//! one-line wrappers around them, and `tests/replay.rs` runs every checked-in corpus and
//! regression input through them on stable Rust, so `cargo test` keeps what fuzzing found.
//!
//! Structured targets decode their bytes with `arbitrary`; text targets take the bytes as
//! UTF-8 (and return early otherwise: the parsers take `&str`, reading a file is not
//! what is under test). docs/reliability.md lists the targets and what they reached.

mod proxy;
mod proxyd;
mod scenario;
mod tcp_pair;
mod tcp_receiver;
mod traces;
mod wire;

pub use proxy::{milliproxy, split_proxy};
pub use proxyd::proxyd_datapath;
pub use scenario::scenario_load;
pub use tcp_pair::{run_pair, tcp_pair_faults, PairOutcome, PairSetup};
pub use tcp_receiver::tcp_receiver;
pub use traces::{trace_5gophers, trace_capacity_csv, trace_mahimahi, trace_sinr_csv};
pub use wire::packet_round_trip;

/// The receiver's ACK timing one byte of the fuzzer's picks.
pub(crate) fn delayed_ack(choice: u8) -> millinet_transport::DelayedAck {
    use millinet_transport::DelayedAck;
    [DelayedAck::Off, DelayedAck::Rfc5681, DelayedAck::Linux][usize::from(choice % 3)]
}

/// A fuzz target: the name of its cargo-fuzz target and corpus folder, and its harness.
pub type Target = (&'static str, fn(&[u8]));

/// Every target by the name of its cargo-fuzz target and its corpus folder.
pub const TARGETS: &[Target] = &[
    ("packet_round_trip", packet_round_trip),
    ("scenario_load", scenario_load),
    ("trace_sinr_csv", trace_sinr_csv),
    ("trace_capacity_csv", trace_capacity_csv),
    ("trace_mahimahi", trace_mahimahi),
    ("trace_5gophers", trace_5gophers),
    ("tcp_receiver", tcp_receiver),
    ("milliproxy", milliproxy),
    ("split_proxy", split_proxy),
    ("tcp_pair_faults", tcp_pair_faults),
    ("proxyd_datapath", proxyd_datapath),
];
