//! What differs on the uplink (docs/models/ran.md#tdd-and-uplink): the UE must ask for resources
//! before the gNB knows it has data, and it transmits at a fraction of the
//! downlink rate (lower transmit power and fewer antennas at the UE).

/// Scheduling-request state of one UE (TS 38.321 §5.4.4). While the UE's
/// uplink buffer holds data the gNB learns its size from buffer status
/// reports riding on the uplink TBs, so only data arriving to an empty buffer
/// pays the SR delay.
#[derive(Debug, Default)]
pub(crate) struct SchedulingRequest {
    /// From this time the gNB knows the UE has uplink data.
    known_from_ns: u64,
}

impl SchedulingRequest {
    /// An uplink SDU arrives; `buffer_was_empty` says whether the UE had
    /// nothing queued before it.
    #[inline]
    pub fn on_enqueue(&mut self, now_ns: u64, buffer_was_empty: bool, sr_delay_ns: u64) {
        if buffer_was_empty {
            self.known_from_ns = now_ns + sr_delay_ns;
        }
    }

    /// Whether the gNB may schedule the UE's queued uplink data at `now_ns`.
    #[inline]
    pub fn granted(&self, now_ns: u64) -> bool {
        self.known_from_ns <= now_ns
    }
}
