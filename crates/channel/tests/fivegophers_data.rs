//! The real 5Gophers car-driving traces (tests/data/5gophers, CC BY 4.0, see
//! the README there) convert without error, and the converted series agree
//! with the numbers in the files.

use std::path::PathBuf;

use millinet_channel::traces::{load_5gophers, CapacitySeries, Carrier, GapFill};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/5gophers").join(name)
}

/// (seq_num, Verizon Mbit/s) of every row, read independently of the converter.
fn raw_verizon(name: &str) -> Vec<(u64, f64)> {
    let text = std::fs::read_to_string(data(name)).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[5].parse().unwrap())
        })
        .collect()
}

#[test]
fn real_traces_convert_and_match_the_data() {
    for name in ["car-driving-trace-1.csv", "car-driving-trace-2.csv"] {
        let raw = raw_verizon(name);
        let (k0, k_last) = (raw[0].0, raw[raw.len() - 1].0);
        let duration_s = (k_last - k0 + 1) as f64;
        let raw_sum: f64 = raw.iter().map(|r| r.1).sum();
        let raw_mean = raw_sum / raw.len() as f64;
        // The files' own mean: a plausible mmWave drive (the README: 0 to ~1.66 Gbit/s).
        assert!((100.0..=600.0).contains(&raw_mean), "{name}: raw mean {raw_mean} Mbit/s");

        for gaps in [GapFill::Interpolate, GapFill::Hold, GapFill::Zero] {
            let s: CapacitySeries = load_5gophers(&data(name), Carrier::Verizon, gaps).unwrap();
            // Every measured second is reproduced exactly.
            let mut hint = 0;
            for &(k, mbps) in &raw {
                assert_eq!(s.rate_bps_at((k - k0) as f64 + 0.5, &mut hint), mbps * 1e6);
            }
            let mean_mbps = s.mean_rate_bps(duration_s) / 1e6;
            match gaps {
                // Zero-filled gaps add nothing: the mean is the files' sum over the drive.
                GapFill::Zero => assert!((mean_mbps * duration_s - raw_sum).abs() < 1e-6 * raw_sum),
                // Interpolated gaps stay within 15 % of the measured mean (one
                // 7-s gap in 126 s; the ramp across it is what moves the mean).
                GapFill::Interpolate => {
                    assert!((mean_mbps - raw_mean).abs() < 0.15 * raw_mean, "{name}: {mean_mbps} vs {raw_mean}")
                }
                // Holding adds the 6 missing seconds at the rate before the gap.
                GapFill::Hold => {
                    let i = raw.windows(2).position(|w| w[1].0 > w[0].0 + 1).unwrap();
                    let missing = (raw[i + 1].0 - raw[i].0 - 1) as f64;
                    let expected = raw_sum + missing * raw[i].1;
                    assert!((mean_mbps * duration_s - expected).abs() < 1e-6 * expected);
                }
            }
        }
        // Other carriers convert too.
        for c in [Carrier::Sprint, Carrier::TMobile] {
            load_5gophers(&data(name), c, GapFill::default()).unwrap();
        }
    }
}
