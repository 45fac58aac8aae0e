//! summary.json's sections about the network — its queues, its UE radios and its handovers —
//! written once for both drivers (docs/outputs.md).

use millinet_proxy::Summary;
use millinet_ran::{SwitchKind, UeId};
use millinet_scenario::FlowSpec;
use serde_json::{json, Map, Value};

use crate::metrics::LogHistogram;
use crate::network::Network;

/// Mean and percentiles in milliseconds of a histogram of nanoseconds.
pub fn latency_summary(h: &LogHistogram) -> Value {
    let ms = |v: Option<f64>| v.map(|ns| ns / 1e6);
    let [p50, p95, p99] = h.percentiles([50.0, 95.0, 99.0]);
    json!({
        "mean": ms(h.mean()),
        "p50": ms(p50),
        "p95": ms(p95),
        "p99": ms(p99),
    })
}

/// What both drivers measure of a flow, from which [`flow_summary`] writes its summary.json
/// entry; each driver then adds what only it measures.
pub struct FlowRecord<'a> {
    pub id: usize,
    pub spec: &'a FlowSpec,
    /// Application payload delivered in order to the receiver, over `measured_ns` (from the
    /// flow's start, unless the client measured its own interval).
    pub delivered_bytes: u64,
    pub measured_ns: u64,
    /// Its packets' RAN latency (PDCP entry to delivery), the network's.
    pub ran_latency: &'a LogHistogram,
    pub carried: Carried<'a>,
}

/// How a flow's bytes were carried.
pub enum Carried<'a> {
    /// A TCP or MP-TCP connection.
    Stream {
        mptcp: bool,
        /// From the connection request to the last byte delivered, for a finite transfer.
        download_time_ns: Option<u64>,
        /// Each download's own duration (repeated downloads).
        downloads_ns: Vec<u64>,
        /// The sender's RTT (per-ACK samples in the simulator, the kernel's smoothed RTT every
        /// sample step in the emulator).
        rtt: &'a LogHistogram,
        retransmits: u64,
        /// None where the driver cannot count them (iperf3).
        rtos: Option<u64>,
    },
    /// Datagrams at a rate.
    Datagrams { sent_packets: u64, received_packets: u64 },
}

/// summary.json's `flows` entry of what both drivers measure (docs/outputs.md §2).
pub fn flow_summary(r: &FlowRecord) -> Map<String, Value> {
    let measured_s = r.measured_ns as f64 / 1e9;
    let seconds = |ns: u64| ns as f64 / 1e9;
    let mut m = Map::new();
    m.insert("id".into(), json!(r.id));
    m.insert("src".into(), json!(r.spec.src));
    m.insert("dst".into(), json!(r.spec.dst));
    m.insert("goodput_bps".into(), json!(if measured_s > 0.0 { r.delivered_bytes as f64 * 8.0 / measured_s } else { 0.0 }));
    m.insert("delivered_bytes".into(), json!(r.delivered_bytes));
    if r.ran_latency.count() > 0 {
        m.insert("ran_latency_ms".into(), latency_summary(r.ran_latency));
    }
    match &r.carried {
        Carried::Stream { mptcp, download_time_ns, downloads_ns, rtt, retransmits, rtos } => {
            m.insert("kind".into(), json!(if *mptcp { "mptcp" } else { "tcp" }));
            m.insert("cc".into(), json!(r.spec.cc));
            m.insert("mss_bytes".into(), json!(r.spec.mss_bytes));
            m.insert("download_time_s".into(), json!(download_time_ns.map(seconds)));
            m.insert("rtt_ms".into(), latency_summary(rtt));
            m.insert("rtt_samples".into(), json!(rtt.count()));
            m.insert("retransmits".into(), json!(retransmits));
            m.insert("rtos".into(), json!(rtos));
            if r.spec.app == millinet_scenario::App::Repeated {
                m.insert("download_times_s".into(), json!(downloads_ns.iter().copied().map(seconds).collect::<Vec<f64>>()));
            }
        }
        Carried::Datagrams { sent_packets, received_packets } => {
            m.insert("kind".into(), json!("udp"));
            m.insert("sent_packets".into(), json!(sent_packets));
            m.insert("received_packets".into(), json!(received_packets));
            m.insert("lost_packets".into(), json!(sent_packets.saturating_sub(*received_packets)));
        }
    }
    m
}

/// summary.json's object of a middlebox: its node, its kind and setting, its counters.
pub fn middlebox_summary(node: &str, s: Summary) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("node".into(), node.into());
    m.insert("kind".into(), s.kind.into());
    m.insert(s.setting.0.into(), s.setting.1.into());
    for (name, value) in s.counters {
        m.insert(name.into(), value.into());
    }
    m
}

impl Network {
    /// One entry per link direction, wired links first (`id` is the `queues` table's `queue`).
    pub fn queues_summary(&mut self, end_ns: u64) -> Vec<Value> {
        self.links
            .iter_mut()
            .enumerate()
            .map(|(i, l)| {
                let mean = l.mean_bytes(end_ns);
                json!({
                    "id": i,
                    "name": l.name,
                    "arrived_packets": l.stats.arrived_packets,
                    "delivered_packets": l.stats.delivered_packets,
                    "dropped_packets": l.stats.dropped_packets,
                    "dropped_bytes": l.stats.dropped_bytes,
                    "aqm_dropped_packets": l.stats.aqm_dropped_packets,
                    "aqm_marked_packets": l.stats.aqm_marked_packets,
                    "max_bytes": l.stats.max_bytes,
                    "mean_bytes": mean,
                    "queued_packets_at_end": l.queued_packets(end_ns),
                    "transmitting_packets_at_end": l.transmitting_packets(end_ns),
                    "propagating_packets_at_end": l.propagating_packets(end_ns),
                })
            })
            .collect()
    }

    /// One entry per UE radio. `goodput_to(node, radio)` is the goodput of the flows that end
    /// at radio `radio` of the device on `node` (its rank among the device's UEs).
    pub fn ues_summary(&self, goodput_to: &dyn Fn(&str, u32) -> f64) -> Vec<Value> {
        (0..self.ues())
            .map(|k| {
                let ue = UeId(k as u32);
                let m = &self.ue_metrics[k];
                let r = self.radio.ran.radio_stats(ue);
                let (node, cell) = &self.ue_names[k];
                let radio_index = self.ue_names[..k].iter().filter(|(n, _)| n == node).count() as u32;
                let goodput_bps = goodput_to(node, radio_index);
                let slots = r.slots.max(1) as f64;
                let mean_rate_bps = r.rate_bps_sum / slots;
                let all = self.radio.ran.ue_stats(ue);
                let st = all.downlink;
                let switches = |kinds: &[SwitchKind]| self.handovers.log.iter().filter(|r| r.ue == ue && kinds.contains(&r.kind)).count();
                json!({
                    "id": k,
                    "node": node,
                    "cell": cell,
                    "cell_at_end": self.serving_cell_name(ue),
                    "handovers": switches(&[SwitchKind::Handover]),
                    "bearer_switches": switches(&[SwitchKind::ToAnchor, SwitchKind::FromAnchor]),
                    "mean_rate_bps": mean_rate_bps,
                    "goodput_bps": goodput_bps,
                    "utilization": if mean_rate_bps > 0.0 { goodput_bps / mean_rate_bps } else { 0.0 },
                    "los_fraction": r.los_slots as f64 / slots,
                    "outage_fraction": r.outage_slots as f64 / slots,
                    "ran_latency_ms": latency_summary(&m.ran_latency),
                    "downlink": {
                        "sdus_delivered": st.sdus_delivered,
                        "bytes_delivered": st.bytes_delivered,
                        "drops_overflow": st.drops_overflow,
                        "drops_aqm": st.drops_aqm,
                        "aqm_marks": st.aqm_marks,
                        "um_losses": st.um_losses,
                        "harq_tx": st.harq_tx,
                        "harq_retx": st.harq_retx,
                        "harq_failures": st.harq_failures,
                        "harq_give_ups": st.harq_give_ups,
                        "rlc_retx_segments": st.rlc_retx_segments,
                        "slots_scheduled": st.slots_scheduled,
                        "slot_share": st.slot_share,
                    },
                    "uplink": {
                        "sdus_delivered": all.uplink.sdus_delivered,
                        "bytes_delivered": all.uplink.bytes_delivered,
                    },
                })
            })
            .collect()
    }

    /// One entry per handover or bearer switch, in time order.
    pub fn mobility_summary(&self) -> Vec<Value> {
        let cell_name = |c: millinet_ran::CellId| self.topology.name(self.radio.cell_nodes[c.0 as usize]);
        self.handovers
            .log
            .iter()
            .map(|r| {
                json!({
                    "t_s": r.t_ns as f64 / 1e9,
                    "ue": r.ue.0,
                    "kind": r.kind.name(),
                    "from": cell_name(r.from),
                    "to": cell_name(r.to),
                    "interruption_s": r.interruption_ns as f64 / 1e9,
                    "sdus_forwarded": r.sdus_forwarded,
                    "bytes_forwarded": r.bytes_forwarded,
                })
            })
            .collect()
    }

    /// The RAN latency of scenario flow `flow`'s packets delivered over a radio downlink.
    pub fn flow_ran_latency(&self, flow: usize) -> &LogHistogram {
        &self.flow_ran_latency[flow]
    }
}
