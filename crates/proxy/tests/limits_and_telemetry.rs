//! Scripted packets: the flow and buffer limits, telemetry timing, the handshake rules.

mod common;

use std::net::Ipv4Addr;

use common::scripted::*;
use common::MS;
use millinet_proxy::{Direction, FlowKey, HandlingRule, Middlebox, NoPayloads, PolicySpec, Proxy, ProxyConfig, Telemetry};
use millinet_wire::{TcpFlags, TcpOptions, Timestamps};

#[test]
fn handshake_clamps_mss_toward_the_server_only() {
    let mut proxy: Proxy = Proxy::new(ProxyConfig::default()).unwrap();
    let out = handshake(&mut proxy, 0, 4000);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].tcp_header().unwrap().options.mss, Some(1400), "UE's SYN toward the server");
    assert_eq!(out[1].tcp_header().unwrap().options.mss, Some(1400), "server's SYN-ACK unchanged");
    assert_eq!(proxy.stats().flows_created, 1);
}

#[test]
fn flow_limit_passes_extra_flows_through_untouched() {
    let cfg = ProxyConfig { max_flows: 1, ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let out = handshake(&mut proxy, 0, 4001);
    assert_eq!(proxy.flow_count(), 1);
    assert_eq!(proxy.stats().flows_refused_limit, 1);
    assert_eq!(out[0].tcp_header().unwrap().options.mss, Some(20_000), "refused flow's SYN untouched");
    let mut out = Vec::new();
    let d = data(4001, 0, 1400);
    proxy.on_packet(MS, d, Direction::FromServer, &mut NoPayloads, &mut out);
    assert_eq!(out, [d]);
    assert_eq!(proxy.stats().packets_passed_through, 4);
}

#[test]
fn unhandled_ports_pass_through() {
    let cfg = ProxyConfig { rule: HandlingRule::ServerPorts(vec![443]), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    assert_eq!(proxy.flow_count(), 0);
    assert_eq!(proxy.stats().packets_passed_through, 3);
}

#[test]
fn buffer_limit_drops_and_counts() {
    // FW 0: nothing leaves toward the UE, so everything accepted stays buffered.
    let cfg = ProxyConfig { total_buffer_bytes: 3000, policy: PolicySpec::new("static").with("fw_bytes", 0.0), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let mut out = Vec::new();
    for i in 0..3 {
        proxy.on_packet(MS, data(4000, i * 1400, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
    }
    assert!(out.is_empty(), "FW = 0 forwards nothing");
    assert_eq!(proxy.stats().buffer_bytes, 2800);
    assert_eq!(proxy.stats().buffer_full_drops, 1);
}

#[test]
fn telemetry_takes_effect_when_handed_over() {
    // bdp: its window is the BDP the record gives, computed by hand below.
    let mut proxy: Proxy = Proxy::new(ProxyConfig { policy: PolicySpec::new("bdp"), ..ProxyConfig::default() }).unwrap();
    handshake(&mut proxy, 0, 4000);
    let key = FlowKey { ue: ue(4000), server: SERVER };
    let mut out = Vec::new();
    // One RTT_down and one RTT_up sample so that bdp has an RTT_min: forward at 1 ms, UE ACK at
    // 11 ms (RTT_down 10 ms), the relayed ACK's TSval 7 echoed by data at 31 ms (RTT_up 20 ms).
    proxy.on_packet(MS, data(4000, 0, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
    let ts = |tsval, tsecr| TcpOptions { timestamps: Some(Timestamps { tsval, tsecr }), ..TcpOptions::default() };
    proxy.on_packet(
        11 * MS,
        seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 1400, TcpFlags::ACK, 0, ts(7, 1)),
        Direction::FromUe,
        &mut NoPayloads,
        &mut out,
    );
    let mut d = data(4000, 1400, 1400);
    d.tcp_header_mut().unwrap().options = ts(2, 7);
    proxy.on_packet(31 * MS, d, Direction::FromServer, &mut NoPayloads, &mut out);
    assert_eq!(proxy.flow_stats(31 * MS, &key).unwrap().rtt.min_ns, Some(30 * MS));
    // The UE advertised 1000 << 7 bytes.
    let ue_window = 128_000;
    assert_eq!(proxy.flow_stats(31 * MS, &key).unwrap().fw_bytes, ue_window, "an RTT but no telemetry yet: passthrough");

    // Another UE's record changes nothing here.
    let rec = Telemetry { t_ns: 37 * MS, rlc_bytes: 0, rate_bps: 80_000_000.0, sinr_db: 10.0, outage: false };
    proxy.on_telemetry(40 * MS, Ipv4Addr::new(10, 9, 0, 3), rec, &mut NoPayloads, &mut out);
    assert_eq!(proxy.flow_stats(40 * MS, &key).unwrap().fw_bytes, ue_window);
    // The delay is the driver's: a record sampled at 37 ms applies when it is handed over.
    proxy.on_telemetry(40 * MS, UE_IP, rec, &mut NoPayloads, &mut out);
    // 30 ms · 80 Mbit/s / 8 = 300 000 bytes.
    assert_eq!(proxy.flow_stats(40 * MS, &key).unwrap().fw_bytes, 300_000);
    assert_eq!(proxy.stats().telemetry_applied, 2);
    assert_eq!(proxy.next_deadline_ns(), Some(60_000 * MS), "only the idle sweep: no telemetry is held");

    // The record ages past telemetry_max_age_ns (100 ms) with no successor: the next packet
    // finds it stale and the flow falls back to the UE's window, counted once.
    for (i, t) in [138, 139].into_iter().enumerate() {
        proxy.on_packet(t * MS, data(4000, 2800 + i as u32 * 1400, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
    }
    assert_eq!(proxy.flow_stats(139 * MS, &key).unwrap().fw_bytes, ue_window, "stale telemetry: passthrough");
    assert_eq!(proxy.stats().telemetry_expired, 1);
    // A record that arrives already too old, or older than the one in force, is refused.
    let old = Telemetry { t_ns: 38 * MS, ..rec };
    proxy.on_telemetry(140 * MS, UE_IP, old, &mut NoPayloads, &mut out);
    proxy.on_telemetry(140 * MS, UE_IP, Telemetry { t_ns: 36 * MS, ..rec }, &mut NoPayloads, &mut out);
    assert_eq!(proxy.stats().telemetry_late, 2);
    assert_eq!(proxy.flow_stats(140 * MS, &key).unwrap().fw_bytes, ue_window);
    // A fresh one puts the flow back on the policy.
    proxy.on_telemetry(141 * MS, UE_IP, Telemetry { t_ns: 140 * MS, ..rec }, &mut NoPayloads, &mut out);
    assert_eq!(proxy.flow_stats(141 * MS, &key).unwrap().fw_bytes, 300_000);
}

/// The core's gauge of UEs whose record is held.
fn telemetry_ues(proxy: &Proxy) -> u64 {
    proxy.summary().gauges.iter().find(|(name, _)| *name == "telemetry_ues").unwrap().1
}

#[test]
fn the_telemetry_table_holds_at_most_max_ues_records_evicting_the_least_recently_updated() {
    let cfg = ProxyConfig { max_ues: 2, ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    let mut out = Vec::new();
    let rec = |t_ms: u64| Telemetry { t_ns: t_ms * MS, rlc_bytes: 0, rate_bps: 1e9, sinr_db: 10.0, outage: false };
    let ue_n = |n: u8| Ipv4Addr::new(10, 9, 0, n);
    proxy.on_telemetry(0, ue_n(1), rec(0), &mut NoPayloads, &mut out);
    proxy.on_telemetry(50 * MS, ue_n(2), rec(50), &mut NoPayloads, &mut out);
    // UE 1 updated again: now UE 2 is the least recently updated, though its record is newer
    // than UE 1's first; a third UE takes its place.
    proxy.on_telemetry(55 * MS, ue_n(1), rec(55), &mut NoPayloads, &mut out);
    proxy.on_telemetry(60 * MS, ue_n(3), rec(60), &mut NoPayloads, &mut out);
    assert_eq!((proxy.stats().telemetry_applied, proxy.stats().telemetry_evicted), (4, 1));
    assert_eq!(telemetry_ues(&proxy), 2);
    // UE 2 comes back: it evicts UE 1 (updated at 55 ms, before UE 3); a known UE evicts no one.
    proxy.on_telemetry(61 * MS, ue_n(2), rec(61), &mut NoPayloads, &mut out);
    proxy.on_telemetry(62 * MS, ue_n(3), rec(62), &mut NoPayloads, &mut out);
    assert_eq!((proxy.stats().telemetry_applied, proxy.stats().telemetry_evicted, telemetry_ues(&proxy)), (6, 2, 2));
    // Over 10 000 UEs coming and going the table never holds more than two.
    for n in 0..10_000u32 {
        let ue = Ipv4Addr::from(0x0a0a_0000 + n);
        proxy.on_telemetry((100 + u64::from(n)) * MS, ue, rec(100 + u64::from(n)), &mut NoPayloads, &mut out);
        assert!(telemetry_ues(&proxy) <= 2);
    }
    assert_eq!(proxy.stats().telemetry_evicted, 2 + 10_000);
}

#[test]
fn per_boundary_acks_and_rst_removes_the_flow() {
    let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let mut out = Vec::new();
    // Three server segments arrive; FW (passthrough = UE window 1000 << 7) lets all go at once,
    // each forwarded as it arrives.
    for i in 0..3 {
        proxy.on_packet(MS, data(4000, i * 1400, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
    }
    assert_eq!(out.len(), 3);
    out.clear();
    // One cumulative UE ACK covering all three: three relayed ACKs, one per boundary.
    proxy.on_packet(
        2 * MS,
        seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 4200, TcpFlags::ACK, 0, TcpOptions::default()),
        Direction::FromUe,
        &mut NoPayloads,
        &mut out,
    );
    let acks: Vec<u32> = out.iter().map(|p| p.tcp_header().unwrap().ack - SERVER_ISN - 1).collect();
    assert_eq!(acks, [1400, 2800, 4200]);
    assert!(out.iter().all(|p| p.tcp_header().unwrap().window == 1000));
    out.clear();
    proxy.on_packet(
        3 * MS,
        seg(ue(4000), SERVER, 101, 0, TcpFlags::RST, 0, TcpOptions::default()),
        Direction::FromUe,
        &mut NoPayloads,
        &mut out,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(proxy.flow_count(), 0);
    assert_eq!(proxy.stats().flows_closed, 1);
}

#[test]
fn with_two_segments_per_relayed_ack_every_second_boundary_and_the_ues_own_ack_are_relayed() {
    for (segments, expected) in [(1, vec![1400, 2800, 4200, 5600, 7000]), (2, vec![2800, 5600, 7000]), (3, vec![4200, 7000])] {
        let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), segments_per_relayed_ack: segments, ..ProxyConfig::default() };
        let mut proxy: Proxy = Proxy::new(cfg).unwrap();
        handshake(&mut proxy, 0, 4000);
        let mut out = Vec::new();
        for i in 0..5 {
            proxy.on_packet(MS, data(4000, i * 1400, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
        }
        out.clear();
        let relayed_before = proxy.stats().acks_relayed;
        let ue_ack = seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 7000, TcpFlags::ACK, 0, TcpOptions::default());
        proxy.on_packet(2 * MS, ue_ack, Direction::FromUe, &mut NoPayloads, &mut out);
        let acks: Vec<u32> = out.iter().map(|p| p.tcp_header().unwrap().ack - SERVER_ISN - 1).collect();
        assert_eq!(acks, expected, "{segments} segments per relayed ACK");
        assert_eq!(proxy.stats().acks_relayed - relayed_before, expected.len() as u64);
    }
}

#[test]
fn idle_flows_expire() {
    let mut proxy: Proxy = Proxy::new(ProxyConfig::default()).unwrap();
    handshake(&mut proxy, 0, 4000);
    assert_eq!(proxy.next_deadline_ns(), Some(60_000 * MS));
    proxy.on_timeout(60_000 * MS, &mut NoPayloads, &mut Vec::new());
    assert_eq!(proxy.flow_count(), 0);
    assert_eq!(proxy.stats().flows_idle_expired, 1);
    assert_eq!(proxy.next_deadline_ns(), None);
}
