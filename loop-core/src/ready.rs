//! The FIFO of callbacks ready to run.
//!
//! asyncio runs, per tick, exactly the callbacks that were ready when the
//! tick's run phase began; callbacks they schedule wait for the next tick.
//! [`ReadyQueue::begin_tick`] returns that count.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct ReadyQueue<T> {
    queue: VecDeque<T>,
}

impl<T> Default for ReadyQueue<T> {
    fn default() -> Self {
        ReadyQueue {
            queue: VecDeque::with_capacity(64),
        }
    }
}

impl<T> ReadyQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue that has not allocated (a placeholder while a
    /// queue's storage is swapped out).
    pub const fn unallocated() -> Self {
        ReadyQueue {
            queue: VecDeque::new(),
        }
    }

    #[inline]
    pub fn push(&mut self, item: T) {
        self.queue.push_back(item);
    }

    /// Push when there is something to push.
    #[inline]
    pub fn push_opt(&mut self, item: Option<T>) {
        if let Some(item) = item {
            self.queue.push_back(item);
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.queue.pop_front()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// How many callbacks this tick runs: those queued now.
    #[inline]
    pub fn begin_tick(&self) -> usize {
        self.queue.len()
    }

    /// Put `front`'s items (in order) before this queue's own, leaving
    /// `front` empty: a tick interrupted by an exception hands back the
    /// callbacks it did not run, and they keep their place.
    pub fn prepend(&mut self, front: &mut ReadyQueue<T>) {
        while let Some(item) = front.queue.pop_back() {
            self.queue.push_front(item);
        }
    }

    /// Swap contents with `other` (the loop swaps a tick's batch out in
    /// O(1) and reuses the emptied queue's allocation).
    pub fn swap(&mut self, other: &mut ReadyQueue<T>) {
        std::mem::swap(&mut self.queue, &mut other.queue);
    }

    /// Every queued item, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.queue.iter()
    }

    /// Remove everything (loop close).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.queue.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_runs_only_what_was_ready() {
        let mut q = ReadyQueue::new();
        q.push(1);
        q.push(2);
        let n = q.begin_tick();
        let mut ran = Vec::new();
        for _ in 0..n {
            let v = q.pop().unwrap();
            ran.push(v);
            q.push(v + 10); // scheduled during the tick
        }
        assert_eq!(ran, vec![1, 2]);
        assert_eq!(q.drain().collect::<Vec<_>>(), vec![11, 12]);
    }

    #[test]
    fn prepend_keeps_the_interrupted_batch_first() {
        let mut q = ReadyQueue::new();
        q.push(10);
        let mut rest = ReadyQueue::new();
        rest.push(1);
        rest.push(2);
        q.prepend(&mut rest);
        assert!(rest.is_empty());
        assert_eq!(q.drain().collect::<Vec<_>>(), vec![1, 2, 10]);
    }
}
