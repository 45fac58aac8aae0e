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
use millinet_channel::{Angles, Antenna, Panel, Point2};

/// Beam gains are computed again once the victim or the beam's target has moved this far
/// since they were: 0.7° of arc seen from 20 m, against the 13° main lobe of an 8-wide array.
/// A pedestrian's gains are renewed every 0.18 s, a car's at 20 m/s every 12.5 ms.
pub const BEAM_GAIN_TOLERANCE_M: f64 = 0.25;

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
/// The SNR a UE's link to an interferer would have with both beams aligned, in dB and
/// linear: the interference sums are linear, and the link changes only at its own steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSnr {
    pub db: f64,
    pub lin: f64,
}

impl LinkSnr {
    pub fn new(db: f64) -> LinkSnr {
        LinkSnr { db, lin: db_to_lin(db) }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Victim {
    pub at: Antenna,
    pub panel: Panel,
    pub serving: Antenna,
}

impl Victim {
    /// The victim's gain toward an interferer at `cell`, over its peak (its beam points at its
    /// serving cell).
    pub fn receive_lin(&self, cell: Antenna) -> f64 {
        let beam = Angles::between(self.at.pos, self.at.height_m, self.serving.pos, self.serving.height_m);
        let toward_cell = Angles::between(self.at.pos, self.at.height_m, cell.pos, cell.height_m);
        self.panel.gain_lin(toward_cell, beam) / db_to_lin(self.panel.peak_gain_db())
    }

    /// The direction from a cell at `cell` to the victim.
    pub fn seen_from(&self, cell: Antenna) -> Angles {
        Angles::between(cell.pos, cell.height_m, self.at.pos, self.at.height_m)
    }
}

/// The gain toward the victim, seen from the cell at `cell` in direction `toward_victim`, of
/// its `panel` pointed at `target`, over the panel's peak.
pub fn transmit_lin(toward_victim: Angles, cell: Antenna, panel: &Panel, target: Antenna) -> f64 {
    let steer = Angles::between(cell.pos, cell.height_m, target.pos, target.height_m);
    panel.gain_lin(toward_victim, steer) / db_to_lin(panel.peak_gain_db())
}

/// A beam a cell points during a slot: at the UE at `position` among its UEs (whose antenna is
/// `target`; `None` without geometry), for `share` of the slot.
#[derive(Clone, Copy, Debug)]
pub struct Beam {
    pub position: usize,
    pub share: f64,
    pub target: Option<Antenna>,
}

/// What one interfering cell's beams do to one victim, kept while nothing moves by more than
/// [`BEAM_GAIN_TOLERANCE_M`] and the cell's UEs keep their positions (`version` changes when
/// one attaches or detaches). Gains are linear, over the panels' peaks; a beam's is computed
/// the first time the cell points it. A slot then costs a sum over its beams.
#[derive(Clone, Debug, Default)]
pub struct BeamGains {
    /// The victim's position and the cell's version the gains hold for.
    key: Option<(Point2, u64)>,
    receive_lin: f64,
    toward_victim: Option<Angles>,
    /// By the target's position in the interfering cell: where the target stood and the gain.
    transmit: Vec<Option<(Point2, f64)>>,
}

impl BeamGains {
    /// I/N (linear) at `victim` from the cell at `cell` with `panel` (of `cell_ues` UEs, its
    /// version `version`), whose link to the victim has the SNR `link_snr_db` with both beams
    /// aligned, while it points `beams`.
    #[allow(clippy::too_many_arguments)]
    pub fn interference_over_noise(
        &mut self,
        version: u64,
        victim: &Victim,
        cell: Antenna,
        panel: &Panel,
        link_snr: LinkSnr,
        cell_ues: usize,
        beams: &[Beam],
    ) -> f64 {
        if link_snr.db == f64::NEG_INFINITY {
            return 0.0;
        }
        let still = |from: Point2, to: Point2| {
            let (dx, dy) = (to.x_m - from.x_m, to.y_m - from.y_m);
            dx * dx + dy * dy <= BEAM_GAIN_TOLERANCE_M * BEAM_GAIN_TOLERANCE_M
        };
        if !matches!(self.key, Some((at, v)) if v == version && still(at, victim.at.pos)) {
            self.key = Some((victim.at.pos, version));
            self.receive_lin = victim.receive_lin(cell);
            self.toward_victim = Some(victim.seen_from(cell));
            self.transmit.clear();
            self.transmit.resize(cell_ues, None);
        }
        let toward_victim = self.toward_victim.expect("set with the key");
        let mut sum = 0.0;
        for &Beam { position, share, target } in beams {
            let (Some(t), Some(entry)) = (target, self.transmit.get_mut(position)) else { continue };
            let gain = match *entry {
                Some((was, gain)) if still(was, t.pos) => gain,
                _ => {
                    let gain = transmit_lin(toward_victim, cell, panel, t);
                    *entry = Some((t.pos, gain));
                    gain
                }
            };
            sum += share * gain;
        }
        sum * self.receive_lin * link_snr.lin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beam(position: usize, share: f64, target: Antenna) -> Beam {
        Beam { position, share, target: Some(target) }
    }

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
        let v = Victim { at: at(50.0, 1.5), panel: Panel::facing(16), serving: at(100.0, 1.5) };
        let cell = at(0.0, 1.5);
        let panel = Panel::facing(64);
        // The victim's beam points at the serving cell, at +x; the interferer is at −x: behind
        // it, 30 dB down by the element's front-to-back limit. Its beam is on the victim.
        let mut gains = BeamGains::default();
        let i = gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(10.0), 1, &[beam(0, 0.5, at(50.0, 1.5))]);
        assert!((lin_to_db(i) - (10.0 + lin_to_db(0.5) - 30.0)).abs() < 1e-9);
        // A victim whose serving cell lies in line with the interferer receives it at its peak
        // (a victim that moved: the receive gain is computed again).
        let v = Victim { at: at(51.0, 1.5), serving: at(-20.0, 1.5), ..v };
        let i = gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(10.0), 1, &[beam(0, 1.0, at(50.0, 1.5))]);
        assert!((lin_to_db(i) - 10.0).abs() < 1e-9);
        // No beams (an idle cell) or no signal: nothing.
        assert_eq!(gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(10.0), 1, &[]), 0.0);
        assert_eq!(
            gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(f64::NEG_INFINITY), 1, &[beam(0, 1.0, at(50.0, 1.5))]),
            0.0
        );
    }

    #[test]
    fn gains_are_kept_while_nothing_moves_and_renewed_after() {
        let v = Victim { at: at(50.0, 1.5), panel: Panel::facing(16), serving: at(-20.0, 1.5) };
        let (cell, panel) = (at(0.0, 1.5), Panel::facing(64));
        let mut gains = BeamGains::default();
        let aside = |y: f64| Antenna { pos: Point2::new(30.0, y), height_m: 1.5 };
        let first = gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(0.0), 2, &[beam(1, 1.0, aside(10.0))]);
        // The target moved less than the tolerance: the gain is kept.
        let kept = gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(0.0), 2, &[beam(1, 1.0, aside(10.2))]);
        assert_eq!(first, kept);
        // Farther: computed again, toward where it stands now.
        let fresh = |y| BeamGains::default().interference_over_noise(0, &v, cell, &panel, LinkSnr::new(0.0), 2, &[beam(1, 1.0, aside(y))]);
        let moved = gains.interference_over_noise(0, &v, cell, &panel, LinkSnr::new(0.0), 2, &[beam(1, 1.0, aside(14.0))]);
        assert_eq!(moved, fresh(14.0));
        assert_ne!(moved, first);
        // A new version (a UE attached or detached): computed again, whatever moved.
        let renewed = gains.interference_over_noise(1, &v, cell, &panel, LinkSnr::new(0.0), 2, &[beam(1, 1.0, aside(14.1))]);
        assert_eq!(renewed, fresh(14.1));
    }
}
