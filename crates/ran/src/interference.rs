//! Inter-cell interference on a carrier shared by several cells (docs/models/ran.md#interference).
//!
//! In a slot, a UE receives from every other cell of its carrier that transmits then, through
//! that cell's beams toward the UEs it schedules and through its own beam toward its serving
//! cell. Each interferer's power is what the UE's link to it would receive with both beams
//! aligned (the link's SNR, path loss, shadowing and fading included), corrected by how far
//! each beam points away: the panels' gains toward the victim (resp. the interferer) below
//! their peaks. A cell that splits a slot among several UEs interferes with each beam for
//! its share of the slot's resources: the mean power over the slot.

use millinet_channel::units::{db_to_lin, lin_to_db};
use millinet_channel::{Angles, Antenna, Panel};

/// The SINR of a slot with its parts, all in dB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotSinr {
    /// S / (N + ΣI).
    pub sinr_db: f64,
    /// S / ΣI (+∞ without interference).
    pub sir_db: f64,
    /// ΣI / N (−∞ without interference).
    pub inr_db: f64,
}

impl SlotSinr {
    /// No interference: the SINR is the SNR.
    pub fn alone(snr_db: f64) -> SlotSinr {
        SlotSinr { sinr_db: snr_db, sir_db: f64::INFINITY, inr_db: f64::NEG_INFINITY }
    }

    /// The SNR `snr_db` with interference `interference_over_noise` (linear I/N).
    pub fn with(snr_db: f64, interference_over_noise: f64) -> SlotSinr {
        if interference_over_noise <= 0.0 {
            return SlotSinr::alone(snr_db);
        }
        SlotSinr {
            sinr_db: snr_db - lin_to_db(1.0 + interference_over_noise),
            sir_db: snr_db - lin_to_db(interference_over_noise),
            inr_db: lin_to_db(interference_over_noise),
        }
    }
}

/// The victim's end of the sum: where it stands, its panel and the cell its beam points at.
#[derive(Clone, Copy, Debug)]
pub struct Victim {
    pub at: Antenna,
    pub panel: Panel,
    pub serving: Antenna,
}

impl Victim {
    /// I/N (linear) from one interfering cell at `cell` with `panel`, whose link to the victim
    /// has the SNR `link_snr_db` with both beams aligned, while it points `beams`: each the
    /// antenna of a UE it serves and the share of the slot it serves it for.
    pub fn interference_over_noise(
        &self,
        cell: Antenna,
        panel: &Panel,
        link_snr_db: f64,
        beams: impl Iterator<Item = (Antenna, f64)>,
    ) -> f64 {
        if link_snr_db == f64::NEG_INFINITY {
            return 0.0;
        }
        let toward_victim = Angles::between(cell.pos, cell.height_m, self.at.pos, self.at.height_m);
        let victim_beam = Angles::between(self.at.pos, self.at.height_m, self.serving.pos, self.serving.height_m);
        let toward_cell = Angles::between(self.at.pos, self.at.height_m, cell.pos, cell.height_m);
        let receive_db = self.panel.gain_db(toward_cell, victim_beam) - self.panel.peak_gain_db();
        let mut sum = 0.0;
        for (target, share) in beams {
            let steer = Angles::between(cell.pos, cell.height_m, target.pos, target.height_m);
            let transmit_db = panel.gain_db(toward_victim, steer) - panel.peak_gain_db();
            sum += share * db_to_lin(link_snr_db + transmit_db + receive_db);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_channel::Point2;

    fn at(x: f64, h: f64) -> Antenna {
        Antenna { pos: Point2::new(x, 0.0), height_m: h }
    }

    #[test]
    fn parts_of_the_sinr() {
        // I = N: SINR is the SNR − 3.01 dB, SIR the SNR, INR 0 dB.
        let s = SlotSinr::with(20.0, 1.0);
        assert!((s.sinr_db - (20.0 - 10.0 * 2f64.log10())).abs() < 1e-12);
        assert!((s.sir_db - 20.0).abs() < 1e-12);
        assert!(s.inr_db.abs() < 1e-12);
        assert_eq!(SlotSinr::with(7.0, 0.0), SlotSinr::alone(7.0));
        assert_eq!(SlotSinr::alone(7.0).sir_db, f64::INFINITY);
    }

    #[test]
    fn a_beam_on_the_victim_gives_the_link_snr() {
        // Both panels facing each other: the interference is the whole link SNR, per share.
        let v = Victim { at: at(50.0, 1.5), panel: Panel::facing(16), serving: at(100.0, 1.5) };
        // The victim's beam points at the serving cell, at +x; the interferer is at −x:
        // behind it, 30 dB down by the element's front-to-back limit.
        let i = v.interference_over_noise(at(0.0, 1.5), &Panel::facing(64), 10.0, [(at(50.0, 1.5), 0.5)].into_iter());
        assert!((lin_to_db(i) - (10.0 + lin_to_db(0.5) - 30.0)).abs() < 1e-9);
        // A victim whose serving cell lies in line with the interferer receives it at its peak.
        let v = Victim { serving: at(-20.0, 1.5), ..v };
        let i = v.interference_over_noise(at(0.0, 1.5), &Panel::facing(64), 10.0, [(at(50.0, 1.5), 1.0)].into_iter());
        assert!((lin_to_db(i) - 10.0).abs() < 1e-9);
        // No beams (an idle cell) or no signal: nothing.
        assert_eq!(v.interference_over_noise(at(0.0, 1.5), &Panel::facing(64), 10.0, std::iter::empty()), 0.0);
        let none = [(at(50.0, 1.5), 1.0)].into_iter();
        assert_eq!(v.interference_over_noise(at(0.0, 1.5), &Panel::facing(64), f64::NEG_INFINITY, none), 0.0);
    }
}
