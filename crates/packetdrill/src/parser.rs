//! packetdrill's grammar, the part TCP scripts use: option lines, then events of a time and
//! an action — an inbound `<` or outbound `>` TCP packet, a socket call with its result, or a
//! `%{ assert ... }%` block. What the grammar has beyond that (UDP, ICMP, IP header fields,
//! explicit ports, blocking calls, shell commands, options other than those below) is refused
//! with what is supported.

use crate::calls::{self, Expr, ExprKind};
use crate::code;
use crate::error::{ErrorKind, ScriptError};
use crate::lexer::{tokenize, Pos, Tok, Token};
use crate::render::seconds;
use crate::script::{Action, CallResult, CallSpec, Direction, Errno, Event, EventTime, Flags, PacketSpec, Script, TcpOption};
use crate::settings::Settings;

/// RFC 9293 §3.1: a data offset of 15 words leaves 40 bytes for options.
const MAX_OPTION_BYTES: usize = 40;

const SUPPORTED_ACTIONS: &str = "`<` and `>` TCP packets, socket calls, %{ assert ... }% blocks";
const SUPPORTED_OPTIONS: &str = "nop, eol, mss N, wscale N, sackOK, TS val N ecr N, sack L:R ...";

/// Parses a whole script.
pub fn parse(text: &str) -> Result<Script, ScriptError> {
    let tokens = tokenize(text)?;
    let end = tokens.last().map_or(Pos { line: 1, column: 1 }, |t| t.pos);
    let mut parser = Parser { tokens, at: 0, end };
    let settings = parser.settings()?;
    let mut events = Vec::new();
    while parser.peek().is_some() {
        events.push(parser.event()?);
    }
    check_times(&events)?;
    Ok(Script { settings, events })
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// Where "end of script" errors point.
    end: Pos,
}

fn error(pos: Pos, kind: ErrorKind) -> ScriptError {
    ScriptError::new(pos.line, pos.column, kind)
}

fn unsupported(pos: Pos, what: impl Into<String>, supported: &str) -> ScriptError {
    error(pos, ErrorKind::Unsupported { what: what.into(), supported: supported.to_string() })
}

fn invalid(pos: Pos, message: impl Into<String>) -> ScriptError {
    error(pos, ErrorKind::Invalid(message.into()))
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at).map(|t| &t.tok)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Tok> {
        self.tokens.get(self.at + ahead).map(|t| &t.tok)
    }

    fn pos(&self) -> Pos {
        self.tokens.get(self.at).map_or(self.end, |t| t.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn found(&self) -> String {
        self.peek().map_or_else(|| "the end of the script".to_string(), Tok::describe)
    }

    fn expected(&self, what: &str) -> ScriptError {
        error(self.pos(), ErrorKind::Expected { expected: what.to_string(), found: self.found() })
    }

    fn punct(&mut self, c: char) -> Result<(), ScriptError> {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }

    /// Expressions separated by commas up to `close` (consumed), possibly none: a call's
    /// arguments, an array's items.
    fn exprs_until(&mut self, close: char) -> Result<Vec<Expr>, ScriptError> {
        let mut items = Vec::new();
        if !self.eat_punct(close) {
            items.push(self.expr()?);
            while self.eat_punct(',') {
                items.push(self.expr()?);
            }
            self.punct(close)?;
        }
        Ok(items)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let here = self.peek() == Some(&Tok::Punct(c));
        self.at += here as usize;
        here
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let here = matches!(self.peek(), Some(Tok::Word(w)) if w == word);
        self.at += here as usize;
        here
    }

    /// An integer that fits `T`, named `what` in errors.
    fn int<T: TryFrom<i64>>(&mut self, what: &str, allowed: &str) -> Result<T, ScriptError> {
        let pos = self.pos();
        match self.peek() {
            Some(&Tok::Int(n)) => {
                self.at += 1;
                T::try_from(n).map_err(|_| {
                    error(pos, ErrorKind::OutOfRange { what: what.to_string(), value: n.to_string(), allowed: allowed.to_string() })
                })
            }
            _ => Err(self.expected(what)),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, ScriptError> {
        self.int(what, "0..=4294967295")
    }

    /// Option lines before the first event.
    fn settings(&mut self) -> Result<Settings, ScriptError> {
        let mut settings = Settings::default();
        while let Some(Tok::OptionName(name)) = self.peek() {
            let (name, pos) = (name.clone(), self.pos());
            self.at += 1;
            let value = if self.eat_punct('=') {
                let token = self.next().ok_or_else(|| self.expected("a value"))?;
                Some((token.tok, token.pos))
            } else {
                None
            };
            settings.add(&name, pos, value.as_ref())?;
        }
        Ok(settings)
    }

    fn seconds(&mut self) -> Result<u64, ScriptError> {
        let pos = self.pos();
        let token = self
            .next()
            .ok_or_else(|| error(pos, ErrorKind::Expected { expected: "a time".into(), found: "the end of the script".into() }))?;
        match token.tok {
            Tok::Int(_) | Tok::Decimal(_) => token.tok.seconds_ns().ok_or_else(|| {
                error(
                    pos,
                    ErrorKind::OutOfRange {
                        what: "time".into(),
                        value: token.tok.describe(),
                        allowed: "seconds ≥ 0 with at most 9 decimals".into(),
                    },
                )
            }),
            other => Err(error(pos, ErrorKind::Expected { expected: "a time in seconds".into(), found: other.describe() })),
        }
    }

    fn time(&mut self) -> Result<EventTime, ScriptError> {
        match self.peek() {
            Some(Tok::Punct('*')) => {
                self.at += 1;
                Ok(EventTime::Any)
            }
            Some(Tok::Punct('+')) => {
                self.at += 1;
                let start = self.seconds()?;
                if self.eat_punct('~') {
                    self.punct('+')?;
                    return Ok(EventTime::RelativeRange(start, self.seconds()?));
                }
                Ok(EventTime::Relative(start))
            }
            Some(Tok::Int(_) | Tok::Decimal(_)) => {
                let start = self.seconds()?;
                if self.eat_punct('~') {
                    return Ok(EventTime::AbsoluteRange(start, self.seconds()?));
                }
                Ok(EventTime::Absolute(start))
            }
            Some(Tok::OptionName(name)) => {
                Err(invalid(self.pos(), format!("the option --{name} comes after an event; options go before the first event")))
            }
            _ => Err(self.expected("an event time (0.100, +0.1, 0.1~0.2, +0.1~+0.2 or *)")),
        }
    }

    fn event(&mut self) -> Result<Event, ScriptError> {
        let pos = self.pos();
        let time = self.time()?;
        let action = self.action()?;
        let outbound = matches!(&action, Action::Packet(p) if p.direction == Direction::Outbound);
        if !outbound && !matches!(time, EventTime::Absolute(_) | EventTime::Relative(_)) {
            return Err(invalid(pos, "time ranges and `*` are for outbound `>` packets only"));
        }
        Ok(Event { line: pos.line, column: pos.column, time, action })
    }

    fn action(&mut self) -> Result<Action, ScriptError> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::Punct('<')) => self.packet(Direction::Inbound).map(Action::Packet),
            Some(Tok::Punct('>')) => self.packet(Direction::Outbound).map(Action::Packet),
            Some(Tok::Word(_)) => self.call().map(Action::Call),
            Some(Tok::Code(text)) => {
                let assertions = code::parse(text, pos)?;
                self.at += 1;
                Ok(Action::Assert(assertions))
            }
            Some(Tok::Ellipsis) => Err(unsupported(
                pos,
                "a blocking call (`...` before the call)",
                "calls that return at once: every socket behaves as non-blocking",
            )),
            Some(Tok::Backquoted) => {
                Err(unsupported(pos, "a shell command", "option lines --name=value before the first event for millinet's TCP keys"))
            }
            _ => Err(self.expected(SUPPORTED_ACTIONS)),
        }
    }

    fn flags(&mut self) -> Result<Flags, ScriptError> {
        let pos = self.pos();
        let mut flags = Flags::default();
        match self.next().map(|t| t.tok) {
            Some(Tok::Punct('.')) => flags.ack = true,
            Some(Tok::Punct('-')) => {}
            Some(Tok::Word(letters)) => {
                for (i, letter) in letters.chars().enumerate() {
                    let at = Pos { line: pos.line, column: pos.column + i as u32 };
                    match letter {
                        'S' => flags.syn = true,
                        'F' => flags.fin = true,
                        'R' => flags.rst = true,
                        'P' => flags.psh = true,
                        'E' | 'W' | 'U' => {
                            return Err(unsupported(
                                at,
                                format!("the flag {letter}"),
                                "S, F, R, P and . (millinet models neither ECN nor urgent data)",
                            ))
                        }
                        _ => return Err(self.bad_flags(at, &letters)),
                    }
                }
                flags.ack = self.eat_punct('.');
            }
            other => {
                return Err(error(
                    pos,
                    ErrorKind::Expected {
                        expected: "TCP flags (S, F, R, P, . or -)".into(),
                        found: other.map_or("the end".into(), |t| t.describe()),
                    },
                ))
            }
        }
        Ok(flags)
    }

    fn bad_flags(&self, pos: Pos, letters: &str) -> ScriptError {
        const OTHER_PROTOCOLS: [&str; 7] = ["udp", "icmp", "ipv4", "ipv6", "gre", "mpls", "raw"];
        if OTHER_PROTOCOLS.contains(&letters) {
            unsupported(pos, format!("a {letters} packet"), "TCP packets")
        } else {
            error(pos, ErrorKind::Expected { expected: "TCP flags (S, F, R, P, . or -)".into(), found: format!("`{letters}`") })
        }
    }

    fn packet(&mut self, direction: Direction) -> Result<PacketSpec, ScriptError> {
        self.at += 1;
        let pos = self.pos();
        match (self.peek(), self.peek_at(1)) {
            (Some(Tok::Punct('(' | '[')), _) => {
                return Err(unsupported(pos, "IP header fields (tos, ECN, TTL, flow label)", "TCP header fields only"))
            }
            (Some(Tok::Int(_)), Some(Tok::Punct('>'))) => {
                return Err(unsupported(pos, "explicit ports", "the runner's fixed addresses and ports"))
            }
            _ => {}
        }
        let flags = self.flags()?;
        let seq_pos = self.pos();
        let seq = self.u32("a start sequence number")?;
        self.punct(':')?;
        let end = self.u32("an end sequence number")?;
        self.punct('(')?;
        let len = self.u32("a payload length")?;
        self.punct(')')?;
        if seq as u64 + len as u64 != end as u64 {
            return Err(invalid(seq_pos, format!("{seq}:{end}({len}): the end sequence number must be the start plus the length")));
        }
        let ack_pos = self.pos();
        let ack = if self.eat_word("ack") { Some(self.u32("an acknowledgment number")?) } else { None };
        match (flags.ack, ack) {
            (true, None) => return Err(invalid(ack_pos, "the ACK flag `.` needs `ack N`")),
            (false, Some(_)) => return Err(invalid(ack_pos, "`ack N` needs the ACK flag `.`")),
            _ => {}
        }
        let win_pos = self.pos();
        let win = if self.eat_word("win") { Some(self.int("a window", "0..=65535")?) } else { None };
        if win.is_none() && direction == Direction::Inbound {
            return Err(invalid(win_pos, "an inbound packet needs `win N`"));
        }
        if matches!(self.peek(), Some(Tok::Word(w)) if w == "urg") {
            return Err(unsupported(self.pos(), "the urgent pointer", "seq, ack, win and options"));
        }
        let options = self.options(direction)?;
        Ok(PacketSpec { direction, flags, seq, len, ack, win, options })
    }

    /// `<...>` (None), `<option, ...>`, or nothing (no options).
    fn options(&mut self, direction: Direction) -> Result<Option<Vec<TcpOption>>, ScriptError> {
        let pos = self.pos();
        if !self.eat_punct('<') {
            return Ok(Some(Vec::new()));
        }
        if self.peek() == Some(&Tok::Ellipsis) {
            self.at += 1;
            self.punct('>')?;
            if direction == Direction::Inbound {
                return Err(invalid(pos, "<...> (options not checked) is for outbound packets only"));
            }
            return Ok(None);
        }
        let mut options = vec![self.option()?];
        while self.eat_punct(',') {
            options.push(self.option()?);
        }
        self.punct('>')?;
        let bytes: usize = options.iter().map(TcpOption::wire_bytes).sum();
        if bytes > MAX_OPTION_BYTES {
            return Err(invalid(pos, format!("the options take {bytes} bytes; a TCP header holds at most {MAX_OPTION_BYTES}")));
        }
        Ok(Some(options))
    }

    fn option(&mut self) -> Result<TcpOption, ScriptError> {
        let pos = self.pos();
        let Some(Tok::Word(name)) = self.peek().cloned() else { return Err(self.expected(SUPPORTED_OPTIONS)) };
        self.at += 1;
        Ok(match name.as_str() {
            "nop" => TcpOption::Nop,
            "eol" => TcpOption::Eol,
            "sackOK" => TcpOption::SackPermitted,
            "mss" => TcpOption::Mss(self.int("an MSS", "0..=65535")?),
            "wscale" => TcpOption::WindowScale(self.int("a window scale", "0..=255")?),
            "TS" => {
                if !self.eat_word("val") {
                    return Err(self.expected("`val`"));
                }
                let val = self.u32("a TS value")?;
                if !self.eat_word("ecr") {
                    return Err(self.expected("`ecr`"));
                }
                TcpOption::Timestamp { val, ecr: self.u32("a TS echo reply")? }
            }
            "sack" => {
                let mut blocks = Vec::new();
                while matches!(self.peek(), Some(Tok::Int(_))) {
                    let left = self.u32("a SACK block's left edge")?;
                    self.punct(':')?;
                    blocks.push((left, self.u32("a SACK block's right edge")?));
                }
                if blocks.is_empty() {
                    return Err(self.expected("SACK blocks L:R"));
                }
                TcpOption::Sack(blocks)
            }
            other => return Err(unsupported(pos, format!("the TCP option {other}"), SUPPORTED_OPTIONS)),
        })
    }

    fn call(&mut self) -> Result<CallSpec, ScriptError> {
        let pos = self.pos();
        let Some(Token { tok: Tok::Word(name), .. }) = self.next() else { return Err(self.expected("a call")) };
        self.punct('(')?;
        let args = self.exprs_until(')')?;
        let call = calls::call(&name, pos, &args)?;
        self.punct('=')?;
        let value_pos = self.pos();
        let value = match self.next().map(|t| t.tok) {
            Some(Tok::Int(n)) => n,
            Some(Tok::Hex(n)) => i64::try_from(n).map_err(|_| {
                error(
                    value_pos,
                    ErrorKind::OutOfRange { what: "result".into(), value: format!("{n:#x}"), allowed: "64-bit integers".into() },
                )
            })?,
            other => {
                return Err(error(
                    value_pos,
                    ErrorKind::Expected { expected: "the call's result".into(), found: other.map_or("the end".into(), |t| t.describe()) },
                ))
            }
        };
        let errno_pos = self.pos();
        let errno = match self.peek().cloned() {
            // An errno is written on the result's line (what follows is the next event).
            Some(Tok::Word(name)) if errno_pos.line == value_pos.line => {
                self.at += 1;
                let errno = Errno::by_name(&name).ok_or_else(|| {
                    let names: Vec<&str> = Errno::ALL.iter().map(|e| e.name()).collect();
                    unsupported(errno_pos, format!("the errno {name}"), &names.join(", "))
                })?;
                if value != -1 {
                    return Err(invalid(errno_pos, format!("an errno goes with the result -1, not {value}")));
                }
                Some(errno)
            }
            _ => None,
        };
        // A note in parentheses (`(Operation now in progress)`) is for the reader.
        if self.eat_punct('(') {
            while self.next().is_some_and(|t| t.tok != Tok::Punct(')')) {}
        }
        Ok(CallSpec { call, expected: CallResult { value, errno } })
    }

    fn expr(&mut self) -> Result<Expr, ScriptError> {
        let first = self.primary()?;
        if self.peek() != Some(&Tok::Punct('|')) {
            return Ok(first);
        }
        let pos = first.pos;
        let mut terms = vec![first];
        while self.eat_punct('|') {
            terms.push(self.primary()?);
        }
        Ok(Expr { kind: ExprKind::Or(terms), pos })
    }

    fn primary(&mut self) -> Result<Expr, ScriptError> {
        let pos = self.pos();
        let kind = match self.next().map(|t| t.tok) {
            Some(Tok::Ellipsis) => ExprKind::Ellipsis,
            Some(Tok::Int(n)) => ExprKind::Int(n),
            Some(Tok::Hex(n)) => ExprKind::Int(i64::try_from(n).map_err(|_| {
                error(pos, ErrorKind::OutOfRange { what: "argument".into(), value: format!("{n:#x}"), allowed: "64-bit integers".into() })
            })?),
            Some(Tok::Word(w)) => ExprKind::Word(w),
            Some(Tok::Str(s)) => {
                // `"abc"...`: a buffer starting with these bytes.
                self.eat_ellipsis();
                ExprKind::Str(s)
            }
            Some(Tok::Punct('[')) => ExprKind::Array(self.exprs_until(']')?),
            Some(Tok::Punct('{')) => {
                return Err(unsupported(pos, "structures {...} as arguments", "integers, names, strings, [arrays] and ..."))
            }
            other => {
                return Err(error(
                    pos,
                    ErrorKind::Expected { expected: "an argument".into(), found: other.map_or("the end".into(), |t| t.describe()) },
                ))
            }
        };
        Ok(Expr { kind, pos })
    }

    fn eat_ellipsis(&mut self) {
        self.at += (self.peek() == Some(&Tok::Ellipsis)) as usize;
    }
}

/// packetdrill's rules: the first event is at time 0; absolute times do not go backward; a
/// range does not end before it starts.
fn check_times(events: &[Event]) -> Result<(), ScriptError> {
    if let Some(first) = events.first() {
        if !matches!(first.time, EventTime::Absolute(0) | EventTime::Relative(0)) {
            return Err(ScriptError::new(first.line, first.column, ErrorKind::Invalid("the first event must be at time 0".into())));
        }
    }
    let mut last_absolute = 0;
    for event in events {
        let at = |message: String| ScriptError::new(event.line, event.column, ErrorKind::Invalid(message));
        match event.time {
            EventTime::Absolute(t) | EventTime::AbsoluteRange(t, _) if t < last_absolute => {
                return Err(at(format!("time goes backward, to {} s after {} s", seconds(t), seconds(last_absolute))));
            }
            EventTime::AbsoluteRange(a, b) | EventTime::RelativeRange(a, b) if b < a => {
                return Err(at("the time range ends before it starts".into()))
            }
            EventTime::Absolute(t) | EventTime::AbsoluteRange(t, _) => last_absolute = t,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::{Call, SetOption};
    use crate::settings::TcpSetting;

    const ACCEPT: &str = "\
--tolerance_usecs=10000
--delayed_ack=rfc5681
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3   // a comment
+0    setsockopt(3, SOL_TCP, TCP_CONGESTION, \"newreno\", 8) = 0
/* a comment
   over lines */
+0    listen(3, 1) = 0
+.1   < S 0:0(0) win 65535 <mss 1000,sackOK,TS val 100 ecr 0,nop,wscale 7>
0.100 > S. 0:0(0) ack 1 <...>
+0.1~+0.2 > P. 1:1001(1000) ack 1 win 257 <nop,nop,sack 1:2 3:4>
*     > F. 1001:1001(0) ack 1
+0    read(4, ..., 100) = -1 EAGAIN (Resource temporarily unavailable)
+0    %{ assert tcpi_snd_cwnd == 10 }%
";

    /// The error of a script whose first event is fine and whose second is `line`.
    fn error_of(line: &str) -> ScriptError {
        parse(&format!("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n{line}\n")).expect_err("refused")
    }

    #[test]
    fn a_script_with_every_supported_form() {
        let script = parse(ACCEPT).expect("valid");
        assert_eq!(script.settings.tolerance_ns, Some(10_000_000));
        assert_eq!(script.settings.tcp, vec![TcpSetting::DelayedAck(millinet_transport::DelayedAck::Rfc5681)]);
        let times: Vec<EventTime> = script.events.iter().map(|e| e.time).collect();
        assert_eq!(
            times,
            vec![
                EventTime::Absolute(0),
                EventTime::Relative(0),
                EventTime::Relative(0),
                EventTime::Relative(100_000_000),
                EventTime::Absolute(100_000_000),
                EventTime::RelativeRange(100_000_000, 200_000_000),
                EventTime::Any,
                EventTime::Relative(0),
                EventTime::Relative(0),
            ]
        );
        assert_eq!(script.events[2].line, 7, "lines count through comments");
        let Action::Call(cc) = &script.events[1].action else { panic!("a call") };
        assert_eq!(cc.call, Call::SetSockOpt { fd: 3, option: SetOption::Congestion("newreno".into()) });
        let Action::Packet(syn) = &script.events[3].action else { panic!("a packet") };
        assert_eq!((syn.direction, syn.flags.syn, syn.win), (Direction::Inbound, true, Some(65535)));
        assert_eq!(
            syn.options,
            Some(vec![
                TcpOption::Mss(1000),
                TcpOption::SackPermitted,
                TcpOption::Timestamp { val: 100, ecr: 0 },
                TcpOption::Nop,
                TcpOption::WindowScale(7)
            ])
        );
        let Action::Packet(synack) = &script.events[4].action else { panic!("a packet") };
        assert_eq!((synack.ack, synack.win, synack.options.clone()), (Some(1), None, None), "no win, <...>: unchecked");
        let Action::Packet(data) = &script.events[5].action else { panic!("a packet") };
        assert_eq!((data.seq, data.len, data.flags.psh), (1, 1000, true));
        assert_eq!(data.options.as_ref().map(|o| o[2].clone()), Some(TcpOption::Sack(vec![(1, 2), (3, 4)])));
        let Action::Call(read) = &script.events[7].action else { panic!("a call") };
        assert_eq!(read.expected, CallResult::err(Errno::EAGAIN));
        assert!(matches!(&script.events[8].action, Action::Assert(a) if a.len() == 1));
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let at = |e: ScriptError| (e.line, e.column);
        // At the end of the script, errors point to the last token.
        let e = error_of("+0 > S 0:0(0) ack");
        assert_eq!(at(e.clone()), (2, 15));
        assert_eq!(e.kind, ErrorKind::Expected { expected: "an acknowledgment number".into(), found: "the end of the script".into() });
        let e = error_of("+0 > S 0:0(0 <mss 1>");
        assert_eq!((at(e.clone()), matches!(e.kind, ErrorKind::Expected { .. })), ((2, 14), true));
        assert!(matches!(error_of("+0 > Q 0:0(0)").kind, ErrorKind::Expected { .. }));
        let e = error_of("socket()");
        assert!(matches!(e.kind, ErrorKind::Expected { .. }), "an event needs a time: {e}");
        assert!(matches!(error_of("+0 $").kind, ErrorKind::UnexpectedCharacter('$')));
        assert!(matches!(error_of("+0 /* open").kind, ErrorKind::Unterminated(_)));
        assert!(matches!(error_of("+0 write(4, ..., 10)").kind, ErrorKind::Expected { .. }), "a call needs its result");
    }

    #[test]
    fn unsupported_parts_say_what_is_supported() {
        let cases = [
            ("+0 < udp (10)", 6),
            ("+0 < [ect0] S 0:0(0) win 1", 6),
            ("+0 < 1234>8080 S 0:0(0) win 1", 6),
            ("+0 < SE 0:0(0) win 1", 7),
            ("+0 < S 0:0(0) win 1 urg 3", 21),
            ("+0 < S 0:0(0) win 1 <md5 abc>", 22),
            ("+0 shutdown(3, SHUT_WR) = 0", 4),
            ("+0 setsockopt(3, SOL_TCP, TCP_NODELAY, [0], 4) = 0", 40),
            ("+0 setsockopt(3, SOL_TCP, TCP_MAXSEG, [1000], 4) = 0", 27),
            ("+0 getsockopt(3, SOL_TCP, TCP_INFO, {}, [4]) = 0", 37),
            ("+0 fcntl(3, F_GETFL) = 0x2", 13),
            ("+0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 4", 16),
            ("+0 ...0.1 read(4, ..., 10) = 10", 4),
            ("+0 `sysctl -q net.ipv4.tcp_sack=0`", 4),
            ("+0 %{ print(tcpi_rtt) }%", 7),
            ("+0 close(3) = -1 EWHATEVER", 18),
        ];
        for (line, column) in cases {
            let e = error_of(line);
            assert!(matches!(e.kind, ErrorKind::Unsupported { .. }), "{line}: {e}");
            assert_eq!((e.line, e.column), (2, column), "{line}: {e}");
            assert!(e.to_string().contains("supported: "), "{e}");
        }
        let e = parse("--tcp_sack=1\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3").expect_err("unknown option");
        assert!(matches!(e.kind, ErrorKind::Unsupported { .. }) && e.to_string().contains("--delayed_ack"), "{e}");
    }

    #[test]
    fn numbers_out_of_range() {
        let cases = [
            ("+0 < S 0:0(0) win 65536", 19, "a window"),
            ("+0 < S 0:0(0) win 1 <mss 65536>", 26, "an MSS"),
            ("+0 < S 4294967296:4294967296(0) win 1", 8, "a start sequence number"),
            ("+0 write(4, ..., -5) = 0", 18, "a byte count"),
            ("+0.0000000001 close(3) = 0", 2, "time"),
        ];
        for (line, column, what) in cases {
            let e = error_of(line);
            assert!(matches!(&e.kind, ErrorKind::OutOfRange { what: w, .. } if w == what), "{line}: {e}");
            assert_eq!((e.line, e.column), (2, column), "{line}: {e}");
        }
        let e = parse("--mss_bytes=50\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3").expect_err("too small");
        assert_eq!(e.to_string(), "line 1, column 13: --mss_bytes = 50: out of range; allowed: 100..=65000");
    }

    #[test]
    fn contradictions_are_invalid() {
        let cases = [
            ("+0 < . 1:1001(999) ack 1 win 1", 8),
            ("+0 < S 0:0(0) ack 1 win 1", 15),
            ("+0 < . 0:0(0) win 1", 15),
            ("+0 < . 0:0(0) ack 1", 19),
            ("+0 < S 0:0(0) win 1 <...>", 21),
            ("+0 < . 1:1(0) ack 1 win 1 <sack 1:2 3:4 5:6 7:8,TS val 1 ecr 2>", 27),
            ("+0.1~+0.2 close(3) = 0", 1),
            ("* < S 0:0(0) win 1", 1),
            ("0.2~0.1 > S 0:0(0)", 1),
            ("+0 close(3) = 0 EBADF", 17),
            ("+0 write(4, ...) = 0", 4),
        ];
        for (line, column) in cases {
            let e = error_of(line);
            assert!(matches!(e.kind, ErrorKind::Invalid(_)), "{line}: {e}");
            assert_eq!((e.line, e.column), (2, column), "{line}: {e}");
        }
        let e = parse("0.1 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3").expect_err("starts late");
        assert_eq!(e.to_string(), "line 1, column 1: the first event must be at time 0");
        let e = parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n0.5 listen(3, 1) = 0\n0.4 close(3) = 0").expect_err("backward");
        assert_eq!(e.to_string(), "line 3, column 1: time goes backward, to 0.400000 s after 0.500000 s");
        let e = parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n--sack=false").expect_err("late option");
        assert_eq!((e.line, e.column), (2, 1));
    }
}
