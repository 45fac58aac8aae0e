//! Transport tests 2–4: fast retransmit threshold, RFC 6675 SACK recovery, NewReno window
//! halving and RFC 6582 partial ACKs (both variants), RTO backoff and bounds, Eifel.

mod common;

use common::*;
use millinet_transport::cc::HystartMode;
use millinet_transport::{DelayedAck, LossDetection, NewRenoVariant, TcpConfig, TcpStats};
use millinet_wire::TcpFlags;

const MSS: u64 = 1400;

fn cfg(cc: &str, sack: bool) -> TcpConfig {
    config(cc, sack, DelayedAck::Off)
}

/// `segments` full segments (within the initial window of 10) with the given ones dropped.
fn flight(cc: &str, sack: bool, segments: u64, dropped: &[u64]) -> Harness {
    let offsets: Vec<u64> = dropped.iter().map(|k| k * MSS).collect();
    let server_cfg = cfg(cc, sack);
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&offsets, server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg(cc, sack), down, Link::new(10 * MS), segments * MSS, false).recording();
    assert!(h.run_to_completion(60_000 * MS), "transfer completes");
    run_until_acked(&mut h);
    h
}

/// Also lets the last ACK reach the server.
fn run_until_acked(h: &mut Harness) {
    let total = h.app_bytes();
    assert!(h.run_until(h.now_ns() + 60_000 * MS, |h| h.server.stats().acked_bytes >= total));
}

fn retransmitted_offsets(h: &Harness) -> Vec<u64> {
    let mut seen = std::collections::HashSet::new();
    h.server_data().filter(|s| !seen.insert(h.offset_of(&s.packet))).map(|s| h.offset_of(&s.packet) / MSS).collect()
}

/// `flight` with the given loss detection.
fn flight_detecting(loss_detection: LossDetection, segments: u64, dropped: &[u64]) -> Harness {
    let offsets: Vec<u64> = dropped.iter().map(|k| k * MSS).collect();
    let server_cfg = TcpConfig { loss_detection, ..cfg("newreno", true) };
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&offsets, server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg("newreno", true), down, Link::new(10 * MS), segments * MSS, false).recording();
    assert!(h.run_to_completion(60_000 * MS), "transfer completes");
    run_until_acked(&mut h);
    h
}

/// When the server sent data for the `n`-th time (0: first).
fn data_sent_at_ns(h: &Harness, offset: u64, n: usize) -> u64 {
    h.server_data().filter(|s| h.offset_of(&s.packet) == offset).nth(n).expect("sent").time_ns
}

#[test]
fn three_duplicate_acks_trigger_fast_retransmit_two_do_not() {
    for sack in [false, true] {
        // Segment 0 lost, 2 segments behind it: 2 duplicate ACKs, so only the RTO recovers
        // (RFC 6675's rule; RACK, the default with SACK, is tested below).
        let flight = |cc, sack, segments, dropped: &[u64]| match sack {
            true => flight_detecting(LossDetection::Rfc6675, segments, dropped),
            false => flight(cc, sack, segments, dropped),
        };
        let h = flight("newreno", sack, 3, &[0]);
        let s = h.server.stats();
        assert_eq!((s.fast_retransmits, s.rtos), (0, 1), "sack={sack}: 2 dupacks");
        // 3 segments behind it: the third duplicate ACK triggers fast retransmit.
        let h = flight("newreno", sack, 4, &[0]);
        let s = h.server.stats();
        assert_eq!((s.fast_retransmits, s.rtos, s.retransmitted_segments), (1, 0, 1), "sack={sack}: 3 dupacks");
        assert_eq!(retransmitted_offsets(&h), vec![0]);
        // It happened one RTT after the flight, long before the 1 s initial-based RTO.
        assert!(h.delivered_at_ns().expect("done") < 100 * MS, "sack={sack}");
    }
}

#[test]
fn sack_recovery_retransmits_the_holes_once_and_exits() {
    let mut h = flight("newreno", true, 10, &[0, 5]);
    let s = h.server.stats().clone();
    assert_eq!((s.fast_retransmits, s.rtos), (1, 0), "one recovery episode for two losses in a window");
    assert_eq!(retransmitted_offsets(&h), vec![0, 5], "only the holes are retransmitted");
    // RFC 6675 (4.2): ssthresh = cwnd = FlightSize / 2 (10 segments in flight).
    assert_eq!((s.ssthresh_bytes, s.cwnd_bytes, s.bytes_in_flight), (5 * MSS, 5 * MSS, 0));
    // Recovery ended: more data is sent and cwnd grows again (congestion avoidance).
    h.server_send(40 * MSS);
    assert!(h.run_to_completion(60_000 * MS));
    run_until_acked(&mut h);
    let s = h.server.stats();
    assert!(s.cwnd_bytes > 5 * MSS, "cwnd grows after recovery: {}", s.cwnd_bytes);
    assert_eq!((s.fast_retransmits, s.retransmitted_segments), (1, 2));
}

#[test]
fn a_lost_retransmission_is_repaired_without_a_timeout_and_lowers_the_window_once_more() {
    // 200 segments from a 40-segment initial window; segments 5 and 30 and their first
    // retransmissions are dropped. New data sent after the retransmissions is SACKed and
    // reveals that they were lost (RFC 8985 §6.2): second retransmissions, no RTO.
    let mut server_cfg = cfg("newreno", true);
    server_cfg.initial_window_segments = 40;
    let down = Link::new(10 * MS).with_filter(drop_first_transmissions_of(&[5 * MSS, 30 * MSS], 2, server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg("newreno", true), down, Link::new(10 * MS), 200 * MSS, false).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let s = h.server.stats();
    assert_eq!((s.fast_retransmits, s.rtos, s.retransmitted_segments), (1, 0, 4));
    let times = retransmission_times(&h, 5 * MSS);
    assert_eq!(times.len(), 2, "retransmitted twice");
    // The second retransmission follows the first within a few RTTs (20 ms each; the
    // lowered window delays it), far below the 1 s minimum RTO.
    let gap_ns = times[1] - times[0];
    assert!((20 * MS..=60 * MS).contains(&gap_ns), "second retransmission {gap_ns} ns after the first");
    // RFC 5681 §4.3: the lost retransmissions lower ssthresh a second time — once, as both
    // were sent before that reduction.
    let ssthresh_at = |t: u64| h.server_log().iter().take_while(|e| e.time_ns <= t).last().unwrap().stats.ssthresh_bytes;
    let first = ssthresh_at(times[0]);
    assert_eq!(ssthresh_at(times[1]), first / 2);
    assert_eq!(s.ssthresh_bytes, first / 2, "not lowered a third time");
}

#[test]
fn sacked_data_beyond_a_stuck_hole_does_not_raise_ssthresh() {
    // Segment 5 is always dropped: recovery cannot end, new data keeps being SACKed
    // beyond it until the RTO. FlightSize (SND.NXT − SND.UNA) is then far above cwnd;
    // RFC 5681 §3.1 allows no more than FlightSize / 2 and the sender uses cwnd / 2.
    let mut server_cfg = cfg("newreno", true);
    server_cfg.initial_window_segments = 40;
    let down = Link::new(10 * MS).with_filter(drop_first_transmissions_of(&[5 * MSS], 100, server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg("newreno", true), down, Link::new(10 * MS), 2000 * MSS, false).recording();
    assert!(h.run_until(60_000 * MS, |h| h.server.stats().rtos == 1));
    let at_rto = h.server_log().iter().position(|e| e.stats.rtos == 1).expect("an RTO");
    let (before, after) = (&h.server_log()[at_rto - 1].stats, &h.server_log()[at_rto].stats);
    assert!(before.sacked_bytes > 4 * before.cwnd_bytes, "FlightSize ≫ cwnd: {before:?}");
    // (cwnd is small by then: every lost retransmission lowered it again.)
    assert_eq!(after.ssthresh_bytes, (before.cwnd_bytes / 2).max(2 * MSS), "half of cwnd, not of FlightSize");
}

#[test]
fn loss_halves_newreno_window_and_cubic_applies_beta() {
    for sack in [false, true] {
        // Segment 0 lost: nothing is acknowledged before recovery, FlightSize = 10 segments.
        let h = flight("newreno", sack, 10, &[0]);
        let s = h.server.stats();
        assert_eq!((s.ssthresh_bytes, s.cwnd_bytes), (5 * MSS, 5 * MSS), "newreno sack={sack}: FlightSize/2");
        let h = flight("cubic", sack, 10, &[0]);
        let s = h.server.stats();
        assert_eq!(s.ssthresh_bytes, 7 * MSS, "cubic sack={sack}: β = 0.7");
    }
}

/// Without SACK, losses of segments 0, 3 and 6 of a 10-segment flight: a fast retransmit
/// and two partial ACKs (up to 3, up to 6), each retransmitting the next hole.
fn partial_acks(variant: NewRenoVariant) -> (Harness, Vec<ServerSnapshot>) {
    let mut server_cfg = cfg("newreno", false);
    server_cfg.newreno_variant = variant;
    let offsets = [0, 3 * MSS, 6 * MSS];
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&offsets, server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg("newreno", false), down, Link::new(10 * MS), 10 * MSS, false).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let s = h.server.stats();
    assert_eq!((s.fast_retransmits, s.rtos), (1, 0), "{variant:?}");
    assert_eq!(retransmitted_offsets(&h), vec![0, 3, 6], "{variant:?}: each partial ACK retransmits the next hole");
    let iss = h.server_iss;
    let first_ack_of =
        |k: u64| h.server_log().iter().find(|e| e.ack == Some(iss.wrapping_add(1 + (k * MSS) as u32))).cloned().expect("partial ACK seen");
    let partial = vec![first_ack_of(3), first_ack_of(6)];
    (h, partial)
}

#[test]
fn slow_but_steady_rearms_the_rto_on_every_partial_ack() {
    let (_, partial) = partial_acks(NewRenoVariant::SlowButSteady);
    for e in &partial {
        assert_eq!(e.next_deadline_ns, Some(e.time_ns + e.stats.rto_ns), "re-armed at {} ns", e.time_ns);
    }
}

#[test]
fn impatient_rearms_the_rto_on_the_first_partial_ack_only() {
    let (_, partial) = partial_acks(NewRenoVariant::Impatient);
    let (first, second) = (&partial[0], &partial[1]);
    assert_eq!(first.next_deadline_ns, Some(first.time_ns + first.stats.rto_ns), "first partial ACK re-arms");
    assert!(second.time_ns > first.time_ns);
    assert_eq!(second.next_deadline_ns, first.next_deadline_ns, "second partial ACK leaves the timer alone");
}

/// Times at which the server retransmitted the segment at stream offset `offset`.
fn retransmission_times(h: &Harness, offset: u64) -> Vec<u64> {
    h.server_data().filter(|s| h.offset_of(&s.packet) == offset).map(|s| s.time_ns).skip(1).collect()
}

fn blackhole(min_rto_ns: u64, max_rto_ns: u64, from_ns: u64, until_ns: u64) -> Harness {
    let mut server_cfg = cfg("newreno", true);
    server_cfg.min_rto_ns = min_rto_ns;
    server_cfg.max_rto_ns = max_rto_ns;
    // A 1 MB receive buffer bounds the window of this bulk transfer.
    let client_cfg = TcpConfig { rcv_buf_bytes: 1 << 20, ..cfg("newreno", true) };
    let filter: Filter = Box::new(move |now, pkt| !(now >= from_ns && now < until_ns && pkt.payload_bytes > 0));
    // No bottleneck: the RTT stays 20 ms, so the base RTO is the minimum.
    let down = Link::new(10 * MS).with_filter(filter);
    let mut h = Harness::new(server_cfg, client_cfg, down, Link::new(10 * MS), u64::MAX, false).recording();
    h.run_until(from_ns, |_| false);
    assert_eq!(h.server.stats().rto_ns, min_rto_ns, "a 20 ms path runs at the minimum RTO");
    let acked_before = h.server.stats().acked_bytes;
    assert!(
        h.run_until(until_ns + 10_000 * MS, |h| h.server.stats().acked_bytes > acked_before + (4 << 20)),
        "the transfer resumes after the outage"
    );
    h
}

#[test]
fn rto_doubles_on_back_to_back_timeouts_within_min_and_max() {
    for (min_rto, max_rto, expected_gaps) in
        [(200 * MS, 1_600 * MS, vec![400, 800, 1_600, 1_600, 1_600]), (1_000 * MS, 4_000 * MS, vec![2_000, 4_000, 4_000])]
    {
        let outage_end = 300 * MS + expected_gaps.iter().sum::<u64>() * MS + min_rto + 50 * MS;
        let h = blackhole(min_rto, max_rto, 300 * MS, outage_end);
        // The first segment sent into the outage is the one the timeouts retransmit.
        let first_lost = h.server_data().find(|s| s.time_ns >= 300 * MS).map(|s| h.offset_of(&s.packet)).expect("data in the outage");
        let times = retransmission_times(&h, first_lost);
        let gaps: Vec<u64> = times.windows(2).map(|w| (w[1] - w[0]) / MS).collect();
        assert_eq!(gaps[..expected_gaps.len()], expected_gaps[..], "min {min_rto} max {max_rto}: retransmission gaps {gaps:?}");
        let s = h.server.stats();
        assert!(s.rtos as usize > expected_gaps.len(), "one timeout per retransmission");
        assert_eq!(s.rto_ns, min_rto, "backoff is reset once new data is acknowledged");
        assert_eq!(s.spurious_rtos, 0, "real losses are not spurious");
    }
}

#[test]
fn spurious_timeouts_are_detected_with_timestamps() {
    let run = |spike: bool| {
        let down = Link::new(10 * MS).with_rate(10_000_000, 1_000);
        let mut h = Harness::new(cfg("cubic", true), cfg("cubic", true), down, Link::new(10 * MS), 3_000_000, false);
        h.run_until(500 * MS, |_| false);
        if spike {
            // A delay spike far above the RTO: the originals arrive after the timeout.
            h.down_mut().delay_ns = 700 * MS;
            h.run_until(1_500 * MS, |_| false);
            h.down_mut().delay_ns = 10 * MS;
        }
        assert!(h.run_to_completion(600_000 * MS));
        h.server.stats().clone()
    };
    let calm = run(false);
    assert_eq!((calm.rtos, calm.spurious_rtos), (0, 0));
    let spiked = run(true);
    assert!(spiked.rtos >= 1, "the spike causes a timeout");
    assert!(spiked.spurious_rtos >= 1, "and it is recognised as spurious: {spiked:?}");
}

/// A delay spike of 700 ms from 0.5 s (the originals arrive after the timeout) on a
/// 10 Mbit/s path, 3 MB; the server's stats when the transfer completed and when.
fn spiked_transfer(cc: &str, undo_spurious_rto: bool) -> (TcpStats, TcpStats, u64) {
    let mut server_cfg = cfg(cc, true);
    server_cfg.undo_spurious_rto = undo_spurious_rto;
    // Standard slow start, so that ssthresh before the spike is the loss's, not HyStart's
    // (which, re-armed by the timeout, would end the second slow start at the same window
    // with or without the undo).
    server_cfg.hystart = HystartMode::Off;
    let down = Link::new(10 * MS).with_rate(10_000_000, 1_000);
    let mut h = Harness::new(server_cfg, cfg(cc, true), down, Link::new(10 * MS), 3_000_000, false);
    h.run_until(500 * MS, |_| false);
    let before = h.server.stats().clone();
    h.down_mut().delay_ns = 700 * MS;
    h.run_until(1_500 * MS, |_| false);
    h.down_mut().delay_ns = 10 * MS;
    assert!(h.run_to_completion(600_000 * MS));
    (before, h.server.stats().clone(), h.delivered_at_ns().expect("done"))
}

#[test]
fn a_spurious_timeout_is_undone_as_linux_does() {
    for cc in ["newreno", "cubic"] {
        let (before, undone, undone_at_ns) = spiked_transfer(cc, true);
        let (_, kept, kept_at_ns) = spiked_transfer(cc, false);
        assert!(undone.spurious_rtos >= 1 && kept.spurious_rtos >= 1, "{cc}: the timeout is spurious in both: {undone:?} {kept:?}");
        // Without the undo the timeout's go-back-N resends the window that was arriving; with
        // it only the timeouts' own retransmissions (one segment each) went.
        assert!(
            undone.retransmitted_segments <= undone.rtos,
            "{cc}: {} retransmissions for {} timeouts",
            undone.retransmitted_segments,
            undone.rtos
        );
        assert!(kept.retransmitted_segments > 10 * kept.rtos, "{cc}: go-back-N without the undo: {kept:?}");
        // The window is not cut: ssthresh ends no lower than before the spike (no loss
        // later), while without the undo the timeout's reduction stays.
        assert!(undone.ssthresh_bytes >= before.cwnd_bytes.min(before.ssthresh_bytes), "{cc}: {before:?} {undone:?}");
        assert!(kept.ssthresh_bytes < undone.ssthresh_bytes, "{cc}: {kept:?} {undone:?}");
        assert!(undone_at_ns < kept_at_ns, "{cc}: the undone transfer ends first ({undone_at_ns} against {kept_at_ns} ns)");
    }
}

#[test]
fn a_lost_full_segment_that_carries_the_fin_is_retransmitted_by_the_timeout() {
    // The timeout leaves a one-MSS cwnd and nothing in flight; the retransmission spans MSS + 1
    // sequence numbers (the FIN) and must still go (RFC 5681 §3.1: one segment). Before the
    // fix it waited forever for an ACK; found by fuzzing (tcp_pair_faults).
    // Eleven segments and the close: the initial window takes ten, so the FIN joins the
    // eleventh, which goes when the first ACK comes back and is lost.
    for cc in ["newreno", "cubic", "highspeed", "bbr"] {
        let server_cfg = cfg(cc, true);
        let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&[10 * MSS], server_cfg.iss));
        let mut h = Harness::new(server_cfg, cfg(cc, true), down, Link::new(10 * MS), 11 * MSS, true).recording();
        assert!(h.run_to_completion(60_000 * MS), "{cc}: the segment is delivered");
        let fins: Vec<u64> =
            h.server_data().filter(|s| s.packet.tcp_header().is_some_and(|t| t.flags.contains(TcpFlags::FIN))).map(|s| s.time_ns).collect();
        assert_eq!(fins.len(), 2, "{cc}: sent once with the data and the FIN, lost, and retransmitted once");
        assert_eq!(h.server.stats().rtos, 1, "{cc}: by the timeout");
    }
}

/// One segment lost in a window of about 30: the bytes in flight over the ACKs that follow
/// the fast retransmission, with PRR or with RFC 6675's cwnd = ssthresh at once.
fn pipe_after_fast_retransmit(prr: bool) -> Vec<u64> {
    let mut server_cfg = cfg("cubic", true);
    server_cfg.prr = prr;
    server_cfg.hystart = HystartMode::Off;
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&[25 * MSS], server_cfg.iss));
    let mut h = Harness::new(server_cfg, cfg("cubic", true), down, Link::new(10 * MS), 200 * MSS, false).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let log = h.server_log();
    let entry = log.iter().position(|s| s.stats.fast_retransmits == 1).expect("a fast retransmit");
    log[entry..].iter().filter(|s| s.ack.is_some()).map(|s| s.stats.bytes_in_flight).take(12).collect()
}

#[test]
fn prr_spreads_the_window_reduction_over_the_recovery_where_rfc6675_falls_silent() {
    // CUBIC keeps 0.7 of the window. RFC 6675 sets cwnd = ssthresh at once: the sender is
    // silent until 30% of the flight has been acknowledged, each ACK shrinking pipe by a
    // segment. PRR (RFC 9937) sends 0.7 segment per segment delivered from the first ACK on,
    // so pipe shrinks by about 0.3 segment per ACK (in whole segments: 1.8 to 3 over six
    // ACKs) and the flight stays a self-clock.
    let (with, without) = (pipe_after_fast_retransmit(true), pipe_after_fast_retransmit(false));
    let drop = |p: &[u64]| (p[0] - p[6]) as f64 / MSS as f64;
    assert!(drop(&without) >= 5.0, "RFC 6675: silent, pipe {without:?}");
    assert!(drop(&with) <= 3.5, "PRR: sending, pipe {with:?}");
}

#[test]
fn rack_finds_a_loss_with_two_segments_behind_it_a_quarter_min_rtt_after_their_round_trip() {
    // RFC 8985 §6.2: segment 0 is lost once segment 2, sent after it, has been delivered and
    // RACK.rtt + reo_wnd have passed since segment 0 was sent; reo_wnd is min_RTT / 4 (5 ms
    // on this 20 ms path) while fewer than DupThresh segments are SACKed. RFC 6675 waited
    // for the RTO.
    let h = flight_detecting(LossDetection::RackTlp, 3, &[0]);
    let s = h.server.stats();
    assert_eq!((s.fast_retransmits, s.rtos, s.retransmitted_segments), (1, 0, 1), "{s:?}");
    let (first, second) = (data_sent_at_ns(&h, 0, 0), data_sent_at_ns(&h, 0, 1));
    assert_eq!(second - first, 25 * MS, "RACK.rtt 20 ms + reo_wnd 5 ms");
}

#[test]
fn a_tail_loss_is_probed_two_round_trips_after_the_last_ack_not_left_to_the_rto() {
    // The last two segments of a flight are lost: nothing follows them to be SACKed. The
    // probe (RFC 8985 §7) resends the last segment 2·SRTT + 2 ms after the last ACK (two
    // segments outstanding); its SACK lets RACK find segment 8 lost, and recovery repairs it.
    let h = flight_detecting(LossDetection::RackTlp, 10, &[8, 9]);
    let s = h.server.stats();
    assert_eq!((s.tail_loss_probes, s.rtos, s.fast_retransmits, s.retransmitted_segments), (1, 0, 1, 2), "{s:?}");
    let probe_ns = data_sent_at_ns(&h, 9 * MSS, 1);
    let last_ack_ns = h.server_log().iter().filter(|e| e.ack.is_some() && e.time_ns < probe_ns).map(|e| e.time_ns).max().expect("an ACK");
    assert_eq!(probe_ns - last_ack_ns, 2 * 20 * MS + 2 * MS, "PTO = 2·SRTT + 2 ms after the ACK of segment 7");
    assert!(h.delivered_at_ns().expect("done") < 150 * MS, "long before the 200 ms minimum RTO");
    // RFC 6675 alone: the timeout repairs it.
    let h = flight_detecting(LossDetection::Rfc6675, 10, &[8, 9]);
    let s = h.server.stats();
    assert_eq!((s.tail_loss_probes, s.rtos), (0, 1), "{s:?}");
}
