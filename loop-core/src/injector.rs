//! The receiving side of the only way into a loop from other threads (the
//! sending side is [`Door`](crate::door::Door)).
//!
//! Other threads append work to a batch and wake the loop's poller; the
//! loop takes the whole batch in one swap ([`Injector::take_all`]), so an
//! item costs an uncontended lock and a `Vec` push to queue and nothing
//! per item to receive. (A lock-free queue cost about 70 instructions per
//! item on each side, callgrind on `threadsafe_throughput`.) Under the GIL
//! the producer and the loop thread rarely hold the lock at once: both
//! only touch it while holding the GIL.
//!
//! Wake-ups are coalesced: a push writes to the wake-up fd only when no
//! wake-up is already pending, so a burst of N pushes costs one syscall.
//!
//! Ordering: the loop drains the injector into its ready queue not only after
//! a wake-up but also before scheduling anything itself (see `loop-py`), so a
//! threadsafe callback is never overtaken by a callback scheduled on the loop
//! thread after the threadsafe call returned.

use crate::poller::Notifier;
use crate::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

struct Batch<T> {
    items: Vec<T>,
    closed: bool,
}

pub struct Injector<T> {
    batch: Mutex<Batch<T>>,
    /// Items in the batch (written under the lock): the loop checks it
    /// several times per tick, and one load is cheaper than the lock.
    queued: AtomicUsize,
    /// A wake-up was sent and the loop has not acknowledged it yet.
    wake_pending: AtomicBool,
    notifier: Notifier,
}

impl<T> Injector<T> {
    pub fn new(notifier: Notifier) -> Self {
        Injector {
            batch: Mutex::new(Batch {
                items: Vec::new(),
                closed: false,
            }),
            queued: AtomicUsize::new(0),
            wake_pending: AtomicBool::new(false),
            notifier,
        }
    }

    /// A panic while the lock was held cannot leave the batch half-updated
    /// (a `Vec` push or swap), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Batch<T>> {
        self.batch.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `item` for the loop and wake it. Fails once closed.
    pub fn push(&self, item: T) -> Result<(), Error> {
        self.push_or_return(item).map_err(|_| Error::Closed)
    }

    /// [`push`](Self::push), giving the item back when the loop is closed
    /// (see [`Door`](crate::door::Door)).
    pub fn push_or_return(&self, item: T) -> Result<(), T> {
        self.push_quietly(item)?;
        self.wake();
        Ok(())
    }

    /// Queue `item` without waking the loop: the caller calls
    /// [`wake`](Self::wake) soon (once it has let go of what the loop will
    /// need first, see `Door::send_quietly`).
    pub fn push_quietly(&self, item: T) -> Result<(), T> {
        let mut batch = self.lock();
        if batch.closed {
            return Err(item);
        }
        batch.items.push(item);
        self.queued.store(batch.items.len(), Ordering::Release);
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

    /// Items queued and not taken yet (read without locking).
    #[inline]
    pub fn len(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Loop side: move every queued item, in order, to the end of `into`.
    /// An empty `into` is swapped in whole, so its storage becomes the
    /// next batch's (no allocation in steady state).
    pub fn take_all(&self, into: &mut Vec<T>) {
        if self.is_empty() {
            return;
        }
        let mut batch = self.lock();
        if into.is_empty() {
            std::mem::swap(&mut batch.items, into);
        } else {
            into.append(&mut batch.items);
        }
        self.queued.store(0, Ordering::Release);
    }

    /// Refuse further pushes (loop close); queued items can still be taken.
    pub fn close(&self) {
        self.lock().closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reactor::Reactor;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn is_empty_and_len_follow_pushes_takes_and_refused_pushes() {
        let reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Injector::new(reactor.notifier());
        assert!(injector.is_empty());
        injector.push(1u32).unwrap();
        injector.push(2).unwrap();
        assert!(!injector.is_empty());
        assert_eq!(injector.len(), 2);
        let mut got = vec![0];
        injector.take_all(&mut got);
        assert_eq!(got, [0, 1, 2], "appended in order after what was there");
        assert!(injector.is_empty());
        injector.push(4).unwrap();
        let mut fresh = Vec::new();
        injector.take_all(&mut fresh);
        assert_eq!(fresh, [4]);
        injector.take_all(&mut fresh);
        assert_eq!(fresh, [4], "nothing queued, nothing added");
        injector.close();
        assert!(injector.push(3).is_err());
        assert!(injector.is_empty(), "a refused push is not counted");
        assert_eq!(injector.len(), 0);
    }

    #[test]
    fn wakes_a_blocking_poll_and_keeps_order() {
        for choice in crate::poller::testable_backends() {
            eprintln!("backend: {}", choice.name());
            wakes_and_keeps_order_on(Reactor::with_backend(choice).unwrap());
        }
    }

    fn wakes_and_keeps_order_on(mut reactor: Reactor<()>) {
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
            injector.take_all(&mut got);
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
        let mut left = Vec::new();
        injector.take_all(&mut left);
        assert_eq!(left, [1], "items queued before the close can be taken");
        assert!(injector.is_closed());
    }
}
