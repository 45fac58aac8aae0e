//! The Internet checksum (RFC 1071), the TCP/UDP pseudo-header (RFC 9293 §3.1,
//! RFC 768) and incremental update after a field rewrite (RFC 1624).

use std::net::Ipv4Addr;

/// A running one's-complement sum over a byte stream fed in pieces.
///
/// Pieces may have any length: a piece that starts at an odd offset of the
/// stream is summed as if aligned and then byte-swapped, which RFC 1071 §2(B)
/// shows is equivalent (the sum is independent of byte order up to a swap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksum {
    /// Unfolded sum; folded only in `finish`, so adding never loses carries.
    sum: u64,
    /// The bytes fed so far have odd length.
    odd: bool,
}

impl Checksum {
    pub fn new() -> Checksum {
        Checksum::default()
    }

    /// The sum over the IPv4 pseudo-header that TCP and UDP checksums cover
    /// (RFC 9293 §3.1, RFC 768): source, destination, zero, protocol, and the
    /// length of the transport header plus payload.
    pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, l4_bytes: u16) -> Checksum {
        let mut c = Checksum::new();
        c.add_bytes(&src.octets());
        c.add_bytes(&dst.octets());
        c.add_u16(protocol as u16);
        c.add_u16(l4_bytes);
        c
    }

    /// Adds a 16-bit word. Only valid at an even offset of the stream.
    #[inline]
    pub fn add_u16(&mut self, word: u16) {
        debug_assert!(!self.odd, "add_u16 at an odd stream offset");
        self.sum += word as u64;
    }

    /// Adds the next piece of the stream.
    #[inline]
    pub fn add_bytes(&mut self, bytes: &[u8]) {
        let piece = fold(sum_aligned(bytes));
        self.sum += if self.odd { piece.swap_bytes() } else { piece } as u64;
        self.odd ^= bytes.len() % 2 == 1;
    }

    /// The folded one's-complement sum, not complemented.
    #[inline]
    pub fn sum(&self) -> u16 {
        fold(self.sum)
    }

    /// The checksum field value: the complement of the sum.
    #[inline]
    pub fn finish(&self) -> u16 {
        !self.sum()
    }
}

/// The Internet checksum of `bytes` (RFC 1071): the complemented one's-complement
/// sum of its 16-bit big-endian words, an odd last byte padded with zero.
#[inline]
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    !fold(sum_aligned(bytes))
}

/// The checksum after one 16-bit word of the covered data changed from `old`
/// to `new`, without touching the rest of the data: RFC 1624 eqn. 3,
/// HC' = ~(~HC + ~m + m'). (Eqn. 2 of RFC 1141 can yield 0xFFFF where a full
/// recomputation yields 0; eqn. 3 cannot.)
#[inline]
pub fn update_u16(checksum: u16, old: u16, new: u16) -> u16 {
    let sum = (!checksum) as u64 + (!old) as u64 + new as u64;
    !fold(sum)
}

/// Like `update_u16` for a 32-bit field (a sequence number or an address),
/// treated as its two 16-bit words.
#[inline]
pub fn update_u32(checksum: u16, old: u32, new: u32) -> u16 {
    let sum = (!checksum) as u64 + (!(old >> 16) as u16) as u64 + (!(old as u16)) as u64 + (new >> 16) as u64 + (new as u16) as u64;
    !fold(sum)
}

/// Folds carries back into the low 16 bits (end-around carry).
#[inline]
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Sum of the big-endian 16-bit words of `bytes`, unfolded.
///
/// Summing 32-bit big-endian words into a u64 is congruent modulo 0xFFFF to
/// summing 16-bit words (2^16 ≡ 1), so eight bytes can be consumed per step;
/// a u64 cannot overflow before 2^32 such words, far beyond any packet.
#[inline]
fn sum_aligned(bytes: &[u8]) -> u64 {
    let mut sum: u64 = 0;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        sum += u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64;
        sum += u32::from_be_bytes([c[4], c[5], c[6], c[7]]) as u64;
    }
    let mut rest = chunks.remainder();
    if rest.len() >= 4 {
        sum += u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as u64;
        rest = &rest[4..];
    }
    if rest.len() >= 2 {
        sum += u16::from_be_bytes([rest[0], rest[1]]) as u64;
        rest = &rest[2..];
    }
    if let [last] = rest {
        sum += (*last as u64) << 8;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition: 16-bit words, one at a time.
    fn reference(bytes: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for pair in bytes.chunks(2) {
            let word = if pair.len() == 2 { u16::from_be_bytes([pair[0], pair[1]]) } else { (pair[0] as u16) << 8 };
            sum += word as u32;
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&data), !0xddf2);
    }

    #[test]
    fn fast_sum_matches_reference_for_all_lengths() {
        let mut s = 0x9e3779b97f4a7c15;
        for len in 0..200 {
            let data: Vec<u8> = (0..len).map(|_| xorshift(&mut s) as u8).collect();
            assert_eq!(internet_checksum(&data), reference(&data), "len {len}");
            let ff = vec![0xffu8; len];
            assert_eq!(internet_checksum(&ff), reference(&ff), "all-ones len {len}");
        }
    }

    #[test]
    fn pieces_at_odd_offsets_sum_like_the_whole() {
        let mut s = 7;
        for _ in 0..500 {
            let len = (xorshift(&mut s) % 100) as usize;
            let data: Vec<u8> = (0..len).map(|_| xorshift(&mut s) as u8).collect();
            let a = (xorshift(&mut s) as usize) % (len + 1);
            let b = a + (xorshift(&mut s) as usize) % (len - a + 1);
            let mut c = Checksum::new();
            c.add_bytes(&data[..a]);
            c.add_bytes(&data[a..b]);
            c.add_bytes(&data[b..]);
            assert_eq!(c.finish(), reference(&data), "split {a}/{b} of {len}");
        }
    }

    #[test]
    fn incremental_update_equals_recomputation() {
        let mut s = 12345;
        for _ in 0..10_000 {
            let mut data: Vec<u8> = (0..40).map(|_| xorshift(&mut s) as u8).collect();
            let before = internet_checksum(&data);
            let at = 2 * (xorshift(&mut s) as usize % 18);
            let old = u16::from_be_bytes([data[at], data[at + 1]]);
            let new = xorshift(&mut s) as u16;
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
            assert_eq!(update_u16(before, old, new), internet_checksum(&data));

            let before = internet_checksum(&data);
            let old = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let new = xorshift(&mut s) as u32;
            data[at..at + 4].copy_from_slice(&new.to_be_bytes());
            assert_eq!(update_u32(before, old, new), internet_checksum(&data));
        }
    }

    #[test]
    fn checksum_over_data_with_its_checksum_verifies() {
        let mut data =
            vec![0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 0xac, 0x10, 0x0a, 0x63, 0xac, 0x10, 0x0a, 0x0c];
        let c = internet_checksum(&data);
        // A textbook IPv4 header whose checksum is known to be b1e6.
        assert_eq!(c, 0xb1e6);
        data[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(internet_checksum(&data), 0);
    }
}
