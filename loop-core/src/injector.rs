//! The only door into a loop from other threads.
//!
//! Other threads push work into a lock-free queue and wake the loop's poller.
//! Wake-ups are coalesced: a push writes to the wake-up fd only when no
//! wake-up is already pending, so a burst of N pushes costs one syscall.
//!
//! Ordering: the loop drains the injector into its ready queue not only after
//! a wake-up but also before scheduling anything itself (see `loop-py`), so a
//! threadsafe callback is never overtaken by a callback scheduled on the loop
//! thread after the threadsafe call returned.

use crate::poller::Notifier;
use crate::Error;
use concurrent_queue::ConcurrentQueue;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub struct Injector<T> {
    queue: ConcurrentQueue<T>,
    /// Items pushed and not yet popped (counted before the push, so never
    /// below what the queue holds): the loop checks it several times per
    /// tick, and one load is cheaper than asking the queue.
    queued: AtomicUsize,
    /// A wake-up was sent and the loop has not acknowledged it yet.
    wake_pending: AtomicBool,
    notifier: Notifier,
}

impl<T> Injector<T> {
    pub fn new(notifier: Notifier) -> Self {
        Injector {
            queue: ConcurrentQueue::unbounded(),
            queued: AtomicUsize::new(0),
            wake_pending: AtomicBool::new(false),
            notifier,
        }
    }

    /// Queue `item` for the loop and wake it. Fails once closed.
    pub fn push(&self, item: T) -> Result<(), Error> {
        self.queued.fetch_add(1, Ordering::AcqRel);
        if self.queue.push(item).is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Closed);
        }
        self.wake();
        Ok(())
    }

    /// Wake the loop without queueing anything (e.g. `stop()` from a thread).
    pub fn wake(&self) {
        // A plain load first: in a burst the wake-up is already pending, and
        // a read-only check keeps the flag's cache line shared with the loop.
        if !self.wake_pending.load(Ordering::Acquire)
            && !self.wake_pending.swap(true, Ordering::AcqRel)
        {
            // A failing eventfd write means the poller is gone; the queue is
            // still drained by whoever owns it, so there is nothing to do.
            let _ = self.notifier.notify();
        }
    }

    /// Loop side, after a wake-up was consumed: later pushes must wake again.
    pub fn acknowledge_wake(&self) {
        self.wake_pending.store(false, Ordering::Release);
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }

    /// Loop side: take one queued item.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        let item = self.queue.pop().ok()?;
        self.queued.fetch_sub(1, Ordering::AcqRel);
        Some(item)
    }

    /// Refuse further pushes (loop close); queued items can still be popped.
    pub fn close(&self) {
        self.queue.close();
    }

    pub fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reactor::Reactor;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn is_empty_follows_pushes_pops_and_refused_pushes() {
        let reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Injector::new(reactor.notifier());
        assert!(injector.is_empty());
        injector.push(1u32).unwrap();
        injector.push(2).unwrap();
        assert!(!injector.is_empty());
        assert_eq!(injector.pop(), Some(1));
        assert!(!injector.is_empty());
        assert_eq!(injector.pop(), Some(2));
        assert!(injector.is_empty());
        assert_eq!(injector.pop(), None);
        injector.close();
        assert!(injector.push(3).is_err());
        assert!(injector.is_empty(), "a refused push is not counted");
    }

    #[test]
    fn wakes_a_blocking_poll_and_keeps_order() {
        let mut reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Arc::new(Injector::new(reactor.notifier()));
        let producer = {
            let injector = Arc::clone(&injector);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                for i in 0..1000u32 {
                    injector.push(i).unwrap();
                }
            })
        };
        let mut got = Vec::new();
        let start = Instant::now();
        while got.len() < 1000 && start.elapsed() < Duration::from_secs(10) {
            let mut out = Vec::new();
            let wait = reactor.poll(5_000, &mut out).unwrap();
            if wait.woken {
                injector.acknowledge_wake();
            }
            while let Some(i) = injector.pop() {
                got.push(i);
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn closed_injector_refuses() {
        let reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Injector::new(reactor.notifier());
        injector.push(1).unwrap();
        injector.close();
        assert!(matches!(injector.push(2), Err(Error::Closed)));
        assert_eq!(injector.pop(), Some(1));
        assert!(injector.is_closed());
    }
}
