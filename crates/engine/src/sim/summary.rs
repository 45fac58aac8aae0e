//! summary.json: what a run measured, per flow and middlebox, with the network's sections
//! (queues, UEs, handovers) (docs/outputs.md).

use millinet_network::records::{flow_summary, latency_summary, Carried, FlowRecord};
use serde_json::{json, Map, Value};

use super::*;

/// What only the simulator measures of a TCP connection: its fast retransmits, spurious
/// timeouts, tail loss probes, ECN feedback and what limited its sending.
fn tcp_extra(entry: &mut Map<String, Value>, stats: &TcpStats) {
    let limited_total: u64 = stats.limited_ns.iter().sum();
    let share = |k: usize| if limited_total == 0 { 0.0 } else { stats.limited_ns[k] as f64 / limited_total as f64 };
    entry.insert("fast_retransmits".into(), json!(stats.fast_retransmits));
    entry.insert("spurious_rtos".into(), json!(stats.spurious_rtos));
    entry.insert("tail_loss_probes".into(), json!(stats.tail_loss_probes));
    entry.insert("ecn_reductions".into(), json!(stats.ecn_reductions));
    entry.insert("ce_bytes".into(), json!(stats.ce_bytes));
    entry.insert("limited_by".into(), json!({ "cwnd": share(0), "rwnd": share(1), "app": share(2), "pacing": share(3) }));
}

impl Simulation {
    /// summary.json without the simulator's cost fields (added by the caller).
    pub fn summary(&mut self, name: &str) -> serde_json::Value {
        let (network, engine) = (&mut self.network, &self.engine);
        let end_ns = engine.end_ns;
        let flows: Vec<_> = engine
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let model = &engine.endpoints[f.sender as usize].model;
                // An MP-TCP flow's TCP counters are its first subflow's (none before any SYN
                // arrived), its RTT all subflows'; each subflow's own follow.
                let stats = match model {
                    Model::Tcp(c) => Some(c.stats()),
                    Model::Mptcp { conn, .. } => Some(conn.subflow(0).map(|s| s.stats()).unwrap_or_default()),
                    Model::UdpSource(_) | Model::UdpSink { .. } => None,
                };
                let rtt = f.rtt();
                let carried = match (model, &stats) {
                    (Model::UdpSource(source), _) => {
                        let received = match f.receiver.map(|r| &engine.endpoints[r as usize].model) {
                            Some(Model::UdpSink { sink, .. }) => sink.received_packets,
                            _ => unreachable!("a UDP flow's receiver is a sink"),
                        };
                        Carried::Datagrams { sent_packets: source.sent_packets(), received_packets: received }
                    }
                    (_, Some(stats)) => {
                        let app = f.app.as_deref().expect("a TCP flow has an application");
                        Carried::Stream {
                            mptcp: matches!(model, Model::Mptcp { .. }),
                            download_time_ns: app.completed_ns().map(|t| t - f.start_ns),
                            downloads_ns: app.downloads().iter().map(|d| d.duration_ns()).collect(),
                            rtt: &rtt,
                            retransmits: stats.retransmitted_segments,
                            rtos: Some(stats.rtos),
                        }
                    }
                    _ => unreachable!("a flow's sender is never a sink"),
                };
                let record = FlowRecord {
                    id: i,
                    spec: &f.spec,
                    delivered_bytes: f.delivered_bytes,
                    measured_ns: end_ns - f.start_ns,
                    ran_latency: network.flow_ran_latency(i),
                    carried,
                };
                let mut entry = flow_summary(&record);
                if let Some(stats) = &stats {
                    tcp_extra(&mut entry, stats);
                }
                if let Model::Mptcp { conn, .. } = model {
                    let stats = conn.stats();
                    let subflows: Vec<_> = (0..conn.subflow_count())
                        .filter_map(|k| conn.subflow(k).map(|s| (k, s)))
                        .map(|(k, s)| {
                            let st = s.stats();
                            // The path: the UE radio at the subflow's far end.
                            let ue = s.remote().and_then(|r| network.radio_at(*r.ip()));
                            json!({
                                "remote": s.remote().map(|r| r.to_string()),
                                "ue": ue.map(|u| u.0),
                                "cell": ue.map(|u| network.serving_cell_name(u)),
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
                    let reorder_max_bytes = mptcp_at(&engine.endpoints, f.receiver).map_or(0, |c| c.stats().max_rcv_occupancy_bytes);
                    entry.insert(
                        "mptcp".into(),
                        json!({
                            "subflows": subflows,
                            "reinjected_bytes": stats.reinjected_bytes,
                            // The mean over the samples, the maximum over the whole run.
                            "reorder_buffer_bytes": { "mean": f.reorder.mean_bytes(), "max": reorder_max_bytes },
                        }),
                    );
                }
                Value::Object(entry)
            })
            .collect();
        let queues = network.queues_summary(end_ns);
        // A UE's goodput: that of the flows to its radio of its device.
        let goodput_to = |node: &str, radio: u32| -> f64 {
            let to_radio = |f: &&Flow| f.spec.dst == node && f.spec.dst_radio == radio;
            let goodputs = flows.iter().zip(&engine.flows).filter(|(_, f)| to_radio(f));
            goodputs.map(|(summary, _)| summary["goodput_bps"].as_f64().unwrap_or(0.0)).sum()
        };
        let ues = network.ues_summary(&goodput_to);
        // Every middlebox by site: the scenario's [proxy] first when it has one, then any a
        // caller added.
        let mut added: Vec<Value> = (engine.middleboxes.iter().enumerate())
            .map(|(i, m)| m.middlebox.summary(network.topology().name(network.site_node(SiteId(i as u32)))))
            .collect();
        let proxy = engine.scenario_proxy.then(|| added.remove(0));
        let mut summary = json!({
            "scenario": name,
            "proxy": proxy,
            "ues": ues,
            "seed": engine.scenario.seed,
            "duration_s": engine.scenario.duration_s,
            "flows": flows,
            "queues": queues,
        });
        if network.ues() > 0 {
            summary["mobility"] = json!(network.mobility_summary());
        }
        if !added.is_empty() {
            summary["middleboxes"] = added.into();
        }
        summary
    }
}
