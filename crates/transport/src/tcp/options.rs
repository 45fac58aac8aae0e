//! SYN options and their negotiation: MSS (RFC 9293 §3.7.1), window scale and timestamps
//! (RFC 7323 §2, §3), SACK-permitted (RFC 2018 §2). A feature is used only when both ends
//! offered it; a SYN-ACK offers only what the SYN offered.

use millinet_wire::{TcpOptions, Timestamps};

use super::ecn::EcnAgreed;
use super::TcpConfig;

/// RFC 9293 §3.7.1: the MSS assumed when the peer sends none.
const DEFAULT_PEER_MSS_BYTES: u64 = 536;
/// RFC 7323 §2.3: the largest shift.
const MAX_WINDOW_SHIFT: u8 = 14;

/// What both ends agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Negotiated {
    /// min(own MSS, peer's MSS): payload bytes per segment in both directions.
    pub mss_bytes: u64,
    /// Shift applied to windows the peer advertises.
    pub snd_wscale: u8,
    /// Shift applied to windows we advertise.
    pub rcv_wscale: u8,
    pub sack: bool,
    pub timestamps: bool,
    /// ECN feedback, agreed by flags rather than options (ecn.rs).
    pub ecn: EcnAgreed,
}

/// RFC 7323 §2.2: the smallest shift that lets the 16-bit field express the whole buffer.
pub(crate) fn window_shift_for(rcv_buf_bytes: u64) -> u8 {
    let mut shift = 0;
    while shift < MAX_WINDOW_SHIFT && (rcv_buf_bytes >> shift) > u16::MAX as u64 {
        shift += 1;
    }
    shift
}

/// Options of our SYN (`peer_syn` = None) or SYN-ACK (answering `peer_syn`).
pub(crate) fn syn_options(cfg: &TcpConfig, now_ms: u32, peer_syn: Option<&TcpOptions>) -> TcpOptions {
    let offered = |ours: bool, theirs: fn(&TcpOptions) -> bool| ours && peer_syn.is_none_or(theirs);
    TcpOptions {
        mss: Some(cfg.mss_bytes as u16),
        window_scale: offered(cfg.window_scaling, |p| p.window_scale.is_some()).then(|| window_shift_for(cfg.rcv_buf_bytes)),
        sack_permitted: offered(cfg.sack, |p| p.sack_permitted),
        timestamps: offered(cfg.timestamps, |p| p.timestamps.is_some())
            .then(|| Timestamps { tsval: now_ms, tsecr: peer_syn.and_then(|p| p.timestamps).map_or(0, |t| t.tsval) }),
        ..TcpOptions::default()
    }
}

/// The agreement given our configuration and the options of the peer's SYN or SYN-ACK.
pub(crate) fn negotiate(cfg: &TcpConfig, peer: &TcpOptions) -> Negotiated {
    let scaling = cfg.window_scaling && peer.window_scale.is_some();
    Negotiated {
        mss_bytes: (cfg.mss_bytes as u64).min(peer.mss.map_or(DEFAULT_PEER_MSS_BYTES, |m| m.max(1) as u64)),
        // RFC 7323 §2.3: a shift above 14 is used as 14.
        snd_wscale: if scaling { peer.window_scale.unwrap_or(0).min(MAX_WINDOW_SHIFT) } else { 0 },
        rcv_wscale: if scaling { window_shift_for(cfg.rcv_buf_bytes) } else { 0 },
        sack: cfg.sack && peer.sack_permitted,
        timestamps: cfg.timestamps && peer.timestamps.is_some(),
        ecn: EcnAgreed::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_is_the_smallest_that_fits() {
        assert_eq!(window_shift_for(65_535), 0);
        assert_eq!(window_shift_for(65_536), 1);
        assert_eq!(window_shift_for(1 << 20), 5);
        assert_eq!(window_shift_for(1 << 40), 14);
    }

    #[test]
    fn syn_ack_offers_only_what_the_syn_offered() {
        let cfg = TcpConfig::default();
        let syn = TcpOptions { mss: Some(1000), sack_permitted: true, ..TcpOptions::default() };
        let reply = syn_options(&cfg, 7, Some(&syn));
        assert_eq!((reply.window_scale, reply.sack_permitted, reply.timestamps), (None, true, None));
        let n = negotiate(&cfg, &syn);
        assert_eq!(n, Negotiated { mss_bytes: 1000, snd_wscale: 0, rcv_wscale: 0, sack: true, timestamps: false, ecn: EcnAgreed::None });
    }
}
