//! The daemon's packets out. Every datagram the datapath makes leaves through one raw IPv4
//! socket (`raw_socket`, one system call each, through the router's OUTPUT path), except with
//! `--ue-gso`: then consecutive segments of a flow toward the UE are joined into one TCP GSO
//! packet (`millinet_wire::gso`, as the kernel would cut it back into exactly them) and sent
//! on the UE side's device through an AF_PACKET socket with the virtio-net header: one system
//! call, and one trip through the stacks on the way, per up to 64 kB instead of per segment.
//! Those packets skip the router's OUTPUT and POSTROUTING hooks (no NAT or filter there
//! applies to them). A UE whose next hop is not yet in the neighbour table gets raw-socket
//! datagrams (whose sending makes the kernel resolve it) until it is.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use millinet_proxyd::{Emitted, Toward};
use millinet_wire::gso::{append_segment, VnetHeader, MAX_PACKET_BYTES, VNET_HEADER_BYTES};

use crate::raw_socket::RawSender;

/// How long a next hop found (or not found) is used before it is looked up again.
const HOP_FOUND_TTL_NS: u64 = 1_000_000_000;
const HOP_MISSING_TTL_NS: u64 = 100_000_000;

/// What the output counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputStats {
    /// Datagrams (or GSO packets) the kernel refused.
    pub send_failures: u64,
    /// GSO packets sent toward the UE, and the segments they carried.
    pub gso_packets: u64,
    pub gso_segments: u64,
}

pub struct Output {
    raw: RawSender,
    gso: Option<GsoPath>,
    pub stats: OutputStats,
}

impl Output {
    pub fn open(ue_gso: bool) -> Result<Output, String> {
        let gso = if ue_gso { Some(GsoPath::open()?) } else { None };
        Ok(Output { raw: RawSender::open()?, gso, stats: OutputStats::default() })
    }

    /// A datagram made by the datapath (an `Original` is the caller's to accept). Toward the
    /// UE with `--ue-gso` it may wait in the GSO packet being built: `flush` sends it.
    pub fn send(&mut self, now_ns: u64, emitted: Emitted) {
        let Emitted::Datagram { bytes, toward } = emitted else { return };
        if toward == Toward::Ue {
            if let Some(gso) = &mut self.gso {
                if gso.push(now_ns, bytes, &mut self.stats) {
                    return;
                }
            }
        }
        if self.raw.send(bytes).is_err() {
            self.stats.send_failures += 1;
        }
    }

    /// Sends the GSO packet being built, if any: before an accepted original packet (which must
    /// not overtake what was made before it) and at the end of every batch of inputs.
    pub fn flush(&mut self) {
        if let Some(gso) = &mut self.gso {
            gso.flush(&mut self.stats);
        }
    }
}

/// A device, its own Ethernet address and the next hop's on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hop {
    ifindex: i32,
    /// The Ethernet header: destination, source, type IPv4.
    ethernet: [u8; ETHERNET_HEADER_BYTES],
}

const ETHERNET_HEADER_BYTES: usize = 14;

struct GsoPath {
    socket: OwnedFd,
    hops: HashMap<Ipv4Addr, (Option<Hop>, u64)>,
    /// Virtio header and IPv4 packet; `len` 0 when empty.
    frame: Vec<u8>,
    len: usize,
    hop: Hop,
    segments: u64,
}

impl GsoPath {
    fn open() -> Result<GsoPath, String> {
        // SOCK_RAW (the link header is ours): PACKET_VNET_HDR is refused on SOCK_DGRAM. Protocol
        // 0: this socket only sends (with ETH_P_IP it would also be handed a copy of every IPv4
        // packet of the host).
        // SAFETY: socket(2) with constant arguments; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(format!("--ue-gso: cannot open a packet socket: {} (needs root or CAP_NET_RAW)", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        let on: libc::c_int = 1;
        // SAFETY: PACKET_VNET_HDR reads an int.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_VNET_HDR,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(format!("--ue-gso: the packet socket refuses PACKET_VNET_HDR: {}", io::Error::last_os_error()));
        }
        Ok(GsoPath {
            socket,
            hops: HashMap::new(),
            frame: vec![0; VNET_HEADER_BYTES + MAX_PACKET_BYTES],
            len: 0,
            hop: Hop { ifindex: 0, ethernet: [0; ETHERNET_HEADER_BYTES] },
            segments: 0,
        })
    }

    /// Takes `datagram` into the GSO packet (flushing the one built so far when it does not
    /// fit on), or returns false when its next hop is unknown.
    fn push(&mut self, now_ns: u64, datagram: &[u8], stats: &mut OutputStats) -> bool {
        let Some(dst) = datagram.get(16..20).map(|d| Ipv4Addr::new(d[0], d[1], d[2], d[3])) else { return false };
        let Some(hop) = self.hop_of(dst, now_ns) else { return false };
        if self.len > 0 && hop == self.hop {
            if let Some(len) = append_segment(&mut self.frame, self.len, datagram) {
                self.len = len;
                self.segments += 1;
                return true;
            }
        }
        self.flush(stats);
        // A plain packet: a virtio header of zeros (no GSO, checksums complete).
        self.frame[..VNET_HEADER_BYTES].fill(0);
        self.frame[VNET_HEADER_BYTES..VNET_HEADER_BYTES + datagram.len()].copy_from_slice(datagram);
        self.len = VNET_HEADER_BYTES + datagram.len();
        self.hop = hop;
        self.segments = 1;
        true
    }

    fn flush(&mut self, stats: &mut OutputStats) {
        if self.len == 0 {
            return;
        }
        // The frame is virtio header + IP packet; on the wire the Ethernet header goes between,
        // so the header's offsets (counted from the link header on a packet socket) move by it.
        let mut vnet = VnetHeader::parse(&self.frame);
        let mut vnet_bytes = [0u8; VNET_HEADER_BYTES];
        if vnet.flags & VnetHeader::NEEDS_CSUM != 0 {
            vnet.csum_start += ETHERNET_HEADER_BYTES as u16;
            vnet.header_bytes += ETHERNET_HEADER_BYTES as u16;
            vnet.write(&mut vnet_bytes);
        }
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_IP as u16).to_be();
        addr.sll_ifindex = self.hop.ifindex;
        let mut parts = [
            libc::iovec { iov_base: vnet_bytes.as_mut_ptr().cast(), iov_len: VNET_HEADER_BYTES },
            libc::iovec { iov_base: self.hop.ethernet.as_mut_ptr().cast(), iov_len: ETHERNET_HEADER_BYTES },
            libc::iovec { iov_base: self.frame[VNET_HEADER_BYTES..].as_mut_ptr().cast(), iov_len: self.len - VNET_HEADER_BYTES },
        ];
        // SAFETY: msghdr is plain data; all-zero is a valid value.
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_name = (&mut addr as *mut libc::sockaddr_ll).cast();
        message.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        message.msg_iov = parts.as_mut_ptr();
        message.msg_iovlen = parts.len();
        // SAFETY: the message's name and buffers are valid for the lengths given.
        let n = unsafe { libc::sendmsg(self.socket.as_raw_fd(), &message, 0) };
        if n < 0 {
            stats.send_failures += 1;
        } else if self.segments > 1 {
            stats.gso_packets += 1;
            stats.gso_segments += self.segments;
        }
        self.len = 0;
    }

    fn hop_of(&mut self, dst: Ipv4Addr, now_ns: u64) -> Option<Hop> {
        if let Some(&(hop, checked_ns)) = self.hops.get(&dst) {
            let ttl = if hop.is_some() { HOP_FOUND_TTL_NS } else { HOP_MISSING_TTL_NS };
            if now_ns.saturating_sub(checked_ns) < ttl {
                return hop;
            }
        }
        let hop = look_up_hop(dst);
        self.hops.insert(dst, (hop, now_ns));
        hop
    }
}

/// The main routing table's route to `dst` (longest prefix, then lowest metric) and its next
/// hop's complete neighbour entry, from /proc/net/route and /proc/net/arp.
fn look_up_hop(dst: Ipv4Addr) -> Option<Hop> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    let (device, gateway) = best_route(&routes, dst)?;
    let next_hop = if gateway.is_unspecified() { dst } else { gateway };
    let neighbours = std::fs::read_to_string("/proc/net/arp").ok()?;
    let destination = neighbour(&neighbours, next_hop, &device)?;
    let source = parse_mac(std::fs::read_to_string(format!("/sys/class/net/{device}/address")).ok()?.trim())?;
    let name = std::ffi::CString::new(device).ok()?;
    // SAFETY: a NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    let mut ethernet = [0u8; ETHERNET_HEADER_BYTES];
    ethernet[..6].copy_from_slice(&destination);
    ethernet[6..12].copy_from_slice(&source);
    ethernet[12..].copy_from_slice(&(libc::ETH_P_IP as u16).to_be_bytes());
    (ifindex > 0).then_some(Hop { ifindex: ifindex as i32, ethernet })
}

/// The device and gateway (0.0.0.0: on link) of the best route to `dst` in the text of
/// /proc/net/route (addresses in hexadecimal, in the kernel's byte order).
fn best_route(table: &str, dst: Ipv4Addr) -> Option<(String, Ipv4Addr)> {
    const RTF_UP: u32 = 0x1;
    let address = |hex: &str| u32::from_str_radix(hex, 16).ok().map(|v| Ipv4Addr::from(v.to_le_bytes()));
    let mut best: Option<(u32, u32, String, Ipv4Addr)> = None;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [device, destination, gateway, flags, _, _, metric, mask, ..] = f[..] else { continue };
        let (Some(destination), Some(gateway), Some(mask)) = (address(destination), address(gateway), address(mask)) else { continue };
        let (Ok(flags), Ok(metric)) = (u32::from_str_radix(flags, 16), metric.parse::<u32>()) else { continue };
        let (mask, prefix) = (u32::from(mask), u32::from(mask).count_ones());
        if flags & RTF_UP == 0 || u32::from(dst) & mask != u32::from(destination) & mask {
            continue;
        }
        if best.as_ref().is_none_or(|(p, m, ..)| prefix > *p || (prefix == *p && metric < *m)) {
            best = Some((prefix, metric, device.to_string(), gateway));
        }
    }
    best.map(|(_, _, device, gateway)| (device, gateway))
}

/// The link-layer address of `ip` on `device` in the text of /proc/net/arp, if resolved.
fn neighbour(table: &str, ip: Ipv4Addr, device: &str) -> Option<[u8; 6]> {
    const ATF_COM: u32 = 0x2;
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [address, _, flags, mac, _, dev] = f[..] else { return None };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        if address.parse::<Ipv4Addr>().ok()? != ip || dev != device || flags & ATF_COM == 0 {
            return None;
        }
        parse_mac(mac)
    })
}

/// `aa:bb:cc:dd:ee:ff`.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let bytes: Vec<u8> = text.split(':').map(|b| u8::from_str_radix(b, 16)).collect::<Result<_, _>>().ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
ue0\t00004D0A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
ue1\t00024D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
down\t00034D0A\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0
";

    #[test]
    fn the_longest_prefix_that_is_up_wins_and_the_default_route_has_a_gateway() {
        assert_eq!(best_route(ROUTES, Ipv4Addr::new(10, 77, 2, 1)), Some(("ue1".into(), Ipv4Addr::UNSPECIFIED)));
        assert_eq!(best_route(ROUTES, Ipv4Addr::new(10, 77, 9, 1)), Some(("ue0".into(), Ipv4Addr::UNSPECIFIED)));
        // 10.77.3.0/24 is down: the /16 serves it.
        assert_eq!(best_route(ROUTES, Ipv4Addr::new(10, 77, 3, 1)), Some(("ue0".into(), Ipv4Addr::UNSPECIFIED)));
        assert_eq!(best_route(ROUTES, Ipv4Addr::new(8, 8, 8, 8)), Some(("eth0".into(), Ipv4Addr::new(192, 168, 1, 1))));
        assert_eq!(best_route("Iface\tDestination\n", Ipv4Addr::new(8, 8, 8, 8)), None);
    }

    #[test]
    fn only_a_complete_neighbour_entry_on_the_device_is_used() {
        let arp = "IP address       HW type     Flags       HW address            Mask     Device
10.77.2.1        0x1         0x2         02:00:0a:4d:02:01     *        ue1
10.77.2.9        0x1         0x0         00:00:00:00:00:00     *        ue1
";
        assert_eq!(neighbour(arp, Ipv4Addr::new(10, 77, 2, 1), "ue1"), Some([2, 0, 10, 77, 2, 1]));
        assert_eq!(neighbour(arp, Ipv4Addr::new(10, 77, 2, 1), "ue0"), None, "another device");
        assert_eq!(neighbour(arp, Ipv4Addr::new(10, 77, 2, 9), "ue1"), None, "incomplete");
        assert_eq!(neighbour(arp, Ipv4Addr::new(10, 77, 2, 2), "ue1"), None, "absent");
    }
}
