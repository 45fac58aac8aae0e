//! Applications on top of a TCP connection (docs/models/transport.md §9): bulk, finite file, repeated
//! downloads of a list of sizes, rate-limited source. Sans-IO like the connection: the
//! driver tells an application the time and what happened to its flow (connection
//! established, bytes delivered to the receiving application, its own deadline reached);
//! the application answers with what to do on the sending connection (`AppAction`) and
//! exposes its next deadline. The driver applies the action: `send` then `close`.

mod bulk;
mod downloads;
mod rate;

pub use bulk::Bulk;
pub use downloads::Downloads;
pub use rate::RateLimited;

/// Identity of one flow (a connection and its application) in a driver with many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub u32);

impl FlowId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What the application asks of its sending connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppAction {
    /// Append this many bytes to the send stream (`u64::MAX`: unlimited). `Some(0)` is a
    /// write of nothing, which still gives the connection a chance to send.
    pub write_bytes: Option<u64>,
    /// After the write: no more data (FIN after the last byte).
    pub close: bool,
}

impl AppAction {
    pub const NONE: AppAction = AppAction { write_bytes: None, close: false };

    pub fn is_none(&self) -> bool {
        *self == AppAction::NONE
    }
}

/// One finished download: `bytes` from `start_ns` (its request) to `end_ns` (its last byte
/// delivered to the receiving application).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Download {
    pub bytes: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Download {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

pub trait Application {
    /// The sending connection is established: data may be written.
    fn on_established(&mut self, now_ns: u64) -> AppAction;

    /// The receiving application now holds `delivered_bytes` of the stream in order.
    fn on_delivered(&mut self, _now_ns: u64, _delivered_bytes: u64) -> AppAction {
        AppAction::NONE
    }

    /// The deadline from `next_deadline_ns` was reached.
    fn on_deadline(&mut self, _now_ns: u64) -> AppAction {
        AppAction::NONE
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        None
    }

    /// Downloads finished so far, in order (empty for applications without an end).
    fn downloads(&self) -> &[Download] {
        &[]
    }

    /// When everything the application had to transfer was delivered (None: not yet, or never).
    fn completed_ns(&self) -> Option<u64> {
        None
    }
}

/// Which application a flow runs, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum AppSpec {
    Bulk,
    /// One download of this size, then close.
    File {
        size_bytes: u64,
    },
    /// Downloads of these sizes one after the other, then close.
    Repeated {
        sizes_bytes: Vec<u64>,
    },
    /// Writes at this rate from the connection's start.
    Rate {
        rate_bps: f64,
    },
}

impl AppSpec {
    /// The application of a flow whose connection starts (the client's SYN) at `start_ns`.
    pub fn build(&self, start_ns: u64) -> Box<dyn Application> {
        match self {
            AppSpec::Bulk => Box::new(Bulk),
            AppSpec::File { size_bytes } => Box::new(Downloads::new(vec![*size_bytes], start_ns)),
            AppSpec::Repeated { sizes_bytes } => Box::new(Downloads::new(sizes_bytes.clone(), start_ns)),
            AppSpec::Rate { rate_bps } => Box::new(RateLimited::new(*rate_bps, start_ns)),
        }
    }
}
