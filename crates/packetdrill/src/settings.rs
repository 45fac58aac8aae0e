//! Option lines at the top of a script (`--name=value`, how packetdrill configures a run):
//! packetdrill's `--tolerance_usecs`, and the TCP keys of millinet's flows under their
//! scenario names (docs/scenario-reference.md) — what a Linux script sets with sysctls in a
//! shell command, which millinet does not run. The congestion control and the receive buffer
//! are the socket's (`--cc`, `setsockopt`), not options.

use millinet_transport::cc::{CubicVariant, HystartMode};
use millinet_transport::tcp::MSS_RANGE_BYTES;
use millinet_transport::{CwndGrowth, DelayedAck, LossDetection, NewRenoVariant, TcpConfig};

use crate::error::{ErrorKind, ScriptError};
use crate::lexer::{Pos, Tok};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// `--tolerance_usecs`: the timing tolerance, unless the command line gives one.
    pub tolerance_ns: Option<u64>,
    /// Applied to the endpoint's configuration in order.
    pub tcp: Vec<TcpSetting>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpSetting {
    MssBytes(u32),
    InitialWindowSegments(u32),
    Sack(bool),
    Timestamps(bool),
    WindowScaling(bool),
    DelayedAck(DelayedAck),
    MinRtoNs(u64),
    UndoSpuriousRto(bool),
    NewRenoVariant(NewRenoVariant),
    CwndGrowth(CwndGrowth),
    Hystart(HystartMode),
    CubicVariant(CubicVariant),
    Prr(bool),
    LossDetection(LossDetection),
}

impl TcpSetting {
    pub fn apply(self, cfg: &mut TcpConfig) {
        match self {
            TcpSetting::MssBytes(v) => cfg.mss_bytes = v,
            TcpSetting::InitialWindowSegments(v) => cfg.initial_window_segments = v,
            TcpSetting::Sack(v) => cfg.sack = v,
            TcpSetting::Timestamps(v) => cfg.timestamps = v,
            TcpSetting::WindowScaling(v) => cfg.window_scaling = v,
            TcpSetting::DelayedAck(v) => cfg.delayed_ack = v,
            TcpSetting::MinRtoNs(v) => cfg.min_rto_ns = v,
            TcpSetting::UndoSpuriousRto(v) => cfg.undo_spurious_rto = v,
            TcpSetting::NewRenoVariant(v) => cfg.newreno_variant = v,
            TcpSetting::CwndGrowth(v) => cfg.cwnd_growth = v,
            TcpSetting::Hystart(v) => cfg.hystart = v,
            TcpSetting::CubicVariant(v) => cfg.cubic = v,
            TcpSetting::Prr(v) => cfg.prr = v,
            TcpSetting::LossDetection(v) => cfg.loss_detection = v,
        }
    }
}

const SUPPORTED: &str = "--tolerance_usecs, --mss_bytes, --initial_window_segments, --sack, --timestamps, --window_scaling, \
                         --delayed_ack, --min_rto_s, --undo_spurious_rto, --newreno_variant, --cwnd_growth, --hystart, --cubic_variant, --prr, --loss_detection";
/// docs/scenario-reference.md's bounds of the keys the transport crate does not check itself.
const INITIAL_WINDOW_SEGMENTS: std::ops::RangeInclusive<i64> = 1..=1000;
const MIN_RTO_NS: std::ops::RangeInclusive<u64> = 1_000_000..=60_000_000_000;

fn error(pos: Pos, kind: ErrorKind) -> ScriptError {
    ScriptError::new(pos.line, pos.column, kind)
}

fn out_of_range(pos: Pos, name: &str, value: impl ToString, allowed: &str) -> ScriptError {
    error(pos, ErrorKind::OutOfRange { what: format!("--{name}"), value: value.to_string(), allowed: allowed.to_string() })
}

fn found(value: Option<&(Tok, Pos)>) -> String {
    value.map_or_else(|| "no value".to_string(), |(tok, _)| tok.describe())
}

fn integer(name: &str, pos: Pos, value: Option<&(Tok, Pos)>) -> Result<(i64, Pos), ScriptError> {
    match value {
        Some((Tok::Int(n), at)) => Ok((*n, *at)),
        other => {
            Err(error(other.map_or(pos, |(_, at)| *at), ErrorKind::Expected { expected: format!("--{name}=INTEGER"), found: found(other) }))
        }
    }
}

fn boolean(name: &str, pos: Pos, value: Option<&(Tok, Pos)>) -> Result<bool, ScriptError> {
    match value {
        Some((Tok::Word(w), _)) if w == "true" => Ok(true),
        Some((Tok::Word(w), _)) if w == "false" => Ok(false),
        other => Err(error(
            other.map_or(pos, |(_, at)| *at),
            ErrorKind::Expected { expected: format!("--{name}=true or false"), found: found(other) },
        )),
    }
}

/// A word or string among `choices`, returned as written.
fn choice<'a>(name: &str, pos: Pos, value: Option<&'a (Tok, Pos)>, choices: &str) -> Result<&'a str, ScriptError> {
    match value {
        Some((Tok::Word(w) | Tok::Str(w), _)) => Ok(w),
        other => Err(error(
            other.map_or(pos, |(_, at)| *at),
            ErrorKind::Expected { expected: format!("--{name}={choices}"), found: found(other) },
        )),
    }
}

impl Settings {
    /// Adds the option `--name[=value]` written at `pos`.
    pub(crate) fn add(&mut self, name: &str, pos: Pos, value: Option<&(Tok, Pos)>) -> Result<(), ScriptError> {
        let setting = match name {
            "tolerance_usecs" => {
                let (us, at) = integer(name, pos, value)?;
                let us = u64::try_from(us).map_err(|_| out_of_range(at, name, us, "0 or more microseconds"))?;
                self.tolerance_ns = Some(us.saturating_mul(1000));
                return Ok(());
            }
            "mss_bytes" => {
                let (v, at) = integer(name, pos, value)?;
                let allowed = format!("{}..={}", MSS_RANGE_BYTES.start(), MSS_RANGE_BYTES.end());
                let v = u32::try_from(v).ok().filter(|v| MSS_RANGE_BYTES.contains(v)).ok_or_else(|| out_of_range(at, name, v, &allowed))?;
                TcpSetting::MssBytes(v)
            }
            "initial_window_segments" => {
                let (v, at) = integer(name, pos, value)?;
                if !INITIAL_WINDOW_SEGMENTS.contains(&v) {
                    return Err(out_of_range(at, name, v, "1..=1000"));
                }
                TcpSetting::InitialWindowSegments(v as u32)
            }
            "sack" => TcpSetting::Sack(boolean(name, pos, value)?),
            "timestamps" => TcpSetting::Timestamps(boolean(name, pos, value)?),
            "window_scaling" => TcpSetting::WindowScaling(boolean(name, pos, value)?),
            // The scenario key's values, its booleans included (false = off, true = rfc5681).
            "delayed_ack" => match choice(name, pos, value, "\"linux\", \"rfc5681\" or \"off\"")? {
                "linux" => TcpSetting::DelayedAck(DelayedAck::Linux),
                "rfc5681" | "true" => TcpSetting::DelayedAck(DelayedAck::Rfc5681),
                "off" | "false" => TcpSetting::DelayedAck(DelayedAck::Off),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"linux\", \"rfc5681\", \"off\"")),
            },
            "undo_spurious_rto" => TcpSetting::UndoSpuriousRto(boolean(name, pos, value)?),
            "min_rto_s" => {
                let Some((tok, at)) = value else {
                    return Err(error(pos, ErrorKind::Expected { expected: "--min_rto_s=SECONDS".into(), found: found(value) }));
                };
                let ns = tok
                    .seconds_ns()
                    .filter(|ns| MIN_RTO_NS.contains(ns))
                    .ok_or_else(|| out_of_range(*at, name, tok.describe(), "0.001..=60 s"))?;
                TcpSetting::MinRtoNs(ns)
            }
            "newreno_variant" => match choice(name, pos, value, "\"impatient\" or \"slow-but-steady\"")? {
                "impatient" => TcpSetting::NewRenoVariant(NewRenoVariant::Impatient),
                "slow-but-steady" => TcpSetting::NewRenoVariant(NewRenoVariant::SlowButSteady),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"impatient\", \"slow-but-steady\"")),
            },
            "cwnd_growth" => match choice(name, pos, value, "\"cwnd-limited\" or \"always\"")? {
                "cwnd-limited" => TcpSetting::CwndGrowth(CwndGrowth::WhenCwndLimited),
                "always" => TcpSetting::CwndGrowth(CwndGrowth::Always),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"cwnd-limited\", \"always\"")),
            },
            "hystart" => match choice(name, pos, value, "\"off\", \"linux\" or \"rfc9406\"")? {
                "off" => TcpSetting::Hystart(HystartMode::Off),
                "linux" => TcpSetting::Hystart(HystartMode::Linux),
                "rfc9406" => TcpSetting::Hystart(HystartMode::Rfc9406),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"off\", \"linux\", \"rfc9406\"")),
            },
            "cubic_variant" => match choice(name, pos, value, "\"linux\" or \"rfc9438\"")? {
                "linux" => TcpSetting::CubicVariant(CubicVariant::Linux),
                "rfc9438" => TcpSetting::CubicVariant(CubicVariant::Rfc9438),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"linux\", \"rfc9438\"")),
            },
            "prr" => TcpSetting::Prr(boolean(name, pos, value)?),
            "loss_detection" => match choice(name, pos, value, "\"rack-tlp\" or \"rfc6675\"")? {
                "rack-tlp" => TcpSetting::LossDetection(LossDetection::RackTlp),
                "rfc6675" => TcpSetting::LossDetection(LossDetection::Rfc6675),
                other => return Err(out_of_range(value.map_or(pos, |(_, at)| *at), name, other, "\"rack-tlp\", \"rfc6675\"")),
            },
            other => {
                return Err(error(pos, ErrorKind::Unsupported { what: format!("the option --{other}"), supported: SUPPORTED.to_string() }))
            }
        };
        self.tcp.push(setting);
        Ok(())
    }
}
