//! MP-TCP data-level connection (RFC 8684), sans-IO: one byte stream over N subflows, each
//! an unmodified `TcpConnection` with hooks (`subflow`) that share the data level's state.
//!
//! Layout: `handshake` (keys, tokens, IDSNs, HMACs, MP_CAPABLE / MP_JOIN options),
//! `subflow` (the shared state and the hooks: options in and out), `sender` (DSNs, send
//! buffer, DATA_FIN, peer's window, reinjection queue, per-subflow mappings), `receiver`
//! (mappings to DSN ranges, reassembly, data-level window), `scheduler` (which subflow gets
//! data), `resend` (signals without data sent again on a timer). This file holds the
//! connection: opening subflows, routing packets, scheduling, reinjection, signalling the
//! DATA_FIN, closing, and the fallback to plain TCP.
//!
//! The caller routes packets by address (`on_packet` finds the subflow from the segment's
//! addresses and ports) and drives timers through `next_deadline_ns` / `on_timeout`.

mod handshake;
mod receiver;
mod resend;
mod scheduler;
mod sender;
mod subflow;

use std::cell::RefCell;
use std::net::SocketAddrV4;
use std::ops::Range;
use std::rc::Rc;

use millinet_wire::mptcp::{CapableForm, MpJoin, MptcpOption};
use millinet_wire::{Packet, TcpFlags};

use crate::cc::CcFactory;
use crate::deadline::earliest_ns;
use crate::{ConnectionParts, TcpConfig, TcpConnection, TcpError, TcpState};
pub use handshake::{idsn, token};
use handshake::{key_from_seed, subflow_value};
use resend::Resend;
use scheduler::Candidate;
pub use scheduler::Scheduler;
use subflow::{Opening, PathState, Shared, SubflowHooks};

/// The longest mapping: its length is 16 bits on the wire (RFC 8684 §3.3, Figure 9).
const MAX_MAPPING_BYTES: u64 = u16::MAX as u64;
/// Salts of the per-subflow values drawn from the seed.
const ISS_SALT: u64 = 1;
const NONCE_SALT: u64 = 2;

#[derive(Clone, Debug, PartialEq)]
pub struct MptcpConfig {
    /// Configuration of every subflow; `tcp.cc` names the one congestion control all
    /// subflows are built from (coupled ones share state), `tcp.iss` is replaced per subflow.
    pub tcp: TcpConfig,
    pub scheduler: Scheduler,
    /// The data-level receive buffer; its free space is the window every subflow advertises.
    pub rcv_buf_bytes: u64,
    /// Draws the key, the initial sequence numbers and the MP_JOIN nonces (the model has no
    /// randomness: same seed, same connection).
    pub seed: u64,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        MptcpConfig { tcp: TcpConfig::default(), scheduler: Scheduler::default(), rcv_buf_bytes: 1 << 30, seed: 0 }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MptcpError {
    /// `connect` needs at least one path.
    NoPaths,
    /// MP_JOIN numbers subflows with an 8-bit address ID (RFC 8684 §3.2).
    TooManyPaths {
        paths: usize,
    },
    Tcp(TcpError),
}

impl std::fmt::Display for MptcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MptcpError::NoPaths => f.write_str("an MP-TCP connection needs at least one path"),
            MptcpError::TooManyPaths { paths } => write!(f, "{paths} paths, at most 256 subflows are numbered"),
            MptcpError::Tcp(e) => write!(f, "subflow: {e}"),
        }
    }
}

impl std::error::Error for MptcpError {}

impl From<TcpError> for MptcpError {
    fn from(e: TcpError) -> Self {
        MptcpError::Tcp(e)
    }
}

/// Data-level counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MptcpStats {
    /// Application bytes DATA_ACKed by the peer (sender side).
    pub data_acked_bytes: u64,
    /// Our DATA_FIN was DATA_ACKed: the peer got the whole stream (RFC 8684 §3.3.3).
    pub data_fin_acked: bool,
    /// The peer's DATA_FIN arrived after all its bytes: its stream ended.
    pub peer_finished: bool,
    /// Bytes handed to subflows and not DATA_ACKed: the send buffer's occupancy.
    pub send_buffer_bytes: u64,
    /// Bytes the reassembly buffer holds (in order not taken, and out of order).
    pub rcv_occupancy_bytes: u64,
    /// The most the reassembly buffer held at once (at most `rcv_buf_bytes`).
    pub max_rcv_occupancy_bytes: u64,
    /// Data-level bytes that arrived more than once and were dropped.
    pub duplicate_bytes: u64,
    /// Data-level bytes queued again for another subflow after an RTO or a failure.
    pub reinjected_bytes: u64,
    /// Stream bytes handed to each subflow, by index (reinjections included).
    pub subflow_bytes: Vec<u64>,
    /// MP-TCP options that did not decode or did not fit in a segment.
    pub option_errors: u64,
    /// MP_JOIN subflows refused because the peer's HMAC was wrong (RFC 8684 §3.2).
    pub refused_joins: u64,
    /// The peer answered without MP-TCP: the first subflow runs plain TCP (§3.7).
    pub fallback: bool,
}

/// Whether a connection that sent its FIN has had it acknowledged (RFC 9293 §3.3.2).
fn fin_acked(state: TcpState) -> bool {
    matches!(state, TcpState::FinWait2 | TcpState::TimeWait | TcpState::Closed)
}

/// One subflow and what the data level watches of it.
struct Slot {
    conn: TcpConnection,
    /// `sender().rtos()` when last looked at: an increase triggers reinjection.
    seen_rtos: u64,
    /// Declared failed: no data goes to it any more.
    failed: bool,
    /// Active side of a join: our MP_JOIN third ACK, until the fourth ACK answers it.
    third_ack: Resend,
}

pub struct MptcpConnection {
    cfg: MptcpConfig,
    cc: CcFactory,
    shared: Rc<RefCell<Shared>>,
    slots: Vec<Slot>,
    /// Active side: the paths of subflows 1.. to open with MP_JOIN once subflow 0 is up.
    joins_pending: Vec<(SocketAddrV4, SocketAddrV4)>,
    passive: bool,
    last_picked: Option<usize>,
    /// `schedule`'s list of the subflows that may take data, kept to reuse its allocation.
    candidates: Vec<Candidate>,
    reinjected_bytes: u64,
    /// Our DATA_FIN on segments of its own, until DATA_ACKed.
    data_fin: Resend,
}

impl MptcpConnection {
    fn new(cfg: MptcpConfig, passive: bool) -> Result<MptcpConnection, MptcpError> {
        let cc = CcFactory::by_name(&cfg.tcp.cc).map_err(TcpError::from)?;
        let shared = Shared::new(cfg.tcp.clone(), key_from_seed(cfg.seed), cfg.rcv_buf_bytes);
        Ok(MptcpConnection {
            cfg,
            cc,
            shared: Rc::new(RefCell::new(shared)),
            slots: Vec::new(),
            joins_pending: Vec::new(),
            passive,
            last_picked: None,
            candidates: Vec::new(),
            reinjected_bytes: 0,
            data_fin: Resend::default(),
        })
    }

    /// Active open over `paths` (local, remote): subflow 0 opens now with MP_CAPABLE, the
    /// others with MP_JOIN once it is established (RFC 8684 §3.1, §3.2).
    pub fn connect(
        cfg: MptcpConfig,
        paths: &[(SocketAddrV4, SocketAddrV4)],
        now_ns: u64,
        out: &mut Vec<Packet>,
    ) -> Result<MptcpConnection, MptcpError> {
        let (&(local, remote), joins) = paths.split_first().ok_or(MptcpError::NoPaths)?;
        if paths.len() > usize::from(u8::MAX) + 1 {
            return Err(MptcpError::TooManyPaths { paths: paths.len() });
        }
        let mut conn = MptcpConnection::new(cfg, false)?;
        conn.joins_pending = joins.iter().rev().copied().collect();
        conn.open(Opening::CapableActive, local, Some(remote), now_ns, out)?;
        Ok(conn)
    }

    /// Passive open: accepts one SYN with MP_CAPABLE, then SYNs with MP_JOIN that carry
    /// this connection's token, on any local address.
    pub fn listen(cfg: MptcpConfig) -> Result<MptcpConnection, MptcpError> {
        MptcpConnection::new(cfg, true)
    }

    /// This endpoint's key (RFC 8684 §3.1), drawn from `MptcpConfig::seed`.
    pub fn local_key(&self) -> u64 {
        self.shared.borrow().local_key
    }

    /// This endpoint's token (RFC 8684 §3.2), which MP_JOINs to it carry.
    pub fn local_token(&self) -> u32 {
        token(self.local_key())
    }

    /// A segment arrived; the subflow is found from its addresses. A SYN that matches no
    /// subflow opens one on the passive side if it carries MP_CAPABLE (first subflow) or
    /// MP_JOIN with our token; anything else that matches no subflow is ignored.
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        let Some(header) = pkt.tcp_header() else { return };
        let local = SocketAddrV4::new(pkt.dst, header.dst_port);
        let remote = SocketAddrV4::new(pkt.src, header.src_port);
        let found = self.slots.iter().position(|s| s.conn.local() == local && s.conn.remote() == Some(remote));
        let Some(index) = found.or_else(|| self.accept(pkt, local)) else { return };
        self.slots[index].conn.on_packet(now_ns, pkt, out);
        self.after(now_ns, out);
    }

    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        for slot in &mut self.slots {
            if slot.conn.next_deadline_ns().is_some_and(|t| t <= now_ns) {
                slot.conn.on_timeout(now_ns, out);
            }
        }
        self.after(now_ns, out);
    }

    /// The earliest deadline over the subflows and the signals sent again.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        let subflows = self.slots.iter().map(|s| earliest_ns(s.conn.next_deadline_ns(), s.third_ack.deadline_ns()));
        subflows.fold(self.data_fin.deadline_ns(), earliest_ns)
    }

    /// The application appends `bytes` to the data-level stream (u64::MAX: unlimited);
    /// nothing after `close`.
    pub fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>) {
        self.shared.borrow_mut().snd.write(bytes);
        self.after(now_ns, out);
    }

    /// Data-level stream offsets delivered in order since the last call.
    pub fn take_delivered(&mut self) -> Range<u64> {
        self.shared.borrow_mut().rcv.take_delivered()
    }

    /// The application writes nothing more: a DATA_FIN follows its last byte (RFC 8684
    /// §3.3.3), and once that is DATA_ACKed every subflow closes with a FIN.
    pub fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.shared.borrow_mut().snd.close();
        self.after(now_ns, out);
    }

    /// Declares subflow `index` failed (e.g. its interface went down): no data goes to it any
    /// more and what it carried that is not DATA_ACKed goes again on the others (§3.3.6).
    pub fn fail_subflow(&mut self, index: usize, now_ns: u64, out: &mut Vec<Packet>) {
        let Some(slot) = self.slots.get_mut(index) else { return };
        slot.failed = true;
        self.reinject(index);
        self.after(now_ns, out);
    }

    pub fn subflow_count(&self) -> usize {
        self.slots.len()
    }

    pub fn subflow(&self, index: usize) -> Option<&TcpConnection> {
        self.slots.get(index).map(|s| &s.conn)
    }

    pub fn stats(&self) -> MptcpStats {
        let s = self.shared.borrow();
        MptcpStats {
            data_acked_bytes: s.snd.acked_bytes(),
            data_fin_acked: s.snd.data_fin_acked(),
            peer_finished: s.rcv.finished(),
            send_buffer_bytes: s.snd.buffered_bytes(),
            rcv_occupancy_bytes: s.rcv.occupancy_bytes(),
            max_rcv_occupancy_bytes: s.rcv.max_occupancy_bytes(),
            duplicate_bytes: s.rcv.duplicate_bytes(),
            reinjected_bytes: self.reinjected_bytes,
            subflow_bytes: s.paths.iter().map(|p| p.tx.handed()).collect(),
            option_errors: s.option_errors,
            refused_joins: s.refused_joins,
            fallback: s.fallback,
        }
    }

    /// Opens subflow `paths.len()` with `opening`, actively (`remote` given) or passively.
    fn open(
        &mut self,
        opening: Opening,
        local: SocketAddrV4,
        remote: Option<SocketAddrV4>,
        now_ns: u64,
        out: &mut Vec<Packet>,
    ) -> Result<usize, MptcpError> {
        let index = self.slots.len();
        let tcp = TcpConfig { iss: subflow_value(self.cfg.seed, index, ISS_SALT) as u32, ..self.cfg.tcp.clone() };
        self.shared.borrow_mut().paths.push(PathState::new(opening, tcp.iss));
        let hooks = SubflowHooks { shared: Rc::clone(&self.shared), index };
        let parts = ConnectionParts { cc: self.cc.clone(), hooks: Some(Box::new(hooks)) };
        let opened = match remote {
            Some(remote) => TcpConnection::connect_with(tcp, parts, local, remote, now_ns, out),
            None => TcpConnection::listen_with(tcp, parts, local),
        };
        match opened {
            Ok(conn) => {
                self.slots.push(Slot { conn, seen_rtos: 0, failed: false, third_ack: Resend::default() });
                Ok(index)
            }
            Err(e) => {
                self.shared.borrow_mut().paths.pop();
                Err(e.into())
            }
        }
    }

    /// Passive side: a subflow for a SYN to `local` that matches none, if its MP-TCP
    /// option admits it (§3.1: MP_CAPABLE opens the connection; §3.2: MP_JOIN must name it).
    fn accept(&mut self, pkt: &Packet, local: SocketAddrV4) -> Option<usize> {
        let header = pkt.tcp_header()?;
        let handshake_flags = TcpFlags::SYN.0 | TcpFlags::ACK.0 | TcpFlags::RST.0;
        if !self.passive || header.flags.0 & handshake_flags != TcpFlags::SYN.0 {
            return None;
        }
        let index = self.slots.len();
        u8::try_from(index).ok()?;
        let local_token = self.local_token();
        // A join's HMAC needs the initiator's key (§3.2).
        let key_known = self.shared.borrow().remote_key.is_some();
        let opening = header.options.mptcp_options().flatten().find_map(|option| match option {
            MptcpOption::MpCapable(c) if index == 0 && c.form == CapableForm::Syn => Some(Opening::CapablePassive),
            MptcpOption::MpJoin(MpJoin::Syn { receiver_token, sender_random_number, .. })
                if index > 0 && receiver_token == local_token && key_known =>
            {
                let nonce = subflow_value(self.cfg.seed, index, NONCE_SALT) as u32;
                Some(Opening::JoinPassive { nonce, peer_nonce: sender_random_number })
            }
            _ => None,
        })?;
        // The subflow's own configuration was validated when the first one opened.
        self.open(opening, local, None, 0, &mut Vec::new()).ok()
    }

    /// After any input: collect deliveries, react to RTOs, open joins, schedule, signal and
    /// acknowledge DATA_FINs, close.
    fn after(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        for index in 0..self.slots.len() {
            self.collect(index);
        }
        self.open_joins(now_ns, out);
        self.repeat_join_acks(now_ns, out);
        self.schedule(now_ns, out);
        self.signal_data_fin(now_ns, out);
        let owed = self.shared.borrow_mut().data_ack_owed.take();
        if let Some(index) = owed {
            self.slots[index].conn.send_ack(now_ns, out);
        }
        self.close_when_done(now_ns, out);
    }

    /// §3.2: the initiator of a join repeats its third ACK on a pure ACK until the fourth
    /// ACK arrives (the first went with the subflow's ACK of the SYN/ACK).
    fn repeat_join_acks(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        for index in 0..self.slots.len() {
            let waiting = {
                let path = &self.shared.borrow().paths[index];
                path.echo_third_ack && matches!(path.opening, Opening::JoinActive { .. })
            };
            let slot = &mut self.slots[index];
            if !waiting || slot.conn.state() != TcpState::Established {
                slot.third_ack.stop();
                continue;
            }
            if slot.third_ack.deadline_ns().is_none() {
                slot.third_ack.sent(now_ns, slot.conn.sender().rto_ns());
            } else if slot.third_ack.due(now_ns) {
                slot.conn.send_ack(now_ns, out);
                slot.third_ack.sent(now_ns, slot.conn.sender().rto_ns());
            }
        }
    }

    /// §3.3.3: our DATA_FIN, once due, goes on a pure ACK at once (any segment without data
    /// carries it too), then again whenever it is not DATA_ACKed in time (`Resend`), on the
    /// next usable subflow in turn, so that a lost DATA_FIN or DATA_ACK, or a path that
    /// died, does not stall the close.
    fn signal_data_fin(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if self.shared.borrow().snd.data_fin_due().is_none() {
            self.data_fin.stop();
            return;
        }
        if !self.data_fin.due(now_ns) {
            return;
        }
        if self.shared.borrow().fallback {
            // §3.7: the subflow's FIN, after the last byte, is the end of the stream.
            let conn = &mut self.slots[0].conn;
            if matches!(conn.state(), TcpState::Established | TcpState::CloseWait) {
                conn.close(now_ns, out);
            }
            return;
        }
        let usable: Vec<usize> = (0..self.slots.len()).filter(|&i| self.usable(i)).collect();
        let Some(&index) = usable.get(self.data_fin.count() as usize % usable.len().max(1)) else { return };
        let conn = &mut self.slots[index].conn;
        conn.send_ack(now_ns, out);
        self.data_fin.sent(now_ns, conn.sender().rto_ns());
    }

    /// Whether subflow `index` may carry data-level traffic: MP-TCP confirmed, not failed,
    /// and open for sending.
    fn usable(&self, index: usize) -> bool {
        let slot = &self.slots[index];
        !slot.failed
            && self.shared.borrow().paths[index].confirmed
            && matches!(slot.conn.state(), TcpState::Established | TcpState::CloseWait)
    }

    /// Subflow `index`'s in-order bytes into the reassembly buffer; its acknowledged
    /// mappings dropped; an RTO since the last look queues its data for reinjection.
    fn collect(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        let delivered = slot.conn.take_delivered();
        let (acked, rtos) = (slot.conn.sender().acked_bytes(), slot.conn.sender().rtos());
        let rto_fired = rtos > slot.seen_rtos;
        slot.seen_rtos = rtos;
        let state = slot.conn.state();
        let mut s = self.shared.borrow_mut();
        let path = &mut s.paths[index];
        path.tx.on_subflow_ack(acked);
        for dsn in path.rx.on_delivered(delivered) {
            s.rcv.on_data(dsn);
        }
        if s.fallback {
            // §3.7: the subflow's ACKs and FINs stand for the DATA_ACKs and DATA_FINs, and
            // TCP retransmits what was lost on it.
            s.snd.on_data_ack(acked);
            if let Some(fin) = s.snd.data_fin_due().filter(|_| fin_acked(state)) {
                s.snd.on_data_ack(fin + 1);
            }
            if matches!(state, TcpState::CloseWait | TcpState::LastAck | TcpState::Closing | TcpState::TimeWait) {
                let end = s.rcv.nxt();
                s.rcv.on_data_fin(end);
            }
            return;
        }
        drop(s);
        if rto_fired {
            self.reinject(index);
        }
    }

    /// §3.3.6: the data of subflow `index` not yet DATA_ACKed goes again on another subflow.
    fn reinject(&mut self, index: usize) {
        let mut s = self.shared.borrow_mut();
        for dsn in s.paths[index].tx.take_for_reinjection() {
            let before = s.snd.una();
            let queued = dsn.end.saturating_sub(dsn.start.max(before));
            s.snd.queue_reinjection(dsn);
            self.reinjected_bytes += queued;
        }
    }

    /// Active side: the MP_JOIN subflows, once the connection is fully established (§3.1):
    /// a DATA_ACK on subflow 0 showed the listener has our key. Before that, a join could
    /// overtake the third ACK on a faster path and meet a listener that cannot check its
    /// HMAC, which ignores it: its SYN would wait for a 1 s retransmission timeout. Linux's
    /// path manager likewise opens subflows only once the connection is fully established.
    fn open_joins(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if self.shared.borrow().fallback {
            self.joins_pending.clear();
        }
        let fully_established = {
            let s = self.shared.borrow();
            s.remote_key.is_some() && s.paths.first().is_some_and(|p| p.confirmed && !p.echo_third_ack)
        };
        let ready = self.slots.first().is_some_and(|s| s.conn.state() == TcpState::Established) && fully_established;
        if !ready {
            return;
        }
        while let Some((local, remote)) = self.joins_pending.pop() {
            let nonce = subflow_value(self.cfg.seed, self.slots.len(), NONCE_SALT) as u32;
            // Same configuration as subflow 0, which opened: it cannot fail.
            if self.open(Opening::JoinActive { nonce, peer_nonce: None }, local, Some(remote), now_ns, out).is_err() {
                break;
            }
        }
    }

    /// Hands data-level bytes to subflows with congestion-window space, as the scheduler
    /// picks, whole segments at a time, recording each mapping before the subflow sends it.
    fn schedule(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let mss = u64::from(self.cfg.tcp.mss_bytes);
        let max_chunk = MAX_MAPPING_BYTES / mss * mss;
        // Runs after every packet: the candidate list is reused, not allocated per segment.
        let mut candidates = std::mem::take(&mut self.candidates);
        loop {
            self.fill_candidates(mss, &mut candidates);
            let Some(index) = self.cfg.scheduler.pick(&candidates, self.last_picked) else { break };
            let space = self.space_bytes(index).min(max_chunk);
            let chunk = {
                let mut s = self.shared.borrow_mut();
                let Some(dsn) = s.snd.next_chunk(space) else { break };
                s.paths[index].tx.hand(dsn).len
            };
            self.last_picked = Some(index);
            self.slots[index].conn.send(now_ns, chunk, out);
        }
        self.candidates = candidates;
    }

    /// The subflows that may take data now, into `candidates`: established, MP-TCP
    /// confirmed, not failed, with a segment's worth of congestion-window space; none if
    /// no data waits.
    fn fill_candidates(&self, mss: u64, candidates: &mut Vec<Candidate>) {
        candidates.clear();
        let s = self.shared.borrow();
        if !s.snd.has_data() {
            return;
        }
        let usable = (0..self.slots.len()).filter(|&i| self.usable(i) && s.paths[i].may_take_data() && self.space_bytes(i) >= mss);
        candidates.extend(usable.map(|index| Candidate { index, srtt_ns: self.slots[index].conn.sender().srtt_ns() }));
    }

    /// Congestion-window space of subflow `index`: cwnd less what it was handed and still
    /// occupies the window, in whole segments. That is what is not acknowledged (sent or
    /// not) except what the peer SACKed: those bytes have left the network, and counting
    /// them would starve a subflow in loss recovery of new data its window has room for
    /// (RFC 6675's pipe does not count them either).
    fn space_bytes(&self, index: usize) -> u64 {
        let sender = self.slots[index].conn.sender();
        let handed = self.shared.borrow().paths[index].tx.handed();
        let outstanding = handed.saturating_sub(sender.acked_bytes()).saturating_sub(sender.sacked_bytes());
        let mss = u64::from(self.cfg.tcp.mss_bytes);
        sender.cwnd_bytes().saturating_sub(outstanding) / mss * mss
    }

    /// §3.3.3: once our DATA_FIN is DATA_ACKed, every subflow closes with a FIN.
    fn close_when_done(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if !self.shared.borrow().snd.data_fin_acked() {
            return;
        }
        for slot in &mut self.slots {
            if matches!(slot.conn.state(), TcpState::Established | TcpState::CloseWait | TcpState::SynReceived) {
                slot.conn.close(now_ns, out);
            }
        }
    }
}
