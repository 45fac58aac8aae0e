//! The per-UE telemetry record of docs/telemetry.md, shared by its producer (the gNB model in
//! `millinet-ran`) and its consumer (milliProxy in `millinet-proxy`). It lives here because
//! both may depend on this crate and on nothing of each other.

/// One telemetry record of one UE, as the gNB sampled it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Telemetry {
    /// When the gNB sampled it.
    pub t_ns: u64,
    /// B: downlink RLC occupancy of the UE (new data + retransmission queue).
    pub rlc_bytes: u64,
    /// R_e: full-buffer achievable PHY rate from the last reported SINR, independent of the
    /// offered load (docs/models/channel.md §8); 0 in outage. A float because the AMC computes it as one;
    /// consumers that need whole bits per second truncate (`as u64`, saturating).
    pub rate_bps: f64,
    /// SINR of the last CQI report (−∞ before the first one).
    pub sinr_db: f64,
    /// The reported SINR is below the outage threshold.
    pub outage: bool,
}

/// Bytes of one telemetry datagram (docs/telemetry.md).
pub const TELEMETRY_DATAGRAM_BYTES: usize = 44;
/// The first four bytes of every telemetry datagram.
pub const TELEMETRY_MAGIC: [u8; 4] = *b"MNTL";
/// The version this code writes and reads.
pub const TELEMETRY_VERSION: u8 = 1;
const FLAG_OUTAGE: u8 = 0x01;

/// Why a datagram is not a telemetry record this code can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TelemetryDecodeError {
    /// Fewer bytes than a version-1 record.
    TooShort {
        bytes: usize,
    },
    /// Not a millinet telemetry datagram.
    BadMagic,
    UnsupportedVersion(u8),
    /// The rate is not a finite number ≥ 0, or the SINR is NaN or +∞.
    BadValue {
        field: &'static str,
    },
}

impl std::fmt::Display for TelemetryDecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TelemetryDecodeError::TooShort { bytes } => {
                write!(f, "telemetry datagram of {bytes} bytes; a version-{TELEMETRY_VERSION} record has {TELEMETRY_DATAGRAM_BYTES}")
            }
            TelemetryDecodeError::BadMagic => f.write_str("not a millinet telemetry datagram (the first bytes are not \"MNTL\")"),
            TelemetryDecodeError::UnsupportedVersion(v) => write!(f, "telemetry version {v}; this build reads version {TELEMETRY_VERSION}"),
            TelemetryDecodeError::BadValue { field } => write!(f, "telemetry field {field} is out of range"),
        }
    }
}

impl std::error::Error for TelemetryDecodeError {}

impl Telemetry {
    /// The record of the UE at `ue` as a datagram (docs/telemetry.md): network byte order, the
    /// floats as IEEE 754 binary64.
    pub fn encode(&self, ue: std::net::Ipv4Addr) -> [u8; TELEMETRY_DATAGRAM_BYTES] {
        let mut b = [0u8; TELEMETRY_DATAGRAM_BYTES];
        b[0..4].copy_from_slice(&TELEMETRY_MAGIC);
        b[4] = TELEMETRY_VERSION;
        b[5] = if self.outage { FLAG_OUTAGE } else { 0 };
        b[8..12].copy_from_slice(&ue.octets());
        b[12..20].copy_from_slice(&self.t_ns.to_be_bytes());
        b[20..28].copy_from_slice(&self.rlc_bytes.to_be_bytes());
        b[28..36].copy_from_slice(&self.rate_bps.to_bits().to_be_bytes());
        b[36..44].copy_from_slice(&self.sinr_db.to_bits().to_be_bytes());
        b
    }

    /// The UE's address and its record from a datagram. Bytes past the record are ignored (a
    /// later minor version may append fields); flags and reserved bits this version does not
    /// know are ignored too.
    pub fn decode(datagram: &[u8]) -> Result<(std::net::Ipv4Addr, Telemetry), TelemetryDecodeError> {
        if datagram.len() >= 5 && datagram[0..4] == TELEMETRY_MAGIC && datagram[4] != TELEMETRY_VERSION {
            return Err(TelemetryDecodeError::UnsupportedVersion(datagram[4]));
        }
        if datagram.len() < TELEMETRY_DATAGRAM_BYTES {
            return Err(TelemetryDecodeError::TooShort { bytes: datagram.len() });
        }
        if datagram[0..4] != TELEMETRY_MAGIC {
            return Err(TelemetryDecodeError::BadMagic);
        }
        let u64_at = |i: usize| u64::from_be_bytes(datagram[i..i + 8].try_into().expect("8 bytes"));
        let rate_bps = f64::from_bits(u64_at(28));
        let sinr_db = f64::from_bits(u64_at(36));
        if !(rate_bps.is_finite() && rate_bps >= 0.0) {
            return Err(TelemetryDecodeError::BadValue { field: "rate_bps" });
        }
        if sinr_db.is_nan() || sinr_db == f64::INFINITY {
            return Err(TelemetryDecodeError::BadValue { field: "sinr_db" });
        }
        let ue = std::net::Ipv4Addr::new(datagram[8], datagram[9], datagram[10], datagram[11]);
        let record = Telemetry { t_ns: u64_at(12), rlc_bytes: u64_at(20), rate_bps, sinr_db, outage: datagram[5] & FLAG_OUTAGE != 0 };
        Ok((ue, record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const UE: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 1);

    fn record() -> Telemetry {
        Telemetry { t_ns: 1_234_567_890, rlc_bytes: 3_000_000, rate_bps: 2.5e9, sinr_db: f64::NEG_INFINITY, outage: true }
    }

    #[test]
    fn a_record_round_trips_with_its_ue() {
        assert_eq!(Telemetry::decode(&record().encode(UE)), Ok((UE, record())));
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let b = record().encode(UE);
        assert_eq!(&b[0..6], b"MNTL\x01\x01");
        assert_eq!(&b[8..12], &[10, 77, 2, 1]);
        assert_eq!(u64::from_be_bytes(b[20..28].try_into().unwrap()), 3_000_000);
    }

    #[test]
    fn each_kind_of_bad_datagram_is_named() {
        let good = record().encode(UE);
        assert_eq!(Telemetry::decode(&good[..43]), Err(TelemetryDecodeError::TooShort { bytes: 43 }));
        let mut other = good;
        other[0] = b'X';
        assert_eq!(Telemetry::decode(&other), Err(TelemetryDecodeError::BadMagic));
        let mut newer = good;
        newer[4] = 2;
        assert_eq!(Telemetry::decode(&newer[..10]), Err(TelemetryDecodeError::UnsupportedVersion(2)));
        for (field, at, value) in [("rate_bps", 28, f64::NAN), ("rate_bps", 28, -1.0), ("sinr_db", 36, f64::INFINITY)] {
            let mut bad = good;
            bad[at..at + 8].copy_from_slice(&value.to_bits().to_be_bytes());
            assert_eq!(Telemetry::decode(&bad), Err(TelemetryDecodeError::BadValue { field }));
        }
        let mut longer = good.to_vec();
        longer.extend_from_slice(&[0xff; 8]);
        assert_eq!(Telemetry::decode(&longer), Ok((UE, record())), "appended fields of a later minor version are ignored");
    }
}
