//! Which direction each slot serves (docs/models/ran.md#tdd-and-uplink).
//!
//! - Dynamic (default): a slot goes to the uplink when uplink data waits and
//!   either the downlink has nothing to send or `ul_every − 1` downlink slots
//!   in a row have passed while uplink data waited.
//! - Fixed pattern, e.g. "DDDSU", repeated from time 0. A special slot (S) is
//!   used as a downlink slot with a reduced share of resources: its symbols
//!   split into downlink, guard and uplink; the default share 10/14 is a
//!   common split of 10 downlink, 2 guard and 2 uplink symbols whose uplink
//!   symbols carry control only (CQI, HARQ feedback, SR), not data.

use crate::config::{bad, ConfigError};
use crate::output::Direction;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Downlink,
    Uplink,
    Special,
}

/// Default downlink share of a special slot.
pub const SPECIAL_DL_SHARE: f64 = 10.0 / 14.0;

#[derive(Clone, Debug, PartialEq)]
pub enum TddConfig {
    Dynamic { ul_every: u32 },
    Pattern { slots: Vec<SlotKind>, special_dl_share: f64 },
}

impl Default for TddConfig {
    fn default() -> Self {
        TddConfig::Dynamic { ul_every: 5 }
    }
}

impl TddConfig {
    /// Parse a fixed pattern of `D`, `S` and `U` letters, with the default
    /// special-slot share.
    pub fn pattern(text: &str) -> Result<TddConfig, ConfigError> {
        let allowed = "a string of D, S and U letters with at least one D and one U, e.g. \"DDDSU\"";
        let slots = text
            .chars()
            .map(|c| match c {
                'D' => Ok(SlotKind::Downlink),
                'U' => Ok(SlotKind::Uplink),
                'S' => Ok(SlotKind::Special),
                _ => Err(bad("tdd.pattern", format!("{text:?}"), allowed)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cfg = TddConfig::Pattern { slots, special_dl_share: SPECIAL_DL_SHARE };
        cfg.validate().map_err(|_| bad("tdd.pattern", format!("{text:?}"), allowed))?;
        Ok(cfg)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        match self {
            TddConfig::Dynamic { ul_every } if *ul_every == 0 => Err(bad("tdd.ul_every", ul_every, "a positive number of slots")),
            TddConfig::Dynamic { .. } => Ok(()),
            TddConfig::Pattern { slots, special_dl_share } => {
                // Without a D (or S) slot the downlink never drains, without a U the uplink.
                let has_dl = slots.iter().any(|s| *s != SlotKind::Uplink);
                let has_ul = slots.contains(&SlotKind::Uplink);
                if !has_dl || !has_ul {
                    return Err(bad("tdd.pattern", format!("{slots:?}"), "at least one D and one U"));
                }
                if !(*special_dl_share > 0.0 && *special_dl_share <= 1.0) {
                    return Err(bad("tdd.special_dl_share", special_dl_share, "0 < share <= 1"));
                }
                Ok(())
            }
        }
    }
}

/// The direction of a slot and the share of its resources open to data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotPlan {
    pub direction: Direction,
    pub share: f64,
}

/// Run-time state of the TDD decision.
#[derive(Debug, Default)]
pub(crate) struct Tdd {
    /// Downlink slots in a row that passed while uplink data waited.
    dl_while_ul_waits: u32,
}

impl Tdd {
    /// Decide slot number `slot_index` (time / slot duration). `dl_wants` and
    /// `ul_wants` say whether either side has something it could send now.
    pub fn plan(&mut self, cfg: &TddConfig, slot_index: u64, dl_wants: bool, ul_wants: bool) -> SlotPlan {
        match cfg {
            TddConfig::Dynamic { ul_every } => {
                if ul_wants && (!dl_wants || self.dl_while_ul_waits + 1 >= *ul_every) {
                    self.dl_while_ul_waits = 0;
                    SlotPlan { direction: Direction::Uplink, share: 1.0 }
                } else {
                    if ul_wants {
                        self.dl_while_ul_waits += 1;
                    }
                    SlotPlan { direction: Direction::Downlink, share: 1.0 }
                }
            }
            TddConfig::Pattern { slots, special_dl_share } => match slots[(slot_index % slots.len() as u64) as usize] {
                SlotKind::Downlink => SlotPlan { direction: Direction::Downlink, share: 1.0 },
                SlotKind::Special => SlotPlan { direction: Direction::Downlink, share: *special_dl_share },
                SlotKind::Uplink => SlotPlan { direction: Direction::Uplink, share: 1.0 },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_parses_and_rejects() {
        let cfg = TddConfig::pattern("DDDSU").unwrap();
        let mut tdd = Tdd::default();
        let dirs: Vec<_> = (0..5).map(|i| tdd.plan(&cfg, i, true, true).direction).collect();
        use Direction::*;
        assert_eq!(dirs, [Downlink, Downlink, Downlink, Downlink, Uplink]);
        assert!(TddConfig::pattern("DDX").is_err());
        assert!(TddConfig::pattern("DDD").is_err());
        assert!(TddConfig::pattern("").is_err());
    }

    #[test]
    fn dynamic_gives_uplink_every_ul_every_slots_under_load() {
        let cfg = TddConfig::Dynamic { ul_every: 5 };
        let mut tdd = Tdd::default();
        let ul: Vec<_> = (0..10).map(|i| tdd.plan(&cfg, i, true, true).direction == Direction::Uplink).collect();
        assert_eq!(ul, [false, false, false, false, true, false, false, false, false, true]);
        assert_eq!(tdd.plan(&cfg, 10, false, true).direction, Direction::Uplink);
        assert_eq!(tdd.plan(&cfg, 11, false, false).direction, Direction::Downlink);
    }
}
