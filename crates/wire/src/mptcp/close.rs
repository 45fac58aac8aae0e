//! Abrupt ends: MP_FASTCLOSE (RFC 8684 §3.5), MP_TCPRST (§3.6) and MP_FAIL (§3.7).

use super::{bad_length, MptcpError, OptionBytes, Reader, Subtype};

/// Kind, length and the 16 bits of subtype and reserved, before a 64-bit field.
const RESERVED_HEADER_BYTES: usize = 4;
/// That header and one 64-bit field: the length of MP_FASTCLOSE and of MP_FAIL.
const ONE_U64_BYTES: usize = RESERVED_HEADER_BYTES + 8;

/// Decodes the options made of a reserved header and one 64-bit field.
fn decode_u64(option: &[u8], subtype: Subtype) -> Result<u64, MptcpError> {
    if option.len() != ONE_U64_BYTES {
        return Err(bad_length(subtype, option));
    }
    Ok(Reader::new(option, RESERVED_HEADER_BYTES).u64())
}

fn encode_u64(subtype: Subtype, value: u64) -> OptionBytes {
    let mut o = OptionBytes::start(subtype, 0);
    o.put(&[0]).put(&value.to_be_bytes());
    o
}

/// MP_FASTCLOSE (§3.5, Figure 14): closes the whole connection at once, authenticated by the
/// key the receiver gave in MP_CAPABLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpFastclose {
    pub receiver_key: u64,
}

impl MpFastclose {
    pub(super) fn decode(option: &[u8]) -> Result<MpFastclose, MptcpError> {
        Ok(MpFastclose { receiver_key: decode_u64(option, Subtype::MpFastclose)? })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        encode_u64(Subtype::MpFastclose, self.receiver_key)
    }
}

/// MP_FAIL (§3.7, Figure 16): data failed the DSS checksum and the connection falls back to
/// plain TCP; carries the full 64-bit data sequence number of that data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpFail {
    pub data_sequence_number: u64,
}

impl MpFail {
    pub(super) fn decode(option: &[u8]) -> Result<MpFail, MptcpError> {
        Ok(MpFail { data_sequence_number: decode_u64(option, Subtype::MpFail)? })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        encode_u64(Subtype::MpFail, self.data_sequence_number)
    }
}

/// MP_TCPRST (§3.6, Figure 15): on a RST, why the subflow is closed. Flags U, V and W are
/// unassigned and not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpTcpRst {
    /// T: the condition is transient, the subflow may be tried again.
    pub transient: bool,
    /// The reason code of §3.6: 0 unspecified, 1 MP-TCP-specific error, 2 lack of resources,
    /// 3 administratively prohibited, 4 too much outstanding data, 5 unacceptable performance,
    /// 6 middlebox interference; others as IANA assigns them.
    pub reason: u8,
}

/// The T flag: the low bit of the subtype octet.
const TCPRST_TRANSIENT: u8 = 0x01;
const TCPRST_BYTES: usize = 4;

impl MpTcpRst {
    pub(super) fn decode(option: &[u8]) -> Result<MpTcpRst, MptcpError> {
        if option.len() != TCPRST_BYTES {
            return Err(bad_length(Subtype::MpTcpRst, option));
        }
        Ok(MpTcpRst { transient: option[2] & TCPRST_TRANSIENT != 0, reason: option[3] })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let mut o = OptionBytes::start(Subtype::MpTcpRst, if self.transient { TCPRST_TRANSIENT } else { 0 });
        o.put(&[self.reason]);
        o
    }
}
