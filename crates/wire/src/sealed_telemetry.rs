//! The telemetry record sealed for the network (docs/telemetry.md, "Over the network"): a
//! version-1 record with the publisher's identity and sequence number, authenticated with
//! HMAC-SHA256 (RFC 2104, FIPS 180-4) under a key the gNB and the proxy share. An edge proxy
//! takes telemetry from a gNB across a network it does not control; the tag keeps a forged
//! record from steering its flow windows, the sequence number keeps a recorded one from being
//! sent again (`ReplayGuard`).
//!
//! Layout, network byte order, 96 bytes:
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 4 | magic `MNTS` |
//! | 4 | 1 | version 1 |
//! | 5 | 3 | reserved, 0 |
//! | 8 | 4 | publisher: who sealed it (e.g. the gNB's cell id) |
//! | 12 | 8 | sequence: strictly increasing per publisher |
//! | 20 | 44 | the version-1 record (`Telemetry::encode`), `t_ns` on the clock both ends share |
//! | 64 | 32 | HMAC-SHA256 under the shared key of bytes 0..64 |

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::telemetry::{Telemetry, TelemetryDecodeError, TELEMETRY_DATAGRAM_BYTES};

/// Bytes of one sealed datagram.
pub const SEALED_TELEMETRY_BYTES: usize = 96;
pub const SEALED_TELEMETRY_MAGIC: [u8; 4] = *b"MNTS";
pub const SEALED_TELEMETRY_VERSION: u8 = 1;
/// The shortest key accepted: HMAC's output length (RFC 2104 §3: less than L bytes is
/// strongly discouraged).
pub const MIN_KEY_BYTES: usize = 32;
const RECORD_AT: usize = 20;
const TAG_AT: usize = RECORD_AT + TELEMETRY_DATAGRAM_BYTES;

/// The pre-shared key.
#[derive(Clone)]
pub struct TelemetryKey(Vec<u8>);

impl TelemetryKey {
    /// `bytes` as a key; `None` below `MIN_KEY_BYTES`.
    pub fn new(bytes: &[u8]) -> Option<TelemetryKey> {
        (bytes.len() >= MIN_KEY_BYTES).then(|| TelemetryKey(bytes.to_vec()))
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }
}

impl std::fmt::Debug for TelemetryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TelemetryKey({} bytes)", self.0.len())
    }
}

/// A record as sealed: who sent it, its place in that sender's sequence, the UE and record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sealed {
    pub publisher: u32,
    pub sequence: u64,
    pub ue: Ipv4Addr,
    pub record: Telemetry,
}

/// Why a datagram is not a sealed record to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Not `SEALED_TELEMETRY_BYTES` long, another magic or version.
    Malformed,
    /// The tag does not match: not sealed under this key, or altered on the way.
    Forged,
    /// Authentic, but the record inside is not a valid version-1 record.
    BadRecord(TelemetryDecodeError),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Malformed => {
                write!(f, "not a sealed telemetry datagram ({SEALED_TELEMETRY_BYTES} bytes starting \"MNTS\", version 1)")
            }
            OpenError::Forged => f.write_str("sealed telemetry datagram whose HMAC does not match the key"),
            OpenError::BadRecord(e) => write!(f, "sealed telemetry datagram: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl Sealed {
    pub fn seal(&self, key: &TelemetryKey) -> [u8; SEALED_TELEMETRY_BYTES] {
        let mut b = [0u8; SEALED_TELEMETRY_BYTES];
        b[0..4].copy_from_slice(&SEALED_TELEMETRY_MAGIC);
        b[4] = SEALED_TELEMETRY_VERSION;
        b[8..12].copy_from_slice(&self.publisher.to_be_bytes());
        b[12..20].copy_from_slice(&self.sequence.to_be_bytes());
        b[RECORD_AT..TAG_AT].copy_from_slice(&self.record.encode(self.ue));
        let mut mac = key.mac();
        mac.update(&b[..TAG_AT]);
        b[TAG_AT..].copy_from_slice(&mac.finalize().into_bytes());
        b
    }

    /// The sealed record, if `datagram` is one and its tag verifies under `key` (compared in
    /// constant time). The tag is checked before anything inside is read.
    pub fn open(datagram: &[u8], key: &TelemetryKey) -> Result<Sealed, OpenError> {
        if datagram.len() != SEALED_TELEMETRY_BYTES || datagram[0..4] != SEALED_TELEMETRY_MAGIC || datagram[4] != SEALED_TELEMETRY_VERSION {
            return Err(OpenError::Malformed);
        }
        let mut mac = key.mac();
        mac.update(&datagram[..TAG_AT]);
        mac.verify_slice(&datagram[TAG_AT..]).map_err(|_| OpenError::Forged)?;
        let (ue, record) = Telemetry::decode(&datagram[RECORD_AT..TAG_AT]).map_err(OpenError::BadRecord)?;
        let word = |at: usize, n: usize| datagram[at..at + n].iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
        Ok(Sealed { publisher: word(8, 4) as u32, sequence: word(12, 8), ue, record })
    }
}

/// The highest sequence number accepted from each publisher; a datagram at or below it is a
/// replay (or one overtaken by a newer record, as useless). At most `max_publishers` are
/// remembered; a new one beyond that replaces the one heard from longest ago. A forgotten
/// publisher's old datagrams pass this guard again, but their records are old, and the proxy
/// refuses records older than the one in force or than `telemetry_max_age_s`.
#[derive(Debug)]
pub struct ReplayGuard {
    max_publishers: usize,
    /// Publisher -> (highest sequence, the count of accepts when last heard).
    latest: HashMap<u32, (u64, u64)>,
    /// (count of accepts when last heard, publisher): who was heard from longest ago.
    by_recency: BTreeSet<(u64, u32)>,
    accepts: u64,
}

impl ReplayGuard {
    pub fn new(max_publishers: usize) -> ReplayGuard {
        ReplayGuard { max_publishers: max_publishers.max(1), latest: HashMap::new(), by_recency: BTreeSet::new(), accepts: 0 }
    }

    /// Whether `sequence` from `publisher` is new; if so it becomes the publisher's highest.
    pub fn accept(&mut self, publisher: u32, sequence: u64) -> bool {
        if let Some(&(highest, heard)) = self.latest.get(&publisher) {
            if sequence <= highest {
                return false;
            }
            self.by_recency.remove(&(heard, publisher));
        } else if self.latest.len() >= self.max_publishers {
            if let Some((_, oldest)) = self.by_recency.pop_first() {
                self.latest.remove(&oldest);
            }
        }
        self.accepts += 1;
        self.latest.insert(publisher, (sequence, self.accepts));
        self.by_recency.insert((self.accepts, publisher));
        true
    }

    /// Publishers remembered.
    pub fn publishers(&self) -> usize {
        self.latest.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> TelemetryKey {
        TelemetryKey::new(&[byte; 32]).unwrap()
    }

    fn sealed(sequence: u64) -> Sealed {
        Sealed {
            publisher: 0x0102_0304,
            sequence,
            ue: Ipv4Addr::new(10, 45, 0, 7),
            record: Telemetry { t_ns: 1_764_000_000_123_456_789, rlc_bytes: 250_000, rate_bps: 2.4e9, sinr_db: 17.5, outage: false },
        }
    }

    #[test]
    fn the_layout_and_the_tag_are_those_of_rfc_4231s_hmac_sha256() {
        let s = sealed(42);
        let b = s.seal(&key(0xab));
        assert_eq!(&b[0..8], b"MNTS\x01\x00\x00\x00");
        assert_eq!(&b[8..20], &[1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 42]);
        assert_eq!(&b[20..64], &s.record.encode(s.ue));
        // The tag is HMAC-SHA256 of bytes 0..64; checked against the RFC 4231 §4.2 test case 1
        // through the same `hmac` crate: key 0x0b × 20, "Hi There".
        let mut mac = Hmac::<Sha256>::new_from_slice(&[0x0b; 20]).unwrap();
        mac.update(b"Hi There");
        let expected = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
        let hex: String = mac.finalize().into_bytes().iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, expected);
        assert_eq!(Sealed::open(&b, &key(0xab)), Ok(s));
    }

    #[test]
    fn a_wrong_key_or_any_altered_byte_is_forged() {
        let b = sealed(7).seal(&key(1));
        assert_eq!(Sealed::open(&b, &key(2)), Err(OpenError::Forged));
        for i in 8..SEALED_TELEMETRY_BYTES {
            let mut altered = b;
            altered[i] ^= 0x01;
            assert_eq!(Sealed::open(&altered, &key(1)), Err(OpenError::Forged), "byte {i}");
        }
        // The header is checked first: a wrong magic, version or length is malformed.
        for i in 0..5 {
            let mut altered = b;
            altered[i] ^= 0x01;
            assert_eq!(Sealed::open(&altered, &key(1)), Err(OpenError::Malformed), "byte {i}");
        }
        assert_eq!(Sealed::open(&b[..95], &key(1)), Err(OpenError::Malformed));
        assert_eq!(Sealed::open(&sealed(7).record.encode(sealed(7).ue), &key(1)), Err(OpenError::Malformed), "an unsealed record");
    }

    #[test]
    fn an_authentic_record_with_a_bad_value_is_refused_by_name() {
        let mut s = sealed(1);
        s.record.rate_bps = -1.0;
        assert_eq!(
            Sealed::open(&s.seal(&key(1)), &key(1)),
            Err(OpenError::BadRecord(TelemetryDecodeError::BadValue { field: "rate_bps" }))
        );
    }

    #[test]
    fn keys_shorter_than_the_hash_are_refused() {
        assert!(TelemetryKey::new(&[0; 31]).is_none());
        assert!(TelemetryKey::new(&[0; 32]).is_some());
    }

    #[test]
    fn the_guard_takes_each_publishers_sequence_numbers_once_and_in_order() {
        let mut g = ReplayGuard::new(2);
        assert!(g.accept(1, 10));
        assert!(!g.accept(1, 10), "the same datagram again");
        assert!(!g.accept(1, 9), "an older one");
        assert!(g.accept(1, 11));
        assert!(g.accept(2, 1), "another publisher has its own sequence");
        // A third publisher makes the guard forget the one heard from longest ago: 1 (its 11
        // came before 2's 1).
        assert!(g.accept(3, 5));
        assert_eq!(g.publishers(), 2);
        assert!(!g.accept(2, 1), "2 is still remembered");
        assert!(g.accept(1, 3), "1 was forgotten: its old numbers pass the guard (the proxy refuses old records)");
    }
}
