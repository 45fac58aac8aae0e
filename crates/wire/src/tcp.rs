pub const TCP_HEADER_BYTES: u32 = 20;

/// Option space of a TCP header: a data offset of 15 words less the 20 fixed bytes
/// (RFC 9293 §3.1).
pub const MAX_TCP_OPTION_BYTES: usize = 40;
/// Storage for SACK blocks and unmodelled options together: four SACK blocks' worth (see
/// `TcpOptions` for why not the whole option space).
pub const OPTION_AREA_BYTES: usize = 32;

/// TCP control bits (RFC 9293 §3.1, RFC 3168 for ECE/CWR, RFC 9768 §3.2.1 for AE): the low
/// byte is header byte 13, bit 8 is the last bit of byte 12 (the former NS bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags(pub u16);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);
    /// Accurate ECN's third counter bit (RFC 9768 §3.2.1).
    pub const AE: TcpFlags = TcpFlags(0x100);
    /// AE, CWR and ECE: the ACE field of Accurate ECN, or RFC 3168's two flags and AE.
    pub const ECN_BITS: TcpFlags = TcpFlags(0x1c0);

    #[inline]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The ACE field (RFC 9768 §3.2.1): AE, CWR and ECE read as a 3-bit number, AE highest.
    #[inline]
    pub fn ace(self) -> u8 {
        ((self.0 & TcpFlags::ECN_BITS.0) >> 6) as u8
    }

    /// These flags with the ACE field set to `ace` (its low 3 bits).
    #[inline]
    pub fn with_ace(self, ace: u8) -> TcpFlags {
        TcpFlags((self.0 & !TcpFlags::ECN_BITS.0) | (((ace & 0b111) as u16) << 6))
    }

    /// Only the flags also in `mask`.
    #[inline]
    pub fn masked(self, mask: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & mask.0)
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
/// arrived, so whatever forwards the packet forwards them unchanged (docs/architecture.md §1,
/// wire). A packet holds them in its `TcpOptions`
/// (`raw`, `push_raw`); this is their owned, Copy form. MP-TCP options are read and written
/// through the typed values of `mptcp` (`TcpOptions::push_mptcp`, `mptcp_options`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RawOptions {
    len: u8,
    bytes: [u8; OPTION_AREA_BYTES],
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
        RawOptions { len: 0, bytes: [0; OPTION_AREA_BYTES] }
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
        let available = OPTION_AREA_BYTES - at;
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

/// SACK blocks that fit in the option space: 4 (RFC 2018 §3: 2 + 8n bytes of at most 40).
pub const MAX_SACK_BLOCKS: usize = 4;
/// Blocks of the area SACK blocks and raw options share: the whole option space.
const AREA_BLOCKS: usize = OPTION_AREA_BYTES / 8;

/// The TCP options the models use, plus the others as raw bytes.
///
/// SACK blocks and unmodelled options share one area of four SACK blocks' size, as they share
/// the option space on the wire: blocks from the front, raw option bytes at the back. The
/// simulator moves packets by value, so their size is on the per-packet path: a separate
/// 40-byte raw buffer made `Packet` 160 bytes (moved by `memcpy` calls), this 32-byte area keeps
/// it at 112 (`size_of::<Packet>()`). The price: a segment whose unmodelled options and SACK blocks exceed 32
/// bytes together (of its 40; MP-TCP options other than a long REMOVE_ADDR are at most 28) is
/// refused by `parse` with `ParseError::UnknownTcpOptionsTooLong` rather than carried. Of
/// MP-TCP segments, one with a 28-byte DSS, one SACK block and no timestamps is refused so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<Timestamps>,
    /// SACK blocks held (`sack()`); lower it to drop blocks, add them with `push_sack`/`set_sack`.
    pub sack_count: u8,
    /// Where the SACK blocks and raw options are (`sack()`, `raw()`). Public only so that
    /// `TcpOptions { mss, ..TcpOptions::default() }` works outside this crate.
    pub area: OptionArea,
}

/// Storage of the SACK blocks and raw options of a `TcpOptions`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionArea {
    blocks: [SackBlock; AREA_BLOCKS],
    /// Raw option bytes at the end of `blocks`.
    raw_len: u8,
}

impl TcpOptions {
    /// Options with only these raw options (which always fit: nothing else uses the area).
    pub fn from_raw(raw: &RawOptions) -> TcpOptions {
        let mut o = TcpOptions::default();
        o.write_area_tail(raw.as_bytes());
        o.area.raw_len = raw.len;
        o
    }

    #[inline]
    pub fn sack(&self) -> &[SackBlock] {
        &self.area.blocks[..self.sack_count as usize]
    }

    /// Appends a SACK block if there is room; returns false when full. The room is what the
    /// timestamps and raw options leave of the 40 option bytes: 2 + 2 NOPs, then 8 per block
    /// (RFC 2018 §3), at most 4 blocks.
    #[inline]
    pub fn push_sack(&mut self, block: SackBlock) -> bool {
        let limit = match (self.area.raw_len, self.timestamps.is_some()) {
            (0, true) => 3,
            (0, false) => MAX_SACK_BLOCKS,
            _ => self.sack_room_beside_raw(),
        };
        if (self.sack_count as usize) < limit {
            self.area.blocks[self.sack_count as usize] = block;
            self.sack_count += 1;
            true
        } else {
            false
        }
    }

    /// SACK blocks the option space holds beside the timestamps and raw options, and the area
    /// beside the raw bytes (without timestamps, 4 blocks fit the wire beside a 4-byte option
    /// but not the 32-byte area). Kept out of line: the common case has no raw options, and
    /// this stays out of the callers' inlining.
    #[cold]
    #[inline(never)]
    fn sack_room_beside_raw(&self) -> usize {
        let used = if self.timestamps.is_some() { 12 } else { 0 } + self.raw_encoded_bytes() as usize;
        let on_wire = (MAX_TCP_OPTION_BYTES - used.min(MAX_TCP_OPTION_BYTES)).saturating_sub(4) / 8;
        on_wire.min((OPTION_AREA_BYTES - self.area.raw_len as usize) / 8)
    }

    /// Replaces the SACK blocks, whatever the other options leave on the wire (`emit` refuses
    /// a header that ends up too long); false, and nothing changed, if more than 4 or if they
    /// would overlap the raw options.
    pub fn set_sack(&mut self, blocks: &[SackBlock]) -> bool {
        if blocks.len() > MAX_SACK_BLOCKS || blocks.len() * 8 + self.area.raw_len as usize > OPTION_AREA_BYTES {
            return false;
        }
        self.area.blocks[..blocks.len()].copy_from_slice(blocks);
        self.sack_count = blocks.len() as u8;
        true
    }

    /// The options not modelled above, in wire order.
    #[inline]
    pub fn raw(&self) -> RawOptions {
        let mut raw = RawOptions::default();
        let len = self.area.raw_len;
        if len > 0 {
            let area = self.area_bytes();
            raw.bytes[..len as usize].copy_from_slice(&area[OPTION_AREA_BYTES - len as usize..]);
            raw.len = len;
        }
        raw
    }

    /// Appends one whole unmodelled option (kind, length, data) after the others.
    pub fn push_raw(&mut self, option: &[u8]) -> Result<(), RawOptionError> {
        let mut raw = self.raw();
        raw.push(option)?;
        let available = OPTION_AREA_BYTES - 8 * self.sack_count as usize - self.area.raw_len as usize;
        if option.len() > available {
            return Err(RawOptionError::NoRoom { needed: option.len(), available });
        }
        self.write_area_tail(raw.as_bytes());
        self.area.raw_len = raw.len;
        Ok(())
    }

    /// The raw options' bytes on the wire, padded to a word.
    #[inline]
    fn raw_encoded_bytes(&self) -> u32 {
        (self.area.raw_len as u32).next_multiple_of(4)
    }

    fn area_bytes(&self) -> [u8; OPTION_AREA_BYTES] {
        let mut bytes = [0u8; OPTION_AREA_BYTES];
        for (chunk, block) in bytes.chunks_exact_mut(8).zip(&self.area.blocks) {
            chunk[..4].copy_from_slice(&block.left.to_ne_bytes());
            chunk[4..].copy_from_slice(&block.right.to_ne_bytes());
        }
        bytes
    }

    /// Writes `tail` as the last bytes of the area; the SACK blocks before it are unchanged.
    fn write_area_tail(&mut self, tail: &[u8]) {
        let mut bytes = self.area_bytes();
        bytes[OPTION_AREA_BYTES - tail.len()..].copy_from_slice(tail);
        for (chunk, block) in bytes.chunks_exact(8).zip(&mut self.area.blocks) {
            block.left = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            block.right = u32::from_ne_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
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
        bytes + self.raw_encoded_bytes()
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
