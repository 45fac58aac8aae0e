//! Property test of RLC AM (issue 20): under any interleaving of arrivals, transmissions,
//! HARQ outcomes (TBs decoded or given up, in any order) and timers, every SDU the buffer
//! accepted reaches PDCP once and in order; the only SDUs that never do are those the full
//! buffer refused.

use proptest::prelude::*;

use super::tests::{sdu, Collect, MS};
use super::*;

#[derive(Clone, Debug)]
enum Op {
    /// An SDU of this many bytes arrives from PDCP.
    Enqueue(u32),
    /// MAC asks for a TB of this many bytes; it goes into HARQ.
    Send(u32),
    /// HARQ is done with one of the TBs in flight (chosen by index): decoded, or given up.
    Resolve { pick: usize, lost: bool },
    /// Milliseconds pass; the timers run.
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (28u32..3_000).prop_map(Op::Enqueue),
        3 => (1u32..4_000).prop_map(Op::Send),
        3 => (any::<usize>(), prop::bool::weighted(0.3)).prop_map(|(pick, lost)| Op::Resolve { pick, lost }),
        1 => (0u64..30).prop_map(Op::Wait),
    ]
}

/// Small, so that the buffer overflows now and then.
const LIMIT_BYTES: u64 = 12_000;
/// Clean TBs the drain may need: the retransmissions of everything still outstanding.
const DRAIN_ROUNDS: usize = 10_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn am_delivers_every_accepted_sdu_once_in_order(ops in prop::collection::vec(op(), 1..300)) {
        let mut e = RlcEntity::new(&UeConfig { rlc_mode: RlcMode::Am, ..UeConfig::default() }, LIMIT_BYTES);
        let mut sink = Collect::default();
        let (mut accepted, mut refused) = (Vec::new(), 0);
        let mut in_harq: Vec<Vec<Segment>> = Vec::new();
        let mut now_ns = 0;
        for (count, op) in ops.into_iter().enumerate() {
            match op {
                Op::Enqueue(bytes) => {
                    if e.enqueue(sdu(count as u64, bytes)) {
                        accepted.push(count as u64);
                    } else {
                        refused += 1;
                    }
                }
                Op::Send(budget) => {
                    let mut tb = Vec::new();
                    e.build_tb(now_ns, budget, None, &mut tb, &mut sink);
                    if !tb.is_empty() {
                        in_harq.push(tb);
                    }
                }
                Op::Resolve { pick, lost } if !in_harq.is_empty() => {
                    let tb = in_harq.remove(pick % in_harq.len());
                    if lost {
                        e.on_lost(now_ns, &tb);
                    } else {
                        e.on_received(now_ns, &tb, &mut sink);
                    }
                }
                Op::Resolve { .. } => {}
                Op::Wait(ms) => {
                    now_ns += ms * MS;
                    e.on_timers(now_ns, &mut sink);
                }
            }
            prop_assert!(accepted.starts_with(&sink.delivered), "delivered {:?}, accepted {:?}", sink.delivered, accepted);
        }
        // Then a clean channel: HARQ delivers what it holds, every TB is decoded.
        for tb in in_harq.drain(..) {
            e.on_received(now_ns, &tb, &mut sink);
        }
        let mut rounds = 0;
        while !e.is_idle() && rounds < DRAIN_ROUNDS {
            now_ns += MS;
            e.on_timers(now_ns, &mut sink);
            let mut tb = Vec::new();
            e.build_tb(now_ns, 4_000, None, &mut tb, &mut sink);
            e.on_received(now_ns, &tb, &mut sink);
            rounds += 1;
        }
        prop_assert!(e.is_idle(), "still busy after {} clean TBs", DRAIN_ROUNDS);
        prop_assert_eq!(&sink.delivered, &accepted, "{} refused by the full buffer", refused);
        prop_assert!(sink.dropped.is_empty(), "AM dropped {:?}", sink.dropped);
    }
}
