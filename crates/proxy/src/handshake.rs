//! What the proxy learns from the two SYNs (docs/proxy.md#how-a-flow-is-handled, "Data path", RFC 7323 §2–3,
//! RFC 2018 §2, RFC 9293 §3.7.1) and the MSS clamp toward the server.

use millinet_wire::TcpOptions;

/// RFC 9293 §3.7.1: the MSS assumed when a SYN carries none.
const DEFAULT_MSS_BYTES: u32 = 536;
/// RFC 7323 §2.3: larger shifts are used as 14.
const MAX_WINDOW_SHIFT: u8 = 14;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: bool,
}

impl SynOptions {
    pub fn of(options: &TcpOptions) -> SynOptions {
        SynOptions {
            mss: options.mss,
            window_scale: options.window_scale,
            sack_permitted: options.sack_permitted,
            timestamps: options.timestamps.is_some(),
        }
    }
}

/// Options of the UE's and the server's SYN (or SYN-ACK), whichever side opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct Handshake {
    pub ue: Option<SynOptions>,
    pub server: Option<SynOptions>,
}

impl Handshake {
    pub fn complete(&self) -> bool {
        self.ue.is_some() && self.server.is_some()
    }

    /// The shift the server applies to the UE's window field (0 unless both SYNs offered
    /// scaling, RFC 7323 §2.2); relayed windows must use it.
    pub fn ue_window_shift(&self) -> u8 {
        match (self.ue.and_then(|u| u.window_scale), self.server.and_then(|s| s.window_scale)) {
            (Some(shift), Some(_)) => shift.min(MAX_WINDOW_SHIFT),
            _ => 0,
        }
    }

    pub fn sack(&self) -> bool {
        self.ue.is_some_and(|u| u.sack_permitted) && self.server.is_some_and(|s| s.sack_permitted)
    }

    pub fn timestamps(&self) -> bool {
        self.ue.is_some_and(|u| u.timestamps) && self.server.is_some_and(|s| s.timestamps)
    }

    /// Largest segment toward the UE: MSS2 if the UE's SYN advertises at least MSS2, else
    /// the UE's own MSS.
    pub fn mss_toward_ue(&self, mss2_bytes: u32) -> u32 {
        let ue_mss = self.ue.and_then(|u| u.mss).map_or(DEFAULT_MSS_BYTES, |m| m as u32);
        if ue_mss >= mss2_bytes {
            mss2_bytes
        } else {
            ue_mss
        }
    }
}

/// The UE's SYN as the server must see it: MSS at most MSS1, so the server sends MSS1-sized
/// segments (an absent MSS option already means 536 ≤ MSS1).
pub fn clamp_mss_toward_server(options: &mut TcpOptions, mss1_bytes: u32) {
    if let Some(mss) = options.mss.as_mut() {
        *mss = (*mss as u32).min(mss1_bytes) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syn(mss: u16, ws: Option<u8>) -> SynOptions {
        SynOptions { mss: Some(mss), window_scale: ws, sack_permitted: true, timestamps: true }
    }

    #[test]
    fn mss_and_scale_rules() {
        let mut h = Handshake { ue: Some(syn(20_000, Some(7))), server: Some(syn(1400, Some(9))) };
        assert_eq!(h.mss_toward_ue(20_000), 20_000);
        assert_eq!(h.ue_window_shift(), 7);
        h.ue = Some(syn(9000, Some(7)));
        assert_eq!(h.mss_toward_ue(20_000), 9000);
        h.server = Some(syn(1400, None));
        assert_eq!(h.ue_window_shift(), 0);
        let mut o = TcpOptions { mss: Some(9000), ..TcpOptions::default() };
        clamp_mss_toward_server(&mut o, 1400);
        assert_eq!(o.mss, Some(1400));
        let mut o = TcpOptions { mss: Some(1200), ..TcpOptions::default() };
        clamp_mss_toward_server(&mut o, 1400);
        assert_eq!(o.mss, Some(1200));
    }
}
