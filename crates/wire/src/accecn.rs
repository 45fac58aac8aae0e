//! The Accurate ECN option (RFC 9768 §3.2.3): the receiver's byte counters of ECT(0), CE and
//! ECT(1) payload, each the low 24 bits of the count. It rides as a raw option of its
//! `TcpOptions` (as MP-TCP's do), so `Packet` keeps its size and segments without it take no
//! new branch.
//!
//! Two kinds give two field orders (RFC 9768 §3.2.3.1): AccECN0 (kind 172) EE0B, ECEB, EE1B;
//! AccECN1 (kind 174) EE1B, ECEB, EE0B. A sender may leave trailing fields out to save space
//! (lengths 2, 5, 8 or 11). Both are read; this crate writes AccECN0, as Linux does unless its
//! ECT(1) counter is the one that changed.

use crate::tcp::{RawOptionError, TcpOptions, MAX_TCP_OPTION_BYTES};

/// AccECN0: fields in the order EE0B, ECEB, EE1B.
pub const ACCECN0_KIND: u8 = 172;
/// AccECN1: fields in the order EE1B, ECEB, EE0B.
pub const ACCECN1_KIND: u8 = 174;
/// Each counter field holds the low 24 bits of its byte count.
pub const FIELD_MODULUS: u32 = 1 << 24;

/// The counters one option carries; a field left out is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnOption {
    /// Payload bytes received in ECT(0) packets, mod 2^24 (EE0B).
    pub e0b: Option<u32>,
    /// Payload bytes received CE-marked, mod 2^24 (ECEB).
    pub ceb: Option<u32>,
    /// Payload bytes received in ECT(1) packets, mod 2^24 (EE1B).
    pub e1b: Option<u32>,
}

impl AccEcnOption {
    /// Decodes one option's kind and data (after kind and length); None if it is not an
    /// AccECN option or its length is not 2, 5, 8 or 11 (RFC 9768 §3.2.3.1).
    pub fn decode(kind: u8, data: &[u8]) -> Option<AccEcnOption> {
        if !matches!(kind, ACCECN0_KIND | ACCECN1_KIND) || data.len() % 3 != 0 || data.len() > 9 {
            return None;
        }
        let field = |i: usize| data.get(3 * i..3 * i + 3).map(|b| u32::from_be_bytes([0, b[0], b[1], b[2]]));
        let (first, second, third) = (field(0), field(1), field(2));
        Some(match kind {
            ACCECN0_KIND => AccEcnOption { e0b: first, ceb: second, e1b: third },
            _ => AccEcnOption { e1b: first, ceb: second, e0b: third },
        })
    }

    /// The AccECN0 encoding with its first `fields` fields (0..=3): kind, length, data.
    fn encode(&self, fields: usize) -> ([u8; 11], usize) {
        let mut bytes = [0u8; 11];
        let len = 2 + 3 * fields;
        bytes[0] = ACCECN0_KIND;
        bytes[1] = len as u8;
        for (i, value) in [self.e0b, self.ceb, self.e1b].into_iter().take(fields).enumerate() {
            let value = value.unwrap_or(0) % FIELD_MODULUS;
            bytes[2 + 3 * i..5 + 3 * i].copy_from_slice(&value.to_be_bytes()[1..]);
        }
        (bytes, len)
    }
}

impl TcpOptions {
    /// The AccECN option among the raw ones, if any (the first, if a segment has two).
    pub fn accecn(&self) -> Option<AccEcnOption> {
        let raw = self.raw();
        let mut bytes = raw.as_bytes();
        while let [kind, len, ..] = *bytes {
            let len = (len as usize).clamp(2, bytes.len());
            if let Some(option) = AccEcnOption::decode(kind, &bytes[2..len]) {
                return Some(option);
            }
            bytes = &bytes[len..];
        }
        None
    }

    /// Appends `option` with as many of its fields as fit beside the other options in the 40
    /// bytes on the wire (RFC 9768 §3.2.3.3 lets a sender shorten it). When not even its first
    /// `required_fields` fit, SACK blocks give way, the latest-listed first and never below
    /// two, as Linux's `tcp_options_fit_accecn` does (SACK blocks fill the space exactly when
    /// losses make the counters matter). Returns the number of fields written, or an error if
    /// the required ones do not fit even so (nothing is changed then).
    pub fn push_accecn(&mut self, option: &AccEcnOption, required_fields: usize) -> Result<usize, RawOptionError> {
        let fields = [option.e0b, option.ceb, option.e1b].iter().take_while(|f| f.is_some()).count();
        let required_fields = required_fields.min(fields);
        let blocks = self.sack().len();
        let fewest = if required_fields > 0 { blocks.min(2) } else { blocks };
        for keep in (fewest..=blocks).rev() {
            let mut base = *self;
            base.sack_count = keep as u8;
            for n in (required_fields..=fields).rev() {
                let (bytes, len) = option.encode(n);
                let mut with = base;
                if with.push_raw(&bytes[..len]).is_ok() && with.encoded_bytes() as usize <= MAX_TCP_OPTION_BYTES {
                    *self = with;
                    return Ok(n);
                }
            }
        }
        let available = MAX_TCP_OPTION_BYTES.saturating_sub(self.encoded_bytes() as usize);
        Err(RawOptionError::NoRoom { needed: 2 + 3 * required_fields, available })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SackBlock, Timestamps};

    #[test]
    fn both_orders_decode_to_the_same_counters() {
        let order0 = [0, 0, 1, 0, 0, 2, 0, 0, 3];
        let order1 = [0, 0, 3, 0, 0, 2, 0, 0, 1];
        let expected = AccEcnOption { e0b: Some(1), ceb: Some(2), e1b: Some(3) };
        assert_eq!(AccEcnOption::decode(ACCECN0_KIND, &order0), Some(expected));
        assert_eq!(AccEcnOption::decode(ACCECN1_KIND, &order1), Some(expected));
        // A shortened option has only the leading fields.
        assert_eq!(AccEcnOption::decode(ACCECN0_KIND, &order0[..3]), Some(AccEcnOption { e0b: Some(1), ..Default::default() }));
        // Lengths other than 2, 5, 8, 11, and other kinds, are not AccECN options.
        assert_eq!(AccEcnOption::decode(ACCECN0_KIND, &order0[..4]), None);
        assert_eq!(AccEcnOption::decode(30, &order0), None);
    }

    #[test]
    fn counters_are_kept_modulo_2_to_the_24() {
        let option = AccEcnOption { e0b: Some(FIELD_MODULUS + 5), ceb: Some(7), e1b: Some(9) };
        let mut options = TcpOptions::default();
        assert_eq!(options.push_accecn(&option, 3), Ok(3));
        assert_eq!(options.accecn(), Some(AccEcnOption { e0b: Some(5), ..option }));
    }

    #[test]
    fn the_option_shortens_to_what_the_sack_blocks_leave() {
        let option = AccEcnOption { e0b: Some(1), ceb: Some(2), e1b: Some(3) };
        let mut options = TcpOptions { timestamps: Some(Timestamps::default()), ..TcpOptions::default() };
        // Timestamps (12 bytes with their NOPs) and two SACK blocks (20): 8 bytes left, room
        // for an option of 2 fields.
        assert!(options.push_sack(SackBlock { left: 1, right: 2 }));
        assert!(options.push_sack(SackBlock { left: 3, right: 4 }));
        assert_eq!(options.push_accecn(&option, 0), Ok(2));
        assert_eq!(options.accecn(), Some(AccEcnOption { e1b: None, ..option }));
        assert_eq!(options.sack().len(), 2);
        assert!(options.encoded_bytes() as usize <= MAX_TCP_OPTION_BYTES);
    }

    /// Linux's compromise: a third SACK block gives way to the CE byte counter, two never do.
    #[test]
    fn sack_blocks_give_way_to_the_required_fields_down_to_two() {
        let option = AccEcnOption { e0b: Some(1), ceb: Some(2), e1b: Some(3) };
        let three = [SackBlock { left: 1, right: 2 }, SackBlock { left: 3, right: 4 }, SackBlock { left: 5, right: 6 }];
        let mut options = TcpOptions { timestamps: Some(Timestamps::default()), ..TcpOptions::default() };
        assert!(options.set_sack(&three));
        // Timestamps and three blocks leave no room for the option, even empty: blocks go
        // only for required fields.
        let mut without = options;
        assert!(without.push_accecn(&option, 0).is_err());
        assert_eq!(without, options);
        assert_eq!(options.push_accecn(&option, 2), Ok(2));
        assert_eq!(options.sack(), &three[..2]);
        assert_eq!(options.accecn().and_then(|o| o.ceb), Some(2));
        // With two blocks left, all three fields are still refused: none go below two.
        let mut two = TcpOptions { timestamps: Some(Timestamps::default()), ..TcpOptions::default() };
        assert!(two.set_sack(&three[..2]));
        assert_eq!(two.push_accecn(&option, 3), Err(RawOptionError::NoRoom { needed: 11, available: 8 }));
        assert_eq!(two.sack().len(), 2);
    }
}
