//! Range and consistency checks that the types alone cannot express.

use std::collections::HashSet;

use super::radio::{BlockageSpec, CellKind};
use super::schema::{App, CapacityCarrierSpec, CapacitySpec, FlowKind, HystartSpec, ProxySpec, Scenario};

/// What is wrong with one field.
pub struct Issue {
    pub path: String,
    pub value: String,
    pub problem: &'static str,
    pub allowed: String,
}

/// Largest receive buffer a 16-bit window with the maximum shift of 14 can
/// advertise (RFC 7323 §2.3).
pub const MAX_RCV_BUF_BYTES: u64 = 65_535 << 14;

fn range(path: String, value: f64, low: f64, high: f64, allowed: &str) -> Result<(), Issue> {
    if value.is_finite() && value >= low && value <= high {
        Ok(())
    } else {
        Err(Issue { path, value: value.to_string(), problem: "out of range", allowed: allowed.to_string() })
    }
}

fn whole(path: String, value: u64, low: u64, high: u64) -> Result<(), Issue> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(Issue { path, value: value.to_string(), problem: "out of range", allowed: format!("{low}..={high}") })
    }
}

fn node(path: String, name: &str, names: &HashSet<&str>) -> Result<(), Issue> {
    if names.contains(name) {
        return Ok(());
    }
    let mut known: Vec<&str> = names.iter().copied().collect();
    known.sort_unstable();
    Err(Issue { path, value: format!("{name:?}"), problem: "no such node", allowed: format!("one of {}", known.join(", ")) })
}

pub fn validate(s: &Scenario) -> Result<(), Issue> {
    range("duration_s".into(), s.duration_s, 1e-6, 1e6, "0.000001 to 1000000 seconds")?;
    range("outputs.sample_step_s".into(), s.outputs.sample_step_s, 1e-6, s.duration_s, "0.000001 s to duration_s")?;
    range("outputs.goodput_bin_s".into(), s.outputs.goodput_bin_s, 1e-6, s.duration_s, "0.000001 s to duration_s")?;

    if s.nodes.is_empty() {
        return Err(Issue { path: "nodes".into(), value: "[]".into(), problem: "empty", allowed: "at least one [[nodes]] entry".into() });
    }
    let mut names = HashSet::new();
    for (i, n) in s.nodes.iter().enumerate() {
        if n.name.is_empty() || !names.insert(n.name.as_str()) {
            return Err(Issue {
                path: format!("nodes.{i}.name"),
                value: format!("{:?}", n.name),
                problem: "empty or repeated",
                allowed: "a unique, non-empty name".into(),
            });
        }
    }

    for (i, l) in s.links.iter().enumerate() {
        let p = |f: &str| format!("links.{i}.{f}");
        node(p("a"), &l.a, &names)?;
        node(p("b"), &l.b, &names)?;
        if l.a == l.b {
            return Err(Issue { path: p("b"), value: format!("{:?}", l.b), problem: "same node as `a`", allowed: "another node".into() });
        }
        range(p("rate_bps"), l.rate_bps, 1e3, 1e13, "1e3 to 1e13 bit/s")?;
        range(p("delay_s"), l.delay_s, 0.0, 10.0, "0 to 10 seconds")?;
        whole(p("queue_bytes"), l.queue_bytes, 0, 1 << 40)?;
        range(p("codel_target_s"), l.codel_target_s, 1e-6, 10.0, "0.000001 to 10 seconds")?;
        range(p("codel_interval_s"), l.codel_interval_s, 1e-6, 10.0, "0.000001 to 10 seconds")?;
        range(p("switch_period_s"), l.switch_period_s, 0.0, 1e6, "0 (constant rate) or a period in seconds")?;
        if l.switch_period_s > 0.0 {
            range(p("switch_rate_bps"), l.switch_rate_bps, 1e3, 1e13, "1e3 to 1e13 bit/s when switch_period_s > 0")?;
        }
        whole(p("queue_packets"), l.queue_packets, 0, 1 << 32)?;
        if let Some(c) = &l.capacity {
            capacity(&p, c, l.switch_period_s)?;
        }
        for (field, trace) in [("trace_a_to_b", &l.trace_a_to_b), ("trace_b_to_a", &l.trace_b_to_a)] {
            let other = if l.switch_period_s > 0.0 {
                Some("switch_period_s")
            } else if l.capacity.is_some() && field == "trace_a_to_b" {
                Some("capacity")
            } else {
                None
            };
            if let (false, Some(other)) = (trace.is_empty(), other) {
                return Err(Issue {
                    path: p(field),
                    value: format!("{trace:?}"),
                    problem: "a trace serves the direction",
                    allowed: format!("one of a trace and `{other}` for a direction's rate"),
                });
            }
        }
    }

    for (i, f) in s.flows.iter().enumerate() {
        let p = |field: &str| format!("flows.{i}.{field}");
        let radios = s.ues.iter().filter(|u| u.node == f.dst).count() as u64;
        if f.dst_radio > 0 && u64::from(f.dst_radio) >= radios {
            let allowed = format!("0 to {} (the [[ues]] entries on {:?}, one per radio)", radios.max(1) - 1, f.dst);
            return Err(Issue { path: p("dst_radio"), value: f.dst_radio.to_string(), problem: "no such radio", allowed });
        }
        node(p("src"), &f.src, &names)?;
        node(p("dst"), &f.dst, &names)?;
        if f.src == f.dst {
            return Err(Issue {
                path: p("dst"),
                value: format!("{:?}", f.dst),
                problem: "same node as `src`",
                allowed: "another node".into(),
            });
        }
        range(p("start_s"), f.start_s, 0.0, s.duration_s, "0 to duration_s")?;
        match f.app {
            App::File => whole(p("file_bytes"), f.file_bytes, 1, 1 << 50)?,
            App::Rate => range(p("app_rate_bps"), f.app_rate_bps, 1e3, 1e13, "1e3 to 1e13 bit/s when app = \"rate\"")?,
            App::Repeated => {
                if f.sizes_bytes.is_empty() {
                    return Err(Issue {
                        path: p("sizes_bytes"),
                        value: "[]".into(),
                        problem: "empty",
                        allowed: "at least one size when app = \"repeated\"".into(),
                    });
                }
                for (k, &size) in f.sizes_bytes.iter().enumerate() {
                    whole(p(&format!("sizes_bytes.{k}")), size, 1, 1 << 50)?;
                }
            }
            App::Bulk => {}
        }
        match f.kind {
            FlowKind::Tcp | FlowKind::Mptcp => {
                congestion_control(p("cc"), &f.cc)?;
                // Linux's HyStart is part of its CUBIC (a no-op elsewhere, as there);
                // HyStart++ is offered for CUBIC only.
                if f.hystart == HystartSpec::Rfc9406 && f.cc != "cubic" {
                    return Err(Issue {
                        path: p("hystart"),
                        value: "\"rfc9406\"".into(),
                        problem: "HyStart++ is implemented for CUBIC only",
                        allowed: format!("\"off\" or \"linux\" with cc = {:?}, or cc = \"cubic\"", f.cc),
                    });
                }
                whole(p("mss_bytes"), f.mss_bytes as u64, 100, 65_000)?;
                whole(p("initial_window_segments"), f.initial_window_segments as u64, 1, 1000)?;
                range(p("min_rto_s"), f.min_rto_s, 0.001, 60.0, "0.001 to 60 seconds")?;
                whole(p("rcv_buf_bytes"), f.rcv_buf_bytes, f.mss_bytes as u64, MAX_RCV_BUF_BYTES)?;
            }
            FlowKind::Udp => {
                range(p("udp_rate_bps"), f.udp_rate_bps, 1e3, 1e13, "1e3 to 1e13 bit/s")?;
                whole(p("packet_bytes"), f.packet_bytes as u64, 1, 65_507)?;
            }
        }
    }
    validate_radio(s, &names)?;
    validate_proxy(s, &names)
}

fn congestion_control(path: String, name: &str) -> Result<(), Issue> {
    let known: Vec<&str> = millinet_transport::cc::REGISTRY.iter().map(|entry| entry.0).collect();
    one_of(path, name, &known, "unknown congestion control")
}

fn one_of(path: String, value: &str, known: &[&str], problem: &'static str) -> Result<(), Issue> {
    if known.contains(&value) {
        return Ok(());
    }
    Err(Issue { path, value: format!("{value:?}"), problem, allowed: format!("one of {}", known.join(", ")) })
}

fn validate_proxy(s: &Scenario, names: &HashSet<&str>) -> Result<(), Issue> {
    let p = &s.proxy;
    if p.node.is_empty() {
        return Ok(());
    }
    node("proxy.node".into(), &p.node, names)?;
    validate_proxy_settings(p)
}

/// Everything of a `[proxy]` table but its node (a daemon's configuration has none).
pub fn validate_proxy_settings(p: &ProxySpec) -> Result<(), Issue> {
    let policies: Vec<&str> = millinet_proxy::policy::REGISTRY.iter().map(|entry| entry.0).collect();
    one_of("proxy.policy".into(), &p.policy, &policies, "unknown policy")?;
    congestion_control("proxy.split_cc".into(), &p.split_cc)?;
    whole("proxy.split_mss_bytes".into(), p.split_mss_bytes as u64, 100, 65_000)?;
    whole("proxy.mss2_bytes".into(), p.mss2_bytes as u64, 100, 65_000)?;
    let most = millinet_proxy::MAX_SEGMENTS_PER_RELAYED_ACK as u64;
    whole("proxy.segments_per_relayed_ack".into(), p.segments_per_relayed_ack as u64, 1, most)?;
    whole("proxy.flow_buffer_bytes".into(), p.flow_buffer_bytes, 1500, 1 << 40)?;
    whole("proxy.max_flows".into(), p.max_flows as u64, 1, 1 << 24)?;
    whole("proxy.max_ues".into(), p.max_ues as u64, 1, 1 << 24)?;
    range("proxy.d_info_s".into(), p.d_info_s, 0.0, 10.0, "0 to 10 seconds")?;
    range("proxy.t_info_s".into(), p.t_info_s, 1e-6, 10.0, "1 µs to 10 seconds")?;
    // A record is d_info_s old when it arrives and is replaced t_info_s later: a shorter
    // maximum age would leave every flow without telemetry part of the time.
    let fresh_s = p.d_info_s + p.t_info_s;
    range(
        "proxy.telemetry_max_age_s".into(),
        p.telemetry_max_age_s,
        fresh_s * (1.0 + 1e-9),
        3600.0,
        &format!("above proxy.d_info_s + proxy.t_info_s ({fresh_s} s), up to 3600 s"),
    )?;
    range("proxy.rtt_min_window_s".into(), p.rtt_min_window_s, 0.001, 3600.0, "0.001 to 3600 seconds")?;
    range("proxy.target_queue_delay_s".into(), p.target_queue_delay_s, 0.0, 10.0, "0 to 10 seconds")?;
    range("proxy.target_queue_gain".into(), p.target_queue_gain, 0.0, 1.0, "0 to 1")?;
    range("proxy.target_queue_rtt_fraction".into(), p.target_queue_rtt_fraction, 0.0, 1.0, "0 to 1")?;
    Ok(())
}

fn validate_radio(s: &Scenario, names: &HashSet<&str>) -> Result<(), Issue> {
    let mut cell_nodes = HashSet::new();
    for (i, c) in s.cells.iter().enumerate() {
        let p = |f: &str| format!("cells.{i}.{f}");
        node(p("node"), &c.node, names)?;
        if !cell_nodes.insert(c.node.as_str()) {
            return Err(Issue {
                path: p("node"),
                value: format!("{:?}", c.node),
                problem: "has a cell already",
                allowed: "one cell per node".into(),
            });
        }
        range(p("height_m"), c.height_m, 1.01, 500.0, "above 1 m, up to 500 m")?;
        range(p("fc_ghz"), c.fc_ghz, 0.5, 100.0, "0.5 to 100 GHz")?;
        range(p("bandwidth_hz"), c.bandwidth_hz, 1e5, 1e10, "1e5 to 1e10 Hz")?;
        // η_oh ≤ 1 per spatial layer: one layer for mmWave, two for LTE's 2×2 MIMO.
        let (layers, allowed) = match c.kind {
            CellKind::Mmwave => (1.0, "1e3 bit/s up to bandwidth_hz × 5.5547 (η_oh ≤ 1)"),
            CellKind::Lte => (2.0, "1e3 bit/s up to 2 × bandwidth_hz × 5.5547 (two MIMO layers, η_oh ≤ 2)"),
        };
        range(p("peak_rate_bps"), c.peak_rate_bps, 1e3, layers * c.bandwidth_hz * millinet_channel::link::SE_MAX, allowed)?;
        whole(p("antennas"), c.antennas as u64, 1, 4096)?;
        range(p("slot_s"), c.slot_s, 1e-6, 0.01, "1 µs to 10 ms")?;
        range(p("ul_fraction"), c.ul_fraction, 0.001, 1.0, "0.001 to 1")?;
        range(p("sr_delay_s"), c.sr_delay_s, 0.0, 1.0, "0 to 1 s")?;
        range(p("harq_rtt_s"), c.harq_rtt_s, 1e-6, 1.0, "1 µs to 1 s")?;
        whole(p("harq_max_retx"), c.harq_max_retx as u64, 0, 16)?;
        whole(p("harq_processes"), c.harq_processes as u64, 1, 64)?;
        whole(p("ul_every_slots"), c.ul_every_slots as u64, 1, 1000)?;
        range(p("cqi_period_s"), c.cqi_period_s, 1e-6, 1.0, "1 µs to 1 s")?;
        range(p("cqi_delay_s"), c.cqi_delay_s, 0.0, 1.0, "0 to 1 s")?;
        range(p("mimo_gain_db"), c.mimo_gain_db, -30.0, 30.0, "-30 to 30 dB")?;
        range(p("penetration_loss_db"), c.penetration_loss_db, 0.0, 100.0, "0 to 100 dB")?;
        let known: Vec<&str> = millinet_ran::scheduler::names().collect();
        if !known.contains(&c.scheduler.as_str()) {
            return Err(Issue {
                path: p("scheduler"),
                value: format!("{:?}", c.scheduler),
                problem: "unknown scheduler",
                allowed: format!("one of {}", known.join(", ")),
            });
        }
    }
    for (i, u) in s.ues.iter().enumerate() {
        let p = |f: &str| format!("ues.{i}.{f}");
        node(p("node"), &u.node, names)?;
        if !cell_nodes.contains(u.cell.as_str()) {
            let mut known: Vec<&str> = cell_nodes.iter().copied().collect();
            known.sort_unstable();
            return Err(Issue {
                path: p("cell"),
                value: format!("{:?}", u.cell),
                problem: "no cell on that node",
                allowed: format!("one of {}", known.join(", ")),
            });
        }
        if !u.anchor.is_empty() {
            let lte: Vec<&str> = s.cells.iter().filter(|c| c.kind == CellKind::Lte).map(|c| c.node.as_str()).collect();
            if !lte.contains(&u.anchor.as_str()) {
                let allowed = if lte.is_empty() {
                    "the node of a cell with kind = \"lte\" (this scenario has none)".to_string()
                } else {
                    format!("one of {}", lte.join(", "))
                };
                return Err(Issue { path: p("anchor"), value: format!("{:?}", u.anchor), problem: "no LTE cell on that node", allowed });
            }
        }
        // Several entries on one node are the radios of one device: they move together.
        if let Some(first) = s.ues[..i].iter().find(|v| v.node == u.node) {
            if (&first.route_m, first.speed_mps, first.height_m) != (&u.route_m, u.speed_mps, u.height_m) {
                return Err(Issue {
                    path: p("route_m"),
                    value: format!("{:?} at {} m/s, {} m high", u.route_m, u.speed_mps, u.height_m),
                    problem: "differs from the device's first radio on the same node",
                    allowed: "the same route_m, speed_mps and height_m as every [[ues]] entry on that node".into(),
                });
            }
        }
        if u.route_m.is_empty() {
            return Err(Issue {
                path: p("route_m"),
                value: "[]".into(),
                problem: "empty",
                allowed: "one point (static) or more waypoints [[x, y], ...]".into(),
            });
        }
        range(p("speed_mps"), u.speed_mps, 0.0, 200.0, "0 to 200 m/s")?;
        range(p("height_m"), u.height_m, 1.01, 100.0, "above 1 m, up to 100 m")?;
        whole(p("antennas"), u.antennas as u64, 1, 1024)?;
        range(p("markov_lambda_per_s"), u.markov_lambda_per_s, 1e-6, 1000.0, "1e-6 to 1000 per second")?;
        whole(p("rlc_buffer_bytes"), u.rlc_buffer_bytes, 1500, 1 << 40)?;
        range(p("rlc_reassembly_s"), u.rlc_reassembly_s, 1e-6, 1.0, "1 µs to 1 s")?;
        range(p("rlc_status_prohibit_s"), u.rlc_status_prohibit_s, 0.0, 1.0, "0 to 1 s")?;
        range(p("rlc_dualpi2_step_s"), u.rlc_dualpi2_step_s, 1e-6, 10.0, "1 µs to 10 s")?;
        range(p("rlc_dualpi2_target_s"), u.rlc_dualpi2_target_s, 1e-6, 10.0, "1 µs to 10 s")?;
        let uses_trace = matches!(u.blockage, BlockageSpec::SinrTrace | BlockageSpec::CapacityTrace);
        if uses_trace && u.trace.is_empty() {
            return Err(Issue {
                path: p("trace"),
                value: "\"\"".into(),
                problem: "missing",
                allowed: "a CSV file path, relative to the scenario file".into(),
            });
        }
        for (k, f) in u.forced_events.iter().enumerate() {
            range(format!("ues.{i}.forced_events.{k}.start_s"), f.start_s, 0.0, 1e6, "0 or later, seconds")?;
            range(format!("ues.{i}.forced_events.{k}.duration_s"), f.duration_s, 0.0, 1e6, "0 or longer, seconds")?;
        }
    }
    let h = &s.handover;
    range("handover.hysteresis_db".into(), h.hysteresis_db, 0.0, 30.0, "0 to 30 dB")?;
    range("handover.time_to_trigger_s".into(), h.time_to_trigger_s, 0.0, 10.0, "0 to 10 seconds")?;
    range("handover.interruption_s".into(), h.interruption_s, 0.0, 10.0, "0 to 10 seconds")?;
    range("handover.switch_interruption_s".into(), h.switch_interruption_s, 0.0, 10.0, "0 to 10 seconds")?;
    range("handover.x2_delay_s".into(), h.x2_delay_s, 0.0, 1.0, "0 to 1 second")?;
    range("handover.x2_rate_bps".into(), h.x2_rate_bps, 1e3, 1e12, "1e3 to 1e12 bit/s")?;
    range("handover.measurement_period_s".into(), h.measurement_period_s, 1e-4, 1.0, "0.1 ms to 1 second")?;
    for (i, o) in s.obstacles.iter().enumerate() {
        range(format!("obstacles.{i}.width_m"), o.width_m, 0.0, 1e5, "0 to 1e5 m")?;
        range(format!("obstacles.{i}.depth_m"), o.depth_m, 0.0, 1e5, "0 to 1e5 m")?;
    }
    let r = &s.random_obstacles;
    if r.count > 0 && !(r.region_m[2] > r.region_m[0] && r.region_m[3] > r.region_m[1]) {
        return Err(Issue {
            path: "random_obstacles.region_m".into(),
            value: format!("{:?}", r.region_m),
            problem: "empty region",
            allowed: "[x_min, y_min, x_max, y_max] with x_max > x_min and y_max > y_min".into(),
        });
    }
    Ok(())
}

/// A link's capacity process (docs/studies.md#spep-emulation); `p` names a key of the link.
fn capacity(p: &dyn Fn(&str) -> String, c: &CapacitySpec, switch_period_s: f64) -> Result<(), Issue> {
    let q = |f: &str| p(&format!("capacity.{f}"));
    if switch_period_s > 0.0 {
        return Err(Issue {
            path: p("switch_period_s"),
            value: switch_period_s.to_string(),
            problem: "a switching link cannot also follow a capacity process",
            allowed: "0 when [links.capacity] is set".into(),
        });
    }
    range(q("bandwidth_hz"), c.bandwidth_hz, 1e5, 1e10, "1e5 to 1e10 Hz")?;
    whole(q("users"), u64::from(c.users), 1, 100_000)?;
    range(q("sinr_db"), c.sinr_db, -50.0, 80.0, "-50 to 80 dB")?;
    range(q("shadow_sigma_db"), c.shadow_sigma_db, 0.0, 30.0, "0 to 30 dB")?;
    range(q("update_s"), c.update_s, 1e-3, 1e3, "0.001 to 1000 seconds")?;
    whole(q("sinr_samples_per_s"), u64::from(c.sinr_samples_per_s), 1, 1_000_000)?;
    if c.carrier == CapacityCarrierSpec::Mmwave {
        range(q("lambda_per_s"), c.lambda_per_s, 1e-6, 1e3, "1e-6 to 1000 transitions per second")?;
        range(q("distance_m"), c.distance_m, 10.0, 5000.0, "10 to 5000 m (UMi street canyon)")?;
    }
    Ok(())
}
