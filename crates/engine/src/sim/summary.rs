//! summary.json: what a run measured, per flow, queue, UE and middlebox (outputs.md §1).

use millinet_ran::SwitchKind;
use serde_json::json;

use super::*;

/// Mean and percentiles in milliseconds of a histogram of nanoseconds.
fn latency_summary(h: &LogHistogram) -> serde_json::Value {
    let ms = |v: Option<f64>| v.map(|ns| ns / 1e6);
    json!({
        "mean": ms(h.mean()),
        "p50": ms(h.percentile(50.0)),
        "p95": ms(h.percentile(95.0)),
        "p99": ms(h.percentile(99.0)),
    })
}

/// The TCP part of a flow's summary.
fn tcp_summary(f: &Flow, stats: &TcpStats) -> serde_json::Value {
    let limited_total: u64 = stats.limited_ns.iter().sum();
    let share = |k: usize| if limited_total == 0 { 0.0 } else { stats.limited_ns[k] as f64 / limited_total as f64 };
    let app = f.app.as_deref().expect("a TCP flow has an application");
    let rtt = f.rtt();
    let mut summary = json!({
        "kind": "tcp",
        "cc": f.spec.cc,
        "mss_bytes": f.spec.mss_bytes,
        "download_time_s": app.completed_ns().map(|t| (t - f.start_ns) as f64 / 1e9),
        "rtt_ms": latency_summary(&rtt),
        "rtt_samples": rtt.count(),
        "retransmits": stats.retransmitted_segments,
        "fast_retransmits": stats.fast_retransmits,
        "rtos": stats.rtos,
        "spurious_rtos": stats.spurious_rtos,
        "limited_by": { "cwnd": share(0), "rwnd": share(1), "app": share(2), "pacing": share(3) },
    });
    if f.spec.app == App::Repeated {
        let times_s: Vec<f64> = app.downloads().iter().map(|d| d.duration_ns() as f64 / 1e9).collect();
        summary["download_times_s"] = json!(times_s);
    }
    summary
}

impl Simulation {
    /// summary.json without the simulator's cost fields (added by the caller).
    pub fn summary(&mut self, name: &str) -> serde_json::Value {
        let end_ns = self.end_ns;
        let flows: Vec<_> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let measured_s = (end_ns - f.start_ns) as f64 / 1e9;
                let mut entry = json!({
                    "id": i,
                    "src": f.spec.src,
                    "dst": f.spec.dst,
                    "goodput_bps": if measured_s > 0.0 { f.delivered_bytes as f64 * 8.0 / measured_s } else { 0.0 },
                    "delivered_bytes": f.delivered_bytes,
                });
                if f.ran_latency.count() > 0 {
                    entry["ran_latency_ms"] = latency_summary(&f.ran_latency);
                }
                let extra = match &self.endpoints[f.sender as usize].model {
                    Model::Tcp(c) => tcp_summary(f, &c.stats()),
                    Model::Mptcp { conn, .. } => {
                        // The flow's TCP counters are its first subflow's (none before any SYN
                        // arrived), its RTT all subflows'; each subflow's own follow.
                        let first = conn.subflow(0).map(|s| s.stats()).unwrap_or_default();
                        let mut summary = tcp_summary(f, &first);
                        summary["kind"] = json!("mptcp");
                        let stats = conn.stats();
                        let subflows: Vec<_> = (0..conn.subflow_count())
                            .filter_map(|k| conn.subflow(k).map(|s| (k, s)))
                            .map(|(k, s)| {
                                let st = s.stats();
                                // The path: the UE radio at the subflow's far end.
                                let ue = s.remote().and_then(|r| self.radio_at(*r.ip()));
                                json!({
                                    "remote": s.remote().map(|r| r.to_string()),
                                    "ue": ue.map(|u| u.0),
                                    "cell": ue.map(|u| self.scenario.cells[self.radio.ran.cells_of(u)[0].0 as usize].node.clone()),
                                    "sent_bytes": stats.subflow_bytes.get(k).copied().unwrap_or(0),
                                    "acked_bytes": st.acked_bytes,
                                    "retransmits": st.retransmitted_segments,
                                    "rtos": st.rtos,
                                    "rtt_ms": latency_summary(f.rtt.get(k).map_or(&LogHistogram::default(), |r| &r.histogram)),
                                    "srtt_ms": st.srtt_ns as f64 / 1e6,
                                    "cwnd_bytes": st.cwnd_bytes,
                                })
                            })
                            .collect();
                        let reorder_max_bytes = mptcp_at(&self.endpoints, f.receiver).map_or(0, |c| c.stats().max_rcv_occupancy_bytes);
                        summary["mptcp"] = json!({
                            "subflows": subflows,
                            "reinjected_bytes": stats.reinjected_bytes,
                            // The mean over the samples, the maximum over the whole run.
                            "reorder_buffer_bytes": { "mean": f.reorder.mean_bytes(), "max": reorder_max_bytes },
                        });
                        summary
                    }
                    Model::UdpSource(source) => {
                        let received = match &self.endpoints[f.receiver as usize].model {
                            Model::UdpSink { sink, .. } => sink.received_packets,
                            _ => unreachable!("a UDP flow's receiver is a sink"),
                        };
                        json!({
                            "kind": "udp",
                            "sent_packets": source.sent_packets(),
                            "received_packets": received,
                            "lost_packets": source.sent_packets() - received,
                        })
                    }
                    Model::UdpSink { .. } => unreachable!("a flow's sender is never a sink"),
                };
                entry.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
                entry
            })
            .collect();
        let queues: Vec<_> = self
            .links
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
                    "max_bytes": l.stats.max_bytes,
                    "mean_bytes": mean,
                    "queued_packets_at_end": l.queued_packets(end_ns),
                    "transmitting_packets_at_end": l.transmitting_packets(end_ns),
                    "propagating_packets_at_end": l.propagating_packets(end_ns),
                })
            })
            .collect();
        let ues: Vec<_> = self
            .ue_metrics
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let ue = UeId(k as u32);
                let r = self.radio.ran.radio_stats(ue);
                let spec = &self.scenario.ues[k];
                // Which radio of its device this UE is (its rank among the UEs on its node).
                let radio_index = self.scenario.ues[..k].iter().filter(|u| u.node == spec.node).count() as u32;
                let goodput_bps: f64 = flows
                    .iter()
                    .zip(&self.flows)
                    .filter(|(_, f)| f.spec.dst == spec.node && f.spec.dst_radio == radio_index)
                    .map(|(summary, _)| summary["goodput_bps"].as_f64().unwrap_or(0.0))
                    .sum();
                let slots = r.slots.max(1) as f64;
                let mean_rate_bps = r.rate_bps_sum / slots;
                let all = self.radio.ran.ue_stats(ue);
                let st = all.downlink;
                let switches = |kinds: &[SwitchKind]| self.handovers.log.iter().filter(|r| r.ue == ue && kinds.contains(&r.kind)).count();
                json!({
                    "id": k,
                    "node": spec.node,
                    "cell": spec.cell,
                    "cell_at_end": self.scenario.cells[self.radio.ran.cells_of(ue)[0].0 as usize].node,
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
                        "um_losses": st.um_losses,
                        "harq_tx": st.harq_tx,
                        "harq_retx": st.harq_retx,
                        "harq_failures": st.harq_failures,
                        "harq_give_ups": st.harq_give_ups,
                        "rlc_retx_segments": st.rlc_retx_segments,
                    },
                    "uplink": {
                        "sdus_delivered": all.uplink.sdus_delivered,
                        "bytes_delivered": all.uplink.bytes_delivered,
                    },
                })
            })
            .collect();
        let node_name = |site: &Site| self.network.nodes[site.node as usize].name.clone();
        let proxy = self.middleboxes.first().filter(|_| self.scenario_proxy).map(|site| site.middlebox.summary(&node_name(site)));
        let cell_name = |c: CellId| self.scenario.cells[c.0 as usize].node.clone();
        let mobility: Vec<_> = self
            .handovers
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
            .collect();
        let mut summary = json!({
            "scenario": name,
            "proxy": proxy,
            "ues": ues,
            "seed": self.scenario.seed,
            "duration_s": self.scenario.duration_s,
            "flows": flows,
            "queues": queues,
        });
        if !self.radio.ue_nodes.is_empty() {
            summary["mobility"] = json!(mobility);
        }
        // Middleboxes a caller added besides the scenario's [proxy].
        let added = &self.middleboxes[self.scenario_proxy as usize..];
        if !added.is_empty() {
            summary["middleboxes"] = added.iter().map(|site| site.middlebox.summary(&node_name(site))).collect();
        }
        summary
    }
}
