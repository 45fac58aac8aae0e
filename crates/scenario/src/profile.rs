//! Named TCP profiles: sets of flow settings a scenario selects with `flows.N.tcp_profile`.
//! A profile's settings replace what the file wrote for that flow (shipped scenarios spell
//! their TCP settings out), a key given with `--set` (or a sweep) still beats them, and the
//! resolved scenario (`millinet show`) spells out every value the profile set, without the
//! profile's name, so that it loads again to the same scenario.

use serde::{Deserialize, Serialize};

use crate::radio::FileDefault;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpProfile {
    /// The schema's own defaults: a modern server (SACK, timestamps, IW 10, cwnd growth only
    /// while cwnd-limited as Linux does, min RTO 200 ms).
    #[default]
    Modern,
    /// The TCP of ns-3 as of 2017, which the original milliProxy evaluation ran on (ns-3.27
    /// and the ns3-mmwave module built on it).
    #[serde(rename = "ns3-2017")]
    Ns3_2017,
}

impl TcpProfile {
    /// The keys this profile sets.
    pub fn flow_settings(self) -> &'static [(&'static str, FileDefault)] {
        match self {
            TcpProfile::Modern => &[],
            TcpProfile::Ns3_2017 => NS3_2017_FLOW_SETTINGS,
        }
    }
}

/// ns-3.27's TcpSocket/TcpSocketBase defaults (docs/scenario-reference.md, "TCP profiles"):
/// - NewReno (TcpNewReno was the default TcpL4Protocol::SocketType);
/// - no SACK: the SACK option came with ns-3.28 (2018);
/// - InitialCwnd 1 segment: ns-3 raised it to 10 only in November 2019;
/// - DelAckCount 2 (an ACK every second segment, DelAckTimeout 200 ms), no quick ACKs;
/// - MinRto 1 s;
/// - cwnd grown on every ACK, whether or not the window limited the sender (no
///   tcp_is_cwnd_limited check in that release);
/// - no undo of a spurious timeout (ns-3 has none; it counts nothing of the kind either);
/// - no HyStart: standard slow start (the 2017 release's TcpCubic had none; the evaluation
///   ran NewReno anyway);
/// - CUBIC as RFC 9438 writes it (the simulator's CUBIC before it followed Linux, which the
///   ns-3 cross-check validated; the evaluation ran NewReno anyway);
/// - no PRR: ns-3.27's recovery set cwnd = ssthresh (TcpPrrRecovery came with ns-3.30);
/// - losses by duplicate ACKs (RFC 6675's IsLost; without SACK RACK-TLP would not run
///   anyway), no tail loss probe: ns-3 has neither RACK nor TLP;
/// - timestamps and window scaling on (both default true), as in the modern profile.
pub const NS3_2017_FLOW_SETTINGS: &[(&str, FileDefault)] = &[
    ("cc", FileDefault::Text("newreno")),
    ("sack", FileDefault::Flag(false)),
    ("initial_window_segments", FileDefault::Whole(1)),
    ("delayed_ack", FileDefault::Text("rfc5681")),
    ("min_rto_s", FileDefault::Number(1.0)),
    ("cwnd_growth", FileDefault::Text("always")),
    ("undo_spurious_rto", FileDefault::Flag(false)),
    ("hystart", FileDefault::Text("off")),
    ("cubic_variant", FileDefault::Text("rfc9438")),
    ("prr", FileDefault::Flag(false)),
    ("loss_detection", FileDefault::Text("rfc6675")),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load_text, CwndGrowthSpec, DelayedAckSpec, FlowSpec};

    const DUMBBELL: &str = include_str!("../../../python/millinet/scenarios/dumbbell.toml");

    /// The dumbbell's flow (which writes out cc, sack, IW, delayed ACKs and min RTO) with
    /// `extra_lines` appended to it.
    fn flow(overrides: &[&str], extra_lines: &str) -> Result<FlowSpec, crate::ConfigError> {
        let overrides: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
        load_text(&format!("{DUMBBELL}{extra_lines}"), "dumbbell.toml", &overrides, None).map(|s| s.flows[0].clone())
    }

    #[test]
    fn the_ns3_2017_profile_sets_that_releases_tcp() {
        let f = flow(&[], "tcp_profile = \"ns3-2017\"\n").unwrap();
        assert_eq!(f.tcp_profile, TcpProfile::Ns3_2017);
        assert_eq!((f.cc.as_str(), f.sack, f.initial_window_segments, f.delayed_ack), ("newreno", false, 1, DelayedAckSpec::Rfc5681));
        assert_eq!((f.min_rto_s, f.cwnd_growth, f.undo_spurious_rto), (1.0, CwndGrowthSpec::Always, false));
        // Chosen with --set as well.
        let g = flow(&["flows.0.tcp_profile=ns3-2017"], "").unwrap();
        assert_eq!((g.sack, g.initial_window_segments, g.cwnd_growth), (false, 1, CwndGrowthSpec::Always));
    }

    #[test]
    fn keys_set_by_an_override_win_over_the_profile_and_the_files_do_not() {
        let f = flow(&["flows.0.cc=bbr", "flows.0.sack=true"], "tcp_profile = \"ns3-2017\"\n").unwrap();
        assert_eq!((f.cc.as_str(), f.sack, f.initial_window_segments, f.delayed_ack), ("bbr", true, 1, DelayedAckSpec::Rfc5681));
    }

    #[test]
    fn the_resolved_scenario_loads_again_to_the_same_one() {
        let overrides = ["flows.0.sack=true".to_string()];
        let text = format!("{DUMBBELL}tcp_profile = \"ns3-2017\"\n");
        let scenario = load_text(&text, "dumbbell.toml", &overrides, None).unwrap();
        let resolved = toml::to_string(&scenario).unwrap();
        assert!(!resolved.contains("tcp_profile") && resolved.contains("initial_window_segments = 1"), "{resolved}");
        let again = load_text(&resolved, "resolved.toml", &[], None).unwrap();
        assert_eq!(toml::to_string(&again).unwrap(), resolved);
        assert!(again.flows[0].sack, "the --set key that beat the profile stays");
    }

    #[test]
    fn the_modern_profile_is_the_schemas_defaults() {
        let (plain, modern) = (flow(&[], "").unwrap(), flow(&[], "tcp_profile = \"modern\"\n").unwrap());
        assert_eq!(format!("{plain:?}"), format!("{modern:?}"));
        assert_eq!((plain.sack, plain.initial_window_segments, plain.cwnd_growth), (true, 10, CwndGrowthSpec::CwndLimited));
        assert!(plain.undo_spurious_rto);
        // The dumbbell writes out delayed_ack; a flow that does not gets Linux's receiver.
        let linux = load_text(&DUMBBELL.replace("delayed_ack = \"off\"\n", ""), "dumbbell.toml", &[], None).unwrap();
        assert_eq!(linux.flows[0].delayed_ack, DelayedAckSpec::Linux);
    }

    #[test]
    fn an_unknown_profile_names_the_line_and_the_profiles_there_are() {
        let e = flow(&[], "tcp_profile = \"ns2\"\n").unwrap_err().to_string();
        assert!(e.contains("dumbbell.toml: line") && e.contains("tcp_profile") && e.contains("ns2"), "{e}");
        assert!(e.contains("modern") && e.contains("ns3-2017"), "{e}");
    }
}
