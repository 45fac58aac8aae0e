//! Runs a script against one endpoint in virtual time: nothing sleeps, the clock jumps from
//! event to event and to the endpoint's timers in between.
//!
//! - **Times.** `+d` counts from the previous event as it happened: from its script time if
//!   it and this event are both inbound packets, else from the virtual time when it finished
//!   (for a `>` line, when the packet was sent) — packetdrill's rule.
//! - **Before every inbound packet, call and assertion** at time T, the endpoint's timers due
//!   by T fire (`next_deadline_ns`, `on_timeout`); a packet it sent by then that no `>` line
//!   has taken fails the script (an unexpected packet).
//! - **A `>` line** takes the next packet the endpoint sent, firing timers up to the end of
//!   the line's window plus the tolerance if none is waiting, then checks it field by field
//!   (`verify`) and its time against the window ± the tolerance.
//! - After the last line, a packet sent and not taken fails the script as well.

use std::collections::VecDeque;

use millinet_transport::cc::{CcFactory, UnknownCc};
use millinet_wire::Packet;

use crate::code::Assertion;
use crate::error::{ErrorKind, ScriptError};
use crate::failure::{Expected, Failure, FailureKind};
use crate::mapping::Mapping;
use crate::script::{Action, CallSpec, Direction, Event, EventTime, PacketSpec, Script};
use crate::sockets::Endpoint;
use crate::verify;

/// packetdrill's default timing tolerance (its `--tolerance_usecs`).
pub const DEFAULT_TOLERANCE_NS: u64 = 4_000_000;
/// How long a `*` line waits for its packet, in virtual time.
const ANY_TIME_WAIT_NS: u64 = 600_000_000_000;
/// How far past a missing packet's window the runner looks for what came instead.
const LOOKAHEAD_NS: u64 = 120_000_000_000;

/// What the command line sets.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    cc: String,
    tolerance_ns: Option<u64>,
}

/// A bad `--cc` or `--tolerance-ms`.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionsError {
    UnknownCc(UnknownCc),
    Tolerance(f64),
}

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionsError::UnknownCc(e) => write!(f, "--cc: {e}"),
            OptionsError::Tolerance(ms) => write!(f, "--tolerance-ms {ms}: expected a number of milliseconds ≥ 0"),
        }
    }
}

impl std::error::Error for OptionsError {}

impl RunOptions {
    /// `cc` must be in millinet's registry; `tolerance_ms` (None: the script's
    /// `--tolerance_usecs`, else 4 ms) must be finite and ≥ 0.
    pub fn new(cc: &str, tolerance_ms: Option<f64>) -> Result<RunOptions, OptionsError> {
        CcFactory::by_name(cc).map_err(OptionsError::UnknownCc)?;
        let tolerance_ns = match tolerance_ms {
            Some(ms) if ms.is_finite() && ms >= 0.0 => Some((ms * 1e6).round() as u64),
            Some(ms) => return Err(OptionsError::Tolerance(ms)),
            None => None,
        };
        Ok(RunOptions { cc: cc.to_string(), tolerance_ns })
    }
}

/// A script that ran to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub events: usize,
    /// `>` lines checked.
    pub packets_checked: usize,
    /// Virtual time at the end.
    pub end_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// Found only when running: a call millinet cannot carry out in the state it is in.
    Script(ScriptError),
    /// The endpoint did something else than the script says (boxed: it holds the packets).
    Failed(Box<Failure>),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Script(e) => e.fmt(f),
            RunError::Failed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs `script` against a fresh endpoint.
pub fn run(script: &Script, options: &RunOptions) -> Result<Report, RunError> {
    let mut endpoint = Endpoint::new(&options.cc);
    for setting in &script.settings.tcp {
        setting.apply(endpoint.config_mut());
    }
    let mut runner = Runner {
        tolerance_ns: options.tolerance_ns.or(script.settings.tolerance_ns).unwrap_or(DEFAULT_TOLERANCE_NS),
        now_ns: 0,
        endpoint,
        sent: VecDeque::new(),
        out: Vec::new(),
        mapping: Mapping::default(),
        previous: None,
        checked: 0,
    };
    for event in &script.events {
        runner.event(event)?;
    }
    if let Some(sent) = runner.sent.pop_front() {
        let line = script.events.last().map_or(0, |e| e.line);
        return Err(runner.unexpected(line, &sent, true));
    }
    Ok(Report { events: script.events.len(), packets_checked: runner.checked, end_ns: runner.now_ns })
}

/// A packet the endpoint sent and when.
struct Sent {
    at_ns: u64,
    packet: Packet,
}

/// The previous event: its script time and whether it was an inbound packet.
struct Previous {
    time_ns: u64,
    inbound: bool,
}

/// An event's time window in virtual time.
#[derive(Clone, Copy)]
struct Window {
    start_ns: u64,
    end_ns: u64,
    any: bool,
}

struct Runner {
    tolerance_ns: u64,
    now_ns: u64,
    endpoint: Endpoint,
    /// Sent and not yet taken by a `>` line, oldest first.
    sent: VecDeque<Sent>,
    out: Vec<Packet>,
    mapping: Mapping,
    previous: Option<Previous>,
    checked: usize,
}

fn failed(line: u32, kind: FailureKind) -> RunError {
    RunError::Failed(Box::new(Failure { line, kind }))
}

fn refused(event: &Event, kind: ErrorKind) -> RunError {
    RunError::Script(ScriptError::new(event.line, event.column, kind))
}

fn is_inbound(event: &Event) -> bool {
    matches!(&event.action, Action::Packet(p) if p.direction == Direction::Inbound)
}

impl Runner {
    fn schedule(&self, event: &Event) -> Window {
        let offset = match &self.previous {
            Some(previous) if previous.inbound && is_inbound(event) => previous.time_ns,
            _ => self.now_ns,
        };
        let (start_ns, end_ns) = match event.time {
            EventTime::Absolute(t) => (t, t),
            EventTime::Relative(d) => (offset.saturating_add(d), offset.saturating_add(d)),
            EventTime::AbsoluteRange(a, b) => (a, b),
            EventTime::RelativeRange(a, b) => (offset.saturating_add(a), offset.saturating_add(b)),
            EventTime::Any => (self.now_ns, self.now_ns),
        };
        Window { start_ns, end_ns, any: event.time == EventTime::Any }
    }

    fn event(&mut self, event: &Event) -> Result<(), RunError> {
        let window = self.schedule(event);
        match &event.action {
            Action::Packet(spec) if spec.direction == Direction::Outbound => self.expect(event.line, spec, window)?,
            action => {
                self.advance_to(event.line, window.start_ns)?;
                if let Some(sent) = self.sent.pop_front() {
                    return Err(self.unexpected(event.line, &sent, false));
                }
                self.now_ns = self.now_ns.max(window.start_ns);
                match action {
                    Action::Packet(spec) => self.inject(event, spec)?,
                    Action::Call(call) => self.call(event, call)?,
                    Action::Assert(assertions) => self.assert(event, assertions)?,
                }
                self.collect(self.now_ns);
            }
        }
        self.previous = Some(Previous { time_ns: window.start_ns, inbound: is_inbound(event) });
        Ok(())
    }

    /// Moves what the endpoint just sent to `sent`.
    fn collect(&mut self, at_ns: u64) {
        self.sent.extend(self.out.drain(..).map(|packet| Sent { at_ns, packet }));
    }

    /// Fires the endpoint's next timer.
    fn fire(&mut self, line: u32, deadline_ns: u64) -> Result<(), RunError> {
        let at_ns = self.now_ns.max(deadline_ns);
        self.now_ns = at_ns;
        self.endpoint.on_timeout(at_ns, &mut self.out);
        if self.out.is_empty() && self.endpoint.next_deadline_ns().is_some_and(|d| d <= at_ns) {
            return Err(failed(line, FailureKind::Stuck { at_ns }));
        }
        self.collect(at_ns);
        Ok(())
    }

    /// Fires every timer due by `t_ns`, or until the endpoint sends a packet (which no line
    /// takes before `t_ns`: the caller fails on it).
    fn advance_to(&mut self, line: u32, t_ns: u64) -> Result<(), RunError> {
        while let Some(deadline) = self.endpoint.next_deadline_ns().filter(|&d| d <= t_ns && self.sent.is_empty()) {
            self.fire(line, deadline)?;
        }
        Ok(())
    }

    /// The next packet sent by `limit_ns`, firing timers as needed.
    fn next_sent(&mut self, line: u32, limit_ns: u64) -> Result<Option<Sent>, RunError> {
        loop {
            if let Some(sent) = self.sent.pop_front() {
                return Ok(Some(sent));
            }
            match self.endpoint.next_deadline_ns() {
                Some(deadline) if deadline <= limit_ns => self.fire(line, deadline)?,
                _ => return Ok(None),
            }
        }
    }

    /// The packet as the script would write it.
    fn show(&mut self, packet: &Packet) -> String {
        self.mapping.outbound(packet, None).map_or_else(|e| e, |p| p.to_string())
    }

    fn unexpected(&mut self, line: u32, sent: &Sent, after_last_line: bool) -> RunError {
        failed(line, FailureKind::Unexpected { actual: self.show(&sent.packet), at_ns: sent.at_ns, after_last_line })
    }

    fn expect(&mut self, line: u32, spec: &PacketSpec, window: Window) -> Result<(), RunError> {
        let when = if window.any {
            Expected::Any
        } else {
            Expected::Window { start_ns: window.start_ns, end_ns: window.end_ns, tolerance_ns: self.tolerance_ns }
        };
        let limit_ns =
            if window.any { self.now_ns.saturating_add(ANY_TIME_WAIT_NS) } else { window.end_ns.saturating_add(self.tolerance_ns) };
        let Some(sent) = self.next_sent(line, limit_ns)? else {
            let next = self.next_sent(line, limit_ns.saturating_add(LOOKAHEAD_NS))?.map(|s| (s.at_ns, self.show(&s.packet)));
            return Err(failed(line, FailureKind::Missing { expected: spec.to_string(), when, next }));
        };
        let actual = self
            .mapping
            .outbound(&sent.packet, spec.options.as_deref())
            .map_err(|message| failed(line, FailureKind::Unreadable { message }))?;
        // The TS clock ticks in milliseconds.
        let ts_tolerance = u32::try_from(self.tolerance_ns / 1_000_000).unwrap_or(u32::MAX);
        if let Some(m) = verify::compare(spec, &actual, ts_tolerance) {
            return Err(failed(
                line,
                FailureKind::WrongPacket {
                    expected: spec.to_string(),
                    actual: actual.to_string(),
                    at_ns: sent.at_ns,
                    field: m.field,
                    expected_value: m.expected,
                    actual_value: m.actual,
                },
            ));
        }
        let early = sent.at_ns.saturating_add(self.tolerance_ns) < window.start_ns;
        let late = sent.at_ns > window.end_ns.saturating_add(self.tolerance_ns);
        if !window.any && (early || late) {
            return Err(failed(line, FailureKind::WrongTime { expected: spec.to_string(), when, at_ns: sent.at_ns }));
        }
        self.now_ns = self.now_ns.max(sent.at_ns);
        self.checked += 1;
        Ok(())
    }

    fn inject(&mut self, event: &Event, spec: &PacketSpec) -> Result<(), RunError> {
        let (local, remote) = self.endpoint.addresses().ok_or_else(|| {
            refused(
                event,
                ErrorKind::Invalid("an inbound packet with no socket listening or connecting (call listen or connect first)".into()),
            )
        })?;
        let header = self.mapping.inbound(spec, remote.port(), local.port());
        let packet = Packet::tcp(*remote.ip(), *local.ip(), header, spec.len);
        self.endpoint.on_packet(self.now_ns, &packet, &mut self.out);
        Ok(())
    }

    fn call(&mut self, event: &Event, spec: &CallSpec) -> Result<(), RunError> {
        let returned = self.endpoint.call(self.now_ns, &spec.call, &mut self.out).map_err(|kind| refused(event, kind))?;
        let name = spec.call.name();
        if returned.result != spec.expected {
            let kind =
                FailureKind::CallResult { call: name, expected: format!("= {}", spec.expected), actual: format!("= {}", returned.result) };
            return Err(failed(event.line, kind));
        }
        match returned.value {
            Some((expected, actual)) if expected != actual => {
                Err(failed(event.line, FailureKind::CallResult { call: name, expected, actual }))
            }
            _ => Ok(()),
        }
    }

    fn assert(&mut self, event: &Event, assertions: &[Assertion]) -> Result<(), RunError> {
        let snapshot = self
            .endpoint
            .snapshot()
            .ok_or_else(|| refused(event, ErrorKind::Invalid("tcpi_* fields need a connection (after listen or connect)".into())))?;
        for assertion in assertions {
            if !assertion.holds(|field| field.value(&snapshot)) {
                let values: Vec<String> =
                    assertion.fields().map(|field| format!("{} = {}", field.name(), field.value(&snapshot))).collect();
                return Err(failed(assertion.line, FailureKind::Assertion { text: assertion.text.clone(), values: values.join(", ") }));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    /// A passive open, then the lines given.
    const OPEN: &str = "\
0    socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0   listen(3, 1) = 0
+.1  < S 0:0(0) win 65535 <mss 1000,nop,wscale 7>
+0   > S. 0:0(0) ack 1 <mss 1400,nop,wscale 14>
+.1  < . 1:1(0) ack 1 win 257
+0   accept(3, ..., ...) = 4
";

    fn outcome(lines: &str) -> Result<Report, RunError> {
        run(&parse(&format!("{OPEN}{lines}")).expect("valid"), &RunOptions::new("cubic", None).expect("valid"))
    }

    fn failure(lines: &str) -> Failure {
        match outcome(lines) {
            Err(RunError::Failed(f)) => *f,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn relative_times_count_from_when_the_previous_event_happened() {
        // The retransmission comes one RTO (300 ms) after the segment; the inbound ACK's
        // `+.1` counts from the retransmission, the one after it from the previous ACK.
        let report = outcome(
            "+0 write(4, ..., 1000) = 1000\n+0 > . 1:1001(1000) ack 1\n+.3 > . 1:1001(1000) ack 1\n+.1 < . 1:1(0) ack 1001 win 257\n",
        )
        .expect("passes");
        assert_eq!((report.packets_checked, report.end_ns), (3, 600_000_000));
        assert!(outcome("+0 write(4, ..., 1000) = 1000\n+0 > . 1:1001(1000) ack 1\n0.500~0.510 > . 1:1001(1000) ack 1\n").is_ok());
        assert!(outcome("+0 write(4, ..., 1000) = 1000\n+0 > . 1:1001(1000) ack 1\n* > . 1:1001(1000) ack 1\n").is_ok());
    }

    #[test]
    fn an_active_open() {
        let script = "\
0    socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0   fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0
+0   connect(3, ..., ...) = -1 EINPROGRESS
+0   > S 0:0(0) win 65535 <mss 1400,sackOK,TS val 0 ecr 0,nop,wscale 14>
+.05 < S. 0:0(0) ack 1 win 65535 <mss 1000,sackOK,TS val 7 ecr 0,nop,wscale 7>
+0   > . 1:1(0) ack 1 <nop,nop,TS val 50 ecr 7>
+0   getsockopt(3, SOL_SOCKET, SO_ERROR, [0], [4]) = 0
+0   %{ assert tcpi_state == 1; assert tcpi_rtt == 50000 }%
+0   write(3, ..., 100) = 100
+0   > . 1:101(100) ack 1 <nop,nop,TS val 50 ecr 7>
";
        let report = run(&parse(script).expect("valid"), &RunOptions::new("newreno", None).expect("valid")).expect("passes");
        assert_eq!(report.packets_checked, 3);
    }

    #[test]
    fn each_kind_of_failure_names_its_line() {
        let write = "+0 write(4, ..., 1000) = 1000\n";
        let f = failure(&format!("{write}+0 > . 1:1001(1000) ack 2\n"));
        assert_eq!(f.line, 8);
        assert!(
            matches!(&f.kind, FailureKind::WrongPacket { field: "ack", expected_value, actual_value, .. } if expected_value == "2" && actual_value == "1")
        );
        let f = failure(&format!("{write}+.01 > . 1:1001(1000) ack 1\n"));
        assert!(matches!(f.kind, FailureKind::WrongTime { at_ns: 200_000_000, .. }), "{f}");
        let f = failure(&format!("{write}+0 > . 1:1001(1000) ack 1\n+.1 > . 1001:2001(1000) ack 1\n"));
        assert_eq!(f.line, 9);
        assert!(matches!(&f.kind, FailureKind::Missing { next: Some((500_000_000, _)), .. }), "{f}");
        let f = failure(&format!("{write}+.1 < . 1:1(0) ack 1001 win 257\n"));
        assert!(matches!(&f.kind, FailureKind::Unexpected { after_last_line: false, .. }) && f.line == 8, "{f}");
        let f = failure(write);
        assert!(matches!(&f.kind, FailureKind::Unexpected { after_last_line: true, .. }) && f.line == 7, "{f}");
        let f = failure("+0 read(4, ..., 10) = 10\n");
        assert_eq!(f.kind, FailureKind::CallResult { call: "read", expected: "= 10".into(), actual: "= -1 EAGAIN".into() });
        let f = failure("+0 getsockopt(4, SOL_TCP, TCP_CONGESTION, \"reno\", [4]) = 0\n");
        assert_eq!(f.kind, FailureKind::CallResult { call: "getsockopt", expected: "\"reno\"".into(), actual: "\"cubic\"".into() });
        let f = failure("+0 %{ assert tcpi_snd_cwnd == 10\n  assert tcpi_snd_mss == 1400 }%\n");
        assert_eq!(
            (f.line, f.kind),
            (8, FailureKind::Assertion { text: "tcpi_snd_mss == 1400".into(), values: "tcpi_snd_mss = 1000".into() })
        );
    }

    #[test]
    fn calls_that_depend_on_the_state() {
        assert!(outcome("+0 setsockopt(3, SOL_TCP, TCP_CONGESTION, \"vegas\", 5) = -1 ENOENT\n+0 close(9) = -1 EBADF\n").is_ok());
        let refused = outcome("+0 setsockopt(4, SOL_TCP, TCP_CONGESTION, \"newreno\", 7) = 0\n");
        assert!(matches!(refused, Err(RunError::Script(ScriptError { line: 7, kind: ErrorKind::Unsupported { .. }, .. }))), "{refused:?}");
        let early = parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 < S 0:0(0) win 1").expect("valid");
        let refused = run(&early, &RunOptions::new("cubic", None).expect("valid"));
        assert!(matches!(refused, Err(RunError::Script(ScriptError { line: 2, kind: ErrorKind::Invalid(_), .. }))), "{refused:?}");
    }

    #[test]
    fn options_are_checked() {
        assert!(matches!(RunOptions::new("vegas", None), Err(OptionsError::UnknownCc(_))));
        assert!(RunOptions::new("vegas", None).unwrap_err().to_string().contains("allowed: \"newreno\", \"cubic\""));
        assert_eq!(RunOptions::new("cubic", Some(-1.0)), Err(OptionsError::Tolerance(-1.0)));
        assert_eq!(RunOptions::new("bbr", Some(10.0)).map(|o| o.tolerance_ns), Ok(Some(10_000_000)));
    }
}
