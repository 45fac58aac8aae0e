//! MP-TCP options in a packet: they ride as raw options of its `TcpOptions`, so `Packet` keeps
//! its size and segments without them take no new branch on the per-packet path.
//!
//! Option space: a data segment with timestamps (12 bytes with their NOPs) and the longest
//! DSS (28: 8-byte DATA_ACK, 8-byte mapping, checksum) fills the 40 bytes, leaving none for
//! SACK. RFC 8684 leaves the sharing to the sender (its Appendix A, "Notes on Use of TCP
//! Options", counts the budget); like Linux (`tcp_established_options` sizes the MP-TCP options first, SACK takes what is
//! left), the MP-TCP option wins and SACK blocks give way, latest first: RFC 2018 §4 puts the
//! block most worth reporting first.

use super::{MptcpError, MptcpOption, MPTCP_KIND};
use crate::tcp::{RawOptionError, RawOptions, TcpOptions, MAX_TCP_OPTION_BYTES};

impl TcpOptions {
    /// Appends `option` after the raw options already there, dropping SACK blocks from the
    /// end until the options fit in the 40 bytes on the wire and in the 32 a `TcpOptions`
    /// keeps. If it does not fit even without SACK blocks, nothing changes.
    pub fn push_mptcp(&mut self, option: &MptcpOption) -> Result<(), RawOptionError> {
        let encoded = option.encode();
        let mut raw = self.raw();
        raw.push(encoded.as_bytes())?;
        // Rebuilt from the raw options rather than edited, so dropped blocks leave no bytes
        // behind in the area and equal options compare equal.
        let base = *self;
        let with_raw = |raw: &RawOptions| TcpOptions { sack_count: 0, area: TcpOptions::from_raw(raw).area, ..base };
        let sack = base.sack();
        for keep in (0..=sack.len()).rev() {
            let mut with = with_raw(&raw);
            if with.set_sack(&sack[..keep]) && with.encoded_bytes() as usize <= MAX_TCP_OPTION_BYTES {
                *self = with;
                return Ok(());
            }
        }
        // The options other than SACK, with the raw ones unpadded: what is left of the 40.
        let old_raw = base.raw();
        let used = with_raw(&old_raw).encoded_bytes() - old_raw.encoded_bytes() + old_raw.as_bytes().len() as u32;
        let available = MAX_TCP_OPTION_BYTES.saturating_sub(used as usize);
        Err(RawOptionError::NoRoom { needed: encoded.as_bytes().len(), available })
    }

    /// The MP-TCP options among the raw ones, decoded, in wire order; an option this crate
    /// cannot read yields its error and the others still follow.
    pub fn mptcp_options(&self) -> MptcpOptions {
        MptcpOptions { raw: self.raw(), at: 0 }
    }
}

/// Iterator over the MP-TCP options of a `TcpOptions` (`TcpOptions::mptcp_options`).
pub struct MptcpOptions {
    raw: RawOptions,
    at: usize,
}

impl Iterator for MptcpOptions {
    type Item = Result<MptcpOption, MptcpError>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.raw.as_bytes();
        // Raw options are whole options (`RawOptions::push`): each length byte is at least 2
        // and within the bytes kept; `get` keeps that an assumption that cannot panic.
        while let Some(&length) = bytes.get(self.at + 1) {
            let option = bytes.get(self.at..self.at + (length as usize).max(2))?;
            self.at += option.len();
            if option[0] == MPTCP_KIND {
                return Some(MptcpOption::decode(option));
            }
        }
        None
    }
}
