//! Property test of the TCP pair (issue 20): over random drop, corruption, duplication and
//! delay patterns, with SACK and timestamps on or off, each receiver's ACK timing and sequence numbers
//! anywhere (wrapping included), the stream arrives complete, once and in order.

use millinet_fuzzing::{run_pair, PairSetup};
use millinet_testkit::{Faults, MS};
use millinet_transport::{DelayedAck, TcpConfig};
use proptest::prelude::*;

fn faults() -> impl Strategy<Value = Faults> {
    (0.0..0.2f64, 0.0..0.05f64, 0.0..0.2f64, 0.0..0.5f64, 0u64..100).prop_map(|(drop, corrupt, duplicate, delay, extra_ms)| Faults {
        drop,
        corrupt,
        duplicate,
        delay,
        max_extra_delay_ns: extra_ms * MS,
    })
}

fn config() -> impl Strategy<Value = TcpConfig> {
    let delayed_ack = prop::sample::select(vec![DelayedAck::Off, DelayedAck::Rfc5681, DelayedAck::Linux]);
    (prop::sample::select(vec!["newreno", "cubic", "bbr"]), any::<(bool, bool)>(), delayed_ack, any::<u32>(), 536u32..1460).prop_map(
        |(cc, (sack, timestamps), delayed_ack, iss, mss_bytes)| TcpConfig {
            cc: cc.to_string(),
            sack,
            timestamps,
            delayed_ack,
            iss,
            mss_bytes,
            max_rto_ns: 4_000 * MS,
            ..TcpConfig::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_stream_arrives_complete_once_in_order(
        server in config(),
        client in config(),
        bytes in 1u64..200_000,
        delay_ms in 1u64..40,
        faults in faults(),
        seed in any::<u64>(),
    ) {
        let setup = PairSetup { server, client, bytes, link_delay_ns: delay_ms * MS, faults, seed };
        let outcome = run_pair(&setup);
        prop_assert!(outcome.handshake_abandoned || outcome.delivered_bytes == bytes, "{outcome:?}");
    }
}

/// The faults do happen: a run with every kind at a high rate sees each of them, and still
/// gets its stream through.
#[test]
fn every_fault_kind_happens_and_the_stream_survives() {
    let config = |iss| TcpConfig { cc: "cubic".to_string(), iss, max_rto_ns: 4_000 * MS, ..TcpConfig::default() };
    let setup = PairSetup {
        server: config(u32::MAX - 10_000),
        client: config(7),
        bytes: 300_000,
        link_delay_ns: 5 * MS,
        faults: Faults { drop: 0.1, corrupt: 0.05, duplicate: 0.1, delay: 0.3, max_extra_delay_ns: 30 * MS },
        seed: 20,
    };
    let outcome = run_pair(&setup);
    assert_eq!(outcome.delivered_bytes, 300_000);
    let c = outcome.counts;
    assert!(c.dropped > 0 && c.corrupted > 0 && c.duplicated > 0 && c.delayed > 0, "{c:?}");
}
