//! `millinet-proxyd`: milliProxy on a Linux router (docs/proxyd.md), or the split-TCP
//! baseline behind a TPROXY rule (`proxy.kind = "split"`, split_daemon.rs). Packets come
//! from NFQUEUE, go through the proxy core (`Datapath`) and leave as verdicts or through a raw
//! socket (or a packet socket, as GSO packets toward the UE); telemetry comes from a Unix datagram socket or a replayed CSV file; counters are
//! served at `GET /metrics`. Bad flags or configuration: one line on stderr, exit code 2; a
//! failure while running: exit code 1; SIGTERM or SIGINT: exit code 0.

mod control;
mod daemon;
mod nfqueue;
mod output;
mod raw_socket;
mod split_daemon;
mod telemetry_source;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use millinet_proxyd::{DaemonConfig, Ipv4Network};
use millinet_scenario::ProxyKind;

/// milliProxy on a Linux router: the TCP flows of the UE networks that the iptables rule
/// queues are proxied (docs/proxyd.md).
#[derive(Parser, Debug)]
#[command(name = "millinet-proxyd", version)]
pub struct Args {
    /// TOML file whose one table is [proxy] (the keys of a scenario's [proxy] table).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A [proxy] key, applied after --config (repeatable).
    #[arg(long = "set", value_name = "proxy.KEY=VALUE")]
    pub overrides: Vec<String>,
    /// NFQUEUE number of the iptables rule (`-j NFQUEUE --queue-num N --queue-bypass`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub queue: u16,
    /// A network on the UE side (repeatable; at least one).
    #[arg(long = "ue-net", value_name = "CIDR", required = true)]
    pub ue_nets: Vec<Ipv4Network>,
    /// Bind a Unix datagram socket here and read telemetry records (docs/telemetry.md).
    #[arg(long, value_name = "SOCKET")]
    pub telemetry: Option<PathBuf>,
    /// Bind a UDP socket here and read telemetry sealed with the key of --telemetry-key
    /// (docs/telemetry.md, "Over the network").
    #[arg(long = "telemetry-udp", value_name = "ADDR:PORT", requires = "telemetry_key")]
    pub telemetry_udp: Option<SocketAddr>,
    /// The key sealed telemetry is checked with: the file's raw bytes, at least 32 of them,
    /// mode 0600 or 0400.
    #[arg(long = "telemetry-key", value_name = "FILE", requires = "telemetry_udp")]
    pub telemetry_key: Option<PathBuf>,
    /// Replay telemetry from a CSV file: t_s,ue,rlc_bytes,rate_bps,sinr_db,outage.
    #[arg(long = "telemetry-replay", value_name = "FILE")]
    pub telemetry_replay: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub metrics: SocketAddr,
    /// Send segments toward UEs joined into TCP GSO packets on an AF_PACKET socket (one system
    /// call per up to 64 kB; they skip the router's OUTPUT and POSTROUTING hooks).
    #[arg(long = "ue-gso")]
    pub ue_gso: bool,
    /// With proxy.kind = "split": the port the TPROXY rule hands the UE's connections to
    /// (`-j TPROXY --on-port N`).
    #[arg(long = "split-port", value_name = "N", default_value_t = 9470)]
    pub split_port: u16,
}

/// milliProxy on the packets NFQUEUE hands over, or the split-TCP relay behind TPROXY.
enum Mode {
    Milliproxy(Box<daemon::Daemon>),
    Split(split_daemon::SplitDaemon),
}

/// Clap's error as one line: its message without the usage and help hints that follow it.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:")).map(str::trim).collect();
    lines.join(" ")
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).format_target(false).init();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if !e.use_stderr() => {
            // --help, --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("millinet-proxyd: {}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    let started = DaemonConfig::load(args.config.as_deref(), &args.overrides).map_err(|e| e.to_string()).and_then(|config| {
        if config.spec.kind == ProxyKind::Split {
            split_daemon::SplitDaemon::start(&args, &config).map(Mode::Split)
        } else {
            daemon::Daemon::start(&args, &config).map(|d| Mode::Milliproxy(Box::new(d)))
        }
    });
    let mode = match started {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("millinet-proxyd: {e}");
            return ExitCode::from(2);
        }
    };
    // A failure while running (the queue socket broke): exit 1, and the rule's --queue-bypass
    // keeps traffic flowing until a supervisor restarts the daemon.
    let ran = match mode {
        Mode::Milliproxy(daemon) => daemon.run(),
        Mode::Split(daemon) => daemon.run(),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("millinet-proxyd: {e}");
            ExitCode::FAILURE
        }
    }
}
