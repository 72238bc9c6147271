//! A deadline heap with lazy cancellation, as asyncio keeps its `_scheduled`.
//!
//! Cancelling is O(1): the entry only marks itself cancelled
//! ([`TimerEntry::is_cancelled`]) and the owner calls
//! [`Timers::note_cancelled`]. Cancelled entries are skipped when they reach
//! the head, and the heap is rebuilt without them once they are more than
//! half of it (asyncio's rule), so a schedule-and-cancel workload cannot
//! grow memory without bound.
//!
//! The heap is 4-ary: half the depth of a binary heap, and a node's
//! children's ranks (deadline and sequence in one `u128`, kept apart from
//! the payloads) fill one or two cache lines. That matters when a tick
//! pops thousands of due timers from a heap of 100k (measured:
//! `BinaryHeap::pop` was the top native symbol of the timer benchmark, and
//! then this heap's pop at ~740 instructions per timer).
//!
//! Entries leave the heap through an `out` vector rather than being dropped
//! here: a payload may own Python objects whose destructor can re-enter the
//! loop, so the caller drops them once its own borrows have ended.

/// What the heap needs to know about a payload.
pub trait TimerEntry {
    fn is_cancelled(&self) -> bool;
}

/// Heap compaction does not bother below this many cancelled entries.
const MIN_COMPACT: usize = 100;

/// A deadline as an unsigned integer that sorts as `f64::total_cmp` does
/// (so a NaN deadline, a user's `call_at(nan)`, stays ordered): integer
/// compares are what make a heap of 100k timers cheap to pop.
#[inline]
fn order_key(deadline: f64) -> u64 {
    let bits = deadline.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The deadline back from its [`order_key`].
#[inline]
fn deadline_of(key: u64) -> f64 {
    if key >> 63 == 1 {
        f64::from_bits(key & !(1 << 63))
    } else {
        f64::from_bits(!key)
    }
}

/// Firing order in one integer: the [`order_key`] of the deadline above,
/// the scheduling sequence below, so equal deadlines fire first-scheduled
/// first and no two entries compare equal. One `u128` compare is a
/// `cmp`/`sbb` pair, with no branch on which half decided.
#[inline]
fn rank_of(key: u64, seq: u64) -> u128 {
    u128::from(key) << 64 | u128::from(seq)
}

#[inline]
fn key_of(rank: u128) -> u64 {
    (rank >> 64) as u64
}

/// Children per node.
const ARITY: usize = 4;

/// A min-heap by rank. Ranks and payloads are kept apart: choosing among a
/// node's four children reads four 16-byte ranks (one or two cache lines)
/// and no payload, and only the payloads on the path are moved.
struct Heap<T> {
    ranks: Vec<u128>,
    items: Vec<T>,
}

impl<T> Heap<T> {
    fn len(&self) -> usize {
        self.ranks.len()
    }

    #[inline]
    fn push(&mut self, rank: u128, item: T) {
        self.ranks.push(rank);
        self.items.push(item);
        self.sift_up(self.ranks.len() - 1, rank);
    }

    /// Move the entry at `i`, of rank `rank`, up to its place, shifting
    /// parents down into the hole rather than swapping ranks. Inlined into
    /// `push`, where a timer scheduled after its parent stops at once.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, rank: u128) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let parent_rank = self.ranks[parent];
            if rank > parent_rank {
                break;
            }
            self.ranks[i] = parent_rank;
            self.items.swap(i, parent);
            i = parent;
        }
        self.ranks[i] = rank;
    }

    fn peek_rank(&self) -> Option<u128> {
        self.ranks.first().copied()
    }

    fn peek_item(&self) -> Option<&T> {
        self.items.first()
    }

    /// Floyd's pop: the last entry replaces the root and is walked down to
    /// a leaf along the smallest children without comparing it on the way
    /// (it came from the bottom, so it almost always belongs there), then
    /// up to its place: about one compare fewer per level.
    fn pop(&mut self) -> Option<(u128, T)> {
        let last_rank = self.ranks.pop()?;
        let last_item = self.items.pop()?;
        let len = self.ranks.len();
        if len == 0 {
            return Some((last_rank, last_item));
        }
        let top_rank = self.ranks[0];
        let top_item = std::mem::replace(&mut self.items[0], last_item);
        let mut i = 0;
        while let Some(best) = self.min_child(i, len) {
            self.ranks[i] = self.ranks[best];
            self.items.swap(i, best);
            i = best;
        }
        self.sift_up(i, last_rank);
        Some((top_rank, top_item))
    }

    /// The smallest child of `i`, if it has any.
    #[inline]
    fn min_child(&self, i: usize, len: usize) -> Option<usize> {
        let first = i * ARITY + 1;
        if let Some(c) = self.ranks.get(first..first + ARITY) {
            // All four (the common case): two pairs, then their winners.
            let (a, ra) = if c[1] < c[0] { (1, c[1]) } else { (0, c[0]) };
            let (b, rb) = if c[3] < c[2] { (3, c[3]) } else { (2, c[2]) };
            return Some(first + if rb < ra { b } else { a });
        }
        let children = self.ranks.get(first..len.max(first))?;
        let (mut best, mut best_rank) = (0, *children.first()?);
        for (at, &rank) in children.iter().enumerate().skip(1) {
            if rank < best_rank {
                best = at;
                best_rank = rank;
            }
        }
        Some(first + best)
    }

    fn sift_down(&mut self, mut i: usize) {
        let len = self.ranks.len();
        while let Some(best) = self.min_child(i, len) {
            if self.ranks[best] > self.ranks[i] {
                return;
            }
            self.ranks.swap(i, best);
            self.items.swap(i, best);
            i = best;
        }
    }

    /// Restore heap order over arbitrary contents (after compaction).
    fn heapify(&mut self) {
        let len = self.ranks.len();
        if len < 2 {
            return;
        }
        for i in (0..=(len - 2) / ARITY).rev() {
            self.sift_down(i);
        }
    }

    /// Everything out, in no particular order.
    fn take_all(&mut self) -> (Vec<u128>, Vec<T>) {
        (
            std::mem::take(&mut self.ranks),
            std::mem::take(&mut self.items),
        )
    }
}

/// Deadline-ordered timers.
pub struct Timers<T> {
    heap: Heap<T>,
    next_seq: u64,
    cancelled: usize,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            heap: Heap {
                ranks: Vec::new(),
                items: Vec::new(),
            },
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
        self.heap.len() == 0
    }

    /// Cancelled entries believed to be still in the heap.
    pub fn cancelled_count(&self) -> usize {
        self.cancelled
    }

    pub fn push(&mut self, deadline: f64, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(rank_of(order_key(deadline), seq), item);
    }

    /// Record that an entry in the heap was cancelled; compacts when
    /// cancelled entries dominate, moving them to `out`.
    pub fn note_cancelled(&mut self, out: &mut Vec<T>) {
        self.note_cancelled_n(1, out);
    }

    /// [`note_cancelled`](Self::note_cancelled) for `n` entries at once.
    pub fn note_cancelled_n(&mut self, n: usize, out: &mut Vec<T>) {
        self.cancelled += n;
        if self.cancelled > MIN_COMPACT && self.cancelled * 2 > self.len() {
            self.compact(out);
        }
    }

    /// Rebuild the heap without cancelled entries (moved to `out`).
    pub fn compact(&mut self, out: &mut Vec<T>) {
        let (ranks, items) = self.heap.take_all();
        self.heap.ranks.reserve(ranks.len());
        self.heap.items.reserve(items.len());
        for (rank, item) in ranks.into_iter().zip(items) {
            if item.is_cancelled() {
                out.push(item);
            } else {
                self.heap.ranks.push(rank);
                self.heap.items.push(item);
            }
        }
        self.heap.heapify();
        self.cancelled = 0;
    }

    fn drop_cancelled_head(&mut self, out: &mut Vec<T>) {
        // Nothing counted as cancelled: skip touching the payload (a cache
        // miss per timer for Python handles). The owner still checks a
        // handle's flag before running it.
        if self.cancelled == 0 {
            return;
        }
        while self.heap.peek_item().is_some_and(T::is_cancelled) {
            if let Some((_, item)) = self.heap.pop() {
                self.cancelled = self.cancelled.saturating_sub(1);
                out.push(item);
            }
        }
    }

    /// Deadline of the earliest live entry; cancelled heads move to `out`.
    pub fn next_deadline(&mut self, out: &mut Vec<T>) -> Option<f64> {
        self.drop_cancelled_head(out);
        self.heap.peek_rank().map(|rank| deadline_of(key_of(rank)))
    }

    /// Pop the earliest live entry if it is due by `until`.
    pub fn pop_due(&mut self, until: f64, out: &mut Vec<T>) -> Option<T> {
        self.drop_cancelled_head(out);
        if key_of(self.heap.peek_rank()?) <= order_key(until) {
            self.heap.pop().map(|(_, item)| item)
        } else {
            None
        }
    }

    /// Every entry, in no particular order (for garbage-collector visits).
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.heap.items.iter()
    }

    /// Remove everything (loop close).
    pub fn clear(&mut self, out: &mut Vec<T>) {
        out.extend(self.heap.take_all().1);
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
    fn order_keys_sort_as_total_cmp_and_round_trip() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1.0 + f64::EPSILON,
            1e300,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for a in values {
            assert_eq!(deadline_of(order_key(a)).to_bits(), a.to_bits());
            for b in values {
                assert_eq!(
                    order_key(a).cmp(&order_key(b)),
                    a.total_cmp(&b),
                    "{a} vs {b}"
                );
            }
        }
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
    fn matches_a_sort_on_pseudo_random_deadlines() {
        let mut t = Timers::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut expected = Vec::new();
        for n in 0..5000u32 {
            // xorshift: deterministic, with plenty of equal deadlines.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let deadline = (x % 64) as f64;
            t.push(deadline, item(n));
            expected.push((deadline, n));
        }
        expected.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let fired = drain_due(&mut t, f64::INFINITY);
        assert_eq!(fired, expected.into_iter().map(|e| e.1).collect::<Vec<_>>());
    }

    #[test]
    fn interleaved_pushes_pops_and_cancels_match_a_model() {
        let mut t = Timers::new();
        // The model: (deadline, seq, id, cancel flag) of every live entry.
        let mut model: Vec<(f64, u32, Item)> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out = Vec::new();
        for n in 0..20_000u32 {
            match next() % 4 {
                0 | 1 => {
                    let deadline = (next() % 500) as f64 / 4.0 - 10.0;
                    let it = item(n);
                    model.push((deadline, n, it.clone()));
                    t.push(deadline, it);
                }
                2 if !model.is_empty() => {
                    let at = (next() as usize) % model.len();
                    let (_, _, it) = model.remove(at);
                    it.1.set(true);
                    t.note_cancelled(&mut out);
                }
                _ => {
                    let until = (next() % 500) as f64 / 4.0 - 10.0;
                    model.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let due = model.iter().take_while(|e| e.0 <= until).count();
                    let expected: Vec<u32> = model.drain(..due).map(|e| e.1).collect();
                    assert_eq!(drain_due(&mut t, until), expected);
                }
            }
        }
        let live = t.iter().filter(|i| !i.is_cancelled()).count();
        assert_eq!(live, model.len());
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
