//! The link's telemetry for a proxy (docs/telemetry.md): every T_info the
//! RAN's record of each UE, due D_info later as one datagram (docs/telemetry.md), handed to the
//! milliProxy in the link and sent to a local Unix datagram socket when one is named. `t_ns`
//! is the host's CLOCK_MONOTONIC at sampling, so a consumer in any namespace of the host can
//! tell how old a record is.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use millinet_wire::{Telemetry, TELEMETRY_DATAGRAM_BYTES};

use crate::error::EmuError;

pub struct TelemetryPublisher {
    /// The socket to send from and the consumer's address, if a consumer outside the link
    /// was named.
    socket: Option<(UnixDatagram, PathBuf)>,
    period_ns: u64,
    delay_ns: u64,
    /// CLOCK_MONOTONIC at the run's time 0.
    monotonic_start_ns: u64,
    next_sample_ns: u64,
    /// Sampled, waiting for their delivery time.
    pending: VecDeque<(u64, [u8; TELEMETRY_DATAGRAM_BYTES])>,
    pub sent: u64,
    /// Records the socket's consumer did not receive (no socket bound there, or its queue full).
    pub unsent: u64,
}

impl TelemetryPublisher {
    pub fn new(to: Option<PathBuf>, period_ns: u64, delay_ns: u64, monotonic_start_ns: u64) -> Result<Self, EmuError> {
        let socket = match to {
            Some(to) => {
                let socket = UnixDatagram::unbound().map_err(|e| EmuError::System(format!("telemetry socket: {e}")))?;
                socket.set_nonblocking(true).map_err(|e| EmuError::System(format!("telemetry socket: {e}")))?;
                Some((socket, to))
            }
            None => None,
        };
        Ok(TelemetryPublisher {
            socket,
            period_ns: period_ns.max(1),
            delay_ns,
            monotonic_start_ns,
            next_sample_ns: 0,
            pending: VecDeque::new(),
            sent: 0,
            unsent: 0,
        })
    }

    /// Samples `records` (each UE radio's, by its address) when a period is due; what is due
    /// by `now_ns` is sent to the socket, if any, and appended to `due` with its due time.
    pub fn step(
        &mut self,
        now_ns: u64,
        records: impl Iterator<Item = (Ipv4Addr, Telemetry)>,
        due: &mut Vec<(u64, [u8; TELEMETRY_DATAGRAM_BYTES])>,
    ) {
        if now_ns >= self.next_sample_ns {
            for (ue, mut record) in records {
                record.t_ns = self.monotonic_start_ns + now_ns;
                self.pending.push_back((now_ns + self.delay_ns, record.encode(ue)));
            }
            self.next_sample_ns = (now_ns / self.period_ns + 1) * self.period_ns;
        }
        while let Some(&(at, datagram)) = self.pending.front().filter(|(at, _)| *at <= now_ns) {
            if let Some((socket, to)) = &self.socket {
                match socket.send_to(&datagram, to) {
                    Ok(_) => self.sent += 1,
                    Err(_) => self.unsent += 1,
                }
            }
            due.push((at, datagram));
            self.pending.pop_front();
        }
    }

    pub fn next_deadline_ns(&self) -> u64 {
        self.pending.front().map_or(self.next_sample_ns, |&(due, _)| due.min(self.next_sample_ns))
    }
}
