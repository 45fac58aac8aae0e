//! The daemon's counters and gauges in the Prometheus text exposition format (version 0.0.4):
//! `# HELP`, `# TYPE`, then one `name{labels} value` line per sample.

use std::fmt::Write;

use millinet_proxy::FlowSample;

use crate::datapath::Datapath;
use crate::split_relay::SplitCounters;

/// One counter, with its help and type lines.
pub fn push_counter(text: &mut String, name: &str, help: &str, value: u64) {
    let _ = writeln!(text, "# HELP millinet_proxy_{name} {help}\n# TYPE millinet_proxy_{name} counter\nmillinet_proxy_{name} {value}");
}

/// Everything an operator watches: traffic each way, what was refused or malformed, the
/// core's counters, and per flow FW, buffer, bytes in flight and RTT_min. `now_ns` is the
/// clock the datapath is driven with (for the telemetry's age).
pub fn render_metrics(datapath: &Datapath, now_ns: u64) -> String {
    let mut text = String::new();
    let st = &datapath.stats;
    let mut counter = |name: &str, help: &str, value: u64| push_counter(&mut text, name, help, value);
    counter("datagrams_from_server_total", "IPv4 TCP datagrams received from the server side.", st.datagrams_from_server);
    counter("bytes_from_server_total", "Bytes of those datagrams.", st.bytes_from_server);
    counter("datagrams_from_ue_total", "IPv4 TCP datagrams received from the UE side.", st.datagrams_from_ue);
    counter("bytes_from_ue_total", "Bytes of those datagrams.", st.bytes_from_ue);
    counter("datagrams_to_ue_total", "Datagrams made and sent toward the UE side.", st.datagrams_emitted_toward_ue);
    counter("bytes_to_ue_total", "Bytes of those datagrams.", st.bytes_emitted_toward_ue);
    counter("datagrams_to_server_total", "Datagrams made and sent toward the server side.", st.datagrams_emitted_toward_server);
    counter("bytes_to_server_total", "Bytes of those datagrams.", st.bytes_emitted_toward_server);
    counter("forwarded_unchanged_total", "Datagrams let through as they came.", st.datagrams_forwarded_unchanged);
    counter("malformed_total", "Truncated or malformed headers, fragments, IPv4 options (forwarded).", st.malformed);
    counter("bad_checksum_total", "Datagrams with a wrong IPv4 or TCP/UDP checksum (forwarded).", st.bad_checksum);
    counter("not_tcp_total", "Datagrams neither TCP nor UDP over IPv4 (forwarded).", st.not_tcp);
    counter("not_ue_traffic_total", "Datagrams with no address on the UE side (forwarded).", st.not_ue_traffic);
    counter("emit_failures_total", "Datagrams the proxy made but could not serialise (dropped).", st.emit_failures);
    counter("telemetry_received_total", "Telemetry datagrams decoded.", st.telemetry_received);
    counter("telemetry_malformed_total", "Telemetry datagrams refused by the decoder.", st.telemetry_malformed);
    counter("telemetry_forged_total", "Sealed telemetry whose HMAC did not verify under the key (not applied).", st.telemetry_forged);
    counter("telemetry_replayed_total", "Sealed telemetry with a sequence number already passed (not applied).", st.telemetry_replayed);
    let summary = datapath.proxy().summary();
    for (name, value) in &summary.counters {
        counter(&format!("{name}_total"), &format!("milliProxy core counter `{name}` (docs/proxy.md)."), *value);
    }
    let age = st.newest_telemetry_t_ns.map_or(f64::NAN, |t| now_ns.saturating_sub(t) as f64 / 1e9);
    gauge_header(&mut text, "telemetry_age_seconds", "Age of the newest telemetry record received (NaN before the first).");
    let _ = writeln!(text, "millinet_proxy_telemetry_age_seconds {age}");
    for (name, value) in &summary.gauges {
        gauge_header(&mut text, name, &format!("milliProxy core gauge `{name}` (docs/proxy.md)."));
        let _ = writeln!(text, "millinet_proxy_{name} {value}");
    }
    let flows = datapath.proxy().flow_samples(now_ns);
    gauge_header(&mut text, "flows", "Flows with a proxy instance.");
    let _ = writeln!(text, "millinet_proxy_flows {}", flows.len());
    let gauges: [(&str, &str, FlowGauge); 4] = [
        ("flow_window_bytes", "The flow window FW advertised to the server.", |s| s.window_bytes as f64),
        ("flow_buffered_bytes", "Server bytes held, not yet acknowledged by the UE.", |s| s.buffered_bytes as f64),
        ("flow_in_flight_bytes", "Bytes sent toward the UE, not yet acknowledged.", |s| s.in_flight_bytes as f64),
        ("flow_rtt_min_seconds", "RTT_min of the flow (NaN before the first estimate).", |s| {
            s.rtt_min_ns.map_or(f64::NAN, |ns| ns as f64 / 1e9)
        }),
    ];
    for (name, help, value) in gauges {
        gauge_header(&mut text, name, help);
        for (key, sample) in &flows {
            let _ = writeln!(text, "millinet_proxy_{name}{{ue=\"{}\",server=\"{}\"}} {}", key.ue, key.server, value(sample));
        }
    }
    text
}

/// The split-TCP relay's counters (`proxy.kind = "split"`), and its open flows.
pub fn render_split_metrics(c: &SplitCounters) -> String {
    let mut text = String::new();
    let get = SplitCounters::get;
    for (name, help, value) in [
        ("flows_created_total", "Connections from the UE side relayed to their server.", get(&c.flows_accepted)),
        ("flows_refused_limit_total", "Connections closed at once: proxy.max_flows flows were open.", get(&c.flows_refused_limit)),
        (
            "flows_refused_not_ue_total",
            "Connections closed at once: from outside --ue-net, or straight to the relay's port.",
            get(&c.flows_refused_not_ue),
        ),
        ("upstream_connect_failures_total", "Flows whose connection to the server failed.", get(&c.upstream_connect_failures)),
        ("flows_reset_total", "Flows ended by a reset or another socket error.", get(&c.flows_reset)),
        ("bytes_to_ue_total", "Payload bytes relayed toward the UE side.", get(&c.bytes_to_ue)),
        ("bytes_to_server_total", "Payload bytes relayed toward the server side.", get(&c.bytes_to_server)),
    ] {
        push_counter(&mut text, name, help, value);
    }
    gauge_header(&mut text, "flows", "Flows whose two connections are open.");
    let _ = writeln!(text, "millinet_proxy_flows {}", get(&c.flows_active));
    text
}

/// A per-flow gauge's value.
type FlowGauge = fn(&FlowSample) -> f64;

fn gauge_header(text: &mut String, name: &str, help: &str) {
    let _ = writeln!(text, "# HELP millinet_proxy_{name} {help}\n# TYPE millinet_proxy_{name} gauge");
}
