//! Path management: ADD_ADDR and REMOVE_ADDR announce and withdraw addresses (RFC 8684
//! §3.4), MP_PRIO changes a subflow's priority (§3.3.8).

use std::net::Ipv4Addr;

use super::{bad_length, MptcpError, OptionBytes, Reader, Subtype, HEADER_BYTES};
use crate::tcp::MAX_TCP_OPTION_BYTES;

/// ADD_ADDR (§3.4.1, Figure 12): kind, length, subtype and E, address ID, the address, an
/// optional port, and the truncated HMAC unless E is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddAddr {
    pub address_id: u8,
    pub address: Ipv4Addr,
    pub port: Option<u16>,
    /// The leftmost 64 bits of the HMAC that authenticates the announcement; `None` is the
    /// echo (flag E), by which the receiver acknowledges an announcement.
    pub truncated_hmac: Option<u64>,
}

/// The E flag: the low bit of the subtype octet.
const ADD_ADDR_ECHO: u8 = 0x01;
/// Kind, length, subtype octet, address ID and an IPv4 address: the echo without a port.
const ADD_ADDR_V4_BYTES: usize = 8;
const PORT_BYTES: usize = 2;
const TRUNCATED_HMAC_BYTES: usize = 8;

impl AddAddr {
    pub(super) fn decode(option: &[u8]) -> Result<AddAddr, MptcpError> {
        let length = option.len();
        if matches!(length, 20 | 22 | 28 | 30) {
            return Err(MptcpError::Ipv6Address { length: length as u8 });
        }
        // The E flag decides whether the HMAC is there; what is left of the length, the port.
        let echo = option[2] & ADD_ADDR_ECHO != 0;
        let without_port = ADD_ADDR_V4_BYTES + if echo { 0 } else { TRUNCATED_HMAC_BYTES };
        let has_port = match length {
            n if n == without_port => false,
            n if n == without_port + PORT_BYTES => true,
            _ => return Err(bad_length(Subtype::AddAddr, option)),
        };
        let mut r = Reader::new(option, HEADER_BYTES);
        Ok(AddAddr {
            address_id: r.u8(),
            address: Ipv4Addr::from(r.u32()),
            port: has_port.then(|| r.u16()),
            truncated_hmac: (!echo).then(|| r.u64()),
        })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let echo = if self.truncated_hmac.is_none() { ADD_ADDR_ECHO } else { 0 };
        let mut o = OptionBytes::start(Subtype::AddAddr, echo);
        o.put(&[self.address_id]).put(&self.address.octets());
        if let Some(port) = self.port {
            o.put(&port.to_be_bytes());
        }
        if let Some(hmac) = self.truncated_hmac {
            o.put(&hmac.to_be_bytes());
        }
        o
    }
}

/// Address IDs one REMOVE_ADDR holds: as many as fill the TCP option space.
pub const MAX_REMOVE_ADDR_IDS: usize = MAX_TCP_OPTION_BYTES - HEADER_BYTES;

/// REMOVE_ADDR (§3.4.2, Figure 13): kind, length = 3 + n, subtype, then n ≥ 1 address IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoveAddr {
    count: u8,
    ids: [u8; MAX_REMOVE_ADDR_IDS],
}

impl RemoveAddr {
    /// The option removing `address_ids`; `None` for none or more than fit in an option.
    pub fn new(address_ids: &[u8]) -> Option<RemoveAddr> {
        if address_ids.is_empty() || address_ids.len() > MAX_REMOVE_ADDR_IDS {
            return None;
        }
        let mut ids = [0; MAX_REMOVE_ADDR_IDS];
        ids[..address_ids.len()].copy_from_slice(address_ids);
        Some(RemoveAddr { count: address_ids.len() as u8, ids })
    }

    pub fn address_ids(&self) -> &[u8] {
        &self.ids[..self.count as usize]
    }

    pub(super) fn decode(option: &[u8]) -> Result<RemoveAddr, MptcpError> {
        RemoveAddr::new(&option[HEADER_BYTES..]).ok_or(bad_length(Subtype::RemoveAddr, option))
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let mut o = OptionBytes::start(Subtype::RemoveAddr, 0);
        o.put(self.address_ids());
        o
    }
}

/// MP_PRIO (§3.3.8, Figure 11): kind, length 3, subtype and B. Version 1 dropped the address
/// ID that RFC 6824 allowed after it, so the option names the subflow it is sent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpPrio {
    /// B: the sender asks its peer to send on this subflow only when no other is usable.
    pub backup: bool,
}

/// The B flag: the low bit of the subtype octet.
const PRIO_BACKUP: u8 = 0x01;

impl MpPrio {
    pub(super) fn decode(option: &[u8]) -> Result<MpPrio, MptcpError> {
        if option.len() != HEADER_BYTES {
            return Err(bad_length(Subtype::MpPrio, option));
        }
        Ok(MpPrio { backup: option[2] & PRIO_BACKUP != 0 })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        OptionBytes::start(Subtype::MpPrio, if self.backup { PRIO_BACKUP } else { 0 })
    }
}
