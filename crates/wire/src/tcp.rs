pub const TCP_HEADER_BYTES: u32 = 20;

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

/// The TCP options the models use. `sack_blocks[..sack_count]` are valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<Timestamps>,
    pub sack_blocks: [SackBlock; 4],
    pub sack_count: u8,
}

impl TcpOptions {
    #[inline]
    pub fn sack(&self) -> &[SackBlock] {
        &self.sack_blocks[..self.sack_count as usize]
    }

    /// Appends a SACK block if there is room; returns false when full.
    #[inline]
    pub fn push_sack(&mut self, block: SackBlock) -> bool {
        let limit = if self.timestamps.is_some() { 3 } else { 4 };
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
    /// timestamps 10+2 NOPs, SACK 2+8n+2 NOPs.
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
        bytes
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
