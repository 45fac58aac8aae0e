//! The project's BPF congestion controls (bpf/, docs/models/bpf-congestion-control.md) in the
//! running kernel: `make bpf` builds them and their loader into `target/bpf`; a
//! [`Registration`] runs the loader, which registers every control under a name unique to it,
//! and unregisters them when dropped, or when this process dies.

mod error;
mod registration;

pub use error::BpfCcError;
pub use registration::{default_dir, Cc, Registration};
