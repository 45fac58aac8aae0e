//! Packets and times written as packetdrill writes them, for failure messages: an expected
//! packet as the script gives it, an actual one in the script's sequence space.

use std::fmt;

use crate::script::{Direction, Flags, PacketSpec, TcpOption};

/// Nanoseconds as seconds with six decimals, packetdrill's format.
pub(crate) fn seconds(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters = [(self.fin, 'F'), (self.syn, 'S'), (self.rst, 'R'), (self.psh, 'P'), (self.ack, '.')];
        let mut any = false;
        for (set, letter) in letters {
            if set {
                write!(f, "{letter}")?;
                any = true;
            }
        }
        if !any {
            f.write_str("-")?;
        }
        Ok(())
    }
}

impl fmt::Display for TcpOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpOption::Nop => f.write_str("nop"),
            TcpOption::Eol => f.write_str("eol"),
            TcpOption::Mss(mss) => write!(f, "mss {mss}"),
            TcpOption::WindowScale(shift) => write!(f, "wscale {shift}"),
            TcpOption::SackPermitted => f.write_str("sackOK"),
            TcpOption::Timestamp { val, ecr } => write!(f, "TS val {val} ecr {ecr}"),
            TcpOption::Sack(blocks) => {
                f.write_str("sack")?;
                for (left, right) in blocks {
                    write!(f, " {left}:{right}")?;
                }
                Ok(())
            }
            TcpOption::Other { kind } => write!(f, "option kind {kind}"),
        }
    }
}

/// `<mss 1000,sackOK,...>`, `<...>` for unchecked options, nothing for none.
pub(crate) struct OptionList<'a>(pub &'a Option<Vec<TcpOption>>);

impl fmt::Display for OptionList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("<...>"),
            Some(options) if options.is_empty() => Ok(()),
            Some(options) => {
                f.write_str("<")?;
                for (i, option) in options.iter().enumerate() {
                    write!(f, "{}{option}", if i == 0 { "" } else { "," })?;
                }
                f.write_str(">")
            }
        }
    }
}

impl fmt::Display for PacketSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arrow = if self.direction == Direction::Inbound { '<' } else { '>' };
        write!(f, "{arrow} {} {}:{}({})", self.flags, self.seq, self.seq.wrapping_add(self.len), self.len)?;
        if let Some(ack) = self.ack {
            write!(f, " ack {ack}")?;
        }
        if let Some(win) = self.win {
            write!(f, " win {win}")?;
        }
        let options = OptionList(&self.options).to_string();
        if !options.is_empty() {
            write!(f, " {options}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_read_as_in_a_script() {
        let spec = PacketSpec {
            direction: Direction::Outbound,
            flags: Flags { syn: true, ack: true, ..Flags::default() },
            seq: 0,
            len: 0,
            ack: Some(1),
            win: Some(65535),
            options: Some(vec![
                TcpOption::Mss(1400),
                TcpOption::SackPermitted,
                TcpOption::Timestamp { val: 100, ecr: 7 },
                TcpOption::Nop,
                TcpOption::WindowScale(7),
            ]),
        };
        assert_eq!(spec.to_string(), "> S. 0:0(0) ack 1 win 65535 <mss 1400,sackOK,TS val 100 ecr 7,nop,wscale 7>");
        let probe =
            PacketSpec { direction: Direction::Inbound, flags: Flags::default(), seq: 5, len: 10, ack: None, win: None, options: None };
        assert_eq!(probe.to_string(), "< - 5:15(10) <...>");
        assert_eq!(seconds(1_234_567_891), "1.234567");
    }
}
