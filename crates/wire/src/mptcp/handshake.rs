//! The options of the handshakes: MP_CAPABLE starts a connection on its first subflow
//! (RFC 8684 §3.1), MP_JOIN adds a subflow to it (§3.2).

use super::{bad_length, MptcpError, OptionBytes, Reader, Subtype, HEADER_BYTES, MPTCP_VERSION};

/// The flags octet of MP_CAPABLE, bits A (most significant) to H (RFC 8684 §3.1, Figure 4).
/// D to G are unassigned crypto-algorithm bits, kept as received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapableFlags(pub u8);

impl CapableFlags {
    /// A, "checksum required": the sender wants DSS checksums (§3.3).
    pub const A: CapableFlags = CapableFlags(0x80);
    /// B, extensibility: reserved for a future crypto handshake, zero in version 1.
    pub const B: CapableFlags = CapableFlags(0x40);
    /// C: the sender accepts no further subflows to the source address and port of this one.
    pub const C: CapableFlags = CapableFlags(0x20);
    /// H: HMAC-SHA256, the only algorithm defined.
    pub const H: CapableFlags = CapableFlags(0x01);

    pub fn contains(self, other: CapableFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CapableFlags {
    type Output = CapableFlags;
    fn bitor(self, rhs: CapableFlags) -> CapableFlags {
        CapableFlags(self.0 | rhs.0)
    }
}

/// MP_CAPABLE, version 1 (RFC 8684 §3.1, Figure 4): kind, length, subtype 0 and version,
/// flags A–H, then by form the keys and the first data's mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpCapable {
    pub flags: CapableFlags,
    pub form: CapableForm,
}

/// Which segment of the handshake an MP_CAPABLE belongs to; its length tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapableForm {
    /// On the SYN, no key (length 4): the initiator sends its key only in the third ACK.
    Syn,
    /// On the SYN/ACK: the listener's key (length 12).
    SynAck { sender_key: u64 },
    /// On the third ACK: the initiator's key, then the listener's echoed (length 20).
    Ack { sender_key: u64, receiver_key: u64 },
    /// On the initiator's first data segment when the third ACK may have been lost: both keys
    /// and the data-level length of the data it maps from data sequence number IDSN + 1, with
    /// the DSS checksum when flag A was negotiated (length 22, or 24 with the checksum).
    Data { sender_key: u64, receiver_key: u64, data_level_length: u16, checksum: Option<u16> },
}

impl MpCapable {
    pub(super) fn decode(option: &[u8]) -> Result<MpCapable, MptcpError> {
        let version = option[2] & 0x0f;
        if version != MPTCP_VERSION {
            return Err(MptcpError::UnsupportedVersion { version });
        }
        let length = option.len();
        if !matches!(length, 4 | 12 | 20 | 22 | 24) {
            return Err(bad_length(Subtype::MpCapable, option));
        }
        let mut r = Reader::new(option, HEADER_BYTES);
        let flags = CapableFlags(r.u8());
        let form = match length {
            4 => CapableForm::Syn,
            12 => CapableForm::SynAck { sender_key: r.u64() },
            20 => CapableForm::Ack { sender_key: r.u64(), receiver_key: r.u64() },
            _ => CapableForm::Data {
                sender_key: r.u64(),
                receiver_key: r.u64(),
                data_level_length: r.u16(),
                checksum: (length == 24).then(|| r.u16()),
            },
        };
        Ok(MpCapable { flags, form })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let mut o = OptionBytes::start(Subtype::MpCapable, MPTCP_VERSION);
        o.put(&[self.flags.0]);
        match self.form {
            CapableForm::Syn => {}
            CapableForm::SynAck { sender_key } => {
                o.put(&sender_key.to_be_bytes());
            }
            CapableForm::Ack { sender_key, receiver_key } => {
                o.put(&sender_key.to_be_bytes()).put(&receiver_key.to_be_bytes());
            }
            CapableForm::Data { sender_key, receiver_key, data_level_length, checksum } => {
                o.put(&sender_key.to_be_bytes()).put(&receiver_key.to_be_bytes()).put(&data_level_length.to_be_bytes());
                if let Some(checksum) = checksum {
                    o.put(&checksum.to_be_bytes());
                }
            }
        }
        o
    }
}

/// MP_JOIN (RFC 8684 §3.2), one form per segment of the subflow's handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpJoin {
    /// Figure 5, on the SYN (length 12): B asks for the subflow as a backup; the token
    /// names the connection at the receiver; the random number (nonce) feeds the HMACs.
    Syn { backup: bool, address_id: u8, receiver_token: u32, sender_random_number: u32 },
    /// Figure 6, on the SYN/ACK (length 16): the leftmost 64 bits of the sender's HMAC.
    SynAck { backup: bool, address_id: u8, sender_truncated_hmac: u64, sender_random_number: u32 },
    /// Figure 7, on the third ACK (length 24): the sender's full 160-bit HMAC.
    Ack { sender_hmac: [u8; 20] },
}

/// The B flag: the low bit of the subtype octet in the SYN and SYN/ACK forms.
const JOIN_BACKUP: u8 = 0x01;

impl MpJoin {
    pub(super) fn decode(option: &[u8]) -> Result<MpJoin, MptcpError> {
        let backup = option[2] & JOIN_BACKUP != 0;
        let mut r = Reader::new(option, HEADER_BYTES);
        Ok(match option.len() {
            12 => MpJoin::Syn { backup, address_id: r.u8(), receiver_token: r.u32(), sender_random_number: r.u32() },
            16 => MpJoin::SynAck { backup, address_id: r.u8(), sender_truncated_hmac: r.u64(), sender_random_number: r.u32() },
            24 => {
                r.u8(); // reserved
                MpJoin::Ack { sender_hmac: r.array() }
            }
            _ => return Err(bad_length(Subtype::MpJoin, option)),
        })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let flag = |backup: bool| if backup { JOIN_BACKUP } else { 0 };
        match *self {
            MpJoin::Syn { backup, address_id, receiver_token, sender_random_number } => {
                let mut o = OptionBytes::start(Subtype::MpJoin, flag(backup));
                o.put(&[address_id]).put(&receiver_token.to_be_bytes()).put(&sender_random_number.to_be_bytes());
                o
            }
            MpJoin::SynAck { backup, address_id, sender_truncated_hmac, sender_random_number } => {
                let mut o = OptionBytes::start(Subtype::MpJoin, flag(backup));
                o.put(&[address_id]).put(&sender_truncated_hmac.to_be_bytes()).put(&sender_random_number.to_be_bytes());
                o
            }
            MpJoin::Ack { sender_hmac } => {
                let mut o = OptionBytes::start(Subtype::MpJoin, 0);
                o.put(&[0]).put(&sender_hmac);
                o
            }
        }
    }
}
