//! What the data level and its subflows share, and the hooks through which an unmodified
//! `TcpConnection` becomes a subflow: MP_CAPABLE / MP_JOIN on the handshakes (RFC 8684 §3.1,
//! §3.2), a DSS with the mapping and the DATA_ACK on every later segment (§3.3), and the
//! data-level receive window (§3.3.5). The model is single-threaded: the hooks hold an
//! `Rc<RefCell<..>>` of the state, as the coupled congestion controls do (cc/shared.rs).

use std::cell::RefCell;
use std::rc::Rc;

use millinet_wire::mptcp::{CapableForm, DataSeq, Dss, DssMapping, MpJoin, MptcpOption};
use millinet_wire::{TcpFlags, TcpHeader, TcpOptions};

use super::handshake::{capable_ack, capable_syn, capable_syn_ack, join_ack, join_syn, join_syn_ack};
use super::receiver::{DataReceiver, SubflowRx};
use super::sender::{DataSender, SubflowTx};
use crate::tcp::wrap::unwrap32;
use crate::ConnectionHooks;

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
    /// The peer answered the handshake with MP-TCP: the subflow may carry data.
    pub confirmed: bool,
    /// The third ACK of the handshake still has to carry MP_CAPABLE or MP_JOIN.
    pub third_ack_due: bool,
    /// The peer's initial sequence number, from its SYN or SYN-ACK.
    pub peer_iss: Option<u32>,
    pub tx: SubflowTx,
    pub rx: SubflowRx,
}

impl PathState {
    pub fn new(opening: Opening, iss: u32) -> PathState {
        let confirmed = matches!(opening, Opening::JoinPassive { .. });
        PathState { opening, iss, confirmed, third_ack_due: false, peer_iss: None, tx: SubflowTx::default(), rx: SubflowRx::default() }
    }
}

/// The data level: keys, both halves, and the subflows' parts.
#[derive(Debug)]
pub(super) struct Shared {
    pub local_key: u64,
    pub remote_key: Option<u64>,
    pub snd: DataSender,
    pub rcv: DataReceiver,
    pub paths: Vec<PathState>,
    /// MP-TCP options that did not decode, or that found no room in a segment.
    pub option_errors: u64,
}

/// The hooks of subflow `index`.
pub(super) struct SubflowHooks {
    pub shared: Rc<RefCell<Shared>>,
    pub index: usize,
}

impl Shared {
    fn push(&mut self, header: &mut TcpHeader, option: MptcpOption) {
        if header.options.push_mptcp(&option).is_err() {
            self.option_errors += 1;
        }
    }

    /// Decoded MP-TCP options of `options`, counting the ones that do not decode.
    fn options(&mut self, options: &TcpOptions) -> Vec<MptcpOption> {
        let mut decoded = Vec::new();
        for option in options.mptcp_options() {
            match option {
                Ok(o) => decoded.push(o),
                Err(_) => self.option_errors += 1,
            }
        }
        decoded
    }

    /// The DSS for a segment of subflow `index` from sequence number `seq` (§3.3): the
    /// DATA_ACK always, the mapping covering its first byte when it carries data.
    fn dss(&self, index: usize, seq: u32, payload_bytes: u32) -> Dss {
        let path = &self.paths[index];
        let mapping = (payload_bytes > 0).then(|| {
            let offset = unwrap32(path.tx.handed(), seq.wrapping_sub(path.iss).wrapping_sub(1));
            path.tx.mapping_at(offset)
        });
        Dss {
            data_ack: Some(DataSeq::U32(self.rcv.nxt() as u32)),
            mapping: mapping.flatten().map(|m| DssMapping {
                data_sequence_number: DataSeq::U32(m.dsn as u32),
                // §3.3.1: the subflow sequence number is relative to the SYN.
                subflow_sequence_number: (m.offset + 1) as u32,
                data_level_length: m.len as u16,
                checksum: None,
                data_fin: false,
            }),
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

    fn on_dss(&mut self, index: usize, dss: Dss) {
        if let Some(ack) = dss.data_ack {
            let ack = match ack {
                DataSeq::U32(v) => unwrap32(self.snd.una(), v),
                DataSeq::U64(v) => v,
            };
            self.snd.on_data_ack(ack);
        }
        let Some(m) = dss.mapping else { return };
        let dsn = match m.data_sequence_number {
            DataSeq::U32(v) => unwrap32(self.rcv.nxt(), v),
            DataSeq::U64(v) => v,
        };
        let rx = &mut self.paths[index].rx;
        // Relative subflow sequence number 1 is stream offset 0 (§3.3.1).
        if let Some(offset) = unwrap32(rx.stream_read() + 1, m.subflow_sequence_number).checked_sub(1) {
            rx.on_mapping(offset, dsn, u64::from(m.data_level_length));
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
                let remote_key = s.remote_key.unwrap_or_default();
                MptcpOption::MpJoin(join_syn_ack(address_id, s.local_key, remote_key, nonce, peer_nonce))
            }
        };
        s.push(header, option);
    }

    fn syn_in(&mut self, header: &TcpHeader) {
        let mut s = self.shared.borrow_mut();
        s.paths[self.index].peer_iss = Some(header.seq);
        for option in s.options(&header.options) {
            let path = &mut s.paths[self.index];
            match (path.opening, option) {
                (Opening::CapableActive, MptcpOption::MpCapable(c)) => {
                    if let CapableForm::SynAck { sender_key } = c.form {
                        path.confirmed = true;
                        path.third_ack_due = true;
                        s.remote_key = Some(sender_key);
                    }
                }
                (Opening::CapablePassive, MptcpOption::MpCapable(c)) => path.confirmed = c.form == CapableForm::Syn,
                (Opening::JoinActive { nonce, .. }, MptcpOption::MpJoin(MpJoin::SynAck { sender_random_number, .. })) => {
                    path.opening = Opening::JoinActive { nonce, peer_nonce: Some(sender_random_number) };
                    path.confirmed = true;
                    path.third_ack_due = true;
                }
                _ => {}
            }
        }
    }

    fn segment_out(&mut self, header: &mut TcpHeader, payload_bytes: u32) {
        let mut s = self.shared.borrow_mut();
        let path = &mut s.paths[self.index];
        if !path.confirmed {
            return;
        }
        let third_ack = if path.third_ack_due && payload_bytes == 0 {
            path.third_ack_due = false;
            match path.opening {
                Opening::JoinActive { nonce, peer_nonce: Some(peer_nonce) } => {
                    s.remote_key.map(|remote| MptcpOption::MpJoin(join_ack(s.local_key, remote, nonce, peer_nonce)))
                }
                _ => s.remote_key.map(|remote| MptcpOption::MpCapable(capable_ack(s.local_key, remote))),
            }
        } else {
            None
        };
        if header.flags.contains(TcpFlags::ACK) {
            s.on_subflow_acks(self.index, header.ack);
        }
        let option = third_ack.unwrap_or_else(|| MptcpOption::Dss(s.dss(self.index, header.seq, payload_bytes)));
        s.push(header, option);
    }

    fn segment_in(&mut self, header: &TcpHeader, _payload_bytes: u32) {
        let mut s = self.shared.borrow_mut();
        for option in s.options(&header.options) {
            match option {
                MptcpOption::Dss(dss) => s.on_dss(self.index, dss),
                MptcpOption::MpCapable(c) => {
                    if let CapableForm::Ack { sender_key, .. } = c.form {
                        if s.paths[self.index].opening == Opening::CapablePassive {
                            s.remote_key = Some(sender_key);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn rcv_window_cap_bytes(&self) -> Option<u64> {
        Some(self.shared.borrow().rcv.window_bytes())
    }
}
