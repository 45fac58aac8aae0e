//! What changes a wired link direction's rate over time: a switch between two rates every
//! period (docs/validation.md#dumbbell) or the per-user capacity process of the spep-emulation study
//! (docs/studies.md#spep-emulation). The one driver both the simulator (from its event queue) and the
//! emulator's hops (from their clock) run.

use std::path::Path;

use millinet_channel::CapacityProcess;
use millinet_transport::link::Link;

use super::seconds_to_ns;
use super::transport::capacity_process;
use crate::{ConfigError, LinkSpec};

pub enum LinkRate {
    /// Alternates between the link's two rates at `next_ns`, `next_ns + period_ns`, ...
    Switching {
        period_ns: u64,
        next_ns: u64,
    },
    Capacity(Box<CapacityProcess>),
}

impl LinkRate {
    /// The rate schedule of link `i`'s direction a→b (`a_to_b`) or b→a: a switching link
    /// switches both; a capacity process drives a→b only (the b→a direction keeps `rate_bps`).
    pub fn new(i: usize, spec: &LinkSpec, a_to_b: bool, seed: u64, base_dir: &Path) -> Result<Option<LinkRate>, ConfigError> {
        if spec.switch_period_s > 0.0 {
            let period_ns = seconds_to_ns(spec.switch_period_s);
            return Ok(Some(LinkRate::Switching { period_ns, next_ns: period_ns }));
        }
        if !a_to_b {
            return Ok(None);
        }
        Ok(capacity_process(i, spec, seed, base_dir)?.map(|p| LinkRate::Capacity(Box::new(p))))
    }

    /// When the rate next changes.
    pub fn next_deadline_ns(&self) -> u64 {
        match self {
            LinkRate::Switching { next_ns, .. } => *next_ns,
            LinkRate::Capacity(p) => p.next_deadline_ns(),
        }
    }

    /// Runs the change due at `now_ns` (= [`LinkRate::next_deadline_ns`]) on `link`.
    pub fn update(&mut self, now_ns: u64, link: &mut Link) {
        match self {
            LinkRate::Switching { period_ns, next_ns } => {
                link.switch_rate(now_ns);
                *next_ns = now_ns + *period_ns;
            }
            // At least 1 bit/s: a rate of 0 would never finish a packet (the process's
            // truncated Shannon rate is 0 only below its lowest SINR).
            LinkRate::Capacity(p) => link.set_rate(now_ns, (p.on_update(now_ns).round() as u64).max(1)),
        }
    }
}
