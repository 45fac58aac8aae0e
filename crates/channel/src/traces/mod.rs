//! Trace files (docs/models/channel.md §10): SINR and capacity CSVs, Mahimahi link
//! traces, and the 5Gophers measurement CSVs.
//!
//! Each parser takes the text and a file name for its messages (the caller
//! reads the file) and stops at the first bad line with its number, the bad
//! value and what was expected; `load_*` helpers read the file first. No
//! input makes a parser panic.

mod capacity;
mod csv;
mod error;
mod fivegophers;
mod mahimahi;
mod sinr;

pub use capacity::{load_capacity_csv, parse_capacity_csv, CapacitySeries};
pub use error::TraceError;
pub use fivegophers::{load_5gophers, parse_5gophers, Carrier, GapFill};
pub use mahimahi::{
    load_mahimahi, load_mahimahi_opportunities, parse_mahimahi, parse_mahimahi_opportunities, to_mahimahi, MahimahiTrace,
    MAHIMAHI_PACKET_BITS,
};
pub use sinr::{load_sinr_csv, parse_sinr_csv, SinrSeries, SinrTrace};

/// A capacity trace by its file name: a Mahimahi link trace (`.mahimahi`, `.up`, `.down`:
/// its delivery opportunities counted per millisecond, so each millisecond's rate carries
/// exactly that millisecond's opportunities) or a capacity CSV (anything else).
pub fn load_capacity_trace(path: &std::path::Path) -> Result<CapacitySeries, TraceError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("mahimahi" | "up" | "down") => load_mahimahi(path, std::num::NonZeroU32::MIN),
        _ => load_capacity_csv(path),
    }
}

/// Index of the last time ≤ `t` in the sorted `times` (0 if `t` is before
/// the first). `hint` is the previous answer: for non-decreasing `t` the
/// search walks forward from it (O(1) amortised), otherwise it bisects.
pub(crate) fn locate(times: &[f64], t: f64, hint: &mut usize) -> usize {
    if *hint >= times.len() || times[*hint] > t {
        *hint = times.partition_point(|&x| x <= t).saturating_sub(1);
    }
    while *hint + 1 < times.len() && times[*hint + 1] <= t {
        *hint += 1;
    }
    *hint
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    #[test]
    fn locate_forward_and_back() {
        let t = [0.0, 1.0, 1.0, 3.0];
        let mut h = 0;
        assert_eq!(locate(&t, -1.0, &mut h), 0);
        assert_eq!(locate(&t, 0.5, &mut h), 0);
        assert_eq!(locate(&t, 1.0, &mut h), 2);
        assert_eq!(locate(&t, 10.0, &mut h), 3);
        assert_eq!(locate(&t, 0.2, &mut h), 0);
        assert_eq!(locate(&t, 2.0, &mut h), 2);
    }

    #[test]
    fn no_input_panics() {
        let nasty = [
            "",
            "\n",
            ",",
            ",,,",
            "\u{feff}",
            "time_s,rate_bps\r\n0,1\r\n",
            "\u{feff}time_s,sinr_db\n0,1\n",
            "time_s,sinr_db\n1e999,1\n",
            "time_s,sinr_db\nNaN,1\n",
            "time_s,sinr_db\n0,inf\n",
            "time_s,rate_bps\n0,-0\n",
            "time_s,sinr_db,cell\n0,1,é\n0,2,é\n",
            "99999999999999999999999\n",
            "18446744073709551615\n",
            "1\n18446744073709551615\n",
            "0\n",
            "\u{0}\u{1}\u{2}",
            "protocol,seq_num,Verizon_throughput_mbps\nTCP,18446744073709551615,1\n",
            "protocol,seq_num,Verizon_throughput_mbps\nTCP,0,1\nTCP,18446744073709551615,2\n",
        ];
        for text in nasty {
            let _ = parse_sinr_csv(text, "f");
            let _ = parse_capacity_csv(text, "f");
            let _ = parse_mahimahi(text, "f", NonZeroU32::MIN);
            let _ = parse_mahimahi(text, "f", NonZeroU32::MAX);
            for gaps in [GapFill::Zero, GapFill::Hold, GapFill::Interpolate] {
                let _ = parse_5gophers(text, "f", Carrier::Verizon, gaps);
            }
        }
        assert!(parse_sinr_csv("\u{feff}time_s,sinr_db\n0,1\n", "f").is_ok());
        assert!(parse_capacity_csv("time_s,rate_bps\r\n0,1\r\n", "f").is_ok());
    }
}
