//! The packets the link holds: real frames (virtio header + IPv4 packet) in reusable buffers,
//! each known to the models by a `Packet` description whose `meta.payload` names its buffer.
//! A GSO frame travels as one unit, charged its full length on the wire, and is cut into its
//! segments only where a queue must drop part of it.

use std::net::Ipv4Addr;

use millinet_wire::checksum::{internet_checksum, Checksum};
use millinet_wire::{parse, rewrite_ecn, Packet, PayloadId};

use millinet_wire::gso::{append_segment, VnetHeader, MAX_PACKET_BYTES, VNET_HEADER_BYTES};

const IPPROTO_TCP: u8 = 6;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// Bytes of every frame buffer: the largest frame fits.
const BUFFER_BYTES: usize = VNET_HEADER_BYTES + MAX_PACKET_BYTES;

/// Frame buffers by `PayloadId`, recycled: the steady state allocates nothing, and a buffer
/// keeps its full size (a frame's length is kept apart), so recycling touches no byte.
#[derive(Default)]
pub struct Frames {
    buffers: Vec<Vec<u8>>,
    lens: Vec<usize>,
    free: Vec<u32>,
}

impl Frames {
    /// A buffer to read one frame into, of the largest frame's size.
    pub fn alloc(&mut self) -> PayloadId {
        match self.free.pop() {
            Some(id) => PayloadId(id),
            None => {
                self.buffers.push(vec![0; BUFFER_BYTES]);
                self.lens.push(0);
                PayloadId(self.buffers.len() as u32 - 1)
            }
        }
    }

    pub fn release(&mut self, id: PayloadId) {
        self.free.push(id.0);
    }

    /// Frame `id`'s buffer and the frame's length, lent out (with [`Frames::put_back`]) so
    /// that it can be read while other frames are made.
    pub fn take(&mut self, id: PayloadId) -> (Vec<u8>, usize) {
        (std::mem::take(&mut self.buffers[id.0 as usize]), self.lens[id.0 as usize])
    }

    pub fn put_back(&mut self, id: PayloadId, buffer: Vec<u8>) {
        self.buffers[id.0 as usize] = buffer;
    }

    /// A frame holding `datagram`, whose checksums are complete (a virtio header of zeros:
    /// no GSO, nothing left to the receiver), and the models' view of it.
    pub fn from_datagram(&mut self, datagram: &[u8]) -> Option<Packet> {
        let id = self.alloc();
        let len = VNET_HEADER_BYTES + datagram.len();
        let buf = &mut self.buffers[id.0 as usize];
        buf[..VNET_HEADER_BYTES].fill(0);
        buf[VNET_HEADER_BYTES..len].copy_from_slice(datagram);
        self.lens[id.0 as usize] = len;
        let packet = self.describe(id);
        if packet.is_none() {
            self.release(id);
        }
        packet
    }

    /// The whole buffer, to read a frame into (then [`Frames::set_len`]).
    pub fn buffer_mut(&mut self, id: PayloadId) -> &mut [u8] {
        &mut self.buffers[id.0 as usize]
    }

    pub fn set_len(&mut self, id: PayloadId, len: usize) {
        self.lens[id.0 as usize] = len;
    }

    /// Sets the ECN field of frame `id`'s IP header (fixing its checksum).
    pub fn set_ecn(&mut self, id: PayloadId, ecn: u8) {
        let len = self.lens[id.0 as usize];
        let datagram = &mut self.buffers[id.0 as usize][VNET_HEADER_BYTES..len];
        // A frame is described (so parsed) before the models carry it: its header is there.
        let _ = rewrite_ecn(datagram, ecn);
    }

    /// The frame: virtio header then the IP packet.
    pub fn frame(&self, id: PayloadId) -> &[u8] {
        &self.buffers[id.0 as usize][..self.lens[id.0 as usize]]
    }

    /// Frames held (buffers not free).
    pub fn held(&self) -> usize {
        self.buffers.len() - self.free.len()
    }

    /// The models' view of frame `id`: its headers, and as length what its segments occupy on
    /// the wire together (a GSO frame of n segments carries n sets of headers). `None` for
    /// what the models do not carry (not TCP or UDP over IPv4, or malformed).
    pub fn describe(&self, id: PayloadId) -> Option<Packet> {
        let frame = self.frame(id);
        if frame.len() <= VNET_HEADER_BYTES {
            return None;
        }
        let vnet = VnetHeader::parse(frame);
        let (mut packet, payload) = parse(&frame[VNET_HEADER_BYTES..], false).ok()?;
        let payload = payload.len() as u32;
        if vnet.is_tcp_gso() && vnet.gso_size > 0 {
            let segments = payload.div_ceil(vnet.gso_size as u32).max(1);
            let headers = packet.wire_bytes() - payload;
            packet.payload_bytes = payload + (segments - 1) * headers;
        }
        packet.meta.payload = id;
        Some(packet)
    }

    /// The segment size of a TCP GSO frame, if it is one.
    pub fn gso_segment_bytes(&self, id: PayloadId) -> Option<u16> {
        let vnet = VnetHeader::parse(self.frame(id));
        (vnet.is_tcp_gso() && vnet.gso_size > 0).then_some(vnet.gso_size)
    }

    /// Appends TCP segment frame `next` to frame `to` as one more GSO segment when the
    /// kernel's segmentation would give back exactly the two (`gso::append_segment` says
    /// when). On success `next` is released; otherwise nothing changes. This keeps what the UE
    /// receives per segment identical while the link and the TUN device handle one frame.
    pub fn append(&mut self, to: PayloadId, next: PayloadId) -> bool {
        let len = self.lens[to.0 as usize];
        let next_len = self.lens[next.0 as usize];
        let (dst, src) = two_mut(&mut self.buffers, to.0 as usize, next.0 as usize);
        match append_segment(dst, len, &src[VNET_HEADER_BYTES..next_len]) {
            Some(len) => {
                self.lens[to.0 as usize] = len;
                self.release(next);
                true
            }
            None => false,
        }
    }

    /// Cuts GSO frame `id` into frames of `segments_per_piece` TCP segments (the last may have
    /// fewer), in sequence order, appended to `out`; `id` is released. A frame that is not a TCP
    /// GSO frame is handed back whole. Each piece gets what the kernel's segmentation would
    /// give its segments (RFC 9293 §3.1 header, IPv4 id + k, FIN/PSH on the last only, CWR on
    /// the first only) and a partial checksum for the receiving stack to complete, as the
    /// original frame had; a piece of several segments stays a GSO frame.
    pub fn split(&mut self, id: PayloadId, segments_per_piece: usize, out: &mut Vec<PayloadId>) {
        let frame = self.frame(id);
        let vnet = VnetHeader::parse(frame);
        let ip = VNET_HEADER_BYTES;
        let ihl = ((frame[ip] & 0x0f) as usize) * 4;
        let tcp = ip + ihl;
        let ok = vnet.is_tcp_gso() && vnet.gso_size > 0 && frame[ip + 9] == IPPROTO_TCP && frame.len() >= tcp + 20;
        let thl = if ok { ((frame[tcp + 12] >> 4) as usize) * 4 } else { 0 };
        if !ok || frame.len() < tcp + thl {
            out.push(id);
            return;
        }
        let headers_end = tcp + thl;
        let mss = vnet.gso_size as usize;
        let payload_bytes = frame.len() - headers_end;
        let segments = payload_bytes.div_ceil(mss).max(1);
        let per_piece = segments_per_piece.max(1);
        let seq0 = u32::from_be_bytes([frame[tcp + 4], frame[tcp + 5], frame[tcp + 6], frame[tcp + 7]]);
        let ip_id0 = u16::from_be_bytes([frame[ip + 4], frame[ip + 5]]);
        let flags = frame[tcp + 13];
        let src = Ipv4Addr::new(frame[ip + 12], frame[ip + 13], frame[ip + 14], frame[ip + 15]);
        let dst = Ipv4Addr::new(frame[ip + 16], frame[ip + 17], frame[ip + 18], frame[ip + 19]);
        for k in (0..segments).step_by(per_piece) {
            let start = headers_end + k * mss;
            let end = (start + per_piece * mss).min(headers_end + payload_bytes);
            let last = k + per_piece >= segments;
            let seg_id = self.alloc();
            let len = headers_end + (end - start);
            self.lens[seg_id.0 as usize] = len;
            let (orig, seg) = two_mut(&mut self.buffers, id.0 as usize, seg_id.0 as usize);
            seg[..headers_end].copy_from_slice(&orig[..headers_end]);
            seg[headers_end..len].copy_from_slice(&orig[start..end]);
            let piece = match end - start > mss {
                true => VnetHeader { flags: VnetHeader::NEEDS_CSUM, ..vnet },
                false => VnetHeader { flags: VnetHeader::NEEDS_CSUM, gso_type: VnetHeader::GSO_NONE, gso_size: 0, ..vnet },
            };
            piece.write(seg);
            let ip_bytes = (len - ip) as u16;
            seg[ip + 2..ip + 4].copy_from_slice(&ip_bytes.to_be_bytes());
            seg[ip + 4..ip + 6].copy_from_slice(&ip_id0.wrapping_add(k as u16).to_be_bytes());
            seg[ip + 10..ip + 12].fill(0);
            let ip_checksum = internet_checksum(&seg[ip..tcp]);
            seg[ip + 10..ip + 12].copy_from_slice(&ip_checksum.to_be_bytes());
            seg[tcp + 4..tcp + 8].copy_from_slice(&seq0.wrapping_add((k * mss) as u32).to_be_bytes());
            let mut seg_flags = flags;
            if !last {
                seg_flags &= !(TCP_FIN | TCP_PSH);
            }
            if k > 0 {
                seg_flags &= !TCP_CWR;
            }
            seg[tcp + 13] = seg_flags;
            let partial = Checksum::pseudo_header(src, dst, IPPROTO_TCP, (len - tcp) as u16).sum();
            seg[tcp + 16..tcp + 18].copy_from_slice(&partial.to_be_bytes());
            out.push(seg_id);
        }
        self.release(id);
    }
}

/// Two distinct elements of `v`, both mutable.
fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b);
    if a < b {
        let (left, right) = v.split_at_mut(b);
        (&mut left[a], &mut right[0])
    } else {
        let (left, right) = v.split_at_mut(a);
        (&mut right[0], &mut left[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_wire::emit;
    use millinet_wire::{TcpFlags, TcpHeader};

    /// A TCP GSO frame of `payload` bytes in segments of `mss`, as a TUN hands it over.
    fn gso_frame(frames: &mut Frames, payload: usize, mss: u16, flags: u16) -> PayloadId {
        let mut header = TcpHeader { src_port: 5201, dst_port: 40000, seq: 1000, ack: 7, window: 500, ..TcpHeader::default() };
        header.flags = TcpFlags(flags);
        let packet = Packet::tcp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), header, payload as u32);
        let bytes: Vec<u8> = (0..payload).map(|i| (i % 251) as u8).collect();
        let id = frames.alloc();
        let buf = frames.buffer_mut(id);
        let n = emit(&packet, &bytes, &mut buf[VNET_HEADER_BYTES..]).unwrap();
        VnetHeader {
            flags: VnetHeader::NEEDS_CSUM,
            gso_type: VnetHeader::GSO_TCPV4,
            header_bytes: 40,
            gso_size: mss,
            csum_start: 20,
            csum_offset: 16,
        }
        .write(buf);
        frames.set_len(id, VNET_HEADER_BYTES + n);
        id
    }

    #[test]
    fn a_gso_frame_is_charged_every_segment_headers() {
        let mut frames = Frames::default();
        let id = gso_frame(&mut frames, 10_000, 1448, 0x18);
        let packet = frames.describe(id).unwrap();
        // 7 segments: 6 × 1448 + 1312, each with 40 bytes of headers.
        assert_eq!(packet.wire_bytes(), 10_000 + 7 * 40);
        assert_eq!(packet.meta.payload, id);
    }

    #[test]
    fn splitting_gives_consecutive_valid_segments_with_the_same_bytes() {
        let mut frames = Frames::default();
        let id = gso_frame(&mut frames, 10_000, 1448, 0x19); // ACK|PSH|FIN
        let original = frames.frame(id)[VNET_HEADER_BYTES + 40..].to_vec();
        let mut parts = Vec::new();
        frames.split(id, 1, &mut parts);
        assert_eq!(parts.len(), 7);
        let mut joined = Vec::new();
        for (k, &p) in parts.iter().enumerate() {
            let frame = frames.frame(p);
            let vnet = VnetHeader::parse(frame);
            assert_eq!(vnet.gso_type, VnetHeader::GSO_NONE);
            let datagram = &frame[VNET_HEADER_BYTES..];
            assert_eq!(internet_checksum(&datagram[..20]), 0, "IPv4 header checksum of segment {k}");
            let (packet, payload) = parse(datagram, false).unwrap();
            let h = packet.tcp_header().unwrap();
            assert_eq!(h.seq, 1000 + (k as u32) * 1448);
            assert_eq!(h.flags.contains(TcpFlags::FIN), k == 6, "FIN only on the last segment");
            assert_eq!(h.flags.contains(TcpFlags::PSH), k == 6, "PSH only on the last segment");
            // The checksum field holds the pseudo-header sum, for the receiver to complete.
            let l4_bytes = (datagram.len() - 20) as u16;
            let partial = Checksum::pseudo_header(packet.src, packet.dst, IPPROTO_TCP, l4_bytes).sum();
            assert_eq!(u16::from_be_bytes([datagram[36], datagram[37]]), partial);
            joined.extend_from_slice(payload);
        }
        assert_eq!(joined, original, "the segments carry the frame's payload in order");
        assert_eq!(frames.held(), 7, "the original buffer was released");
    }

    /// A single TCP segment with complete checksums, as the proxy's datapath emits it.
    fn segment(frames: &mut Frames, seq: u32, payload: &[u8], flags: u16) -> PayloadId {
        let mut header = TcpHeader { src_port: 5201, dst_port: 40000, seq, ack: 7, window: 500, ..TcpHeader::default() };
        header.flags = TcpFlags(flags);
        let packet = Packet::tcp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), header, payload.len() as u32);
        let mut wire = vec![0; 70_000];
        let n = emit(&packet, payload, &mut wire).unwrap();
        frames.from_datagram(&wire[..n]).unwrap().meta.payload
    }

    #[test]
    fn appended_segments_come_back_out_of_segmentation_as_they_went_in() {
        let mut frames = Frames::default();
        let bytes: Vec<u8> = (0..4000u32).map(|i| (i % 253) as u8).collect();
        let first = segment(&mut frames, 1000, &bytes[..1400], 0x10);
        let second = segment(&mut frames, 2400, &bytes[1400..2800], 0x10);
        let last = segment(&mut frames, 3800, &bytes[2800..], 0x19); // ACK|PSH|FIN
        assert!(frames.append(first, second) && frames.append(first, last));
        assert_eq!(frames.held(), 1);
        let packet = frames.describe(first).unwrap();
        assert_eq!(packet.wire_bytes(), 4000 + 3 * 40, "charged as three segments");
        let mut parts = Vec::new();
        frames.split(first, 1, &mut parts);
        let got: Vec<(u32, u16, Vec<u8>)> = parts
            .iter()
            .map(|&p| {
                let (packet, payload) = parse(&frames.frame(p)[VNET_HEADER_BYTES..], false).unwrap();
                let h = packet.tcp_header().unwrap();
                (h.seq, h.flags.0, payload.to_vec())
            })
            .collect();
        let want =
            vec![(1000, 0x10, bytes[..1400].to_vec()), (2400, 0x10, bytes[1400..2800].to_vec()), (3800, 0x19, bytes[2800..].to_vec())];
        assert_eq!(got, want);
    }

    #[test]
    fn segments_the_kernel_could_not_have_made_from_one_frame_are_not_appended() {
        let mut frames = Frames::default();
        let bytes = [7u8; 1400];
        let a = segment(&mut frames, 1000, &bytes, 0x10);
        let gap = segment(&mut frames, 2401, &bytes, 0x10);
        assert!(!frames.append(a, gap), "not contiguous");
        let longer = segment(&mut frames, 2400, &[7u8; 1401], 0x10);
        assert!(!frames.append(a, longer), "longer than the first segment");
        let fin = segment(&mut frames, 5000, &bytes, 0x11);
        let after_fin = segment(&mut frames, 6400, &bytes, 0x10);
        assert!(!frames.append(fin, after_fin), "nothing follows a FIN");
        let syn = segment(&mut frames, 2400, &bytes, 0x12);
        assert!(!frames.append(a, syn), "a SYN is never part of a GSO frame");
        assert_eq!(frames.held(), 6, "nothing was released");
    }

    #[test]
    fn pieces_of_several_segments_stay_gso_frames() {
        let mut frames = Frames::default();
        let id = gso_frame(&mut frames, 10_000, 1448, 0x18);
        let mut parts = Vec::new();
        frames.split(id, 3, &mut parts);
        let pieces: Vec<(u8, usize, u32)> = parts
            .iter()
            .map(|&p| {
                let frame = frames.frame(p);
                let (packet, payload) = parse(&frame[VNET_HEADER_BYTES..], false).unwrap();
                (VnetHeader::parse(frame).gso_type, payload.len(), packet.tcp_header().unwrap().seq)
            })
            .collect();
        let gso = VnetHeader::GSO_TCPV4;
        assert_eq!(pieces, vec![(gso, 3 * 1448, 1000), (gso, 3 * 1448, 1000 + 3 * 1448), (VnetHeader::GSO_NONE, 1312, 1000 + 6 * 1448)]);
    }
}
