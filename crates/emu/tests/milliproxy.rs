//! milliProxy in the emulator: real Linux TCP through the daemon's packet path at the gNB,
//! checked from the captures at both ends (end-to-end semantics, the MSS clamp), from the
//! bytes the UE read, and against the same channel without the proxy.

use std::net::Ipv4Addr;
use std::path::Path;

use millinet_emu::EmulateOptions;

mod common;
use common::radio_route;
use serde_json::Value;

/// The route's UE and server nodes' addresses in the network (its fourth and first nodes).
const UE: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 4);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// What the tests read of a captured TCP packet (tcpdump keeps the first 128 bytes).
#[derive(Clone, Copy, Debug)]
struct Seen {
    t_ns: u64,
    src: Ipv4Addr,
    seq: u32,
    ack: u32,
    flags: u8,
    mss: Option<u16>,
}

/// The TCP packets of a tcpdump capture (classic pcap, read by hand: its GSO packets have an
/// original length above the file's snapshot length, which pcap readers refuse).
fn captured(path: &Path) -> Vec<Seen> {
    let file = std::fs::read(path).unwrap();
    let magic = u32::from_le_bytes(file[..4].try_into().unwrap());
    // 0xa1b23c4d: nanosecond timestamps; 0xa1b2c3d4: microseconds (little-endian host).
    let sub_ns = match magic {
        0xa1b2_3c4d => 1,
        0xa1b2_c3d4 => 1000,
        other => panic!("not a little-endian pcap file: magic {other:#x}"),
    };
    let word = |b: &[u8], at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let le = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap()) as u64;
    // The link header before IPv4: none on a TUN device (LINKTYPE_RAW), Ethernet's 14 bytes.
    let link_header = match le(20) {
        101 | 228 => 0,
        1 => 14,
        other => panic!("link type {other}"),
    };
    let mut seen = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let (t_ns, caplen) = (le(at) * 1_000_000_000 + le(at + 4) * sub_ns, le(at + 8) as usize);
        let data = &file[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        let d = &data[link_header.min(data.len())..];
        if d.len() < 40 || d[0] >> 4 != 4 || d[9] != 6 {
            continue;
        }
        let tcp = &d[((d[0] & 0x0f) as usize) * 4..];
        let flags = tcp[13];
        // The MSS option of a SYN (RFC 9293 §3.2, kind 2 length 4).
        let options = &tcp[20..((tcp[12] >> 4) as usize * 4).min(tcp.len())];
        let mut mss = None;
        let mut at = 0;
        while at + 1 < options.len() && options[at] != 0 {
            match options[at] {
                1 => at += 1,
                2 if at + 3 < options.len() => {
                    mss = Some(u16::from_be_bytes([options[at + 2], options[at + 3]]));
                    at += 4;
                }
                _ => at += (options[at + 1] as usize).max(2),
            }
        }
        seen.push(Seen { t_ns, src: Ipv4Addr::new(d[12], d[13], d[14], d[15]), seq: word(tcp, 4), ack: word(tcp, 8), flags, mss });
    }
    seen
}

fn emulate(path: &Path, overrides: &[&str], pcap_dir: Option<&Path>) -> Value {
    let opts = EmulateOptions {
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        pcap_dir: pcap_dir.map(Path::to_path_buf),
        pcap_nodes: if pcap_dir.is_some() { vec!["server".into(), "ue".into()] } else { vec![] },
        ..Default::default()
    };
    millinet_emu::emulate_file(path, &opts, &mut |_, _| true).unwrap().summary
}

#[test]
fn milliproxy_keeps_end_to_end_semantics_and_the_rlc_buffer_small() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the emulator needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 400 Mbit/s, 40 Mbit/s from 1.0 to 1.6 s, 400 Mbit/s again; CUBIC.
    let path = radio_route(&dir, "0,400e6\n1.0,40e6\n1.6,400e6\n", 10_000_000, 2.6);
    let proxied = emulate(&path, &["proxy.node=gnb"], Some(dir.path()));
    let plain = emulate(&path, &[], None);

    let flow = &proxied["flows"][0];
    assert_eq!(flow["payload_intact"], true, "the UE read exactly the server's bytes");
    let proxy = &proxied["proxy"];
    assert_eq!(proxy["flows_created"], 1);
    assert!(proxy["acks_relayed"].as_u64().unwrap() > 1000 && proxy["telemetry_received"].as_u64().unwrap() > 1000, "{proxy}");
    assert_eq!((proxy["emit_failures"].as_u64(), proxy["malformed"].as_u64()), (Some(0), Some(0)));

    // docs/proxy.md#how-a-flow-is-handled: the proxy acknowledges nothing the UE has not. Every ACK the server
    // receives covers at most what the UE had acknowledged when it arrived (both captures
    // use the host's clock).
    let server_side = captured(&dir.path().join("server.pcap"));
    let ue_side = captured(&dir.path().join("ue.pcap"));
    let syn_mss = |seen: &[Seen]| seen.iter().find(|s| s.src == UE && s.flags & 0x02 != 0).and_then(|s| s.mss);
    // The UE's side of the gNB has room for MSS2; the server is clamped to its own path's MSS.
    assert_eq!(syn_mss(&ue_side), Some(20_000 + 80 - 40), "the UE's SYN as it left the UE");
    assert_eq!(syn_mss(&server_side), Some(1400 + 12), "the UE's SYN as the server got it");
    let isn = server_side.iter().find(|s| s.src == SERVER && s.flags & 0x12 == 0x12).expect("a SYN-ACK").seq;
    let offset = |ack: u32| ack.wrapping_sub(isn) as u64;
    let mut ue_acks: Vec<(u64, u64)> =
        ue_side.iter().filter(|s| s.src == UE && s.flags & 0x10 != 0).map(|s| (s.t_ns, offset(s.ack))).collect();
    ue_acks.sort();
    let mut highest = 0u64;
    let mut k = 0;
    let mut checked = 0;
    // tcpdump writes what it captured as it goes; what was still in its ring when it was
    // stopped is lost, so only ACKs up to the UE capture's last packet can be checked.
    let ue_end_ns = ue_side.last().expect("packets at the UE").t_ns;
    for ack in server_side.iter().filter(|s| s.src == UE && s.flags & 0x10 != 0 && s.t_ns <= ue_end_ns) {
        while k < ue_acks.len() && ue_acks[k].0 <= ack.t_ns {
            highest = highest.max(ue_acks[k].1);
            k += 1;
        }
        assert!(offset(ack.ack) <= highest, "the server got ACK {} at {} ns; the UE had acknowledged {highest}", offset(ack.ack), ack.t_ns);
        checked += 1;
    }
    assert!(checked > 1000, "{checked} ACKs checked");

    // The capacity drop piles the window up in the RLC buffer without the proxy; with it the
    // flow window follows the rate and the queue stays short (docs/proxy.md#flow-window-policies).
    let p95 = |s: &Value| s["ues"][0]["ran_latency_ms"]["p95"].as_f64().unwrap();
    assert!(p95(&proxied) * 3.0 < p95(&plain), "RAN latency p95: {} ms with the proxy, {} ms without", p95(&proxied), p95(&plain));
    let goodput = |s: &Value| s["flows"][0]["goodput_bps"].as_f64().unwrap();
    assert!(goodput(&proxied) > 0.8 * goodput(&plain), "goodput {} with the proxy, {} without", goodput(&proxied), goodput(&plain));
}
