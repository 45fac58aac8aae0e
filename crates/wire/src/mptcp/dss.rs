//! The Data Sequence Signal (RFC 8684 §3.3, Figure 9): the connection-level acknowledgement
//! (DATA_ACK) and the mapping of subflow bytes onto the connection's data sequence space.

use super::{MptcpError, OptionBytes, Reader, Subtype};

/// Flags of the DSS option's fourth octet (Figure 9: reserved bits, then F m M a A).
const FLAG_DATA_ACK: u8 = 0x01; // A
const FLAG_DATA_ACK_8: u8 = 0x02; // a
const FLAG_MAPPING: u8 = 0x04; // M
const FLAG_DSN_8: u8 = 0x08; // m
const FLAG_DATA_FIN: u8 = 0x10; // F

/// Kind, length, subtype and flags.
const DSS_HEADER_BYTES: usize = 4;
/// Subflow sequence number and data-level length, after the mapping's data sequence number.
const MAPPING_TAIL_BYTES: usize = 6;
const CHECKSUM_BYTES: usize = 2;

/// A data-level sequence number or acknowledgement as the DSS carries it: 4 octets, the low
/// 32 bits of the 64-bit number (flag a or m clear), or all 8 (set). §3.3.1 leaves the choice
/// to the sender; the receiver infers the high bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSeq {
    U32(u32),
    U64(u64),
}

impl DataSeq {
    fn wide(self) -> bool {
        matches!(self, DataSeq::U64(_))
    }

    fn read(r: &mut Reader, wide: bool) -> DataSeq {
        if wide {
            DataSeq::U64(r.u64())
        } else {
            DataSeq::U32(r.u32())
        }
    }

    fn write(self, o: &mut OptionBytes) {
        match self {
            DataSeq::U32(v) => o.put(&v.to_be_bytes()),
            DataSeq::U64(v) => o.put(&v.to_be_bytes()),
        };
    }

    fn bytes(wide: bool) -> usize {
        if wide {
            8
        } else {
            4
        }
    }
}

/// DSS: a DATA_ACK (flag A), a mapping (flag M), either or both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dss {
    pub data_ack: Option<DataSeq>,
    pub mapping: Option<DssMapping>,
}

/// A data sequence mapping (§3.3.1): `data_level_length` bytes from subflow sequence number
/// `subflow_sequence_number` carry the connection's bytes from `data_sequence_number` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DssMapping {
    pub data_sequence_number: DataSeq,
    /// Relative to the subflow's initial sequence number (§3.3.1), so 1 is the first data byte.
    pub subflow_sequence_number: u32,
    /// Bytes mapped, the DATA_FIN's octet included when `data_fin` is set (§3.3.3).
    pub data_level_length: u16,
    /// Present only when a side asked for checksums in MP_CAPABLE (flag A); the receiver knows
    /// from the option's length (§3.3).
    pub checksum: Option<u16>,
    /// F: the last octet of the mapping is the DATA_FIN (§3.3.3). A DATA_FIN without data has
    /// subflow sequence number 0 and data-level length 1.
    pub data_fin: bool,
}

impl Dss {
    /// The option's length for flags A, a, M and m, without the checksum.
    fn length_for(flags: u8) -> usize {
        let mut length = DSS_HEADER_BYTES;
        if flags & FLAG_DATA_ACK != 0 {
            length += DataSeq::bytes(flags & FLAG_DATA_ACK_8 != 0);
        }
        if flags & FLAG_MAPPING != 0 {
            length += DataSeq::bytes(flags & FLAG_DSN_8 != 0) + MAPPING_TAIL_BYTES;
        }
        length
    }

    pub(super) fn decode(option: &[u8]) -> Result<Dss, MptcpError> {
        let bad_length = MptcpError::BadLength { subtype: Subtype::Dss, length: option.len() as u8 };
        let flags = *option.get(3).ok_or(bad_length)?;
        let expected = Dss::length_for(flags);
        let has_mapping = flags & FLAG_MAPPING != 0;
        let checksum = match option.len() {
            n if n == expected => false,
            n if has_mapping && n == expected + CHECKSUM_BYTES => true,
            _ => return Err(bad_length),
        };
        if flags & FLAG_DATA_FIN != 0 && !has_mapping {
            return Err(MptcpError::DataFinWithoutMapping);
        }
        let mut r = Reader::new(option, DSS_HEADER_BYTES);
        let data_ack = (flags & FLAG_DATA_ACK != 0).then(|| DataSeq::read(&mut r, flags & FLAG_DATA_ACK_8 != 0));
        let mapping = has_mapping.then(|| DssMapping {
            data_sequence_number: DataSeq::read(&mut r, flags & FLAG_DSN_8 != 0),
            subflow_sequence_number: r.u32(),
            data_level_length: r.u16(),
            checksum: checksum.then(|| r.u16()),
            data_fin: flags & FLAG_DATA_FIN != 0,
        });
        Ok(Dss { data_ack, mapping })
    }

    pub(super) fn encode(&self) -> OptionBytes {
        let mut flags = 0;
        if let Some(ack) = self.data_ack {
            flags |= FLAG_DATA_ACK | if ack.wide() { FLAG_DATA_ACK_8 } else { 0 };
        }
        if let Some(m) = &self.mapping {
            flags |= FLAG_MAPPING | if m.data_sequence_number.wide() { FLAG_DSN_8 } else { 0 };
            flags |= if m.data_fin { FLAG_DATA_FIN } else { 0 };
        }
        let mut o = OptionBytes::start(Subtype::Dss, 0);
        o.put(&[flags]);
        if let Some(ack) = self.data_ack {
            ack.write(&mut o);
        }
        if let Some(m) = &self.mapping {
            m.data_sequence_number.write(&mut o);
            o.put(&m.subflow_sequence_number.to_be_bytes()).put(&m.data_level_length.to_be_bytes());
            if let Some(checksum) = m.checksum {
                o.put(&checksum.to_be_bytes());
            }
        }
        o
    }
}
