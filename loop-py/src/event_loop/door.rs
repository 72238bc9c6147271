//! The door into a running `ferroloop.Loop` for Rust code on any thread.
//!
//! [`LoopDoor`] is `Send + Sync` and cheap to clone. [`LoopDoor::run`] queues
//! a Rust closure ([`LoopWork`]) that the loop runs on its own thread, with
//! the interpreter attached, and wakes the loop; the sending side makes no
//! Python call and needs no interpreter lock. The work travels through the
//! same injector as `call_soon_threadsafe`, so it keeps its place in line
//! among the loop's callbacks (FIFO, as asyncio's one deque).
//!
//! The toolkit's cross-thread types (channels, the loop pool, wait groups,
//! locks) wake their waiters through it, and embedders can from their own
//! Rust threads. A panic in the work is caught at the callback boundary and
//! reported to the loop's exception handler, as for any callback.

use super::Loop;
use crate::handle::AnyHandle;
use loop_core::door::{Door, Refused};
use pyo3::prelude::*;
use std::cell::Cell;
use std::sync::Arc;

/// Work for a loop's thread. Closures taking the `Python` token are work.
pub trait LoopWork: Send {
    /// Run on the loop's thread, in its tick. Errors are the work's to
    /// report (it runs where nobody awaits it).
    fn run(self: Box<Self>, py: Python<'_>);
}

impl<F: FnOnce(Python<'_>) + Send> LoopWork for F {
    fn run(self: Box<Self>, py: Python<'_>) {
        (*self)(py)
    }
}

/// Queued work, as the ready queue holds it (see [`AnyHandle::Native`]).
pub struct NativeWork(Cell<Option<Box<dyn LoopWork>>>);

impl NativeWork {
    fn new(work: Box<dyn LoopWork>) -> Self {
        NativeWork(Cell::new(Some(work)))
    }

    /// Run it, once.
    #[inline]
    pub fn run(&self, py: Python<'_>) {
        if let Some(work) = self.0.take() {
            work.run(py);
        }
    }

    fn into_inner(self) -> Option<Box<dyn LoopWork>> {
        self.0.into_inner()
    }
}

/// A way into one loop from any thread.
#[derive(Clone)]
pub struct LoopDoor {
    door: Door<AnyHandle>,
}

/// The loop was closed; the work comes back unrun.
pub struct LoopClosed(pub Box<dyn LoopWork>);

impl std::fmt::Debug for LoopClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoopClosed")
    }
}

impl LoopDoor {
    /// Run `work` on the loop's thread and wake the loop. Refused once the
    /// loop is closed; work queued but not run when it closes is dropped.
    pub fn run(&self, work: impl LoopWork + 'static) -> Result<(), LoopClosed> {
        self.run_boxed(Box::new(work))
    }

    pub fn run_boxed(&self, work: Box<dyn LoopWork>) -> Result<(), LoopClosed> {
        self.run_quietly(work)?;
        self.wake();
        Ok(())
    }

    /// Queue `work` without waking the loop: call [`wake`](Self::wake)
    /// soon (see `Door::send_quietly`).
    pub fn run_quietly(&self, work: Box<dyn LoopWork>) -> Result<(), LoopClosed> {
        self.door
            .send_quietly(AnyHandle::Native(NativeWork::new(work)))
            .map_err(|Refused(item)| match item {
                AnyHandle::Native(work) => LoopClosed(
                    work.into_inner()
                        .unwrap_or_else(|| Box::new(|_py: Python<'_>| {})),
                ),
                // Only native work is sent through a LoopDoor.
                _ => LoopClosed(Box::new(|_py: Python<'_>| {})),
            })
    }

    /// Wake the loop without queueing anything.
    pub fn wake(&self) {
        self.door.wake();
    }

    pub fn is_closed(&self) -> bool {
        self.door.is_closed()
    }

    /// Both doors lead into the same loop.
    pub fn same_loop(&self, other: &LoopDoor) -> bool {
        self.door.same_loop(&other.door)
    }
}

impl Loop {
    /// The door into this loop (see the module docs).
    pub fn door(&self) -> LoopDoor {
        LoopDoor {
            door: Door::new(Arc::clone(&self.injector)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Four Rust threads that never touch Python send work through the
    /// door of a loop running in an embedded interpreter; it all runs, on
    /// the loop's thread, in each sender's order, and the last one stops
    /// the loop.
    #[test]
    fn rust_threads_run_work_on_a_running_loop() {
        Python::initialize();
        const THREADS: usize = 4;
        const EACH: usize = 300;
        let event_loop: Arc<Py<Loop>> = Arc::new(Python::attach(|py| {
            Py::new(py, Loop::new(None).unwrap()).unwrap()
        }));
        let door = event_loop.get().door();
        let ran: Arc<Mutex<Vec<(usize, usize, u64)>>> = Arc::default();
        let left = Arc::new(AtomicUsize::new(THREADS * EACH));
        let senders: Vec<_> = (0..THREADS)
            .map(|t| {
                let (door, ran, left) = (door.clone(), Arc::clone(&ran), Arc::clone(&left));
                let stopper = Arc::clone(&event_loop);
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        let (ran, left) = (Arc::clone(&ran), Arc::clone(&left));
                        let stopper = Arc::clone(&stopper);
                        let work = move |_py: Python<'_>| {
                            let here = crate::owner::current_thread();
                            ran.lock().unwrap().push((t, i, here));
                            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                                stopper.get().stop();
                            }
                        };
                        door.run(work).unwrap();
                    }
                })
            })
            .collect();
        let loop_thread = Python::attach(|py| {
            Loop::_run(event_loop.bind(py)).unwrap();
            crate::owner::current_thread()
        });
        for s in senders {
            s.join().unwrap();
        }
        let ran = ran.lock().unwrap();
        assert_eq!(ran.len(), THREADS * EACH);
        assert!(
            ran.iter().all(|r| r.2 == loop_thread),
            "work ran off the loop's thread"
        );
        for t in 0..THREADS {
            let mine: Vec<usize> = ran.iter().filter(|r| r.0 == t).map(|r| r.1).collect();
            assert_eq!(
                mine,
                (0..EACH).collect::<Vec<_>>(),
                "sender {t} out of order"
            );
        }
        Python::attach(|py| {
            event_loop.get()._close(py, false).unwrap();
            assert!(door.is_closed());
            assert!(
                door.run(|_py: Python<'_>| {}).is_err(),
                "a closed loop accepted work"
            );
        });
    }
}
