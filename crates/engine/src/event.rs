//! The event queue: a binary min-heap keyed by (time, insertion order).
//!
//! Simultaneous events run in the order they were scheduled, so a run is a pure
//! function of its inputs. Timers that models re-arm on almost every packet (the
//! TCP RTO) are handled by `TimerSlots`: moving a deadline later costs no heap
//! operation; the stale heap entry re-queues itself when it surfaces.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an instant. Kept small (16 bytes) so heap moves are cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising its head packet.
    LinkTransmitted(u32),
    /// The oldest packet in a link's propagation pipe reaches the far end.
    LinkArrival(u32),
    /// A timer slot's heap entry surfaced (slot, generation).
    Timer(u32, u32),
    /// Periodic sampling of time series.
    Sample,
    /// A link changes its rate (rate-switching bottlenecks).
    RateSwitch(u32),
    /// A flow starts (its receiver opens the connection or its source begins).
    FlowStart(u32),
    /// An application-limited source writes its next chunk.
    AppWrite(u32),
    /// A cell delivers what its previous slot decoded and schedules the next slot.
    Slot(u32),
    /// The gNBs sample telemetry for the proxy (every T_info).
    Telemetry,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// time_ns << 64 | sequence: one integer comparison orders the heap.
    key: u128,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
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
        let head = self.heap.peek()?;
        let at_ns = (head.key >> 64) as u64;
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

    /// Sets the deadline a model wants (None: no timer).
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
        q.schedule(3, Event::FlowStart(1));
        q.schedule(5, Event::FlowStart(2));
        q.schedule(3, Event::FlowStart(3));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(u64::MAX)).collect();
        assert_eq!(
            order,
            vec![(3, Event::FlowStart(1)), (3, Event::FlowStart(3)), (5, Event::Sample), (5, Event::FlowStart(2))]
        );
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
