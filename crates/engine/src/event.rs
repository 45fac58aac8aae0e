//! The event queue: a binary min-heap keyed by (time, insertion order).
//!
//! Simultaneous events run in the order they were scheduled, so a run is a pure
//! function of its inputs. Timers that models re-arm on almost every packet (the
//! TCP RTO) are handled by `TimerSlots`: moving a deadline later costs no heap
//! operation; the stale heap entry re-queues itself when it surfaces.

use millinet_network::{NetEvent, SiteId};
use millinet_transport::app::FlowId;

/// What happens at an instant. Kept small (12 bytes) so heap moves are cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// What the network asked to be woken for (a link, a cell's slot, a handover's steps, a
    /// route change).
    Network(NetEvent),
    /// A timer slot's heap entry surfaced (slot, generation).
    Timer(u32, u32),
    /// Periodic sampling of time series.
    Sample,
    /// A flow starts (its receiver opens the connection or its source begins).
    FlowStart(FlowId),
    /// A flow's application reached its deadline (a rate-limited source's next write).
    AppDeadline(FlowId),
    /// The gNBs sample telemetry for the middlebox of a site (every T_info).
    Telemetry(SiteId),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// time_ns << 64 | sequence: one integer comparison orders the heap.
    key: u128,
    event: Event,
}

/// A binary min-heap on `Entry::key`. Hand-written rather than `std`'s `BinaryHeap`
/// because the latter's sift keeps the moving entry in a stack slot that it writes in
/// halves and reads whole, a store-forwarding stall on every pop (perf: ~20% of a run);
/// here the moving entry stays in registers.
#[derive(Default)]
struct MinHeap {
    items: Vec<Entry>,
}

impl MinHeap {
    #[inline]
    fn peek_key(&self) -> Option<u128> {
        self.items.first().map(|e| e.key)
    }

    #[inline]
    fn push(&mut self, entry: Entry) {
        let mut pos = self.items.len();
        self.items.push(entry);
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.items[parent].key <= entry.key {
                break;
            }
            self.items[pos] = self.items[parent];
            pos = parent;
        }
        self.items[pos] = entry;
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        let last = self.items.pop()?;
        let Some(&top) = self.items.first() else { return Some(last) };
        let len = self.items.len();
        let mut pos = 0;
        loop {
            let mut child = 2 * pos + 1;
            if child >= len {
                break;
            }
            if child + 1 < len && self.items[child + 1].key < self.items[child].key {
                child += 1;
            }
            if self.items[child].key >= last.key {
                break;
            }
            self.items[pos] = self.items[child];
            pos = child;
        }
        self.items[pos] = last;
        Some(top)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.items.len()
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: MinHeap,
    next_sequence: u64,
    processed: u64,
}

impl EventQueue {
    #[inline]
    pub fn schedule(&mut self, at_ns: u64, event: Event) {
        let key = ((at_ns as u128) << 64) | self.next_sequence as u128;
        self.next_sequence += 1;
        self.heap.push(Entry { key, event });
    }

    /// Removes and returns the earliest event not later than `until_ns`.
    #[inline]
    pub fn pop_until(&mut self, until_ns: u64) -> Option<(u64, Event)> {
        let at_ns = (self.heap.peek_key()? >> 64) as u64;
        if at_ns > until_ns {
            return None;
        }
        let event = self.heap.pop().map(|e| e.event)?;
        self.processed += 1;
        Some((at_ns, event))
    }

    pub fn processed(&self) -> u64 {
        self.processed
    }
}

/// Per-model timers with lazy re-arming.
///
/// A model states the deadline it wants; the slot keeps at most one live heap
/// entry. A later deadline only updates `wanted_ns`; an earlier one schedules a
/// new entry (the old one becomes stale through the generation count).
#[derive(Default)]
pub struct TimerSlots {
    slots: Vec<Slot>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    wanted_ns: Option<u64>,
    queued_ns: Option<u64>,
    generation: u32,
}

impl TimerSlots {
    pub fn add(&mut self) -> u32 {
        self.slots.push(Slot::default());
        (self.slots.len() - 1) as u32
    }

    /// Sets the deadline a model wants (None: no timer): its `next_deadline_ns()`.
    #[inline]
    pub fn set(&mut self, queue: &mut EventQueue, slot: u32, wanted_ns: Option<u64>) {
        let s = &mut self.slots[slot as usize];
        s.wanted_ns = wanted_ns;
        if let Some(w) = wanted_ns {
            if s.queued_ns.is_none_or(|q| w < q) {
                s.generation = s.generation.wrapping_add(1);
                s.queued_ns = Some(w);
                queue.schedule(w, Event::Timer(slot, s.generation));
            }
        }
    }

    /// A timer entry surfaced at `now_ns`; returns true when the model's deadline
    /// has come and it must be called. Re-queues itself when the deadline moved later.
    #[inline]
    pub fn surfaced(&mut self, queue: &mut EventQueue, slot: u32, generation: u32, now_ns: u64) -> bool {
        let s = &mut self.slots[slot as usize];
        if s.generation != generation {
            return false;
        }
        s.queued_ns = None;
        match s.wanted_ns {
            Some(w) if w <= now_ns => {
                s.wanted_ns = None;
                true
            }
            Some(w) => {
                s.generation = s.generation.wrapping_add(1);
                s.queued_ns = Some(w);
                queue.schedule(w, Event::Timer(slot, s.generation));
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simultaneous_events_run_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.schedule(5, Event::Sample);
        q.schedule(3, Event::FlowStart(FlowId(1)));
        q.schedule(5, Event::FlowStart(FlowId(2)));
        q.schedule(3, Event::FlowStart(FlowId(3)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(u64::MAX)).collect();
        assert_eq!(
            order,
            vec![(3, Event::FlowStart(FlowId(1))), (3, Event::FlowStart(FlowId(3))), (5, Event::Sample), (5, Event::FlowStart(FlowId(2)))]
        );
    }

    /// The heap pops in (time, scheduling order) whatever the interleaving of pushes and pops.
    #[test]
    fn pops_match_a_sort_under_interleaved_pushes() {
        let mut q = EventQueue::default();
        let (mut state, mut scheduled, mut popped) = (12345u64, vec![], vec![]);
        for i in 0..5000u32 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let at_ns = (state >> 33) % 64 + popped.last().map_or(0, |&(t, _)| t);
            q.schedule(at_ns, Event::FlowStart(FlowId(i)));
            scheduled.push((at_ns, Event::FlowStart(FlowId(i))));
            if state & 3 == 0 {
                popped.extend(q.pop_until(u64::MAX));
            }
        }
        popped.extend(std::iter::from_fn(|| q.pop_until(u64::MAX)));
        // Every event was scheduled no earlier than anything popped before it, so the pops
        // are the stable sort of the schedule by time.
        scheduled.sort_by_key(|&(t, _)| t);
        assert_eq!(popped, scheduled);
    }

    #[test]
    fn pop_until_stops_at_the_horizon() {
        let mut q = EventQueue::default();
        q.schedule(10, Event::Sample);
        assert_eq!(q.pop_until(9), None);
        assert_eq!(q.pop_until(10), Some((10, Event::Sample)));
    }

    /// Drives one slot like the engine does and returns the times the model fired.
    fn fire_times(q: &mut EventQueue, t: &mut TimerSlots, slot: u32) -> Vec<u64> {
        let mut fired = vec![];
        while let Some((now, ev)) = q.pop_until(u64::MAX) {
            if let Event::Timer(s, g) = ev {
                if t.surfaced(q, s, g, now) {
                    assert_eq!(s, slot);
                    fired.push(now);
                }
            }
        }
        fired
    }

    #[test]
    fn later_deadline_defers_without_extra_heap_entries() {
        let mut q = EventQueue::default();
        let mut t = TimerSlots::default();
        let slot = t.add();
        t.set(&mut q, slot, Some(100));
        for deadline in 101..200 {
            t.set(&mut q, slot, Some(deadline));
        }
        assert_eq!(q.heap.len(), 1, "re-arming later must not push");
        assert_eq!(fire_times(&mut q, &mut t, slot), vec![199]);
    }

    #[test]
    fn earlier_deadline_and_cancel() {
        let mut q = EventQueue::default();
        let mut t = TimerSlots::default();
        let slot = t.add();
        t.set(&mut q, slot, Some(100));
        t.set(&mut q, slot, Some(50));
        assert_eq!(fire_times(&mut q, &mut t, slot), vec![50]);
        t.set(&mut q, slot, Some(300));
        t.set(&mut q, slot, None);
        assert_eq!(fire_times(&mut q, &mut t, slot), Vec::<u64>::new());
    }
}
