//! A channel's state and its two-phase hand-off, with no Python in it.
//!
//! Items wait in a FIFO buffer; receivers and senders that cannot proceed
//! wait in FIFO lists. A hand-off has two phases:
//!
//! 1. **Reserve** (under the channel's lock, by whoever changed the state):
//!    while the buffer holds more items than are promised, the first
//!    pending receiver is *granted* and one item is promised to it
//!    (`reserved_get`); while the buffer has room beyond promised slots,
//!    the first pending sender is granted a slot (`reserved_put`). The item
//!    stays in the buffer, in order; the waiter is only told.
//! 2. **Claim** (by the waiter, when it runs again): a granted receiver
//!    takes the first item, a granted sender puts its item, and the
//!    promise is dropped. A waiter cancelled between the two phases
//!    *releases* its promise instead, which passes it to the next waiter
//!    (or back to the buffer's free items and slots).
//!
//! So an item is in exactly one place at any time (the buffer, or the
//! hands of the one receiver that claimed it): a cancellation can neither
//! lose it nor deliver it twice. Promised items and slots count as taken
//! for everyone else, so nothing barges past a waiter that was woken but
//! has not run yet (multiloop's "anti-barging").

use crate::toolkit::waiter::Waiter;
use std::collections::VecDeque;
use std::sync::Arc;

/// A waiter registered for op `op` of its wait (a `select` has several).
pub struct Entry {
    pub waiter: Arc<Waiter>,
    pub op: u32,
    /// Part of a `select` (counted apart, as multiloop's `_notifiers`).
    pub select: bool,
}

/// The channel is closed.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed;

pub struct ChannelState<T> {
    items: VecDeque<T>,
    /// 0: unbounded.
    limit: usize,
    closed: bool,
    getters: VecDeque<Entry>,
    putters: VecDeque<Entry>,
    reserved_get: usize,
    reserved_put: usize,
}

/// Waiters to wake once the lock is released.
pub type Woken = Vec<Arc<Waiter>>;

impl<T> ChannelState<T> {
    pub fn new(limit: usize) -> Self {
        ChannelState {
            items: VecDeque::new(),
            limit,
            closed: false,
            getters: VecDeque::new(),
            putters: VecDeque::new(),
            reserved_get: 0,
            reserved_put: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_full(&self) -> bool {
        self.limit > 0 && self.items.len() >= self.limit
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Items not promised to a woken receiver.
    fn available(&self) -> usize {
        self.items.len() - self.reserved_get
    }

    fn has_free_slot(&self) -> bool {
        self.limit == 0 || self.items.len() + self.reserved_put < self.limit
    }

    /// Drop entries at the front whose waiter stopped waiting (granted by
    /// another source of its `select`, or gone).
    fn purge(list: &mut VecDeque<Entry>) {
        while list.front().is_some_and(|e| !e.waiter.is_pending()) {
            list.pop_front();
        }
    }

    /// A receive can complete now (it would not pass anyone).
    pub fn can_recv(&self) -> bool {
        self.available() > 0
    }

    /// A send can complete now: room, and no sender waiting before it.
    pub fn can_send(&mut self) -> bool {
        Self::purge(&mut self.putters);
        !self.closed && self.putters.is_empty() && self.has_free_slot()
    }

    /// Take the first free item (the caller checked [`can_recv`](Self::can_recv)).
    pub fn take(&mut self, woken: &mut Woken) -> Option<T> {
        if !self.can_recv() {
            return None;
        }
        let item = self.items.pop_front();
        self.settle(woken);
        item
    }

    /// Put an item (the caller checked [`can_send`](Self::can_send)).
    pub fn put(&mut self, item: T, woken: &mut Woken) {
        self.items.push_back(item);
        self.settle(woken);
    }

    /// `try_recv`: an item, none yet, or closed and drained.
    pub fn try_recv(&mut self, woken: &mut Woken) -> Result<Option<T>, Closed> {
        match self.take(woken) {
            Some(item) => Ok(Some(item)),
            None if self.closed => Err(Closed),
            None => Ok(None),
        }
    }

    /// `try_send`: put it, or give it back when there is no room for it.
    pub fn try_send(&mut self, item: T, woken: &mut Woken) -> Result<Result<(), T>, Closed> {
        if self.closed {
            return Err(Closed);
        }
        if !self.can_send() {
            return Ok(Err(item));
        }
        self.put(item, woken);
        Ok(Ok(()))
    }

    pub fn wait_recv(&mut self, entry: Entry) {
        self.getters.push_back(entry);
    }

    pub fn wait_send(&mut self, entry: Entry) {
        self.putters.push_back(entry);
    }

    /// Phase two for a granted receiver: its promised item.
    pub fn claim_recv(&mut self, woken: &mut Woken) -> Option<T> {
        self.reserved_get = self.reserved_get.saturating_sub(1);
        let item = self.items.pop_front();
        self.settle(woken);
        item
    }

    /// Phase two for a granted sender: put its item in its promised slot
    /// (closed meanwhile: refused, the item is given back).
    pub fn claim_send(&mut self, item: T, woken: &mut Woken) -> Result<(), (T, Closed)> {
        self.reserved_put = self.reserved_put.saturating_sub(1);
        if self.closed {
            self.settle(woken);
            return Err((item, Closed));
        }
        self.items.push_back(item);
        self.settle(woken);
        Ok(())
    }

    /// A granted receiver leaves: its item goes to the next receiver.
    pub fn release_recv(&mut self, woken: &mut Woken) {
        self.reserved_get = self.reserved_get.saturating_sub(1);
        self.settle(woken);
    }

    /// A granted sender leaves: its slot goes to the next sender.
    pub fn release_send(&mut self, woken: &mut Woken) {
        self.reserved_put = self.reserved_put.saturating_sub(1);
        self.settle(woken);
    }

    /// Drop `waiter`'s entries (it stopped waiting here).
    pub fn forget(&mut self, waiter: &Arc<Waiter>) {
        let mine = |e: &Entry| Arc::ptr_eq(&e.waiter, waiter);
        self.getters.retain(|e| !mine(e));
        self.putters.retain(|e| !mine(e));
    }

    /// Close: later sends fail; receivers drain what is left, then fail.
    /// Every waiter is woken to see it.
    pub fn close(&mut self, woken: &mut Woken) {
        self.closed = true;
        for entry in self.getters.drain(..).chain(self.putters.drain(..)) {
            if entry.waiter.recheck() {
                woken.push(entry.waiter);
            }
        }
    }

    /// Phase one: grant waiters what the buffer can give them now.
    fn settle(&mut self, woken: &mut Woken) {
        while self.available() > 0 {
            let Some(entry) = self.getters.pop_front() else {
                break;
            };
            if entry.waiter.grant(entry.op) {
                self.reserved_get += 1;
                woken.push(entry.waiter);
            }
        }
        while !self.closed && self.has_free_slot() {
            let Some(entry) = self.putters.pop_front() else {
                break;
            };
            if entry.waiter.grant(entry.op) {
                self.reserved_put += 1;
                woken.push(entry.waiter);
            }
        }
    }

    /// Pending waiters: `(receivers, senders, select entries)`.
    pub fn waiting(&self) -> (usize, usize, usize) {
        let pending = |l: &VecDeque<Entry>, select: bool| {
            l.iter()
                .filter(|e| e.select == select && e.waiter.is_pending())
                .count()
        };
        (
            pending(&self.getters, false),
            pending(&self.putters, false),
            pending(&self.getters, true) + pending(&self.putters, true),
        )
    }

    pub fn items(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::waiter::Outcome;

    fn entry(w: &Arc<Waiter>, op: u32) -> Entry {
        Entry {
            waiter: Arc::clone(w),
            op,
            select: false,
        }
    }

    #[test]
    fn a_send_reserves_the_item_for_the_first_waiting_receiver() {
        let mut ch = ChannelState::new(0);
        let (a, b) = (Arc::new(Waiter::thread()), Arc::new(Waiter::thread()));
        ch.wait_recv(entry(&a, 0));
        ch.wait_recv(entry(&b, 0));
        let mut woken = Vec::new();
        assert_eq!(ch.try_send(1, &mut woken), Ok(Ok(())));
        assert_eq!(woken.len(), 1);
        assert_eq!(a.outcome(), Outcome::Granted(0));
        assert!(b.is_pending());
        // Promised to a: nobody barges in.
        assert_eq!(ch.try_recv(&mut woken), Ok(None));
        assert_eq!(ch.claim_recv(&mut woken), Some(1));
    }

    #[test]
    fn a_cancelled_receiver_passes_its_item_on() {
        let mut ch = ChannelState::new(0);
        let (a, b) = (Arc::new(Waiter::thread()), Arc::new(Waiter::thread()));
        ch.wait_recv(entry(&a, 0));
        ch.wait_recv(entry(&b, 0));
        let mut woken = Vec::new();
        ch.try_send("x", &mut woken).unwrap().unwrap();
        // a is cancelled after its grant, before it ran.
        assert_eq!(a.withdraw(), Err(Outcome::Granted(0)));
        woken.clear();
        ch.release_recv(&mut woken);
        assert_eq!(b.outcome(), Outcome::Granted(0));
        assert_eq!(ch.claim_recv(&mut woken), Some("x"));
        assert_eq!(ch.len(), 0);
    }

    #[test]
    fn a_cancelled_receiver_with_nobody_behind_leaves_the_item_free() {
        let mut ch = ChannelState::new(0);
        let a = Arc::new(Waiter::thread());
        ch.wait_recv(entry(&a, 0));
        let mut woken = Vec::new();
        ch.try_send(5, &mut woken).unwrap().unwrap();
        assert!(a.withdraw().is_err());
        ch.release_recv(&mut woken);
        assert_eq!(ch.try_recv(&mut woken), Ok(Some(5)));
    }

    #[test]
    fn a_freed_slot_is_promised_to_the_waiting_sender_not_a_barger() {
        let mut ch = ChannelState::new(1);
        let mut woken = Vec::new();
        ch.try_send("initial", &mut woken).unwrap().unwrap();
        let p1 = Arc::new(Waiter::thread());
        assert!(!ch.can_send());
        ch.wait_send(entry(&p1, 0));
        assert_eq!(ch.try_recv(&mut woken), Ok(Some("initial")));
        assert_eq!(p1.outcome(), Outcome::Granted(0));
        assert_eq!(ch.try_send("barger", &mut woken), Ok(Err("barger")));
        ch.claim_send("p1", &mut woken).unwrap();
        assert_eq!(ch.try_recv(&mut woken), Ok(Some("p1")));
    }

    #[test]
    fn a_cancelled_sender_passes_its_slot_on() {
        let mut ch = ChannelState::new(1);
        let mut woken = Vec::new();
        ch.try_send(0, &mut woken).unwrap().unwrap();
        let (a, b) = (Arc::new(Waiter::thread()), Arc::new(Waiter::thread()));
        ch.wait_send(entry(&a, 0));
        ch.wait_send(entry(&b, 0));
        assert_eq!(ch.try_recv(&mut woken), Ok(Some(0)));
        assert!(a.withdraw().is_err());
        ch.release_send(&mut woken);
        assert_eq!(b.outcome(), Outcome::Granted(0));
        ch.claim_send(2, &mut woken).unwrap();
        assert_eq!(ch.try_recv(&mut woken), Ok(Some(2)));
    }

    #[test]
    fn close_wakes_everyone_and_keeps_buffered_items() {
        let mut ch = ChannelState::new(1);
        let mut woken = Vec::new();
        ch.try_send(9, &mut woken).unwrap().unwrap();
        let s = Arc::new(Waiter::thread());
        ch.wait_send(entry(&s, 0));
        ch.close(&mut woken);
        assert_eq!(s.outcome(), Outcome::Recheck);
        assert_eq!(ch.try_send(1, &mut woken), Err(Closed));
        assert_eq!(ch.try_recv(&mut woken), Ok(Some(9)));
        assert_eq!(ch.try_recv(&mut woken), Err(Closed));
    }

    #[test]
    fn a_select_granted_elsewhere_is_skipped() {
        let mut ch = ChannelState::new(0);
        let (sel, plain) = (Arc::new(Waiter::thread()), Arc::new(Waiter::thread()));
        ch.wait_recv(Entry {
            waiter: Arc::clone(&sel),
            op: 3,
            select: true,
        });
        ch.wait_recv(entry(&plain, 0));
        assert_eq!(ch.waiting(), (1, 0, 1));
        assert!(sel.grant(1), "another channel of the select won");
        let mut woken = Vec::new();
        ch.try_send(1, &mut woken).unwrap().unwrap();
        assert_eq!(plain.outcome(), Outcome::Granted(0));
        ch.forget(&sel);
        assert_eq!(ch.waiting(), (0, 0, 0));
    }

    /// Random sends, receives, grants, claims and cancellations: every item
    /// that entered the channel is received exactly once.
    #[test]
    fn random_cancellations_lose_and_duplicate_nothing() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut ch = ChannelState::new(3);
        let (mut made, mut entered) = (0u32, 0usize);
        let mut got = Vec::new();
        let mut receivers: Vec<Arc<Waiter>> = Vec::new();
        let mut senders: Vec<(Arc<Waiter>, u32)> = Vec::new();
        let mut woken = Vec::new();
        let claim_granted = |ch: &mut ChannelState<u32>,
                             receivers: &mut Vec<Arc<Waiter>>,
                             senders: &mut Vec<(Arc<Waiter>, u32)>,
                             got: &mut Vec<u32>,
                             entered: &mut usize| {
            let mut woken = Vec::new();
            receivers.retain(|w| match w.outcome() {
                Outcome::Granted(_) => {
                    got.push(ch.claim_recv(&mut woken).expect("promised item"));
                    false
                }
                _ => true,
            });
            senders.retain(|(w, item)| match w.outcome() {
                Outcome::Granted(_) => {
                    ch.claim_send(*item, &mut woken).unwrap();
                    *entered += 1;
                    false
                }
                _ => true,
            });
        };
        for _ in 0..20_000 {
            match next(6) {
                0 => {
                    made += 1;
                    match ch.try_send(made, &mut woken).unwrap() {
                        Ok(()) => entered += 1,
                        Err(item) => {
                            let w = Arc::new(Waiter::thread());
                            ch.wait_send(entry(&w, 0));
                            senders.push((w, item));
                        }
                    }
                }
                1 => match ch.try_recv(&mut woken).unwrap() {
                    Some(item) => got.push(item),
                    None => {
                        let w = Arc::new(Waiter::thread());
                        ch.wait_recv(entry(&w, 0));
                        receivers.push(w);
                    }
                },
                2 if !receivers.is_empty() => {
                    let w = receivers.remove(next(receivers.len()));
                    match w.withdraw() {
                        Ok(()) => ch.forget(&w),
                        Err(Outcome::Granted(_)) => ch.release_recv(&mut woken),
                        Err(other) => panic!("{other:?}"),
                    }
                }
                3 if !senders.is_empty() => {
                    // Its item never entered the channel.
                    let (w, _item) = senders.remove(next(senders.len()));
                    match w.withdraw() {
                        Ok(()) => ch.forget(&w),
                        Err(Outcome::Granted(_)) => ch.release_send(&mut woken),
                        Err(other) => panic!("{other:?}"),
                    }
                }
                _ => claim_granted(
                    &mut ch,
                    &mut receivers,
                    &mut senders,
                    &mut got,
                    &mut entered,
                ),
            }
        }
        // Drain: granted waiters claim, then whatever is free is taken.
        loop {
            let before = (got.len(), entered);
            claim_granted(
                &mut ch,
                &mut receivers,
                &mut senders,
                &mut got,
                &mut entered,
            );
            while let Ok(Some(item)) = ch.try_recv(&mut woken) {
                got.push(item);
            }
            if (got.len(), entered) == before {
                break;
            }
        }
        assert_eq!(ch.len(), 0);
        let mut seen = got.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), got.len(), "an item was received twice");
        assert_eq!(got.len(), entered, "an item was lost");
        assert!(entered > 1000, "the test exercised too little: {entered}");
    }
}
