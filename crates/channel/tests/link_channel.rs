//! LinkChannel end to end: determinism, blockage, forced events, traces,
//! carrier presets.

use std::sync::Arc;

use millinet_channel::blockage::BlockageConfig;
use millinet_channel::link::LinkAbstraction;
use millinet_channel::pathloss::PathLoss;
use millinet_channel::sinr::{beamforming_gain_db, noise_dbm};
use millinet_channel::traces::{CapacitySeries, SinrSeries};
use millinet_channel::{
    Building, FadingConfig, ForcedEvent, ForcedKind, Indoor, LinkChannel, LinkConfig, LinkRngs, MobilityConfig, O2iModel, ObstacleDraw,
    Point2, Rect, Scenario,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

const MS: u64 = 1_000_000;
const SLOT: u64 = 125_000;

fn rngs(seed: u64) -> LinkRngs {
    LinkRngs::from_stream(Xoshiro256PlusPlus::seed_from_u64(seed))
}

/// The `milliproxy` reference scenario: UE from (0,0) to (50,0) at 5 m/s,
/// gNB at (25,100), 3 random 5–15 m × 2–10 m obstacles between them.
fn milliproxy(seed: u64) -> (Vec<Rect>, LinkConfig) {
    let draw = ObstacleDraw {
        region: Rect::from_corners(Point2::new(0.0, 10.0), Point2::new(50.0, 90.0), None),
        count: 3,
        width_m: (5.0, 15.0),
        depth_m: (2.0, 10.0),
        height_m: None,
    };
    let obstacles = draw.draw(&mut Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0b57)).unwrap();
    let config = LinkConfig {
        cell_position: Point2::new(25.0, 100.0),
        mobility: MobilityConfig::Route { waypoints: vec![Point2::new(0.0, 0.0), Point2::new(50.0, 0.0)], speed_mps: 5.0 },
        blockage: BlockageConfig::Geometric { obstacles: Arc::from(obstacles.clone()) },
        fading: Some(FadingConfig::default()),
        ..LinkConfig::default()
    };
    (obstacles, config)
}

fn series(seed: u64) -> (Vec<Rect>, Vec<u64>, usize) {
    let (obstacles, config) = milliproxy(seed);
    let mut ch = LinkChannel::new(&config, rngs(seed)).unwrap();
    let mut nlos = 0;
    let bits = (0..80_000u64)
        .map(|i| {
            let s = ch.state(i * SLOT);
            nlos += usize::from(!s.los);
            s.sinr_db.to_bits()
        })
        .collect();
    (obstacles, bits, nlos)
}

#[test]
fn same_seed_same_series_other_seed_other_obstacles() {
    let (o1, s1, _) = series(1);
    let (o1b, s1b, _) = series(1);
    assert_eq!(o1, o1b);
    assert_eq!(s1, s1b);
    let (o2, s2, _) = series(2);
    assert_ne!(o1, o2);
    assert_ne!(s1, s2);
    // Across seeds the route sees both states.
    let nlos: usize = (1..20).map(|s| series(s).2).sum();
    assert!(nlos > 0 && nlos < 19 * 80_000, "{nlos}");
}

#[test]
fn los_sinr_matches_the_budget_and_blocked_is_nlos() {
    // Static UE at 100 m ground distance, no shadowing, no fading.
    let base = LinkConfig { mobility: MobilityConfig::Static(Point2::new(100.0, 0.0)), shadowing: false, ..LinkConfig::default() };
    let pl = PathLoss::new(Scenario::UmiStreetCanyon, 28.0, 10.0, 1.5);
    let budget = 30.0 + beamforming_gain_db(64, 16) - noise_dbm(1e9, 7.0);
    let mut ch = LinkChannel::new(&base, rngs(0)).unwrap();
    let s = ch.state(0);
    assert!(s.los && !s.outage);
    assert!((s.sinr_db - (budget - pl.db(true, 100.0))).abs() < 1e-9);

    let wall = Rect::from_corners(Point2::new(50.0, -5.0), Point2::new(52.0, 5.0), None);
    let blocked = LinkConfig { blockage: BlockageConfig::Geometric { obstacles: Arc::from(vec![wall]) }, ..base.clone() };
    let s = LinkChannel::new(&blocked, rngs(0)).unwrap().state(0);
    assert!(!s.los);
    assert!((s.sinr_db - (budget - pl.db(false, 100.0))).abs() < 1e-9);

    // Indoor behind a façade (no building modelled): the O2I loss comes off the SINR.
    let indoor = LinkConfig { indoor: Indoor::BehindFacade { distance_m: 5.0 }, ..base.clone() };
    let s_in = LinkChannel::new(&indoor, rngs(0)).unwrap().state(0);
    let o2i = O2iModel::LowLoss.loss_db(28.0, 5.0);
    assert!((ch.state(1).sinr_db - s_in.sinr_db - o2i).abs() < 1e-9);
}

#[test]
fn an_indoor_ue_in_a_building_is_nlos_with_its_o2i_loss() {
    // The cell at the origin, a high-loss building from x = 90 m to 120 m, the UE inside at
    // (100, 5): its path to the cell leaves the building at x = 90, 10/100 of the way from the
    // UE, so the indoor distance is a tenth of d2D. No obstacle list: only the building makes
    // the link NLOS.
    let footprint = Rect::from_corners(Point2::new(90.0, -20.0), Point2::new(120.0, 20.0), Some(30.0));
    let buildings: Arc<[Building]> = Arc::from(vec![Building { footprint, o2i: O2iModel::HighLoss }]);
    let walk = MobilityConfig::Route { waypoints: vec![Point2::new(100.0, 5.0), Point2::new(70.0, 5.0)], speed_mps: 10.0 };
    let cfg = LinkConfig { mobility: walk, shadowing: false, indoor: Indoor::InBuildings(buildings), ..LinkConfig::default() };
    let mut ch = LinkChannel::new(&cfg, rngs(0)).unwrap();
    let pl = PathLoss::new(Scenario::UmiStreetCanyon, 28.0, 10.0, 1.5);
    let budget = 30.0 + beamforming_gain_db(64, 16) - noise_dbm(1e9, 7.0);
    let d2d = 100f64.hypot(5.0);
    let d_in = d2d / 10.0;
    // High-loss façade at 28 GHz (TR 38.901 Table 7.4.3-2): L_IIRglass = 23 + 0.3·28, L_concrete
    // = 5 + 4·28, through a 70/30 mix; 0.5 dB per metre inside.
    let through_wall = 5.0 - 10.0 * (0.7 * 10f64.powf(-(23.0 + 8.4) / 10.0) + 0.3 * 10f64.powf(-(5.0 + 112.0) / 10.0)).log10();
    let s = ch.state(0);
    assert!(!s.los);
    assert!((s.sinr_db - (budget - pl.db(false, d2d) - through_wall - 0.5 * d_in)).abs() < 1e-9, "{}", s.sinr_db);
    // Two seconds later the UE has walked out (x = 80 m): outdoors, LOS, no O2I loss.
    let s = ch.state(2_000 * MS);
    assert!(s.los);
    assert!((s.sinr_db - (budget - pl.db(true, 80f64.hypot(5.0)))).abs() < 1e-9);
}

#[test]
fn forced_events_overlay_any_model() {
    let cfg = LinkConfig {
        mobility: MobilityConfig::Static(Point2::new(60.0, 0.0)),
        blockage: BlockageConfig::Markov { lambda_per_s: 0.5 },
        forced_events: vec![
            ForcedEvent { start_ns: 1000 * MS, duration_ns: 400 * MS, kind: ForcedKind::Outage },
            ForcedEvent { start_ns: 2000 * MS, duration_ns: 1000 * MS, kind: ForcedKind::Nlos },
        ],
        ..LinkConfig::default()
    };
    let mut ch = LinkChannel::new(&cfg, rngs(3)).unwrap();
    for t in (0..4000 * MS).step_by(SLOT as usize) {
        let s = ch.state(t);
        if (1000 * MS..1400 * MS).contains(&t) {
            assert!(s.outage && s.sinr_db == f64::NEG_INFINITY);
        } else {
            assert!(s.sinr_db.is_finite());
        }
        if (2000 * MS..3000 * MS).contains(&t) {
            assert!(!s.los);
        }
    }
    // NLOS is meaningless on a trace.
    let trace = LinkConfig { blockage: BlockageConfig::SinrTrace(Arc::new(SinrSeries::from_points(&[(0.0, 10.0)]).unwrap())), ..cfg };
    let e = LinkChannel::new(&trace, rngs(3)).unwrap_err();
    assert_eq!(e.field, "forced_events");
}

#[test]
fn markov_link_runs_at_the_3gpp_los_fraction() {
    // 2 000 s at λ = 1/s on a static UE 60 m away: within 5 % of P_LOS.
    let cfg = LinkConfig {
        mobility: MobilityConfig::Static(Point2::new(60.0, 0.0)),
        blockage: BlockageConfig::Markov { lambda_per_s: 1.0 },
        ..LinkConfig::default()
    };
    let mut ch = LinkChannel::new(&cfg, rngs(8)).unwrap();
    let n = 200_000u64;
    let los = (0..n).filter(|i| ch.state(i * 10 * MS).los).count() as f64 / n as f64;
    let p = millinet_channel::los_probability::los_probability(Scenario::UmiStreetCanyon, 60.0, 1.5);
    assert!((los - p).abs() < 0.05 * p, "{los} vs {p}");
}

#[test]
fn traces_drive_the_link() {
    let sinr = SinrSeries::from_points(&[(0.0, 0.0), (1.0, 10.0), (2.0, -8.0)]).unwrap();
    let cfg = LinkConfig { blockage: BlockageConfig::SinrTrace(Arc::new(sinr)), ..LinkConfig::default() };
    let mut ch = LinkChannel::new(&cfg, rngs(0)).unwrap();
    assert_eq!(ch.sinr_db(500 * MS), 5.0);
    let s = ch.state(2000 * MS);
    assert!(s.outage && s.sinr_db == -8.0);

    // A capacity trace is reproduced by the link abstraction, except 0 = outage.
    let cap = CapacitySeries::from_points(&[(0.0, 50e6), (1.0, 1.2e9), (2.0, 0.0), (3.0, 9e9)]).unwrap();
    let cfg = LinkConfig { blockage: BlockageConfig::CapacityTrace(Arc::new(cap)), ..LinkConfig::default() };
    let mut ch = LinkChannel::new(&cfg, rngs(0)).unwrap();
    let link: LinkAbstraction = *ch.link();
    for (t, rate) in [(0.5, 50e6), (1.5, 1.2e9)] {
        let s = ch.state((t * 1e9) as u64);
        assert!(!s.outage);
        assert!((link.rate_for(&s) - rate).abs() < 1e-3 * rate, "{t}: {}", link.rate_for(&s));
    }
    let s = ch.state(2500 * MS);
    assert!(s.outage && link.rate_for(&s) == 0.0);
    // Above the peak rate the link is capped at 3.2 Gbit/s.
    let s = ch.state(3500 * MS);
    assert!((link.rate_for(&s) - 3.2e9).abs() < 1.0);
}

#[test]
fn carrier_presets() {
    let lte = LinkConfig { mobility: MobilityConfig::Static(Point2::new(300.0, 0.0)), ..LinkConfig::lte() };
    let mut ch = LinkChannel::new(&lte, rngs(1)).unwrap();
    let s = ch.state(0);
    assert!((ch.link().peak_rate_bps() - 150e6).abs() < 1.0);
    assert!(ch.link().rate_for(&s) > 100e6, "{:?}", s);
    // Obstacles do not switch LTE to NLOS propagation: 0 dB penetration loss.
    let wall = Rect::from_corners(Point2::new(100.0, -5.0), Point2::new(110.0, 5.0), None);
    let blocked = LinkConfig { blockage: BlockageConfig::Geometric { obstacles: Arc::from(vec![wall]) }, ..lte };
    let sb = LinkChannel::new(&blocked, rngs(1)).unwrap().state(0);
    assert!(!sb.los);
    assert_eq!(sb.sinr_db, s.sinr_db);

    let mm73 = LinkChannel::new(&LinkConfig::mmwave_73ghz(), rngs(1)).unwrap();
    assert!((mm73.link().peak_rate_bps() - 6.4e9).abs() < 1.0);
}

#[test]
fn bad_config_is_reported_not_panicked() {
    let e = LinkChannel::new(&LinkConfig { fc_ghz: 0.0, ..LinkConfig::default() }, rngs(0)).unwrap_err();
    assert_eq!(e.to_string(), "fc_ghz = 0.0: expected a finite number > 0");
    let e = LinkChannel::new(&LinkConfig { geometry_step_ns: 20 * MS, ..LinkConfig::default() }, rngs(0)).unwrap_err();
    assert_eq!(e.field, "geometry_step_ns");
    let e = LinkChannel::new(&LinkConfig { blockage: BlockageConfig::Markov { lambda_per_s: 0.0 }, ..LinkConfig::default() }, rngs(0))
        .unwrap_err();
    assert_eq!(e.field, "blockage.lambda_per_s");
}

#[test]
fn links_can_move_between_threads() {
    // Sweeps run independent simulations on worker threads.
    fn assert_send<T: Send>() {}
    assert_send::<LinkChannel>();
}

#[test]
fn time_going_back_returns_the_latest_state() {
    let (_, cfg) = milliproxy(4);
    let mut ch = LinkChannel::new(&cfg, rngs(4)).unwrap();
    let later = ch.state(5000 * MS);
    assert_eq!(ch.state(10 * MS), later);
}
