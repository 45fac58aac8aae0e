//! Proxy-wide counters (docs/proxy.md#how-a-flow-is-handled and docs/outputs.md §2).

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    pub flows_created: u64,
    /// Removed on FIN/RST completion.
    pub flows_closed: u64,
    pub flows_idle_expired: u64,
    /// Handled SYNs that got no instance because `max_flows` instances existed: the flow
    /// passes through untouched.
    pub flows_refused_limit: u64,
    /// Packets forwarded unchanged: no instance (unhandled, refused, not TCP, unknown flow).
    pub packets_passed_through: u64,
    /// Payload bytes held by all instances.
    pub buffer_bytes: u64,
    /// Server segments dropped because the flow's or the proxy's buffer was full.
    pub buffer_full_drops: u64,
    pub server_segments_buffered: u64,
    /// Segments sent toward the UE for the first time (coalesced).
    pub segments_forwarded: u64,
    pub local_retransmissions: u64,
    pub acks_relayed: u64,
    pub dup_acks_suppressed: u64,
    /// Telemetry records handed over and put in force (each takes effect at once).
    pub telemetry_applied: u64,
    /// Records refused because they were already older than `telemetry_max_age_ns`, or older
    /// than the UE's record in force (reordered).
    pub telemetry_late: u64,
    /// UEs whose record made room for a new UE's, `max_ues` being held (the least recently
    /// updated goes: the memory bound of the per-UE table).
    pub telemetry_evicted: u64,
    /// Times a UE's record aged past `telemetry_max_age_ns` with no successor: from then on
    /// its flows ran in passthrough until a fresh record came.
    pub telemetry_expired: u64,
}
