//! iperf3 as an independent client (`--client iperf3`): the well-known tool instead of the
//! project's endpoints, over the same testbed. The server runs `iperf3 -s -1` in the server
//! namespace; the UE runs `iperf3 -c -R` (the server sends, as in a download) with the flow's
//! congestion control (`-C`, which iperf3 applies at the sending end) and reports in JSON,
//! the server's sender-side figures included (`--get-server-output`).
//!
//! What iperf3 measures is coarser than the own endpoints: goodput and the sender's TCP_INFO
//! (cwnd, RTT, retransmissions) per 0.1 s interval, no RTO count, and whole seconds of
//! transfer (`-t`) or a byte count (`-n`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use millinet_transport::app::AppSpec;

use crate::endpoint::{FlowPlan, FlowReport, TcpSample};
use crate::error::EmuError;
use crate::tcp_info::TcpInfo;

/// iperf3's reporting interval, s.
const INTERVAL_S: f64 = 0.1;

pub struct Iperf3Server {
    child: Child,
}

impl Iperf3Server {
    /// Starts a one-test server in namespace `namespace` and waits until it listens.
    pub fn start(namespace: &str, plan: &FlowPlan) -> Result<Iperf3Server, EmuError> {
        let (ip, port) = (plan.server.ip().to_string(), plan.server.port().to_string());
        let child = Command::new("ip")
            .args(["netns", "exec", namespace, "iperf3", "-s", "-1", "-J", "-B", &ip, "-p", &port, "-i", &INTERVAL_S.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| EmuError::System(format!("cannot run iperf3: {e}")))?;
        let server = Iperf3Server { child };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let listening = Command::new("ip")
                .args(["netns", "exec", namespace, "ss", "-Hltn", &format!("sport = :{port}")])
                .output()
                .map(|o| !o.stdout.is_empty())
                .unwrap_or(false);
            if listening {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(EmuError::System("iperf3 -s did not listen within 10 s (is iperf3 installed? `make deps` installs it)".into()))
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the iperf3 client in namespace `namespace` at the flow's start; returns what it
/// measured as the own client's report.
pub fn download(namespace: &str, plan: &FlowPlan, clock: &dyn Fn() -> u64) -> Result<FlowReport, EmuError> {
    let now = clock();
    if plan.start_ns > now {
        std::thread::sleep(Duration::from_nanos(plan.start_ns - now));
    }
    let started_ns = clock();
    let amount = match plan.app {
        // Whole seconds (iperf3 3.12 parses -t as an integer), ending half a second before the
        // run so that iperf3's closing exchange still crosses the link.
        AppSpec::File { size_bytes } => ["-n".to_string(), size_bytes.to_string()],
        // The plan gives iperf3 only bulk and file flows.
        _ => ["-t".to_string(), (plan.end_ns.saturating_sub(started_ns + 500_000_000) / 1_000_000_000).max(1).to_string()],
    };
    let (ip, port) = (plan.connect_to.ip().to_string(), plan.connect_to.port().to_string());
    let out = Command::new("ip")
        .args(["netns", "exec", namespace, "iperf3", "-c", &ip, "-p", &port, "-R", "-J", "--get-server-output"])
        .args(["-C", &plan.cc, "-i", &INTERVAL_S.to_string()])
        .args(&amount)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EmuError::System(format!("cannot run iperf3: {e}")))?;
    let report: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| EmuError::System(format!("iperf3 -c gave no JSON report ({e}): {}", String::from_utf8_lossy(&out.stderr).trim())))?;
    if let Some(error) = report.get("error").and_then(Value::as_str) {
        return Err(EmuError::System(format!("iperf3: {error}")));
    }
    flow_report(&report, plan, started_ns)
}

/// The client's JSON as a flow report: received bytes per interval spread evenly over the
/// goodput bins the interval covers, the server's sender-side interval figures as TCP samples,
/// and iperf3's own transfer time as the measured interval.
fn flow_report(report: &Value, plan: &FlowPlan, started_ns: u64) -> Result<FlowReport, EmuError> {
    let missing = |what: &str| EmuError::System(format!("iperf3's JSON report has no {what}"));
    let sender_cc = report["end"]["sender_tcp_congestion"].as_str().ok_or_else(|| missing("end.sender_tcp_congestion"))?;
    if sender_cc != plan.cc {
        return Err(EmuError::System(format!("iperf3's sender ran `{sender_cc}`, not the scenario's `{}`", plan.cc)));
    }
    let bins = plan.end_ns.div_ceil(plan.goodput_bin_ns) as usize;
    let mut flow = FlowReport { received_per_bin: vec![0; bins], ..FlowReport::default() };
    let at_ns = |s: &Value| (started_ns + (s.as_f64().unwrap_or(0.0) * 1e9) as u64).min(plan.end_ns.saturating_sub(1));
    for interval in report["intervals"].as_array().ok_or_else(|| missing("intervals"))? {
        let sum = &interval["sum"];
        let (first, last) = (at_ns(&sum["start"]) / plan.goodput_bin_ns, at_ns(&sum["end"]) / plan.goodput_bin_ns);
        let bytes = sum["bytes"].as_u64().unwrap_or(0);
        let bins = last - first + 1;
        for (k, bin) in (first..=last).enumerate() {
            // Whole bytes: the remainder goes to the first bins.
            flow.received_per_bin[bin as usize] += bytes / bins + ((k as u64) < bytes % bins) as u64;
        }
        flow.received_bytes += bytes;
    }
    flow.measured_ns = report["end"]["sum_received"]["seconds"].as_f64().map(|s| (s * 1e9) as u64);
    if matches!(plan.app, AppSpec::File { size_bytes } if flow.received_bytes >= size_bytes) {
        flow.download_time_ns = flow.measured_ns;
    }
    let server = &report["server_output_json"];
    let mut retransmits = 0u32;
    for interval in server["intervals"].as_array().ok_or_else(|| missing("server_output_json.intervals"))? {
        let stream = &interval["streams"][0];
        retransmits += stream["retransmits"].as_u64().unwrap_or(0) as u32;
        let info = TcpInfo {
            // iperf3 reports the window in bytes: one "segment" of one byte keeps
            // cwnd_bytes() = snd_cwnd × snd_mss exact.
            snd_cwnd: stream["snd_cwnd"].as_u64().unwrap_or(0) as u32,
            snd_mss: 1,
            rtt_us: stream["rtt"].as_u64().unwrap_or(0) as u32,
            total_retrans: retransmits,
            ..TcpInfo::default()
        };
        let end_s = stream["end"].as_f64().unwrap_or(0.0);
        flow.samples.push(TcpSample { t_ns: started_ns + (end_s * 1e9) as u64, subflow: 0, info });
    }
    let sender = &server["end"]["streams"][0]["sender"];
    flow.last_info = TcpInfo {
        total_retrans: sender["retransmits"].as_u64().unwrap_or(retransmits as u64) as u32,
        min_rtt_us: sender["min_rtt"].as_u64().unwrap_or(0) as u32,
        ..TcpInfo::default()
    };
    Ok(flow)
}
