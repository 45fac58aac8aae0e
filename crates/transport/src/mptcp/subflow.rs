//! What the data level and its subflows share, and the hooks through which an unmodified
//! `TcpConnection` becomes a subflow: MP_CAPABLE / MP_JOIN on the handshakes (RFC 8684 §3.1,
//! §3.2), a DSS with the mapping and the DATA_ACK on every later segment (§3.3), the
//! DATA_FIN on segments without data (§3.3.3), and the data-level receive window in both
//! directions (§3.3.5). The model is single-threaded: the hooks hold an
//! `Rc<RefCell<..>>` of the state, as the coupled congestion controls do (cc/shared.rs).

use std::cell::RefCell;
use std::rc::Rc;

use millinet_wire::mptcp::{CapableForm, DataSeq, Dss, DssMapping, MpJoin, MptcpOption};
use millinet_wire::{TcpFlags, TcpHeader};

use super::handshake::{
    ack_hmac_valid, capable_ack, capable_data, capable_syn, capable_syn_ack, idsn, join_ack, join_syn, join_syn_ack, syn_ack_hmac_valid,
};
use super::receiver::{DataReceiver, SubflowRx};
use super::sender::{DataSender, SubflowTx};
use crate::tcp::options::negotiate;
use crate::tcp::wrap::unwrap32;
use crate::{ConnectionHooks, TcpConfig};

/// How a subflow was opened, with what its handshake needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Opening {
    /// The first subflow, active side: MP_CAPABLE on the SYN (§3.1).
    CapableActive,
    /// The first subflow, passive side.
    CapablePassive,
    /// A further subflow, active side: MP_JOIN with our nonce (§3.2).
    JoinActive { nonce: u32, peer_nonce: Option<u32> },
    /// A further subflow, passive side, accepted for the token of its SYN.
    JoinPassive { nonce: u32, peer_nonce: u32 },
}

/// One subflow's part of the shared state.
#[derive(Debug)]
pub(super) struct PathState {
    pub opening: Opening,
    /// Initial sequence number of the subflow, to turn sequence numbers into stream offsets.
    pub iss: u32,
    /// The handshake made the subflow part of the connection: it may carry data.
    pub confirmed: bool,
    /// Active side: our segments repeat the third ACK's option (MP_CAPABLE with both keys,
    /// or MP_JOIN with our HMAC) until a DSS from the peer on this subflow shows it got it
    /// (§3.1: its DATA_ACK; §3.2: the fourth ACK).
    pub echo_third_ack: bool,
    /// The peer's MP_JOIN HMAC was wrong (§3.2): the subflow never carries data.
    pub refused: bool,
    /// The peer's initial sequence number, from its SYN or SYN-ACK.
    pub peer_iss: Option<u32>,
    /// Window shifts of the subflow (RFC 7323 §2.3): of the peer's windows, of ours.
    pub snd_wscale: u8,
    pub rcv_wscale: u8,
    pub tx: SubflowTx,
    pub rx: SubflowRx,
}

impl PathState {
    pub fn new(opening: Opening, iss: u32) -> PathState {
        PathState {
            opening,
            iss,
            confirmed: false,
            echo_third_ack: false,
            refused: false,
            peer_iss: None,
            snd_wscale: 0,
            rcv_wscale: 0,
            tx: SubflowTx::default(),
            rx: SubflowRx::default(),
        }
    }

    /// Whether the data level may hand it bytes now: while the peer may still lack our key,
    /// the first subflow takes only the first mapping, which MP_CAPABLE describes (§3.1).
    pub fn may_take_data(&self) -> bool {
        self.confirmed && (!self.echo_third_ack || self.tx.handed() == 0)
    }
}

/// The data level: keys, both halves, and the subflows' parts.
#[derive(Debug)]
pub(super) struct Shared {
    /// The subflows' configuration, for the window scaling they negotiate.
    pub tcp: TcpConfig,
    pub local_key: u64,
    /// Set once, through `learn_remote_key`.
    pub remote_key: Option<u64>,
    /// Our first data sequence number on the wire (IDSN + 1, §3.1, §3.3), and the peer's
    /// once its key is known: hashed once, not per segment.
    local_dsn_base: u64,
    peer_dsn_base: Option<u64>,
    pub snd: DataSender,
    pub rcv: DataReceiver,
    pub paths: Vec<PathState>,
    /// MP-TCP options that did not decode, or that found no room in a segment.
    pub option_errors: u64,
    /// A pure ACK must go on this subflow, as nothing else would carry its news: the
    /// DATA_ACK of a DATA_FIN that arrived without data once the stream had ended (§3.3.3),
    /// or the fourth ACK of an MP_JOIN (§3.2).
    pub data_ack_owed: Option<usize>,
    /// MP_JOINs whose HMAC was wrong (§3.2): the subflow was refused.
    pub refused_joins: u64,
    /// The SYN/ACK of the first subflow came without MP_CAPABLE (§3.7): that subflow is
    /// plain TCP, its stream the data-level stream, and no other subflow opens.
    pub fallback: bool,
}

/// §3.7: after a fallback, the subflow's whole stream maps to the data-level stream from
/// offset 0 (an "infinite mapping").
const INFINITE_MAPPING_BYTES: u64 = u64::MAX / 2;

/// The hooks of subflow `index`.
pub(super) struct SubflowHooks {
    pub shared: Rc<RefCell<Shared>>,
    pub index: usize,
}

impl Shared {
    pub fn new(tcp: TcpConfig, local_key: u64, rcv_buf_bytes: u64) -> Shared {
        Shared {
            tcp,
            local_key,
            remote_key: None,
            local_dsn_base: idsn(local_key).wrapping_add(1),
            peer_dsn_base: None,
            snd: DataSender::default(),
            rcv: DataReceiver::new(rcv_buf_bytes),
            paths: Vec::new(),
            option_errors: 0,
            data_ack_owed: None,
            refused_joins: 0,
            fallback: false,
        }
    }

    /// The peer's key, from MP_CAPABLE; the first one learnt stays.
    fn learn_remote_key(&mut self, key: u64) {
        if self.remote_key.is_none() {
            self.remote_key = Some(key);
            self.peer_dsn_base = Some(idsn(key).wrapping_add(1));
        }
    }

    fn local_base(&self) -> u64 {
        self.local_dsn_base
    }

    fn peer_base(&self) -> Option<u64> {
        self.peer_dsn_base
    }

    fn push(&mut self, header: &mut TcpHeader, option: MptcpOption) {
        if header.options.push_mptcp(&option).is_err() {
            self.option_errors += 1;
        }
    }

    /// The DSS for a segment of subflow `index` from sequence number `seq` (§3.3): the
    /// DATA_ACK always; the mapping covering its first byte when it carries data, else our
    /// DATA_FIN while it is due (§3.3.3: subflow sequence number 0, data-level length 1).
    fn dss(&self, index: usize, seq: u32, payload_bytes: u32) -> Dss {
        let path = &self.paths[index];
        let mapping = if payload_bytes > 0 {
            let offset = unwrap32(path.tx.handed(), seq.wrapping_sub(path.iss).wrapping_sub(1));
            path.tx.mapping_at(offset).map(|m| DssMapping {
                data_sequence_number: DataSeq::U32(self.local_base().wrapping_add(m.dsn) as u32),
                // §3.3.1: the subflow sequence number is relative to the SYN.
                subflow_sequence_number: (m.offset + 1) as u32,
                data_level_length: m.len as u16,
                checksum: None,
                data_fin: false,
            })
        } else {
            self.snd.data_fin_due().map(|fin| DssMapping {
                data_sequence_number: DataSeq::U32(self.local_base().wrapping_add(fin) as u32),
                subflow_sequence_number: 0,
                data_level_length: 1,
                checksum: None,
                data_fin: true,
            })
        };
        // Without the peer's key (its third ACK lost) there is no DATA_ACK to give.
        let data_ack = self.peer_base().map(|base| DataSeq::U32(base.wrapping_add(self.rcv.nxt()) as u32));
        Dss { data_ack, mapping }
    }

    /// The first mapping of the first subflow, on MP_CAPABLE while the peer may lack our key.
    fn capable_data(&self, index: usize, remote_key: u64) -> Option<MptcpOption> {
        let m = self.paths[index].tx.mapping_at(0).filter(|m| m.dsn == 0)?;
        Some(MptcpOption::MpCapable(capable_data(self.local_key, remote_key, m.len as u16)))
    }

    /// The option repeating our third ACK on a segment of subflow `index` with
    /// `payload_bytes` of data (§3.1, §3.2), if the handshake still needs it.
    fn third_ack(&self, index: usize, payload_bytes: u32) -> Option<MptcpOption> {
        let path = &self.paths[index];
        let remote = self.remote_key?;
        if !path.echo_third_ack {
            return None;
        }
        match (path.opening, payload_bytes) {
            (Opening::JoinActive { nonce, peer_nonce: Some(peer_nonce) }, 0) => {
                Some(MptcpOption::MpJoin(join_ack(self.local_key, remote, nonce, peer_nonce)))
            }
            (Opening::CapableActive, 0) => Some(MptcpOption::MpCapable(capable_ack(self.local_key, remote))),
            (Opening::CapableActive, _) => self.capable_data(index, remote),
            _ => None,
        }
    }

    /// The subflow acknowledges its peer's stream up to the wire ACK number `ack`: those
    /// bytes are in order at the subflow, so the data level takes them now, before the
    /// segment's DATA_ACK is written (the driver's `take_delivered` comes after the segment
    /// left, and would make every DATA_ACK one segment late).
    fn on_subflow_acks(&mut self, index: usize, ack: u32) {
        let Some(peer_iss) = self.paths[index].peer_iss else { return };
        let rx = &mut self.paths[index].rx;
        let from = rx.stream_read();
        // The FIN takes a sequence number but carries no byte that a mapping could cover.
        let to = unwrap32(from, ack.wrapping_sub(peer_iss).wrapping_sub(1));
        if to > from {
            for dsn in rx.on_delivered(from..to) {
                self.rcv.on_data(dsn);
            }
        }
    }

    /// A DSS arrived on subflow `index`. Returns its DATA_ACK (unwrapped) and whether it
    /// signalled a DATA_FIN.
    fn on_dss(&mut self, index: usize, dss: Dss) -> (Option<u64>, bool) {
        let local_base = self.local_base();
        let data_ack = dss.data_ack.map(|ack| match ack {
            DataSeq::U32(v) => unwrap32(self.snd.una(), v.wrapping_sub(local_base as u32)),
            DataSeq::U64(v) => v.wrapping_sub(local_base),
        });
        if let Some(ack) = data_ack {
            self.snd.on_data_ack(ack);
        }
        // The peer's data sequence numbers mean nothing without its key.
        let (Some(m), Some(peer_base)) = (dss.mapping, self.peer_base()) else { return (data_ack, false) };
        let dsn = match m.data_sequence_number {
            DataSeq::U32(v) => unwrap32(self.rcv.nxt(), v.wrapping_sub(peer_base as u32)),
            DataSeq::U64(v) => v.wrapping_sub(peer_base),
        };
        // §3.3.3: the DATA_FIN is the mapping's last octet, which no subflow byte carries.
        let Some(data_len) = u64::from(m.data_level_length).checked_sub(u64::from(m.data_fin)) else {
            return (data_ack, false);
        };
        if m.data_fin {
            self.rcv.on_data_fin(dsn + data_len);
        }
        let rx = &mut self.paths[index].rx;
        // Relative subflow sequence number 1 is stream offset 0 (§3.3.1).
        if let Some(offset) = unwrap32(rx.stream_read() + 1, m.subflow_sequence_number).checked_sub(1) {
            rx.on_mapping(offset, dsn, data_len);
        }
        (data_ack, m.data_fin)
    }

    /// The peer's window field `window` (scaled by `shift`) counts from `base`, its DATA_ACK
    /// (§3.3.5), or from our oldest unacknowledged DSN on segments without one.
    fn on_window(&mut self, base: Option<u64>, window: u16, shift: u8) {
        let base = base.unwrap_or(self.snd.una());
        self.snd.on_window_edge(base.saturating_add(u64::from(window) << shift));
    }
}

impl SubflowHooks {
    /// The peer's MP_CAPABLE after its SYN (§3.1): the listener learns the initiator's key
    /// from the third ACK, or from the first data segment if that ACK was lost, whose
    /// mapping it then describes. One that does not echo our key is ignored.
    fn on_capable(&self, s: &mut Shared, form: CapableForm) {
        let (sender_key, receiver_key, first_mapping_bytes) = match form {
            CapableForm::Ack { sender_key, receiver_key } => (sender_key, receiver_key, 0),
            CapableForm::Data { sender_key, receiver_key, data_level_length, .. } => (sender_key, receiver_key, data_level_length),
            _ => return,
        };
        if s.paths[self.index].opening != Opening::CapablePassive || receiver_key != s.local_key {
            return;
        }
        s.learn_remote_key(sender_key);
        s.paths[self.index].rx.on_mapping(0, 0, u64::from(first_mapping_bytes));
    }

    /// The initiator's MP_JOIN third ACK: its HMAC admits the subflow, which the fourth ACK
    /// confirms to it (§3.2); a wrong one refuses the subflow for good.
    fn on_join_ack(&self, s: &mut Shared, sender_hmac: [u8; 20]) {
        let (Opening::JoinPassive { nonce, peer_nonce }, Some(remote_key)) = (s.paths[self.index].opening, s.remote_key) else {
            return;
        };
        let valid = ack_hmac_valid(sender_hmac, s.local_key, remote_key, nonce, peer_nonce);
        let path = &mut s.paths[self.index];
        if path.refused {
            return;
        }
        if path.confirmed {
            // The initiator repeats its third ACK: our fourth ACK was lost.
            s.data_ack_owed = Some(self.index);
            return;
        }
        if valid {
            path.confirmed = true;
            s.data_ack_owed = Some(self.index);
        } else {
            path.refused = true;
            s.refused_joins += 1;
        }
    }
}

impl ConnectionHooks for SubflowHooks {
    fn syn_out(&mut self, header: &mut TcpHeader) {
        let mut s = self.shared.borrow_mut();
        let address_id = self.index as u8;
        let option = match s.paths[self.index].opening {
            Opening::CapableActive => MptcpOption::MpCapable(capable_syn()),
            Opening::CapablePassive => MptcpOption::MpCapable(capable_syn_ack(s.local_key)),
            Opening::JoinActive { nonce, .. } => {
                let Some(remote_key) = s.remote_key else { return };
                MptcpOption::MpJoin(join_syn(address_id, remote_key, nonce))
            }
            Opening::JoinPassive { nonce, peer_nonce } => {
                // Joins are accepted only once the initiator's key is known.
                let Some(remote_key) = s.remote_key else { return };
                MptcpOption::MpJoin(join_syn_ack(address_id, s.local_key, remote_key, nonce, peer_nonce))
            }
        };
        s.push(header, option);
    }

    fn syn_in(&mut self, header: &TcpHeader) {
        let mut s = self.shared.borrow_mut();
        let negotiated = negotiate(&s.tcp, &header.options);
        let path = &mut s.paths[self.index];
        path.peer_iss = Some(header.seq);
        (path.snd_wscale, path.rcv_wscale) = (negotiated.snd_wscale, negotiated.rcv_wscale);
        // RFC 7323 §2.2: the window of a SYN is not scaled.
        s.on_window(None, header.window, 0);
        let local_key = s.local_key;
        let remote_key = s.remote_key;
        for option in header.options.mptcp_options() {
            // An option that does not decode is counted and skipped.
            let Ok(option) = option else {
                s.option_errors += 1;
                continue;
            };
            let path = &mut s.paths[self.index];
            match (path.opening, option) {
                (Opening::CapableActive, MptcpOption::MpCapable(c)) => {
                    if let CapableForm::SynAck { sender_key } = c.form {
                        path.confirmed = true;
                        path.echo_third_ack = true;
                        s.learn_remote_key(sender_key);
                    }
                }
                (Opening::CapablePassive, MptcpOption::MpCapable(c)) => path.confirmed = c.form == CapableForm::Syn,
                (
                    Opening::JoinActive { nonce, .. },
                    MptcpOption::MpJoin(MpJoin::SynAck { sender_truncated_hmac, sender_random_number, .. }),
                ) => {
                    let valid = remote_key
                        .is_some_and(|remote| syn_ack_hmac_valid(sender_truncated_hmac, local_key, remote, nonce, sender_random_number));
                    if valid {
                        path.opening = Opening::JoinActive { nonce, peer_nonce: Some(sender_random_number) };
                        path.echo_third_ack = true;
                    } else {
                        path.refused = true;
                        s.refused_joins += 1;
                    }
                }
                _ => {}
            }
        }
        if s.paths[self.index].opening == Opening::CapableActive && s.remote_key.is_none() {
            s.fallback = true;
            let path = &mut s.paths[self.index];
            path.confirmed = true;
            path.rx.on_mapping(0, 0, INFINITE_MAPPING_BYTES);
        }
    }

    fn segment_out(&mut self, header: &mut TcpHeader, payload_bytes: u32) {
        let mut s = self.shared.borrow_mut();
        // §3.7: plain TCP, whose ACK numbers also count the FIN, which no byte maps.
        if s.fallback {
            return;
        }
        if header.flags.contains(TcpFlags::ACK) {
            s.on_subflow_acks(self.index, header.ack);
        }
        // The window the subflow computed on entry may predate bytes taken in since: the
        // data level's, relative to the DATA_ACK written now, bounds it (§3.3.5).
        let window = s.rcv.window_bytes() >> s.paths[self.index].rcv_wscale;
        header.window = header.window.min(window.min(u64::from(u16::MAX)) as u16);
        let option = match s.third_ack(self.index, payload_bytes) {
            Some(option) => option,
            None if s.paths[self.index].confirmed => MptcpOption::Dss(s.dss(self.index, header.seq, payload_bytes)),
            None => return,
        };
        s.push(header, option);
    }

    fn segment_in(&mut self, header: &TcpHeader, payload_bytes: u32) {
        let mut s = self.shared.borrow_mut();
        let mut data_ack = None;
        for option in header.options.mptcp_options() {
            let Ok(option) = option else {
                s.option_errors += 1;
                continue;
            };
            match option {
                MptcpOption::Dss(dss) => {
                    let (ack, data_fin) = s.on_dss(self.index, dss);
                    data_ack = data_ack.or(ack);
                    if data_fin && payload_bytes == 0 && s.rcv.finished() {
                        s.data_ack_owed = Some(self.index);
                    }
                }
                MptcpOption::MpCapable(c) => self.on_capable(&mut s, c.form),
                MptcpOption::MpJoin(MpJoin::Ack { sender_hmac }) => self.on_join_ack(&mut s, sender_hmac),
                _ => {}
            }
        }
        let path = &mut s.paths[self.index];
        // §3.1: a DATA_ACK shows the listener has our key; §3.2: the fourth ACK (a DSS)
        // shows it admitted the join.
        if path.echo_third_ack && data_ack.is_some() {
            path.echo_third_ack = false;
            path.confirmed = true;
        }
        if !header.flags.contains(TcpFlags::RST) {
            let shift = s.paths[self.index].snd_wscale;
            s.on_window(data_ack, header.window, shift);
        }
    }

    fn rcv_window_cap_bytes(&self) -> Option<u64> {
        Some(self.shared.borrow().rcv.window_bytes())
    }
}
