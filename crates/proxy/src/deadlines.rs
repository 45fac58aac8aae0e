//! Per-flow deadlines in one ordered set, so the proxy's next timeout is the first entry
//! and expiring ones pop in time order. Each flow remembers the deadline it armed.

use std::collections::BTreeSet;

use crate::flow_table::FlowKey;

#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    set: BTreeSet<(u64, FlowKey)>,
}

impl Deadlines {
    /// Moves `key`'s deadline from `armed` to `wanted` (None: no deadline).
    pub fn rearm(&mut self, key: FlowKey, armed: &mut Option<u64>, wanted: Option<u64>) {
        if wanted == *armed {
            return;
        }
        if let Some(t) = *armed {
            self.set.remove(&(t, key));
        }
        if let Some(t) = wanted {
            self.set.insert((t, key));
        }
        *armed = wanted;
    }

    /// The flow of the earliest deadline at or before `now_ns`, removed from the set (the
    /// caller clears the flow's `armed` copy).
    pub fn pop_due(&mut self, now_ns: u64) -> Option<FlowKey> {
        let &(t, key) = self.set.first()?;
        (t <= now_ns).then(|| {
            self.set.pop_first();
            key
        })
    }

    pub fn first_ns(&self) -> Option<u64> {
        self.set.first().map(|&(t, _)| t)
    }
}
