//! The BPF congestion controls in the running kernel (needs root): registration and its end,
//! and the window growth of real transfers against RFC 3649, standard TCP, and the coupled
//! rules of the simulator on the two subflows of an MPTCP connection.

mod harness;

use std::time::{Duration, Instant};

use harness::{available, avoiding, bulk, delivered, growth, share, skipped, Bottleneck, Growth, Transport};
use millinet_bpfcc::{default_dir, Cc, Registration};
use millinet_emu::tcp_info::TcpInfo;
use millinet_transport::cc::balia::Balia;
use millinet_transport::cc::coupled::Coupling;
use millinet_transport::cc::lia::Lia;
use millinet_transport::cc::SubflowView;

fn register() -> Registration {
    Registration::new(&default_dir()).unwrap_or_else(|e| panic!("{e}"))
}

/// The controls registered for `test`, or None when it is skipped (it says why).
fn registered_for(test: &str) -> Option<Registration> {
    (!skipped(test)).then(register)
}

/// Waits up to 5 s for the names to leave the kernel's list.
fn gone(names: &[String]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = available();
        if !names.iter().any(|n| now.contains(n)) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn registered_while_the_loader_lives() {
    // Dropped: the loader sees end of file and exits.
    let Some(registration) = registered_for("registered_while_the_loader_lives") else { return };
    let names: Vec<String> = Cc::ALL.iter().map(|cc| registration.name(*cc).to_string()).collect();
    let pid = registration.loader_pid();
    for (cc, name) in Cc::ALL.iter().zip(&names) {
        assert_eq!(*name, format!("mn{pid}_{}", cc.stem()));
        assert!(name.len() < 16, "{name}: TCP_CA_NAME_MAX is 16 bytes with the NUL");
    }
    let now = available();
    assert!(names.iter().all(|n| now.contains(n)), "{names:?} not all in {now:?}");
    drop(registration);
    assert!(gone(&names), "{names:?} still registered after the loader was dropped: {:?}", available());

    // SIGKILLed: the kernel closes its links.
    let registration = register();
    let names: Vec<String> = Cc::ALL.iter().map(|cc| registration.name(*cc).to_string()).collect();
    assert!(names.iter().all(|n| available().contains(n)));
    // SAFETY: killing the loader this registration started, by its pid.
    assert_eq!(unsafe { libc::kill(registration.loader_pid() as i32, libc::SIGKILL) }, 0);
    assert!(gone(&names), "{names:?} still registered after the loader was killed: {:?}", available());
}

/// The transfers' bottleneck: windows of 500 to 1000 segments in congestion avoidance, where
/// RFC 3649's a(w) is 5 to 7 segments per round trip against standard TCP's 1. (300 Mbit/s,
/// 1000 packets of queue: HighSpeed's first loss leaves about 660 segments, b(1000) = 0.34.)
const BOTTLENECK: Bottleneck = Bottleneck { rate_mbit: 300, queue_packets: 1000, delay_ms: 0, random_loss: 0.0 };

/// A TCP bulk transfer's samples.
fn tcp(cc: &str, seconds: f64) -> Vec<TcpInfo> {
    bulk(cc, Transport::Tcp, &BOTTLENECK, seconds).into_iter().map(|s| s[0]).collect()
}

/// Enough data in a range of windows to judge its growth: ten windows acknowledged.
const MIN_WINDOWS: f64 = 10.0;

/// The relative error allowed between measured and expected growth.
const TOLERANCE: f64 = 0.1;

/// Relative band of the coupled subflows' growth against the rule.
const COUPLED_TOLERANCE: f64 = 0.25;

fn within_tolerance(measured: f64, expected: f64) -> bool {
    (measured - expected).abs() <= TOLERANCE * expected
}

/// RFC 3649 Appendix B, (w, a(w)) per row: the rows the BPF HighSpeed is built with
/// (bpf/highspeed_table.py prints them into its table), from the same file.
fn appendix_b() -> Vec<(u32, u32)> {
    let rows: Vec<(u32, u32)> = include_str!("../../../bpf/rfc3649_appendix_b.csv")
        .lines()
        .filter(|line| !line.starts_with('#') && *line != "w,a,b")
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), 3, "{line}");
            (fields[0].parse().expect(line), fields[1].parse().expect(line))
        })
        .collect();
    assert!(rows.windows(2).all(|r| r[0].0 < r[1].0 && r[1].1 == r[0].1 + 1), "one row per integer a(w): {rows:?}");
    rows
}

/// a(w) as the BPF program applies the table: the row of the largest table window not above w
/// (the first row, a = 1, below Low_Window; the last row above its window).
fn a_table(w: u32) -> u32 {
    let rows = appendix_b();
    rows.iter().rev().find(|(window, _)| *window <= w).unwrap_or(&rows[0]).1
}

/// The ranges of windows in [from, to) over which a_table is constant, with its value (the
/// table's rows, from one row's window to the next's, clipped to [from, to)).
fn table_rows(from: u32, to: u32) -> Vec<(u32, u32, u32)> {
    let mut rows: Vec<(u32, u32, u32)> = Vec::new();
    for w in from..to {
        match rows.last_mut() {
            Some((_, hi, value)) if *value == a_table(w) => *hi = w + 1,
            _ => rows.push((w, w + 1, a_table(w))),
        }
    }
    rows
}

/// Checks the growth per window of acknowledged data in each range (lo, hi, expected) that has
/// enough data, within TOLERANCE of expected; returns what it compared, or the first mismatch.
fn check_growth(samples: &[TcpInfo], ranges: &[(u32, u32, f64)]) -> Result<Vec<(Growth, f64)>, String> {
    let judged: Vec<(Growth, f64)> =
        ranges.iter().map(|&(lo, hi, expected)| (growth(samples, lo, hi), expected)).filter(|(g, _)| g.windows >= MIN_WINDOWS).collect();
    if judged.is_empty() {
        return Err(format!("no range of {ranges:?} had {MIN_WINDOWS} windows of data in congestion avoidance"));
    }
    for (g, expected) in &judged {
        if !within_tolerance(g.per_window(), *expected) {
            return Err(format!("windows [{}, {}): {:.2} segments per window, expected {expected:.2}: {g:?}", g.lo, g.hi, g.per_window()));
        }
    }
    Ok(judged)
}

#[test]
fn highspeed_grows_by_rfc3649_a_of_w() {
    let Some(registration) = registered_for("highspeed_grows_by_rfc3649_a_of_w") else { return };
    let ranges: Vec<(u32, u32, f64)> = table_rows(500, 1000).into_iter().map(|(lo, hi, a)| (lo, hi, a as f64)).collect();
    assert!(ranges.len() >= 3, "a(w) takes at least three integer values over 500..1000 windows: {ranges:?}");

    let samples = tcp(registration.name(Cc::HighSpeed), 8.0);
    let judged = check_growth(&samples, &ranges).unwrap_or_else(|e| panic!("HighSpeed: {e}"));
    for (g, expected) in &judged {
        println!("HighSpeed, windows [{}, {}): {:.2} segments per window, a(w) = {expected}", g.lo, g.hi, g.per_window());
    }
    assert!(judged.len() >= 2, "HighSpeed reached only {judged:?} of {ranges:?}");

    // Standard TCP over the same bottleneck fails the same check: its growth is 1.
    let reno = tcp("reno", 4.0);
    let err = check_growth(&reno, &ranges).expect_err("Reno's growth is not a(w)");
    println!("reno against a(w): {err}");
    assert!(err.contains("expected"), "Reno must reach the ranges and fail on growth, not on data: {err}");
}

#[test]
fn coupled_controls_on_plain_tcp_are_reno() {
    let Some(registration) = registered_for("coupled_controls_on_plain_tcp_are_reno") else { return };
    // One segment per window (RFC 5681 §3.1) at every window, in ranges of 150 segments.
    let ranges: Vec<(u32, u32, f64)> = (0..4).map(|i| (450 + 150 * i, 600 + 150 * i, 1.0)).collect();
    for cc in [Cc::Lia, Cc::Olia, Cc::Balia] {
        let samples = tcp(registration.name(cc), 4.0);
        let judged = check_growth(&samples, &ranges).unwrap_or_else(|e| panic!("{cc:?} on a plain TCP socket: {e}"));
        for (g, _) in &judged {
            println!("{cc:?}, windows [{}, {}): {:.2} segments per window", g.lo, g.hi, g.per_window());
        }
        // HighSpeed's a(w) over the same ranges would not pass: 5 to 7, not 1.
        assert!(judged.iter().all(|(g, _)| a_table(g.lo) >= 4), "the ranges are where a Reno growth cannot pass for HighSpeed's");
    }
}

/// A coupled rule's increase per ACKed byte and MSS of subflow `own` (`Coupling::increase`).
type Rule = fn(&[SubflowView], usize) -> f64;

/// One subflow's growth in congestion avoidance against a coupled rule's: Σ Δcwnd, and Σ of
/// the rule's increase per ACKed segment (from every subflow's window and RTT, the mean of its
/// values at the two samples) times the segments ACKed, with the windows of data ACKed.
#[derive(Debug)]
struct Coupled {
    subflow: usize,
    increase: u32,
    expected: f64,
    windows: f64,
    /// Windows of data ACKed between samples too far apart to judge: the rule moved by more
    /// than RULE_STEADY between them.
    unsteady_windows: f64,
}

/// How far the rule may move between two samples for their interval to be judged. The
/// comparison sums the rule times the segments ACKed, which holds while the rule stays put;
/// a host that delays the sampling thread (a loaded CI machine) stretches intervals over
/// changes of the windows (a loss on the other subflow, growth), where neither end's value is
/// the rule the ACKs in between saw.
const RULE_STEADY: f64 = 0.1;

/// The subflows' views for a coupled rule, or None while one has no window or RTT sample.
fn views(sample: &[TcpInfo]) -> Option<Vec<SubflowView>> {
    let views: Vec<SubflowView> = sample
        .iter()
        .map(|s| SubflowView {
            cwnd_bytes: s.snd_cwnd as u64 * s.snd_mss as u64,
            srtt_ns: s.rtt_us as u64 * 1000,
            ..SubflowView::default()
        })
        .collect();
    views.iter().all(|v| v.cwnd_bytes > 0 && v.srtt_ns > 0).then_some(views)
}

fn coupled_growth(samples: &[Vec<TcpInfo>], subflow: usize, rule: Rule) -> Coupled {
    let mut c = Coupled { subflow, increase: 0, expected: 0.0, windows: 0.0, unsteady_windows: 0.0 };
    for pair in samples.windows(2) {
        let (ps, qs) = (&pair[0], &pair[1]);
        if ps.len() != 2 || qs.len() != 2 || !avoiding(&ps[subflow], &qs[subflow]) {
            continue;
        }
        let (Some(p_views), Some(q_views)) = (views(ps), views(qs)) else { continue };
        let (p, q) = (&ps[subflow], &qs[subflow]);
        let windows = delivered(p, q) as f64 / p.snd_cwnd as f64;
        let (at_p, at_q) = (rule(&p_views, subflow), rule(&q_views, subflow));
        if (at_p - at_q).abs() > RULE_STEADY * at_p.max(at_q) {
            c.unsteady_windows += windows;
            continue;
        }
        // An ACK of b bytes grows the window by factor · b · MSS bytes: by factor · MSS
        // segments per ACKed segment.
        c.expected += (at_p + at_q) / 2.0 * p.snd_mss as f64 * delivered(p, q) as f64;
        c.increase += q.snd_cwnd - p.snd_cwnd;
        c.windows += windows;
    }
    c
}

/// Checks each subflow's growth against the rule's, within TOLERANCE, each with enough data.
fn check_coupled(samples: &[Vec<TcpInfo>], rule: Rule) -> Result<Vec<Coupled>, String> {
    let judged: Vec<Coupled> = (0..2).map(|i| coupled_growth(samples, i, rule)).collect();
    for c in &judged {
        if c.windows < MIN_WINDOWS {
            return Err(format!(
                "subflow {} had {:.1} windows of data in congestion avoidance, fewer than {MIN_WINDOWS}",
                c.subflow, c.windows
            ));
        }
        // Coupled growth is judged from TCP_INFO samples of two subflows whose loss instants
        // the host's timing moves: a 25% band (a clean CI run saw LIA +16%) still fails two
        // uncoupled subflows by 4× (each grows as one TCP).
        if (c.increase as f64 - c.expected).abs() > COUPLED_TOLERANCE * c.expected {
            return Err(format!("subflow {} grew by {} segments, the rule by {:.1}: {c:?}", c.subflow, c.increase, c.expected));
        }
    }
    Ok(judged)
}

#[test]
fn lia_and_balia_couple_two_subflows() {
    let Some(registration) = registered_for("lia_and_balia_couple_two_subflows") else { return };
    // An MPTCP connection of two subflows through one bottleneck; each subflow's growth is
    // compared with the simulator's rule (crates/transport/src/cc) evaluated on both
    // subflows' windows and RTTs from TCP_INFO. OLIA's rule also needs each path's loss
    // distances, which TCP_INFO does not show.
    let rules: [(Cc, Rule); 2] = [(Cc::Lia, Lia::increase), (Cc::Balia, Balia::increase)];
    for (cc, rule) in rules {
        let samples = bulk(registration.name(cc), Transport::Mptcp, &BOTTLENECK, 5.0);
        let judged = check_coupled(&samples, rule).unwrap_or_else(|e| panic!("{cc:?}: {e}"));
        for c in &judged {
            println!(
                "{cc:?}, subflow {}: grew {} segments, the rule {:.1} ({:.1} windows judged, {:.1} not: the rule moved)",
                c.subflow, c.increase, c.expected, c.windows, c.unsteady_windows
            );
        }
    }
    // Two uncoupled Reno subflows fail the same check: each grows as one TCP.
    let reno = bulk("reno", Transport::Mptcp, &BOTTLENECK, 5.0);
    let err = check_coupled(&reno, Lia::increase).expect_err("uncoupled subflows do not follow LIA");
    println!("reno against LIA: {err}");
    assert!(err.contains("the rule by"), "Reno must have the data and fail on growth: {err}");
}

/// The shared bottleneck of the share test: every segment toward the receiver meets the same
/// 20 ms and the same independent 0.2% loss, which set each window (Reno's ~1.2/√p segments)
/// well below the 100 Mbit/s queue's rate. A drop-tail queue as the bottleneck does not test
/// coupling: it drops from every flow in the same overflow, so both subflows halve together,
/// and the shares measured there (LIA 0.55–0.93 of a TCP, uncoupled 0.82–1.96 in runs of 20 s
/// at 20 Mbit/s) are phase effects of the queue (docs/validation.md).
const SHARED: Bottleneck = Bottleneck { rate_mbit: 100, queue_packets: 1000, delay_ms: 20, random_loss: 0.002 };

/// How long a share is measured, after 4 s of warm-up. Each connection sees about 2.5 loss
/// events a second: over 12 s OLIA's share ranged 0.42–1.10 and LIA's 0.95–1.44 (the 0.42 in
/// CI), over 30 s OLIA's 0.72–1.10.
const SHARE_S: f64 = 30.0;

/// What one connection over `transport` with `cc` gets against one Reno TCP connection on
/// SHARED, as a ratio of bytes received over SHARE_S after 4 s of warm-up.
fn share_against_tcp(cc: &str, transport: Transport) -> f64 {
    let (bytes, tcp_bytes) = share(cc, transport, "reno", &SHARED, 4.0, 4.0 + SHARE_S);
    let mbit_s = |b: u64| b as f64 * 8e-6 / SHARE_S;
    println!("{cc} ({transport:?}): {:.1} Mbit/s against TCP's {:.1}", mbit_s(bytes), mbit_s(tcp_bytes));
    bytes as f64 / tcp_bytes as f64
}

/// The share against TCP, measured again when the first measurement falls outside `expected`,
/// and then the mean of the two: one run's share spreads by ±0.3 around its mean (a loss more
/// or less in one connection), and once BALIA's 1.55 crossed the 1.5 that separates "about
/// one" from "about two". A connection whose share really lies outside stays outside on average.
fn share_against_tcp_within(cc: &str, transport: Transport, expected: &std::ops::Range<f64>) -> f64 {
    let first = share_against_tcp(cc, transport);
    if expected.contains(&first) {
        return first;
    }
    (first + share_against_tcp(cc, transport)) / 2.0
}

#[test]
fn coupled_mptcp_takes_one_tcp_share_and_uncoupled_two() {
    let Some(registration) = registered_for("coupled_mptcp_takes_one_tcp_share_and_uncoupled_two") else { return };
    // The bed is fair: two Reno TCP connections get the same (measured 0.91–1.12:1, once 1.34,
    // so judged like the shares below: a second measurement and the mean when the first falls
    // outside).
    let fair = 0.75..1.33;
    let tcp = share_against_tcp_within("reno", Transport::Tcp, &fair);
    assert!(fair.contains(&tcp), "two TCP connections on the shared bottleneck got {tcp:.2}:1");
    // RFC 6356 §3 (goal 2, do no harm): with equal round trips and loss rates LIA's two
    // subflows together grow by half a segment per round trip, and a loss halves one of them
    // (a quarter of the total): about one TCP's share (√(3.5/3) ≈ 1.08 in the AIMD fluid
    // model). OLIA and BALIA aim at the same; OLIA, which takes growth from the subflow of
    // larger window, measured lowest. Measured over 6 runs: LIA 0.98–1.20, OLIA 0.66–1.10,
    // BALIA 0.86–1.29 TCP shares.
    // "About one" and "about two" meet at 1.5 shares; 0.5 and 2.6 keep a starved or runaway
    // connection from passing.
    for cc in [Cc::Lia, Cc::Olia, Cc::Balia] {
        let one = 0.5..1.5;
        let coupled = share_against_tcp_within(registration.name(cc), Transport::Mptcp, &one);
        assert!(one.contains(&coupled), "{cc:?}: the coupled MPTCP connection got {coupled:.2} TCP shares, not about one");
    }
    // Two uncoupled Reno subflows are two TCP connections: measured 1.92–2.11 (1.61 with two
    // busy loops on the machine's two cores, which delay the delay line and the writers).
    let two = 1.5..2.6;
    let uncoupled = share_against_tcp_within("reno", Transport::Mptcp, &two);
    assert!(two.contains(&uncoupled), "uncoupled MPTCP got {uncoupled:.2} TCP shares, not about two");
}
