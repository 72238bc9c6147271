//! The door into one loop from any thread: a `Send + Sync` handle that
//! queues work for the loop and wakes it.
//!
//! A loop keeps its [`Injector`] (the receiving side: it takes the whole
//! batch once per tick, and before it schedules anything itself, so work
//! that came through the door keeps its place in line). Everyone else holds
//! a [`Door`]: cheap to clone, usable from threads that never run the loop,
//! and from threads that hold no interpreter lock at all. What an item *is*
//! is the loop's business: the executor queues `async-task` runnables; the
//! Python loop (`loop-py`) queues its handles and boxed Rust closures.
//!
//! Once the loop is closed the door refuses ([`Error::Closed`]) and gives
//! the item back, so the sender can undo whatever the item stood for.

use crate::injector::Injector;
use crate::Error;
use std::sync::Arc;

/// A cloneable, thread-safe way into one loop.
pub struct Door<T> {
    injector: Arc<Injector<T>>,
}

impl<T> Clone for Door<T> {
    fn clone(&self) -> Self {
        Door {
            injector: Arc::clone(&self.injector),
        }
    }
}

impl<T> std::fmt::Debug for Door<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door")
            .field("queued", &self.injector.len())
            .field("closed", &self.injector.is_closed())
            .finish()
    }
}

/// An item the door refused because its loop is closed.
#[derive(Debug)]
pub struct Refused<T>(pub T);

impl<T> Door<T> {
    /// The door into the loop that drains `injector`.
    pub fn new(injector: Arc<Injector<T>>) -> Self {
        Door { injector }
    }

    /// Queue `item` for the loop and wake it (one wake-up per burst).
    pub fn send(&self, item: T) -> Result<(), Refused<T>> {
        self.injector.push_or_return(item).map_err(Refused)
    }

    /// Queue `item` without waking the loop yet; the caller must
    /// [`wake`](Self::wake) it soon. For a sender that holds something
    /// the loop will need as soon as it wakes (an interpreter lock): waking
    /// after letting go saves the loop's thread from waking only to wait.
    pub fn send_quietly(&self, item: T) -> Result<(), Refused<T>> {
        self.injector.push_quietly(item).map_err(Refused)
    }

    /// Wake the loop without queueing anything.
    pub fn wake(&self) {
        self.injector.wake();
    }

    /// The loop behind this door was closed: everything sent is refused.
    pub fn is_closed(&self) -> bool {
        self.injector.is_closed()
    }

    /// Both doors lead into the same loop.
    pub fn same_loop(&self, other: &Door<T>) -> bool {
        Arc::ptr_eq(&self.injector, &other.injector)
    }
}

impl<T> From<Refused<T>> for Error {
    fn from(_: Refused<T>) -> Error {
        Error::Closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reactor::Reactor;
    use std::time::{Duration, Instant};

    #[test]
    fn threads_without_the_loop_queue_work_that_runs_in_order_per_sender() {
        let mut reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Arc::new(Injector::new(reactor.notifier()));
        let door = Door::new(Arc::clone(&injector));
        let senders: Vec<_> = (0..4u32)
            .map(|t| {
                let door = door.clone();
                std::thread::spawn(move || {
                    for i in 0..500u32 {
                        door.send((t, i)).unwrap();
                    }
                })
            })
            .collect();
        let mut got: Vec<(u32, u32)> = Vec::new();
        let start = Instant::now();
        while got.len() < 2000 && start.elapsed() < Duration::from_secs(10) {
            let mut events = Vec::new();
            // Blocks until a sender's wake-up: the door wakes the poll.
            let wait = reactor.poll(5_000, &mut events).unwrap();
            if wait.woken {
                injector.acknowledge_wake();
            }
            injector.take_all(&mut got);
        }
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(got.len(), 2000);
        for t in 0..4 {
            let mine: Vec<u32> = got.iter().filter(|x| x.0 == t).map(|x| x.1).collect();
            assert_eq!(
                mine,
                (0..500).collect::<Vec<_>>(),
                "sender {t} out of order"
            );
        }
    }

    #[test]
    fn a_closed_loop_refuses_and_returns_the_item() {
        let reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Arc::new(Injector::new(reactor.notifier()));
        let door = Door::new(Arc::clone(&injector));
        door.send(String::from("kept")).unwrap();
        injector.close();
        assert!(door.is_closed());
        let Err(Refused(back)) = door.send(String::from("refused")) else {
            panic!("a closed door accepted an item");
        };
        assert_eq!(back, "refused");
        let mut left = Vec::new();
        injector.take_all(&mut left);
        assert_eq!(left, ["kept"]);
        assert!(matches!(Error::from(Refused(())), Error::Closed));
    }

    #[test]
    fn a_quiet_send_waits_for_the_wake() {
        let mut reactor: Reactor<()> = Reactor::new().unwrap();
        let injector = Arc::new(Injector::new(reactor.notifier()));
        let door = Door::new(Arc::clone(&injector));
        door.send_quietly(1u8).unwrap();
        assert_eq!(injector.len(), 1);
        let mut events = Vec::new();
        // The epoll backend reports exactly the wake-ups sent (the portable
        // one reports one after every wait).
        #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
        assert!(
            !reactor.poll(0, &mut events).unwrap().woken,
            "woken before wake()"
        );
        door.wake();
        assert!(reactor.poll(1_000, &mut events).unwrap().woken);
        let mut got = Vec::new();
        injector.take_all(&mut got);
        assert_eq!(got, [1]);
    }

    #[test]
    fn clones_lead_into_the_same_loop() {
        let reactor: Reactor<()> = Reactor::new().unwrap();
        let a = Door::new(Arc::new(Injector::<u8>::new(reactor.notifier())));
        let b = Door::new(Arc::new(Injector::<u8>::new(reactor.notifier())));
        assert!(a.same_loop(&a.clone()));
        assert!(!a.same_loop(&b));
        assert!(format!("{a:?}").contains("closed: false"));
    }
}
