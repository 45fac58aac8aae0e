//! Checking a packet the endpoint sent against the `>` line that expects it, field by field,
//! as packetdrill does: flags, sequence number, payload length, acknowledgment number, window
//! (when the line gives one) and options in wire order (unless `<...>`). Differences from
//! packetdrill's defaults: PSH is not compared (millinet never sets it, see
//! docs/validation.md, "packetdrill scripts"), the TS val is checked against the script within
//! the timing tolerance (millinet's TS clock is exact), and the TS ecr is checked exactly.

use crate::render::OptionList;
use crate::script::{PacketSpec, TcpOption};

/// The first field that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub field: &'static str,
    pub expected: String,
    pub actual: String,
}

fn differ(field: &'static str, expected: impl ToString, actual: impl ToString) -> Option<Mismatch> {
    Some(Mismatch { field, expected: expected.to_string(), actual: actual.to_string() })
}

/// `actual` (in script numbers) against `expected`; TS vals may differ by `ts_tolerance`
/// ticks of 1 ms.
pub(crate) fn compare(expected: &PacketSpec, actual: &PacketSpec, ts_tolerance: u32) -> Option<Mismatch> {
    let (e, a) = (expected.flags, actual.flags);
    if (e.syn, e.ack, e.fin, e.rst) != (a.syn, a.ack, a.fin, a.rst) {
        return differ("flags", e, a);
    }
    if expected.seq != actual.seq {
        return differ("seq", expected.seq, actual.seq);
    }
    if expected.len != actual.len {
        return differ("payload length", expected.len, actual.len);
    }
    if expected.ack != actual.ack {
        return differ("ack", expected.ack.unwrap_or(0), actual.ack.unwrap_or(0));
    }
    if let Some(win) = expected.win.filter(|&w| Some(w) != actual.win) {
        return differ("win", win, actual.win.unwrap_or(0));
    }
    let (Some(want), Some(got)) = (&expected.options, &actual.options) else { return None };
    let whole_lists = || differ("options", OptionList(&expected.options), OptionList(&actual.options));
    if want.len() != got.len() {
        return whole_lists();
    }
    for (w, g) in want.iter().zip(got) {
        match (w, g) {
            (TcpOption::Timestamp { val: wv, ecr: we }, TcpOption::Timestamp { val: gv, ecr: ge }) => {
                if (wv.wrapping_sub(*gv) as i32).unsigned_abs() > ts_tolerance {
                    return differ("TS val", wv, gv);
                }
                if we != ge {
                    return differ("TS ecr", we, ge);
                }
            }
            _ if w != g => return whole_lists(),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{Direction, Flags};

    fn packet(seq: u32, options: Vec<TcpOption>) -> PacketSpec {
        PacketSpec {
            direction: Direction::Outbound,
            flags: Flags { ack: true, ..Flags::default() },
            seq,
            len: 1000,
            ack: Some(1),
            win: Some(100),
            options: Some(options),
        }
    }

    #[test]
    fn the_first_differing_field_is_named() {
        let ts = |val, ecr| vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val, ecr }];
        let actual = packet(1001, ts(300, 7));
        assert_eq!(compare(&packet(1001, ts(300, 7)), &actual, 4), None);
        assert_eq!(compare(&packet(1001, ts(304, 7)), &actual, 4), None, "within the tolerance");
        assert_eq!(compare(&packet(1001, ts(305, 7)), &actual, 4).map(|m| m.field), Some("TS val"));
        assert_eq!(compare(&packet(1001, ts(300, 8)), &actual, 4).map(|m| m.field), Some("TS ecr"));
        assert_eq!(compare(&packet(1, ts(300, 7)), &actual, 4), differ("seq", 1, 1001));
        let unchecked = PacketSpec { win: None, options: None, ..packet(1001, vec![]) };
        assert_eq!(compare(&unchecked, &PacketSpec { win: Some(7), ..actual.clone() }, 4), None, "no win, <...>: not checked");
        let pushed = PacketSpec { flags: Flags { psh: true, ack: true, ..Flags::default() }, ..packet(1001, ts(300, 7)) };
        assert_eq!(compare(&pushed, &actual, 4), None, "PSH is not compared");
        let wrong = compare(&packet(1001, vec![TcpOption::Nop]), &actual, 4).expect("differs");
        assert_eq!((wrong.field, wrong.expected.as_str(), wrong.actual.as_str()), ("options", "<nop>", "<nop,nop,TS val 300 ecr 7>"));
    }
}
