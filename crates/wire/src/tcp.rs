pub const TCP_HEADER_BYTES: u32 = 20;

/// Option space of a TCP header: a data offset of 15 words less the 20 fixed bytes
/// (RFC 9293 §3.1).
pub const MAX_TCP_OPTION_BYTES: usize = 40;

/// TCP control bits (RFC 9293 §3.1, RFC 3168 for ECE/CWR).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);

    #[inline]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

/// One SACK block (RFC 2018): `left` is the first sequence number of the block,
/// `right` the sequence number just after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub left: u32,
    pub right: u32,
}

/// TSval/TSecr of the timestamps option (RFC 7323 §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timestamps {
    pub tsval: u32,
    pub tsecr: u32,
}

/// Options the models do not interpret (MPTCP kind 30, RFC 8684; experimental kinds 253/254,
/// RFC 6994; any other), kept as their wire bytes — kind, length, data — in the order they
/// arrived, so whatever forwards the packet forwards them unchanged (architecture.md: "TCP
/// with options — unknown ones kept as bytes"). Inline, so `Packet` stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RawOptions {
    len: u8,
    bytes: [u8; MAX_TCP_OPTION_BYTES],
}

/// `RawOptions::push` was given an option that does not fit in the TCP option space or is
/// not one whole option (length byte below 2 or disagreeing with the bytes given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOptionError {
    NoRoom { needed: usize, available: usize },
    NotOneOption { bytes: usize },
}

impl std::fmt::Display for RawOptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            RawOptionError::NoRoom { needed, available } => {
                write!(f, "TCP option of {needed} bytes, {available} bytes of option space left")
            }
            RawOptionError::NotOneOption { bytes } => write!(f, "{bytes} bytes are not one TCP option (kind, length, data)"),
        }
    }
}

impl std::error::Error for RawOptionError {}

impl Default for RawOptions {
    fn default() -> Self {
        RawOptions { len: 0, bytes: [0; MAX_TCP_OPTION_BYTES] }
    }
}

impl std::fmt::Debug for RawOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RawOptions").field(&self.as_bytes()).finish()
    }
}

impl RawOptions {
    /// The kept options back to back, as on the wire.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one whole option: `option[1]` is its length and counts kind and length
    /// (RFC 9293 §3.2).
    pub fn push(&mut self, option: &[u8]) -> Result<(), RawOptionError> {
        if option.len() < 2 || option[1] as usize != option.len() {
            return Err(RawOptionError::NotOneOption { bytes: option.len() });
        }
        let at = self.len as usize;
        let available = MAX_TCP_OPTION_BYTES - at;
        if option.len() > available {
            return Err(RawOptionError::NoRoom { needed: option.len(), available });
        }
        self.bytes[at..at + option.len()].copy_from_slice(option);
        self.len += option.len() as u8;
        Ok(())
    }

    /// Bytes on the wire: the options padded with NOPs to a 32-bit word (RFC 9293 §3.1: the
    /// header ends on a word boundary).
    #[inline]
    pub fn encoded_bytes(&self) -> u32 {
        (self.len as u32).next_multiple_of(4)
    }
}

/// The TCP options the models use, plus the others as raw bytes. `sack_blocks[..sack_count]`
/// are valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<Timestamps>,
    pub sack_blocks: [SackBlock; 4],
    pub sack_count: u8,
    /// Options of kinds not modelled above, emitted after them.
    pub raw: RawOptions,
}

impl TcpOptions {
    #[inline]
    pub fn sack(&self) -> &[SackBlock] {
        &self.sack_blocks[..self.sack_count as usize]
    }

    /// Appends a SACK block if there is room; returns false when full. The room is what the
    /// timestamps and raw options leave of the 40 option bytes: 2 + 2 NOPs, then 8 per block
    /// (RFC 2018 §3), at most 4 blocks.
    #[inline]
    pub fn push_sack(&mut self, block: SackBlock) -> bool {
        let used = if self.timestamps.is_some() { 12 } else { 0 } + self.raw.encoded_bytes() as usize;
        let limit = ((MAX_TCP_OPTION_BYTES - used.min(MAX_TCP_OPTION_BYTES)).saturating_sub(4) / 8).min(4);
        if (self.sack_count as usize) < limit {
            self.sack_blocks[self.sack_count as usize] = block;
            self.sack_count += 1;
            true
        } else {
            false
        }
    }

    /// Bytes the options occupy on the wire, laid out as Linux does
    /// (NOP padding to 32-bit words): MSS 4, window scale 3+1 NOP,
    /// SACK-permitted 2 (+2 NOPs when not merged with timestamps),
    /// timestamps 10+2 NOPs, SACK 2+8n+2 NOPs; then the raw options padded to a word.
    #[inline]
    pub fn encoded_bytes(&self) -> u32 {
        let mut bytes = 0;
        if self.mss.is_some() {
            bytes += 4;
        }
        if self.window_scale.is_some() {
            bytes += 4;
        }
        // SACK-permitted shares a word with the timestamps' NOPs when both are present.
        match (self.sack_permitted, self.timestamps.is_some()) {
            (true, true) => bytes += 12,
            (true, false) => bytes += 4,
            (false, true) => bytes += 12,
            (false, false) => {}
        }
        if self.sack_count > 0 {
            bytes += 4 + 8 * self.sack_count as u32;
        }
        bytes + self.raw.encoded_bytes()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// The raw 16-bit window field (unscaled).
    pub window: u16,
    pub options: TcpOptions,
}

impl TcpHeader {
    #[inline]
    pub fn header_bytes(&self) -> u32 {
        TCP_HEADER_BYTES + self.options.encoded_bytes()
    }
}
