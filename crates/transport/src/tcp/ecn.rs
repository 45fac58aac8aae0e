//! Explicit Congestion Notification in one connection (docs/models/transport.md §12): the
//! negotiation in the SYN exchange and the feedback of RFC 3168 (ECE until CWR) or of
//! Accurate ECN (RFC 9768: the ACE counter in AE, CWR and ECE, and the AccECN option's byte
//! counters).
//!
//! The connection has two halves and so has ECN: `EcnEcho` is what a data receiver feeds back
//! of the ECN field of what arrives; `EcnFeedback` is what a data sender reads back from the
//! ACKs, as the bytes that arrived CE-marked. The congestion control decides what to do with
//! them, and which ECT codepoint its packets carry (ECT(1), the L4S identifier of RFC 9331 §4,
//! for scalable ones).

use millinet_wire::accecn::{AccEcnOption, FIELD_MODULUS};
use millinet_wire::{TcpFlags, TcpHeader, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT};

/// The ECN feedback a connection asks for (`TcpConfig::ecn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMode {
    /// Not ECN-capable: its packets are Not-ECT, a marking queue drops them instead.
    Off,
    /// RFC 3168: one ECE per round trip that saw congestion, whatever the number of marks.
    Rfc3168,
    /// Accurate ECN (RFC 9768), falling back to RFC 3168 with a peer that only has that.
    Accurate,
}

impl EcnMode {
    /// What a SYN with `flags` asks for (what a relay asks on the SYN's behalf).
    pub fn requested_by(flags: TcpFlags) -> EcnMode {
        match (flags.contains(TcpFlags::ECE | TcpFlags::CWR), flags.contains(TcpFlags::AE)) {
            (false, _) => EcnMode::Off,
            (true, false) => EcnMode::Rfc3168,
            (true, true) => EcnMode::Accurate,
        }
    }
}

/// What the SYN exchange agreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EcnAgreed {
    None,
    Rfc3168,
    Accurate,
}

/// RFC 9768 §3.2.2.1: the ACE field starts at 5, so a zeroed field reveals a middlebox.
const ACE_INITIAL: u32 = 5;
/// RFC 9768 §3.2.3: the byte counters of ECT(0) and ECT(1) start at 1, the CE one at 0.
const E0B_INITIAL: u32 = 1;
const E1B_INITIAL: u32 = 1;
/// The ACE field counts modulo 8.
const ACE_MODULUS: u32 = 8;

/// The flags of our SYN: RFC 3168 §6.1.1's ECN-setup SYN (ECE, CWR), or RFC 9768 §3.1.1's
/// AccECN request (AE, CWR, ECE).
pub(crate) fn syn_flags(mode: EcnMode) -> TcpFlags {
    match mode {
        EcnMode::Off => TcpFlags(0),
        EcnMode::Rfc3168 => TcpFlags::ECE | TcpFlags::CWR,
        EcnMode::Accurate => TcpFlags::AE | TcpFlags::CWR | TcpFlags::ECE,
    }
}

/// RFC 9768 §3.1.1 Table 2 and §3.2.2.1 Table 3: the ACE value that feeds back the IP-ECN
/// field of a SYN (on the SYN-ACK) or of a SYN-ACK (on the ACK that completes the handshake).
fn handshake_ace(ecn: u8) -> u8 {
    match ecn & 0b11 {
        ECN_NOT_ECT => 0b010,
        ECN_ECT1 => 0b011,
        ECN_ECT0 => 0b100,
        _ => 0b110,
    }
}

/// A server's answer to a SYN with `flags` that arrived with the IP-ECN field `ecn`: what is
/// agreed and the ECN flags of the SYN-ACK. RFC 3168 §6.1.1: an ECN-setup SYN (ECE and CWR)
/// gets an ECN-setup SYN-ACK (ECE alone); RFC 9768 §3.1.1: an AccECN SYN gets the SYN's IP-ECN
/// field in the ACE field from a server that has AccECN, an RFC 3168 answer from one that has
/// only that (both fall back to RFC 3168 with a client that asks only for it).
pub(crate) fn answer_syn(mode: EcnMode, flags: TcpFlags, ecn: u8) -> (EcnAgreed, TcpFlags) {
    match (mode, EcnMode::requested_by(flags)) {
        (EcnMode::Off, _) | (_, EcnMode::Off) => (EcnAgreed::None, TcpFlags(0)),
        (EcnMode::Accurate, EcnMode::Accurate) => (EcnAgreed::Accurate, TcpFlags(0).with_ace(handshake_ace(ecn))),
        _ => (EcnAgreed::Rfc3168, TcpFlags::ECE),
    }
}

/// A client's reading of the SYN-ACK's flags (RFC 9768 §3.1.1 Table 2): ACE 010, 011, 100 and
/// 110 feed back the SYN's IP-ECN field (and 101, reserved, counts as AccECN, §3.1.3); ECE
/// alone is RFC 3168's answer; anything else (nothing, or all three reflected) is no ECN.
pub(crate) fn read_syn_ack(mode: EcnMode, flags: TcpFlags) -> EcnAgreed {
    match (mode, flags.ace()) {
        (EcnMode::Off, _) => EcnAgreed::None,
        (EcnMode::Accurate, 0b010..=0b110) => EcnAgreed::Accurate,
        (_, 0b001) => EcnAgreed::Rfc3168,
        _ => EcnAgreed::None,
    }
}

/// The data receiver's side: counts what arrives and says it in every ACK.
#[derive(Debug)]
pub(crate) struct EcnEcho {
    agreed: EcnAgreed,
    /// RFC 3168 §6.1.3: ECE on every ACK from a CE mark until a segment with CWR arrives; or,
    /// echoing every mark, whether the last data segment was CE-marked (RFC 8257 §3.2).
    ece: bool,
    echo_every_mark: bool,
    /// RFC 9768 §3.2.2.2 r.cep: CE-marked packets; §3.2.3 r.e0b, r.ceb, r.e1b: the payload
    /// bytes that arrived with ECT(0), CE and ECT(1).
    cep: u32,
    e0b: u32,
    ceb: u32,
    e1b: u32,
    /// r.cep when the last ACK went out.
    cep_acked: u32,
    /// The previous packet was CE-marked.
    last_ce: bool,
    /// The ACE value of the ACK that completes the handshake (a client's): the SYN-ACK's
    /// IP-ECN field (RFC 9768 §3.2.2.1).
    handshake_ace: Option<u8>,
}

impl Default for EcnEcho {
    fn default() -> Self {
        EcnEcho {
            agreed: EcnAgreed::None,
            ece: false,
            echo_every_mark: false,
            cep: ACE_INITIAL,
            e0b: E0B_INITIAL,
            ceb: 0,
            e1b: E1B_INITIAL,
            cep_acked: ACE_INITIAL,
            last_ce: false,
            handshake_ace: None,
        }
    }
}

impl EcnEcho {
    /// The handshake agreed `agreed`; a client passes the IP-ECN field of the SYN-ACK;
    /// `echo_every_mark`: the connection's congestion control wants RFC 8257 §3.2's echo.
    pub fn establish(&mut self, agreed: EcnAgreed, syn_ack_ecn: Option<u8>, echo_every_mark: bool) {
        self.agreed = agreed;
        self.echo_every_mark = echo_every_mark;
        self.handshake_ace = syn_ack_ecn.filter(|_| agreed == EcnAgreed::Accurate).map(handshake_ace);
    }

    /// A segment arrived after the handshake with the IP-ECN field `ecn`; returns whether it
    /// calls for an ACK at once.
    ///
    /// RFC 3168: the first CE starts ECE (and Linux's receiver ACKs at once, `tcp_ecn_check_ce`
    /// with quick-ACK mode: the sender may have a small window); CWR ends it, unless the same
    /// segment is CE-marked. Accurate ECN (RFC 9768 §3.2.2.5.1): an ACK at once when a CE mark
    /// follows a packet without one, and before the unacknowledged marks would wrap the ACE field.
    pub fn on_segment(&mut self, ecn: u8, payload_bytes: u32, flags: TcpFlags) -> bool {
        let ce = ecn == ECN_CE;
        match self.agreed {
            EcnAgreed::None => false,
            EcnAgreed::Rfc3168 if self.echo_every_mark => {
                // RFC 8257 §3.2: ECE tells the CE state of the latest data segment, and a change
                // of state is acknowledged at once (Linux's DCTCP first sends a held ACK with the
                // old state; here the ACK sent carries the new one).
                if payload_bytes == 0 {
                    return false;
                }
                let changed = ce != self.ece;
                self.ece = ce;
                changed
            }
            EcnAgreed::Rfc3168 => {
                if flags.contains(TcpFlags::CWR) {
                    self.ece = false;
                }
                let starts = ce && !self.ece;
                self.ece |= ce;
                starts
            }
            EcnAgreed::Accurate => {
                let bytes = payload_bytes;
                match ecn {
                    ECN_ECT0 => self.e0b = self.e0b.wrapping_add(bytes),
                    ECN_ECT1 => self.e1b = self.e1b.wrapping_add(bytes),
                    ECN_CE => {
                        self.ceb = self.ceb.wrapping_add(bytes);
                        self.cep = self.cep.wrapping_add(1);
                    }
                    _ => {}
                }
                let change = ce && !self.last_ce;
                self.last_ce = ce;
                change || self.cep.wrapping_sub(self.cep_acked) >= ACE_MODULUS - 1
            }
        }
    }

    /// The ECN flags of a segment sent now.
    #[inline]
    pub fn flags(&self) -> TcpFlags {
        match self.agreed {
            EcnAgreed::None => TcpFlags(0),
            EcnAgreed::Rfc3168 if self.ece => TcpFlags::ECE,
            EcnAgreed::Rfc3168 => TcpFlags(0),
            EcnAgreed::Accurate => {
                let ace = self.handshake_ace.unwrap_or((self.cep % ACE_MODULUS) as u8);
                TcpFlags(0).with_ace(ace)
            }
        }
    }

    /// The AccECN option for a segment sent now, if Accurate ECN was agreed.
    #[inline]
    pub fn option(&self) -> Option<AccEcnOption> {
        (self.agreed == EcnAgreed::Accurate && self.handshake_ace.is_none()).then_some(AccEcnOption {
            e0b: Some(self.e0b % FIELD_MODULUS),
            ceb: Some(self.ceb % FIELD_MODULUS),
            e1b: Some(self.e1b % FIELD_MODULUS),
        })
    }

    /// A segment carrying the current feedback went out.
    #[inline]
    pub fn ack_sent(&mut self) {
        self.cep_acked = self.cep;
        self.handshake_ace = None;
    }
}

/// What one ACK says of congestion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EcnSignal {
    /// The ACK reports congestion: an ECE (RFC 3168), or a CE counter that moved (RFC 9768).
    pub congestion: bool,
    /// Payload bytes newly reported as having arrived CE-marked: with RFC 3168 every byte an
    /// ECE ACK delivers (as Linux's `delivered_ce` counts them); with Accurate ECN the CE byte
    /// counter's increase, else the CE packet counter's in full segments.
    pub ce_bytes: u64,
}

/// The data sender's side: marks its packets and reads the feedback of the ACKs.
#[derive(Debug)]
pub(crate) struct EcnFeedback {
    agreed: EcnAgreed,
    /// The codepoint of new data segments.
    ect: u8,
    /// RFC 9768 §3.2.2.3 s.cep and the CE byte counter last seen (24 bits).
    cep: u32,
    ceb: Option<u32>,
    /// The next ACK completes the handshake: its ACE feeds back the SYN-ACK, not a counter.
    handshake_ack: bool,
    /// RFC 3168 §6.1.2: CWR goes on the next new data segment after a reduction.
    cwr_pending: bool,
}

impl Default for EcnFeedback {
    fn default() -> Self {
        EcnFeedback { agreed: EcnAgreed::None, ect: ECN_NOT_ECT, cep: ACE_INITIAL, ceb: None, handshake_ack: false, cwr_pending: false }
    }
}

impl EcnFeedback {
    /// The handshake agreed `agreed`; `l4s`: the congestion control identifies its packets as
    /// L4S, which only Accurate ECN's feedback serves (RFC 9331 §4.3); `passive`: we are the
    /// server, whose next ACK completes the handshake.
    pub fn establish(&mut self, agreed: EcnAgreed, l4s: bool, passive: bool) {
        self.agreed = agreed;
        self.ect = match agreed {
            EcnAgreed::None => ECN_NOT_ECT,
            EcnAgreed::Accurate if l4s => ECN_ECT1,
            EcnAgreed::Accurate | EcnAgreed::Rfc3168 => ECN_ECT0,
        };
        self.handshake_ack = passive && agreed == EcnAgreed::Accurate;
    }

    /// The IP-ECN field of a new data segment (RFC 3168 §6.1.5: retransmissions and pure ACKs
    /// are Not-ECT).
    #[inline]
    pub fn ect(&self) -> u8 {
        self.ect
    }

    /// The flags a new data segment adds: CWR once after each reduction (RFC 3168 §6.1.2; with
    /// Accurate ECN CWR is part of the counter, §3.2.2).
    #[inline]
    pub fn new_data_flags(&mut self) -> TcpFlags {
        if std::mem::take(&mut self.cwr_pending) {
            TcpFlags::CWR
        } else {
            TcpFlags(0)
        }
    }

    /// The window was reduced in answer to a signal.
    pub fn reduced(&mut self) {
        self.cwr_pending = self.agreed == EcnAgreed::Rfc3168;
    }

    /// Reads an ACK that newly delivered `delivered_bytes`.
    ///
    /// Accurate ECN (RFC 9768 §3.2.2.3, Appendix A.2.1): the ACE field's increase modulo 8 is
    /// the CE packets since the last ACK; when the ACK covers 8 or more segments and no byte
    /// counter says otherwise, the field may have wrapped, and the sender assumes the largest
    /// count it is consistent with. Bytes come from the option's CE counter when present.
    #[inline]
    pub fn on_ack(&mut self, hdr: &TcpHeader, delivered_bytes: u64, mss_bytes: u64) -> EcnSignal {
        match self.agreed {
            EcnAgreed::None => EcnSignal::default(),
            EcnAgreed::Rfc3168 => {
                let congestion = hdr.flags.contains(TcpFlags::ECE);
                EcnSignal { congestion, ce_bytes: if congestion { delivered_bytes } else { 0 } }
            }
            EcnAgreed::Accurate => {
                if std::mem::take(&mut self.handshake_ack) {
                    return EcnSignal::default();
                }
                let ace = hdr.flags.ace() as u32;
                let mut d_cep = ace.wrapping_sub(self.cep) % ACE_MODULUS;
                self.cep = self.cep.wrapping_add(d_cep);
                let byte_counter = hdr.options.accecn().and_then(|o| o.ceb);
                let d_ceb = match (byte_counter, self.ceb) {
                    (Some(now), Some(before)) => Some(now.wrapping_sub(before) % FIELD_MODULUS),
                    (Some(now), None) => Some(now % FIELD_MODULUS),
                    (None, _) => None,
                };
                if byte_counter.is_some() {
                    self.ceb = byte_counter;
                }
                let ce_bytes = match d_ceb {
                    Some(bytes) => bytes as u64,
                    None => {
                        let delivered_segments = delivered_bytes.div_ceil(mss_bytes);
                        if delivered_segments >= ACE_MODULUS as u64 {
                            // Appendix A.2.1: the most CE packets the field allows.
                            let wrapped = delivered_segments - (delivered_segments - d_cep as u64) % ACE_MODULUS as u64;
                            d_cep = wrapped as u32;
                        }
                        (d_cep as u64 * mss_bytes).min(delivered_bytes)
                    }
                };
                EcnSignal { congestion: d_cep > 0 || ce_bytes > 0, ce_bytes }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(flags: TcpFlags) -> TcpHeader {
        TcpHeader { flags: flags | TcpFlags::ACK, ..TcpHeader::default() }
    }

    /// RFC 3168 §6.1.1 and RFC 9768 §3.1.1 Table 2, worked by hand: every pairing of client and
    /// server modes, and what each side ends with.
    #[test]
    fn the_syn_exchange_agrees_on_the_best_both_have() {
        use EcnAgreed as A;
        use EcnMode::*;
        for (client, server, syn_ack, agreed) in [
            (Accurate, Accurate, TcpFlags::CWR, A::Accurate), // ACE 010: the SYN was Not-ECT
            (Accurate, Rfc3168, TcpFlags::ECE, A::Rfc3168),
            (Accurate, Off, TcpFlags(0), A::None),
            (Rfc3168, Accurate, TcpFlags::ECE, A::Rfc3168),
            (Rfc3168, Rfc3168, TcpFlags::ECE, A::Rfc3168),
            (Off, Accurate, TcpFlags(0), A::None),
        ] {
            let (server_agreed, flags) = answer_syn(server, syn_flags(client), ECN_NOT_ECT);
            assert_eq!((flags, server_agreed), (syn_ack, agreed), "{client:?} to {server:?}");
            assert_eq!(read_syn_ack(client, flags), agreed, "{client:?} reading {server:?}");
        }
        // The SYN-ACK feeds back the SYN's IP-ECN field (Table 2's four codes).
        for (ecn, ace) in [(ECN_NOT_ECT, 0b010), (ECN_ECT1, 0b011), (ECN_ECT0, 0b100), (ECN_CE, 0b110)] {
            assert_eq!(answer_syn(Accurate, syn_flags(Accurate), ecn).1.ace(), ace);
        }
        // A middlebox that reflects all three flags is not an AccECN server (Table 2).
        assert_eq!(read_syn_ack(Accurate, TcpFlags::AE | TcpFlags::CWR | TcpFlags::ECE), A::None);
    }

    /// RFC 3168 §6.1.2–§6.1.3: ECE from the first CE until CWR, then the sender's single
    /// reduction and single CWR.
    #[test]
    fn rfc3168_echoes_until_cwr() {
        let mut echo = EcnEcho::default();
        echo.establish(EcnAgreed::Rfc3168, None, false);
        assert!(!echo.on_segment(ECN_ECT0, 1000, TcpFlags::ACK));
        assert_eq!(echo.flags(), TcpFlags(0));
        assert!(echo.on_segment(ECN_CE, 1000, TcpFlags::ACK), "the first CE is acknowledged at once");
        assert!(!echo.on_segment(ECN_ECT0, 1000, TcpFlags::ACK), "later segments do not restart it");
        echo.ack_sent();
        assert_eq!(echo.flags(), TcpFlags::ECE, "ECE stays set until CWR");
        // A CE-marked CWR segment keeps ECE set; an unmarked one clears it.
        echo.on_segment(ECN_CE, 1000, TcpFlags::CWR);
        assert_eq!(echo.flags(), TcpFlags::ECE);
        echo.on_segment(ECN_ECT0, 1000, TcpFlags::CWR);
        assert_eq!(echo.flags(), TcpFlags(0));

        let mut sender = EcnFeedback::default();
        sender.establish(EcnAgreed::Rfc3168, true, false);
        assert_eq!(sender.ect(), ECN_ECT0, "RFC 3168 feedback does not serve L4S: ECT(0)");
        let signal = sender.on_ack(&ack(TcpFlags::ECE), 3000, 1000);
        assert_eq!(signal, EcnSignal { congestion: true, ce_bytes: 3000 });
        sender.reduced();
        assert_eq!(sender.new_data_flags(), TcpFlags::CWR);
        assert_eq!(sender.new_data_flags(), TcpFlags(0), "CWR goes on one segment");
    }

    /// RFC 8257 §3.2: a DCTCP receiver's ECE is the CE state of the latest data segment, and a
    /// change of state is acknowledged at once; CWR plays no part.
    #[test]
    fn dctcp_echoes_every_mark() {
        let mut echo = EcnEcho::default();
        echo.establish(EcnAgreed::Rfc3168, None, true);
        let states: Vec<(bool, bool)> = [ECN_ECT0, ECN_CE, ECN_CE, ECN_ECT0, ECN_CE]
            .into_iter()
            .map(|ecn| (echo.on_segment(ecn, 1000, TcpFlags::ACK), echo.flags() == TcpFlags::ECE))
            .collect();
        assert_eq!(states, [(false, false), (true, true), (false, true), (true, false), (true, true)]);
        echo.on_segment(ECN_CE, 1000, TcpFlags::CWR);
        assert_eq!(echo.flags(), TcpFlags::ECE, "CWR does not clear it");
        assert!(!echo.on_segment(ECN_NOT_ECT, 0, TcpFlags::ACK), "a pure ACK says nothing of the data");
    }

    /// RFC 9768 §3.2.2 worked by hand: the receiver's ACE starts at 5 and counts CE packets
    /// modulo 8; the byte counters start at 1, 0, 1; the sender reads the increase.
    #[test]
    fn accurate_ecn_counts_marks_and_bytes() {
        let mut echo = EcnEcho::default();
        echo.establish(EcnAgreed::Accurate, Some(ECN_NOT_ECT), false);
        assert_eq!(echo.flags().ace(), 0b010, "the handshake's ACK feeds back the SYN-ACK's Not-ECT");
        assert_eq!(echo.option(), None, "the option starts after the handshake");
        echo.ack_sent();
        assert_eq!(echo.flags().ace(), 5);
        echo.on_segment(ECN_ECT1, 1000, TcpFlags::ACK);
        assert!(echo.on_segment(ECN_CE, 1000, TcpFlags::ACK), "a CE after a non-CE packet: ACK at once");
        assert!(!echo.on_segment(ECN_CE, 500, TcpFlags::ACK), "a second CE in a row: no change");
        assert_eq!(echo.flags().ace(), 7);
        assert_eq!(echo.option(), Some(AccEcnOption { e0b: Some(1), ceb: Some(1500), e1b: Some(1001) }));

        let mut sender = EcnFeedback::default();
        sender.establish(EcnAgreed::Accurate, true, true);
        assert_eq!(sender.ect(), ECN_ECT1, "L4S over Accurate ECN: ECT(1)");
        // The handshake's ACK carries the SYN-ACK's code, not a count.
        assert_eq!(sender.on_ack(&ack(TcpFlags(0).with_ace(0b010)), 0, 1000), EcnSignal::default());
        // Without the option, two CE packets in full segments; with it, the exact bytes.
        assert_eq!(sender.on_ack(&ack(TcpFlags(0).with_ace(7)), 3000, 1000), EcnSignal { congestion: true, ce_bytes: 2000 });
        let mut header = ack(TcpFlags(0).with_ace(7));
        header.options.push_accecn(&AccEcnOption { e0b: Some(1), ceb: Some(1500), e1b: Some(1001) }, 3).unwrap();
        assert_eq!(sender.on_ack(&header, 1000, 1000), EcnSignal { congestion: true, ce_bytes: 1500 }, "first option");
        header.options = Default::default();
        header.options.push_accecn(&AccEcnOption { e0b: Some(1), ceb: Some(1500), e1b: Some(2001) }, 3).unwrap();
        assert_eq!(sender.on_ack(&header, 1000, 1000), EcnSignal::default(), "no new CE bytes, no congestion");
        // An ACK without the option falls back on the ACE field, which wraps: 7 → 2 is three.
        assert_eq!(sender.on_ack(&ack(TcpFlags(0).with_ace(2)), 5000, 1000).ce_bytes, 3000);
    }

    /// RFC 9768 Appendix A.2.1: an ACK of 8 or more segments may hide a wrapped field; without
    /// a byte counter the sender assumes the most CE packets the field allows.
    #[test]
    fn a_large_ack_without_byte_counters_assumes_the_field_wrapped() {
        let mut sender = EcnFeedback::default();
        sender.establish(EcnAgreed::Accurate, false, false);
        // ACE 5 → 6: one mark, or 9, in an ACK of 10 segments.
        let signal = sender.on_ack(&ack(TcpFlags(0).with_ace(6)), 10_000, 1000);
        assert_eq!(signal.ce_bytes, 9000);
        let signal = sender.on_ack(&ack(TcpFlags(0).with_ace(7)), 2000, 1000);
        assert_eq!(signal.ce_bytes, 1000);
    }

    #[test]
    fn the_ace_field_prompts_an_ack_before_it_wraps() {
        let mut echo = EcnEcho::default();
        echo.establish(EcnAgreed::Accurate, None, false);
        let prompts: Vec<bool> = (0..8).map(|_| echo.on_segment(ECN_CE, 1000, TcpFlags::ACK)).collect();
        assert_eq!(prompts, [true, false, false, false, false, false, true, true]);
    }
}
