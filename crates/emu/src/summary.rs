//! summary.json of an emulation: the simulator's fields where the emulator measures the same
//! thing (docs/outputs.md) — the network's sections (queues, UEs, handovers) written by the
//! network layer as for the simulator, the flows' from the real sockets (TCP_INFO) — plus an
//! `emulator` section saying how faithfully the link kept real time.

use millinet_network::metrics::LogHistogram;
use millinet_network::records::{self, latency_summary, middlebox_summary, Carried, FlowRecord};
use millinet_network::Network;
use millinet_proxyd::Datapath;
use millinet_scenario::Scenario;
use serde_json::{json, Value};

use crate::connections::Connection;
use crate::endpoint::{Carrier, FlowReport};
use crate::link::LinkReport;
use crate::plan::{Plan, SplitPlan};
use crate::run::Client;

/// The kernel split proxy's section: where it sat, its TCP toward the UE and the bytes it
/// relayed toward the UE (its counters are the kernel's: early ACKs are all of them).
pub(crate) fn split_proxy(node: &str, split: &SplitPlan, relayed_bytes: u64) -> Value {
    json!({ "node": node, "kind": "split", "cc": split.cc, "mss_bytes": split.mss_bytes, "bytes_relayed_toward_ue": relayed_bytes })
}

/// The proxy's section: the simulator's fields (node, kind, policy, the core's counters) and
/// the daemon's packet-path counters.
pub(crate) fn proxy(node: &str, datapath: &Datapath) -> Value {
    let mut section = middlebox_summary(node, datapath.proxy().summary());
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

/// The kernel's smoothed RTT, sampled every step while the connection (subflow `subflow`, or
/// any) had one, in the simulator's histogram.
fn rtt_histogram(flow: &FlowReport, subflow: Option<u32>) -> LogHistogram {
    let mut h = LogHistogram::default();
    for x in flow.samples.iter().filter(|x| subflow.is_none_or(|k| x.subflow == k) && x.info.rtt_us > 0) {
        h.record(u64::from(x.info.rtt_us) * 1000);
    }
    h
}

/// Flow `i`'s entry: what both drivers measure, written by the network layer's
/// `flow_summary`, then what only the kernel's sockets say.
fn flow_summary(i: usize, s: &Scenario, plan: &Plan, client: &Client, flow: &FlowReport, network: &Network) -> Value {
    let (spec, fp) = (&s.flows[i], &plan.flows[i]);
    let rtt = rtt_histogram(flow, None);
    let info = &flow.last_info;
    let own = *client == Client::Own;
    let carried = match fp.carrier {
        Carrier::Datagrams(_) => Carried::Datagrams { sent_packets: flow.datagrams_sent, received_packets: flow.datagrams_received },
        Carrier::Stream(_) => Carried::Stream {
            mptcp: fp.is_mptcp(),
            download_time_ns: flow.download_time_ns,
            downloads_ns: flow.downloads.iter().map(|d| d.duration_ns()).collect(),
            rtt: &rtt,
            retransmits: u64::from(info.total_retrans),
            // iperf3 reports no RTO count.
            rtos: own.then_some(u64::from(info.total_rto)),
        },
    };
    let record = FlowRecord {
        id: i,
        spec,
        delivered_bytes: flow.received_bytes,
        measured_ns: flow.measured_ns.unwrap_or(fp.end_ns - fp.start_ns),
        ran_latency: network.flow_ran_latency(i),
        carried,
    };
    let mut entry = records::flow_summary(&record);
    if let Carrier::Datagrams(_) = fp.carrier {
        return Value::Object(entry);
    }
    entry.insert("kernel_cc".into(), json!(fp.cc));
    entry.insert("client".into(), json!(if own { "own" } else { "iperf3" }));
    entry.insert("min_rtt_ms".into(), json!(info.min_rtt_us as f64 / 1e3));
    entry.insert("bytes_retransmitted".into(), json!(own.then_some(info.bytes_retrans)));
    entry.insert("tail_loss_probes".into(), json!(flow.tail_loss_probes));
    // Every byte the UE read was the byte the server wrote at that offset.
    entry.insert("payload_intact".into(), json!(own.then_some(flow.first_corrupt_offset.is_none())));
    // The kernel's chronographs (tcp_chrono, tcpi_busy_time and friends, µs): how long the
    // sender had data in flight, and how much of that the UE's receive window or the server's
    // send buffer held it back. A host too busy to run the endpoints shows here, not in the
    // model: an application-limited sender is busy for less than the run.
    let limits = json!({
        "busy_s": info.busy_time as f64 / 1e6,
        "rwnd_limited_s": info.rwnd_limited as f64 / 1e6,
        "sndbuf_limited_s": info.sndbuf_limited as f64 / 1e6,
    });
    entry.insert("sender_limits".into(), if own { limits } else { Value::Null });
    if fp.is_mptcp() {
        // Each path's subflow as the simulator reports it (its `sent_bytes` aside: the kernel
        // counts no bytes per subflow the data level handed it).
        let subflows: Vec<Value> = flow
            .last_subflows
            .iter()
            .map(|&(path, info)| {
                let remote = fp.ue_ips[path as usize];
                let ue = network.radio_at(remote);
                json!({
                    "remote": remote.to_string(),
                    "ue": ue.map(|u| u.0),
                    "cell": ue.map(|u| network.serving_cell_name(u)),
                    "acked_bytes": info.bytes_acked,
                    "retransmits": info.total_retrans,
                    "rtos": info.total_rto,
                    "rtt_ms": latency_summary(&rtt_histogram(flow, Some(path))),
                    "srtt_ms": info.rtt_us as f64 / 1e3,
                    "cwnd_bytes": info.cwnd_bytes(),
                })
            })
            .collect();
        entry.insert("mptcp".into(), json!({ "subflows": subflows }));
    }
    Value::Object(entry)
}

/// summary.json's `flows` for the scenario's own flows (or iperf3's), and the goodput each
/// UE radio got from them.
pub(crate) fn scenario_flows(s: &Scenario, plan: &Plan, client: &Client, reports: &[FlowReport], network: &Network) -> Flows {
    let entries: Vec<Value> = reports.iter().enumerate().map(|(i, flow)| flow_summary(i, s, plan, client, flow, network)).collect();
    let goodput_to_radio = ue_radios(s)
        .map(|(node, radio)| {
            let to_radio = |(_, f): &(&Value, &millinet_scenario::FlowSpec)| f.dst == node && f.dst_radio == radio;
            let bps = entries.iter().zip(&s.flows).filter(to_radio).filter_map(|(summary, _)| summary["goodput_bps"].as_f64()).sum();
            (node.to_string(), radio, bps)
        })
        .collect();
    Flows { entries, goodput_to_radio }
}

/// summary.json's `flows` with users' programs: a connection each, and the rate of IP bytes
/// each UE radio's address received.
pub(crate) fn connection_flows(s: &Scenario, connections: &[Connection], network: &Network, duration_ns: u64) -> Flows {
    let entries = connections
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let carried = |x: &crate::connections::Carried| {
                json!({ "sent_bytes": x.sent_bytes, "delivered_bytes": x.delivered_bytes, "dropped_bytes": x.dropped_bytes })
            };
            json!({
                "id": i,
                "kind": c.key.protocol.name(),
                "ue": c.key.ue.to_string(),
                "peer": c.key.peer.to_string(),
                "to_ue": carried(&c.to_ue),
                "from_ue": carried(&c.from_ue),
                "first_s": c.first_ns as f64 / 1e9,
                "last_s": c.last_ns as f64 / 1e9,
                "ran_latency_ms": latency_summary(network.flow_ran_latency(i)),
            })
        })
        .collect();
    let goodput_to_radio = ue_radios(s)
        .map(|(node, radio)| {
            let address = network.node(node).map(|n| network.receiver_address(n, radio)).ok();
            let bytes: u64 = connections.iter().filter(|c| Some(*c.key.ue.ip()) == address).map(|c| c.to_ue.delivered_bytes).sum();
            (node.to_string(), radio, bytes as f64 * 8.0 / (duration_ns.max(1) as f64 / 1e9))
        })
        .collect();
    Flows { entries, goodput_to_radio }
}

/// The `flows` section and, per UE radio (its node and radio index), what it received
/// (bit/s).
pub(crate) struct Flows {
    pub entries: Vec<Value>,
    pub goodput_to_radio: Vec<(String, u32, f64)>,
}

/// Each UE radio of the scenario: its device's node and its index among that device's radios.
fn ue_radios(s: &Scenario) -> impl Iterator<Item = (&str, u32)> {
    s.ues.iter().enumerate().map(|(k, u)| (u.node.as_str(), s.ues[..k].iter().filter(|v| v.node == u.node).count() as u32))
}

pub(crate) fn summary(
    name: &str,
    s: &Scenario,
    plan: &Plan,
    flows: Flows,
    network: &mut Network,
    link: &LinkReport,
    realtime: bool,
) -> Value {
    let end_ns = plan.flows[0].end_ns;
    let Flows { entries: flows, goodput_to_radio } = flows;
    let goodput_to =
        |node: &str, radio: u32| -> f64 { goodput_to_radio.iter().find(|(n, r, _)| n == node && *r == radio).map_or(0.0, |x| x.2) };
    let ues = network.ues_summary(&goodput_to);
    let hosts: Vec<Value> = (plan.hosts.iter().enumerate())
        .map(|(h, host)| json!({ "node": host.name, "frames_read": link.frames_read[h], "frames_written": link.frames_written[h] }))
        .collect();
    let mut summary = json!({
        "scenario": name,
        "seed": s.seed,
        "duration_s": s.duration_s,
        "flows": flows,
        "queues": network.queues_summary(end_ns),
        "ues": ues,
        "proxy": null,
        "emulator": {
            "capacity_scale": 1.0,
            "realtime_scheduling": realtime,
            "max_lateness_ms": link.lateness.max_ns as f64 / 1e6,
            "frames_over_1ms_late": link.lateness.over_1ms,
            "hosts": hosts,
            "split_frames": link.split_frames,
            "unparsed_frames": link.unparsed_frames,
            "dropped_frames": link.dropped_frames,
            "write_failures": link.write_failures,
            "telemetry_sent": link.telemetry_sent,
            "telemetry_unsent": link.telemetry_unsent,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        },
    });
    if network.ues() > 0 {
        summary["mobility"] = json!(network.mobility_summary());
    }
    summary
}
