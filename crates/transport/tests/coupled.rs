//! Two subflows built by one congestion-control factory observe one shared state: each
//! publishes its cwnd and smoothed RTT, and each sees the other's (what MP-TCP's coupled
//! LIA/OLIA/BALIA need, RFC 6356 §3). A second factory is a second, separate connection.

mod common;

use std::cell::RefCell;

use common::*;
use millinet_transport::cc::newreno::NewReno;
use millinet_transport::cc::{
    AckSample, CcFactory, CcInit, CongestionControl, CongestionEvent, Constructor, CubicVariant, HystartMode, SubflowHandle, SubflowView,
    Window,
};
use millinet_transport::{ConnectionParts, DelayedAck, TcpConfig, TcpConnection};

thread_local! {
    /// (observer's subflow id, other subflow's id, the other's srtt) for every ACK.
    static OBSERVED: RefCell<Vec<(usize, usize, u64)>> = const { RefCell::new(Vec::new()) };
}

/// NewReno's window, published to the shared set on every ACK; records what it sees of the
/// other subflows (a stand-in for a coupled increase rule, which reads the same figures).
struct Publishing {
    window: NewReno,
    subflow: SubflowHandle,
}

fn construct(init: &CcInit, subflow: SubflowHandle) -> Box<dyn CongestionControl> {
    Box::new(Publishing { window: NewReno::new(init), subflow })
}

impl CongestionControl for Publishing {
    fn on_ack(&mut self, ack: &AckSample) {
        self.window.on_ack(ack);
        self.subflow.publish(SubflowView { cwnd_bytes: self.window.cwnd_bytes(), srtt_ns: ack.srtt_ns, ..SubflowView::default() });
        let own = self.subflow.id();
        let others: Vec<(usize, usize, u64)> =
            self.subflow.subflows().iter().filter(|(id, _)| *id != own).map(|(id, view)| (own, id, view.srtt_ns)).collect();
        OBSERVED.with(|o| o.borrow_mut().extend(others));
    }
    fn on_congestion_event(&mut self, kind: CongestionEvent, now_ns: u64, flight_size_bytes: u64) {
        self.window.on_congestion_event(kind, now_ns, flight_size_bytes);
    }
    fn on_recovery_exit(&mut self, now_ns: u64) {
        self.window.on_recovery_exit(now_ns);
    }
    fn undo(&mut self, prior: Window) {
        self.window.undo(prior);
    }
    fn cwnd_bytes(&self) -> u64 {
        self.window.cwnd_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.window.ssthresh_bytes()
    }
}

/// A short queue: at most 2.8 ms of queueing at 20 Mbit/s.
const QUEUE_PACKETS: usize = 5;

/// One subflow: a sender built by `factory` over a path with this one-way delay, so its
/// RTT is twice that delay plus at most 2.8 ms.
fn subflow(factory: &CcFactory, one_way_ns: u64) -> Harness {
    // An ACK per segment keeps each RTT at the path's (a delayed ACK would add up to 40 ms).
    let cfg = TcpConfig { delayed_ack: DelayedAck::Off, ..TcpConfig::default() };
    let parts = ConnectionParts { cc: factory.clone(), hooks: None };
    let server = TcpConnection::listen_with(cfg.clone(), parts, SERVER).expect("config");
    let mut syn = Vec::new();
    let client = TcpConnection::connect(cfg.clone(), CLIENT, SERVER, 0, &mut syn).expect("config");
    // 2 MB at 20 Mbit/s: 0.8 s, so the two transfers overlap.
    let down = Link::new(one_way_ns).with_rate(20_000_000, QUEUE_PACKETS);
    Harness::with_connections(server, cfg.iss, client, syn, down, Link::new(one_way_ns), 2_000_000, true)
}

#[test]
fn two_subflows_built_by_one_factory_observe_one_shared_state() {
    OBSERVED.with(|o| o.borrow_mut().clear());
    let factory = CcFactory::new(Constructor::Coupled(construct));
    let mut fast = subflow(&factory, 10 * MS);
    let mut slow = subflow(&factory, 40 * MS);
    // Both run side by side, one millisecond at a time.
    let mut t = 0;
    while (fast.delivered_bytes() < 2_000_000 || slow.delivered_bytes() < 2_000_000) && t < 20_000 * MS {
        t += MS;
        fast.run_until(t, |_| false);
        slow.run_until(t, |_| false);
    }
    assert_eq!((fast.delivered_bytes(), slow.delivered_bytes()), (2_000_000, 2_000_000));

    // The set holds exactly the two live subflows (the placeholder algorithms built before
    // the handshakes left it), with each one's latest figures.
    let views: Vec<(usize, SubflowView)> = factory.subflows().iter().collect();
    assert_eq!(views.len(), 2, "{views:?}");
    let cwnds: Vec<u64> = views.iter().map(|(_, v)| v.cwnd_bytes).collect();
    assert_eq!(factory.subflows().total_cwnd_bytes(), cwnds.iter().sum::<u64>());
    let mut own_cwnds = vec![fast.server.stats().cwnd_bytes, slow.server.stats().cwnd_bytes];
    own_cwnds.sort_unstable();
    let mut published = cwnds.clone();
    published.sort_unstable();
    assert_eq!(published, own_cwnds);

    // Each subflow saw the other's RTT: 20 ms and 80 ms, plus a little queueing.
    let observed = OBSERVED.with(|o| o.borrow().clone());
    let (a, b) = (views[0].0, views[1].0);
    let last_seen = |observer: usize, other: usize| observed.iter().rev().find(|o| o.0 == observer && o.1 == other).map(|o| o.2);
    let (seen_by_a, seen_by_b) = (last_seen(a, b).expect("a saw b"), last_seen(b, a).expect("b saw a"));
    let (fast_seen, slow_seen) = if seen_by_a < seen_by_b { (seen_by_a, seen_by_b) } else { (seen_by_b, seen_by_a) };
    assert!((20 * MS..24 * MS).contains(&fast_seen), "fast subflow's srtt as seen by the other: {fast_seen}");
    assert!((80 * MS..84 * MS).contains(&slow_seen), "slow subflow's srtt as seen by the other: {slow_seen}");
}

#[test]
fn separate_factories_are_separate_connections() {
    let (one, other) = (CcFactory::new(Constructor::Coupled(construct)), CcFactory::new(Constructor::Coupled(construct)));
    let init = CcInit { mss_bytes: 1000, initial_cwnd_bytes: 10_000, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
    let _subflows = (one.build(&init), one.build(&init), other.build(&init));
    assert_eq!(one.subflows().iter().count(), 2);
    assert_eq!(other.subflows().iter().count(), 1);
}
