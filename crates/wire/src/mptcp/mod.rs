//! MP-TCP options (TCP option kind 30, RFC 8684 §3): typed values and their wire bytes.
//!
//! Every MP-TCP option starts with kind, length and a 4-bit subtype (RFC 8684 §3, Figure 3).
//! Within a subtype the length alone tells the forms apart (the SYN and SYN/ACK forms of
//! MP_JOIN, a DSS with or without checksum, ...), so decoding needs only the option's bytes,
//! not the segment's TCP flags. `MptcpOption::decode` reads one option, `encode` writes it
//! back; `attach` carries them in a packet's `TcpOptions` as raw options.
//!
//! Reserved and unassigned bits are written as zero and not read, so an option decodes to the
//! same value whatever they hold. Only version 1 (RFC 8684) is read: version 0 (RFC 6824) has
//! other MP_CAPABLE lengths and key rules.
//!
//! Sizes in bytes, kind and length included (docs/models/mptcp.md lists them against the 40
//! bytes of TCP option space):
//!
//! | option | forms |
//! |---|---|
//! | MP_CAPABLE | SYN 4, SYN/ACK 12, third ACK 20, first data 22 (+2 checksum) |
//! | MP_JOIN | SYN 12, SYN/ACK 16, third ACK 24 |
//! | DSS | 4 + DATA_ACK 4/8 + mapping (DSN 4/8 + 4 + 2, +2 checksum): 4 to 28 |
//! | ADD_ADDR (IPv4) | echo 8, with truncated HMAC 16; +2 with a port |
//! | REMOVE_ADDR | 3 + one byte per address ID |
//! | MP_PRIO 3, MP_FAIL 12, MP_FASTCLOSE 12, MP_TCPRST 4 | |

mod address;
mod attach;
mod close;
mod dss;
mod handshake;

use crate::tcp::MAX_TCP_OPTION_BYTES;

pub use address::{AddAddr, MpPrio, RemoveAddr, MAX_REMOVE_ADDR_IDS};
pub use attach::MptcpOptions;
pub use close::{MpFail, MpFastclose, MpTcpRst};
pub use dss::{DataSeq, Dss, DssMapping};
pub use handshake::{CapableFlags, CapableForm, MpCapable, MpJoin};

/// TCP option kind of every MP-TCP option (RFC 8684 §8).
pub const MPTCP_KIND: u8 = 30;
/// The only MP-TCP version read and written (RFC 8684 §3.1).
pub const MPTCP_VERSION: u8 = 1;
/// Kind, length and the byte holding the subtype: the least any option has.
const HEADER_BYTES: usize = 3;

/// MP-TCP option subtypes (RFC 8684 §8, Table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subtype {
    MpCapable = 0x0,
    MpJoin = 0x1,
    Dss = 0x2,
    AddAddr = 0x3,
    RemoveAddr = 0x4,
    MpPrio = 0x5,
    MpFail = 0x6,
    MpFastclose = 0x7,
    MpTcpRst = 0x8,
}

impl std::fmt::Display for Subtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Subtype::MpCapable => "MP_CAPABLE",
            Subtype::MpJoin => "MP_JOIN",
            Subtype::Dss => "DSS",
            Subtype::AddAddr => "ADD_ADDR",
            Subtype::RemoveAddr => "REMOVE_ADDR",
            Subtype::MpPrio => "MP_PRIO",
            Subtype::MpFail => "MP_FAIL",
            Subtype::MpFastclose => "MP_FASTCLOSE",
            Subtype::MpTcpRst => "MP_TCPRST",
        })
    }
}

/// One MP-TCP option, by subtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpOption {
    MpCapable(MpCapable),
    MpJoin(MpJoin),
    Dss(Dss),
    AddAddr(AddAddr),
    RemoveAddr(RemoveAddr),
    MpPrio(MpPrio),
    MpFail(MpFail),
    MpFastclose(MpFastclose),
    MpTcpRst(MpTcpRst),
}

/// Why bytes are not one MP-TCP option this crate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpError {
    /// Fewer bytes than kind, length and subtype, or than the length byte counts.
    Truncated { needed: usize, available: usize },
    /// More bytes than the length byte counts: not one option.
    TrailingBytes { length: u8, bytes: usize },
    /// Not option kind 30.
    NotMptcp { kind: u8 },
    /// A subtype RFC 8684 does not define (0x9–0xe unassigned, 0xf private experiments).
    UnknownSubtype { subtype: u8 },
    /// A length no form of the subtype has (for DSS: not the one its flags give).
    BadLength { subtype: Subtype, length: u8 },
    /// MP_CAPABLE of another version than 1.
    UnsupportedVersion { version: u8 },
    /// DSS with the DATA_FIN flag (F) but no mapping (M): the DATA_FIN takes one octet of the
    /// data sequence space, which only a mapping gives it (RFC 8684 §3.3.3).
    DataFinWithoutMapping,
    /// ADD_ADDR of an IPv6 address (lengths 20, 22, 28, 30): packets here are IPv4 only.
    Ipv6Address { length: u8 },
}

impl std::fmt::Display for MptcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            MptcpError::Truncated { needed, available } => {
                write!(f, "MP-TCP option truncated: {needed} bytes needed, {available} present")
            }
            MptcpError::TrailingBytes { length, bytes } => {
                write!(f, "{bytes} bytes given for an MP-TCP option of length {length}")
            }
            MptcpError::NotMptcp { kind } => write!(f, "TCP option kind {kind}, MP-TCP is {MPTCP_KIND}"),
            MptcpError::UnknownSubtype { subtype } => write!(f, "unknown MP-TCP subtype {subtype:#x}"),
            MptcpError::BadLength { subtype, length } => write!(f, "{subtype} option of invalid length {length}"),
            MptcpError::UnsupportedVersion { version } => {
                write!(f, "MP_CAPABLE version {version}, only version {MPTCP_VERSION} is supported")
            }
            MptcpError::DataFinWithoutMapping => f.write_str("DSS with DATA_FIN but without a data sequence mapping"),
            MptcpError::Ipv6Address { length } => {
                write!(f, "ADD_ADDR of length {length} carries an IPv6 address, only IPv4 is supported")
            }
        }
    }
}

impl std::error::Error for MptcpError {}

impl MptcpOption {
    /// Reads one whole option: `option` is kind, length and data, and its length byte must
    /// count exactly the bytes given. Any input gives a value or an error, never a panic.
    pub fn decode(option: &[u8]) -> Result<MptcpOption, MptcpError> {
        if option.len() < HEADER_BYTES {
            return Err(MptcpError::Truncated { needed: HEADER_BYTES, available: option.len() });
        }
        if option[0] != MPTCP_KIND {
            return Err(MptcpError::NotMptcp { kind: option[0] });
        }
        let length = option[1];
        if (length as usize) > option.len() {
            return Err(MptcpError::Truncated { needed: length as usize, available: option.len() });
        }
        if (length as usize) < option.len() {
            return Err(MptcpError::TrailingBytes { length, bytes: option.len() });
        }
        Ok(match option[2] >> 4 {
            0x0 => MptcpOption::MpCapable(MpCapable::decode(option)?),
            0x1 => MptcpOption::MpJoin(MpJoin::decode(option)?),
            0x2 => MptcpOption::Dss(Dss::decode(option)?),
            0x3 => MptcpOption::AddAddr(AddAddr::decode(option)?),
            0x4 => MptcpOption::RemoveAddr(RemoveAddr::decode(option)?),
            0x5 => MptcpOption::MpPrio(MpPrio::decode(option)?),
            0x6 => MptcpOption::MpFail(MpFail::decode(option)?),
            0x7 => MptcpOption::MpFastclose(MpFastclose::decode(option)?),
            0x8 => MptcpOption::MpTcpRst(MpTcpRst::decode(option)?),
            subtype => return Err(MptcpError::UnknownSubtype { subtype }),
        })
    }

    /// The option's bytes: kind, length, data, without padding.
    pub fn encode(&self) -> OptionBytes {
        match self {
            MptcpOption::MpCapable(o) => o.encode(),
            MptcpOption::MpJoin(o) => o.encode(),
            MptcpOption::Dss(o) => o.encode(),
            MptcpOption::AddAddr(o) => o.encode(),
            MptcpOption::RemoveAddr(o) => o.encode(),
            MptcpOption::MpPrio(o) => o.encode(),
            MptcpOption::MpFail(o) => o.encode(),
            MptcpOption::MpFastclose(o) => o.encode(),
            MptcpOption::MpTcpRst(o) => o.encode(),
        }
    }
}

/// An encoded option: at most the whole TCP option space, kept by value so that encoding
/// allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OptionBytes {
    len: u8,
    bytes: [u8; MAX_TCP_OPTION_BYTES],
}

impl std::fmt::Debug for OptionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OptionBytes").field(&self.as_bytes()).finish()
    }
}

impl OptionBytes {
    /// Kind, length and the subtype byte: the subtype in the high nibble, `low_bits` (a version
    /// or flags) in the low one.
    fn start(subtype: Subtype, low_bits: u8) -> OptionBytes {
        let mut o = OptionBytes { len: 0, bytes: [0; MAX_TCP_OPTION_BYTES] };
        o.put(&[MPTCP_KIND, 0, (subtype as u8) << 4 | (low_bits & 0x0f)]);
        o
    }

    /// Appends `data` and keeps the length byte equal to the bytes written. Callers write at
    /// most 40 bytes: every subtype's longest form fits the TCP option space.
    fn put(&mut self, data: &[u8]) -> &mut OptionBytes {
        let at = self.len as usize;
        self.bytes[at..at + data.len()].copy_from_slice(data);
        self.len += data.len() as u8;
        self.bytes[1] = self.len;
        self
    }

    /// Kind, length and data, as on the wire.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// The length error of `subtype`, for a decoder whose length matched no form.
fn bad_length(subtype: Subtype, option: &[u8]) -> MptcpError {
    MptcpError::BadLength { subtype, length: option.len() as u8 }
}

/// Reads big-endian fields of an option whose length its decoder has already checked, so
/// every read is in bounds.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `option` from byte `at` on.
    fn new(option: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes: option, at }
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        out
    }

    fn u8(&mut self) -> u8 {
        u8::from_be_bytes(self.array())
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.array())
    }

    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.array())
    }
}
