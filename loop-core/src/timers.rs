//! A deadline heap with lazy cancellation, as asyncio keeps its `_scheduled`.
//!
//! Cancelling is O(1): the entry only marks itself cancelled
//! ([`TimerEntry::is_cancelled`]) and the owner calls
//! [`Timers::note_cancelled`]. Cancelled entries are skipped when they reach
//! the head, and the heap is rebuilt without them once they are more than
//! half of it (asyncio's rule), so a schedule-and-cancel workload cannot
//! grow memory without bound.
//!
//! Entries leave the heap through an `out` vector rather than being dropped
//! here: a payload may own Python objects whose destructor can re-enter the
//! loop, so the caller drops them once its own borrows have ended.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What the heap needs to know about a payload.
pub trait TimerEntry {
    fn is_cancelled(&self) -> bool;
}

/// Heap compaction does not bother below this many cancelled entries.
const MIN_COMPACT: usize = 100;

struct Slot<T> {
    deadline: f64,
    /// Scheduling order, so equal deadlines fire first-scheduled first.
    seq: u64,
    item: T,
}

impl<T> PartialEq for Slot<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T> Eq for Slot<T> {}
impl<T> PartialOrd for Slot<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Slot<T> {
    /// Reversed, so the std max-heap pops the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .deadline
            .total_cmp(&self.deadline)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Deadline-ordered timers.
pub struct Timers<T> {
    heap: BinaryHeap<Slot<T>>,
    next_seq: u64,
    cancelled: usize,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            heap: BinaryHeap::new(),
            next_seq: 0,
            cancelled: 0,
        }
    }
}

impl<T: TimerEntry> Timers<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries in the heap, cancelled ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Cancelled entries believed to be still in the heap.
    pub fn cancelled_count(&self) -> usize {
        self.cancelled
    }

    pub fn push(&mut self, deadline: f64, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Slot {
            deadline,
            seq,
            item,
        });
    }

    /// Record that an entry in the heap was cancelled; compacts when
    /// cancelled entries dominate, moving them to `out`.
    pub fn note_cancelled(&mut self, out: &mut Vec<T>) {
        self.note_cancelled_n(1, out);
    }

    /// [`note_cancelled`](Self::note_cancelled) for `n` entries at once.
    pub fn note_cancelled_n(&mut self, n: usize, out: &mut Vec<T>) {
        self.cancelled += n;
        if self.cancelled > MIN_COMPACT && self.cancelled * 2 > self.heap.len() {
            self.compact(out);
        }
    }

    /// Rebuild the heap without cancelled entries (moved to `out`).
    pub fn compact(&mut self, out: &mut Vec<T>) {
        let slots = std::mem::take(&mut self.heap).into_vec();
        let mut kept = Vec::with_capacity(slots.len());
        for slot in slots {
            if slot.item.is_cancelled() {
                out.push(slot.item);
            } else {
                kept.push(slot);
            }
        }
        self.heap = BinaryHeap::from(kept);
        self.cancelled = 0;
    }

    fn drop_cancelled_head(&mut self, out: &mut Vec<T>) {
        // Nothing counted as cancelled: skip touching the payload (a cache
        // miss per timer for Python handles). The owner still checks a
        // handle's flag before running it.
        if self.cancelled == 0 {
            return;
        }
        while self.heap.peek().is_some_and(|s| s.item.is_cancelled()) {
            if let Some(slot) = self.heap.pop() {
                self.cancelled = self.cancelled.saturating_sub(1);
                out.push(slot.item);
            }
        }
    }

    /// Deadline of the earliest live entry; cancelled heads move to `out`.
    pub fn next_deadline(&mut self, out: &mut Vec<T>) -> Option<f64> {
        self.drop_cancelled_head(out);
        self.heap.peek().map(|s| s.deadline)
    }

    /// Pop the earliest live entry if it is due by `until`.
    pub fn pop_due(&mut self, until: f64, out: &mut Vec<T>) -> Option<T> {
        self.drop_cancelled_head(out);
        if self.heap.peek()?.deadline <= until {
            self.heap.pop().map(|s| s.item)
        } else {
            None
        }
    }

    /// Every entry, in no particular order (for garbage-collector visits).
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.heap.iter().map(|s| &s.item)
    }

    /// Remove everything (loop close).
    pub fn clear(&mut self, out: &mut Vec<T>) {
        out.extend(std::mem::take(&mut self.heap).into_iter().map(|s| s.item));
        self.cancelled = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[derive(Clone, Debug)]
    struct Item(u32, Rc<Cell<bool>>);
    impl TimerEntry for Item {
        fn is_cancelled(&self) -> bool {
            self.1.get()
        }
    }
    fn item(n: u32) -> Item {
        Item(n, Rc::new(Cell::new(false)))
    }

    fn drain_due(t: &mut Timers<Item>, until: f64) -> Vec<u32> {
        let mut out = Vec::new();
        let mut fired = Vec::new();
        while let Some(i) = t.pop_due(until, &mut out) {
            fired.push(i.0);
        }
        fired
    }

    #[test]
    fn fires_in_deadline_order() {
        let mut t = Timers::new();
        for (d, n) in [(3.0, 3), (1.0, 1), (2.0, 2), (0.5, 0)] {
            t.push(d, item(n));
        }
        assert_eq!(drain_due(&mut t, 2.5), vec![0, 1, 2]);
        assert_eq!(t.next_deadline(&mut Vec::new()), Some(3.0));
        assert_eq!(drain_due(&mut t, 10.0), vec![3]);
        assert!(t.is_empty());
    }

    #[test]
    fn ties_fire_in_scheduling_order() {
        let mut t = Timers::new();
        for n in 0..50 {
            t.push(1.0, item(n));
        }
        t.push(0.5, item(99));
        let mut expected = vec![99];
        expected.extend(0..50);
        assert_eq!(drain_due(&mut t, 1.0), expected);
    }

    #[test]
    fn cancelled_entries_are_skipped_and_handed_back() {
        let mut t = Timers::new();
        let a = item(1);
        let b = item(2);
        t.push(1.0, a.clone());
        t.push(2.0, b.clone());
        a.1.set(true);
        let mut out = Vec::new();
        t.note_cancelled(&mut out);
        assert_eq!(t.next_deadline(&mut out), Some(2.0));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, 1);
        assert_eq!(t.cancelled_count(), 0);
        assert_eq!(drain_due(&mut t, 5.0), vec![2]);
    }

    #[test]
    fn compacts_when_cancelled_dominate() {
        let mut t = Timers::new();
        let items: Vec<Item> = (0..1000).map(item).collect();
        for (i, it) in items.iter().enumerate() {
            t.push(i as f64, it.clone());
        }
        let mut out = Vec::new();
        for it in items.iter().filter(|it| it.0 % 16 != 0) {
            it.1.set(true);
            t.note_cancelled(&mut out);
        }
        // 937 cancelled of 1000: compaction ran and the heap shrank.
        assert!(t.len() < 1000 - 400, "heap was compacted, len {}", t.len());
        assert!(out.iter().all(|i| i.1.get()));
        let fired = drain_due(&mut t, 1e9);
        assert_eq!(fired, (0..1000).filter(|n| n % 16 == 0).collect::<Vec<_>>());
    }

    #[test]
    fn clear_hands_back_everything() {
        let mut t = Timers::new();
        t.push(1.0, item(1));
        t.push(2.0, item(2));
        let mut out = Vec::new();
        t.clear(&mut out);
        assert_eq!(out.len(), 2);
        assert!(t.is_empty());
    }
}
