//! The one interface of every proxy in this crate (milliProxy, the split-TCP baseline), sans-IO:
//! packets, telemetry and the time in; packets and the next deadline out; plus what a driver
//! reports about it (per-flow samples, summary counters). The simulator's engine and a real
//! daemon drive any proxy through it alone.

use std::net::Ipv4Addr;

use millinet_wire::{Packet, Telemetry};

use crate::flow_table::{Direction, FlowKey};
use crate::payload::PayloadPool;

pub trait Middlebox {
    /// A packet crossing the node in `direction`. Everything that must leave the node — the
    /// packet itself, packets made from it, relayed ACKs, retransmissions — is appended to
    /// `out`; route each by its destination address.
    fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>);
    /// A telemetry record of UE `ue`, in force from now on. Delivery delay (D_info) and the
    /// sampling period (T_info) are the driver's: it hands each record over when it arrives.
    fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>);
    /// The deadline from `next_deadline_ns` has passed (late or spurious calls are harmless).
    fn on_timeout(&mut self, now_ns: u64, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>);
    /// The earliest time `on_timeout` must be called, if any.
    fn next_deadline_ns(&self) -> Option<u64>;
    /// Whether telemetry changes anything (a driver need not deliver it otherwise).
    fn uses_telemetry(&self) -> bool;
    /// One sample per flow, in flow-key order.
    fn flow_samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)>;
    fn summary(&self) -> Summary;
}

/// One flow's state as a time-series row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSample {
    /// milliProxy: the flow window FW; split-TCP: the receive window offered to the server.
    pub window_bytes: u64,
    /// Received from the server and not yet acknowledged by the UE.
    pub buffered_bytes: u64,
    /// Sent toward the UE and not yet acknowledged.
    pub in_flight_bytes: u64,
    /// RTT_min, for a proxy that estimates it.
    pub rtt_min_ns: Option<u64>,
}

/// What a run's summary reports about the proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// "milliproxy" or "split".
    pub kind: &'static str,
    /// The configuration's main choice by name: ("policy", flow-window policy) or ("cc",
    /// congestion control toward the UE).
    pub setting: (&'static str, String),
    /// Counters by name, in report order.
    pub counters: Vec<(&'static str, u64)>,
    /// Gauges (values that go up and down) by name.
    pub gauges: Vec<(&'static str, u64)>,
}

/// A boxed middlebox is one too, so drivers can hold either proxy as `Box<dyn Middlebox>`.
impl<M: Middlebox + ?Sized> Middlebox for Box<M> {
    fn on_packet(&mut self, now_ns: u64, packet: Packet, direction: Direction, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        (**self).on_packet(now_ns, packet, direction, pool, out)
    }
    fn on_telemetry(&mut self, now_ns: u64, ue: Ipv4Addr, record: Telemetry, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        (**self).on_telemetry(now_ns, ue, record, pool, out)
    }
    fn on_timeout(&mut self, now_ns: u64, pool: &mut dyn PayloadPool, out: &mut Vec<Packet>) {
        (**self).on_timeout(now_ns, pool, out)
    }
    fn next_deadline_ns(&self) -> Option<u64> {
        (**self).next_deadline_ns()
    }
    fn uses_telemetry(&self) -> bool {
        (**self).uses_telemetry()
    }
    fn flow_samples(&self, now_ns: u64) -> Vec<(FlowKey, FlowSample)> {
        (**self).flow_samples(now_ns)
    }
    fn summary(&self) -> Summary {
        (**self).summary()
    }
}
