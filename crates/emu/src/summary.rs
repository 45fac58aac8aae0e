//! summary.json of an emulation: the simulator's fields where the emulator measures the same
//! thing (outputs.md §1), from the real sockets (TCP_INFO) and the link's own stamps, plus an
//! `emulator` section saying how faithfully the link kept real time.

use millinet_proxyd::Datapath;
use millinet_ran::UeStats;
use millinet_scenario::Scenario;
use serde_json::{json, Value};

use crate::endpoint::FlowReport;
use crate::link::LinkReport;
use crate::mptcp::Transport;
use crate::plan::{Plan, SplitPlan};
use crate::run::{Client, QueueSummary};

/// Mean and percentiles (nearest rank) of `values`, in the values' unit; nulls when empty.
fn distribution(mut values: Vec<f64>) -> Value {
    if values.is_empty() {
        return json!({"mean": null, "p50": null, "p95": null, "p99": null});
    }
    values.sort_by(f64::total_cmp);
    let rank = |p: f64| values[((p / 100.0 * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    json!({
        "mean": values.iter().sum::<f64>() / values.len() as f64,
        "p50": rank(50.0),
        "p95": rank(95.0),
        "p99": rank(99.0),
    })
}

/// The kernel split proxy's section: where it sat, its TCP toward the UE and the bytes it
/// relayed toward the UE (its counters are the kernel's: early ACKs are all of them).
pub(crate) fn split_proxy(node: &str, split: &SplitPlan, relayed_bytes: u64) -> Value {
    json!({ "node": node, "kind": "split", "cc": split.cc, "mss_bytes": split.mss_bytes, "bytes_relayed_toward_ue": relayed_bytes })
}

/// The proxy's section: the simulator's fields (node, kind, policy, the core's counters) and
/// the daemon's packet-path counters.
pub(crate) fn proxy(node: &str, datapath: &Datapath) -> Value {
    let core = datapath.proxy().summary();
    let mut section = serde_json::Map::new();
    section.insert("node".into(), node.into());
    section.insert("kind".into(), core.kind.into());
    section.insert(core.setting.0.into(), core.setting.1.into());
    for (name, value) in core.counters {
        section.insert(name.into(), value.into());
    }
    let st = &datapath.stats;
    for (name, value) in [
        ("datagrams_forwarded_unchanged", st.datagrams_forwarded_unchanged),
        ("datagrams_emitted_toward_ue", st.datagrams_emitted_toward_ue),
        ("datagrams_emitted_toward_server", st.datagrams_emitted_toward_server),
        ("malformed", st.malformed),
        ("bad_checksum", st.bad_checksum),
        ("emit_failures", st.emit_failures),
        ("telemetry_received", st.telemetry_received),
        ("telemetry_malformed", st.telemetry_malformed),
    ] {
        section.insert(name.into(), value.into());
    }
    Value::Object(section)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn summary(
    name: &str,
    s: &Scenario,
    plan: &Plan,
    client: Client,
    flow: &FlowReport,
    link: &LinkReport,
    queues: &[QueueSummary],
    ue_stats: &[UeStats],
    realtime: bool,
) -> Value {
    let spec = &s.flows[0];
    let measured_s = flow.measured_ns.unwrap_or(plan.flow.end_ns - plan.flow.start_ns) as f64 / 1e9;
    let goodput_bps = if measured_s > 0.0 { flow.received_bytes as f64 * 8.0 / measured_s } else { 0.0 };
    // The kernel's smoothed RTT, sampled every step while the connection (a subflow) had one.
    let rtt_of = |subflow: Option<u32>| -> Vec<f64> {
        let samples = flow.samples.iter().filter(|x| subflow.is_none_or(|k| x.subflow == k) && x.info.rtt_us > 0);
        samples.map(|x| x.info.rtt_us as f64 / 1e3).collect()
    };
    let rtt_ms = rtt_of(None);
    let info = &flow.last_info;
    let own = client == Client::Own;
    // The flow is the UE's only one: its packets' RAN latency is the UE's radios' (null on a
    // wired path).
    let ms = |ns: &[u64]| -> Vec<f64> { ns.iter().map(|&ns| ns as f64 / 1e6).collect() };
    let flow_ran_latency = match ue_stats.is_empty() {
        true => Value::Null,
        false => distribution(link.ran_latency_ns.iter().flat_map(|path| ms(path)).collect()),
    };
    let mut flows = vec![json!({
        "id": 0,
        "kind": match plan.transport { Transport::Tcp => "tcp", Transport::Mptcp => "mptcp" },
        "src": spec.src,
        "dst": spec.dst,
        "cc": spec.cc,
        "kernel_cc": plan.flow.cc,
        "mss_bytes": spec.mss_bytes,
        "goodput_bps": goodput_bps,
        "delivered_bytes": flow.received_bytes,
        "download_time_s": flow.download_time_ns.map(|ns| ns as f64 / 1e9),
        "retransmits": info.total_retrans,
        // iperf3 reports no RTO count.
        "rtos": own.then_some(info.total_rto),
        "client": if own { "own" } else { "iperf3" },
        "rtt_ms": distribution(rtt_ms.clone()),
        "rtt_samples": rtt_ms.len(),
        "ran_latency_ms": flow_ran_latency,
        "min_rtt_ms": info.min_rtt_us as f64 / 1e3,
        "bytes_retransmitted": own.then_some(info.bytes_retrans),
        // Every byte the UE read was the byte the server wrote at that offset.
        "payload_intact": own.then_some(flow.first_corrupt_offset.is_none()),
        // The kernel's chronographs (tcp_chrono, tcpi_busy_time and friends, µs): how long the
        // sender had data in flight, and how much of that the UE's receive window or the
        // server's send buffer held it back. A host too busy to run the endpoints shows here,
        // not in the model: an application-limited sender is busy for less than the run.
        "sender_limits": own.then(|| json!({
            "busy_s": info.busy_time as f64 / 1e6,
            "rwnd_limited_s": info.rwnd_limited as f64 / 1e6,
            "sndbuf_limited_s": info.sndbuf_limited as f64 / 1e6,
        })),
    })];
    if plan.transport == Transport::Mptcp {
        // Each path's subflow as the simulator reports it (its `sent_bytes` aside: the kernel
        // counts no bytes per subflow the data level handed it).
        let subflows: Vec<Value> = flow
            .last_subflows
            .iter()
            .map(|&(path, info)| {
                let ue = plan.paths[path as usize].ue;
                json!({
                    "remote": plan.paths[path as usize].ue_ip.to_string(),
                    "ue": ue,
                    "cell": ue.map(|k| s.ues[k].cell.clone()),
                    "acked_bytes": info.bytes_acked,
                    "retransmits": info.total_retrans,
                    "rtos": info.total_rto,
                    "rtt_ms": distribution(rtt_of(Some(path))),
                    "srtt_ms": info.rtt_us as f64 / 1e3,
                    "cwnd_bytes": info.cwnd_bytes(),
                })
            })
            .collect();
        flows[0]["mptcp"] = json!({ "subflows": subflows });
    }
    let queues: Vec<Value> = queues
        .iter()
        .enumerate()
        .map(|(id, q)| {
            json!({
                "id": id,
                "name": q.name,
                "arrived_packets": q.stats.arrived_packets,
                "delivered_packets": q.stats.delivered_packets,
                "dropped_packets": q.stats.dropped_packets,
                "dropped_bytes": q.stats.dropped_bytes,
                "aqm_dropped_packets": q.stats.aqm_dropped_packets,
                "max_bytes": q.stats.max_bytes,
            })
        })
        .collect();
    let ues: Vec<Value> = ue_stats
        .iter()
        .enumerate()
        .map(|(path, st)| {
            let k = plan.paths[path].ue.expect("a radio path has its UE");
            let samples: Vec<_> = link.ue_samples.iter().filter(|x| x.ue == k as u32).collect();
            let n = samples.len().max(1) as f64;
            let mean_rate_bps = samples.iter().map(|x| x.rate_bps).sum::<f64>() / n;
            // As the simulator counts it: the goodput of the flows to this radio of the device.
            let radio_index = s.ues[..k].iter().filter(|u| u.node == s.ues[k].node).count() as u32;
            let goodput_bps = if spec.dst_radio == radio_index { goodput_bps } else { 0.0 };
            json!({
                "id": k,
                "node": s.ues[k].node,
                "cell": s.ues[k].cell,
                "goodput_bps": goodput_bps,
                "mean_rate_bps": mean_rate_bps,
                "utilization": if mean_rate_bps > 0.0 { goodput_bps / mean_rate_bps } else { 0.0 },
                "los_fraction": samples.iter().filter(|x| x.los).count() as f64 / n,
                "outage_fraction": samples.iter().filter(|x| x.outage).count() as f64 / n,
                "ran_latency_ms": distribution(ms(&link.ran_latency_ns[path])),
                "downlink": {
                    "bytes_delivered": st.downlink.bytes_delivered,
                    "sdus_delivered": st.downlink.sdus_delivered,
                    "harq_tx": st.downlink.harq_tx,
                    "harq_retx": st.downlink.harq_retx,
                },
            })
        })
        .collect();
    json!({
        "scenario": name,
        "seed": s.seed,
        "duration_s": s.duration_s,
        "flows": flows,
        "queues": queues,
        "ues": ues,
        "proxy": null,
        "emulator": {
            "capacity_scale": 1.0,
            "realtime_scheduling": realtime,
            "max_lateness_ms": link.lateness.max_ns as f64 / 1e6,
            "frames_over_1ms_late": link.lateness.over_1ms,
            "frames_down": link.frames_down,
            "frames_up": link.frames_up,
            "frames_from_proxy": link.frames_from_proxy,
            "split_frames": link.split_frames,
            "unparsed_frames": link.unparsed_frames,
            "ran_dropped_frames": link.ran_dropped_frames,
            "write_failures": link.write_failures,
            "telemetry_sent": link.telemetry_sent,
            "telemetry_unsent": link.telemetry_unsent,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        },
    })
}
