//! Range and consistency checks that the types alone cannot express.

use std::collections::HashSet;

use super::schema::{App, FlowKind, Scenario};

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
    }

    for (i, f) in s.flows.iter().enumerate() {
        let p = |field: &str| format!("flows.{i}.{field}");
        node(p("src"), &f.src, &names)?;
        node(p("dst"), &f.dst, &names)?;
        if f.src == f.dst {
            return Err(Issue { path: p("dst"), value: format!("{:?}", f.dst), problem: "same node as `src`", allowed: "another node".into() });
        }
        range(p("start_s"), f.start_s, 0.0, s.duration_s, "0 to duration_s")?;
        match f.app {
            App::File => whole(p("file_bytes"), f.file_bytes, 1, 1 << 50)?,
            App::Rate => range(p("app_rate_bps"), f.app_rate_bps, 1e3, 1e13, "1e3 to 1e13 bit/s when app = \"rate\"")?,
            App::Bulk => {}
        }
        match f.kind {
            FlowKind::Tcp => {
                let known: Vec<&str> = millinet_transport::cc::REGISTRY.iter().map(|entry| entry.0).collect();
                if !known.contains(&f.cc.as_str()) {
                    return Err(Issue {
                        path: p("cc"),
                        value: format!("{:?}", f.cc),
                        problem: "unknown congestion control",
                        allowed: format!("one of {}", known.join(", ")),
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
    Ok(())
}
