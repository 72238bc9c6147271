//! Who waits, and how to wake them from any thread.
//!
//! A [`Waiter`] is one waiting party: a task awaiting a future on some loop
//! (any asyncio loop, on any thread), or a plain thread blocked in a `*_sync`
//! call. Its state is one atomic word, changed only by compare-and-swap from
//! `Pending`, so exactly one of these happens to it:
//!
//! - **granted** op `k`: a source (channel, permit pool, event) decided,
//!   under its own lock, that the waiter may complete op `k`, and reserved
//!   what that needs (an item, a free slot, a permit);
//! - **recheck**: woken without a reservation (a channel closed): try again;
//! - **withdrawn**: the waiter left (cancelled, timed out) or completed an
//!   op itself while registering elsewhere (a `select`).
//!
//! A waiter registered on several sources (a `select`) is granted by at most
//! one: the others see it is no longer pending and drop its entry. Waking
//! happens after the source's lock is released: on the waiter's own thread
//! the future is resolved at once; a `ferroloop.Loop` elsewhere gets the
//! resolution through its door (no Python call on the waking side); another
//! asyncio loop through `call_soon_threadsafe`; a thread is unparked.

use crate::event_loop::{DeferredWake, Loop, LoopClosed, LoopWork};
use crate::future_ops;
use crate::owner::current_thread;
use crate::pyapi;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

const PENDING: u64 = 0;
const WITHDRAWN: u64 = 1;
const RECHECK: u64 = 2;
const GRANTED: u64 = 3;

/// Where a waiter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pending,
    Withdrawn,
    Recheck,
    Granted(u32),
}

/// A loop as seen from any thread: whether the calling thread runs it, and
/// how to run Rust work there.
pub enum Home {
    /// ferroloop's loop: work goes through its door.
    Ferro(Py<Loop>),
    /// Any other asyncio loop, running on `thread` when this was made: work
    /// goes through `call_soon_threadsafe`, wrapped in a [`LoopCallback`].
    Foreign { event_loop: Py<PyAny>, thread: u64 },
}

impl Home {
    /// `event_loop`, which the calling thread runs.
    pub fn of(event_loop: &Bound<'_, PyAny>) -> Home {
        match event_loop.cast::<Loop>() {
            Ok(native) => Home::Ferro(native.clone().unbind()),
            Err(_) => Home::Foreign {
                event_loop: event_loop.clone().unbind(),
                thread: current_thread(),
            },
        }
    }

    /// The loop running here, and a new future on it for a waiter.
    pub fn running(py: Python<'_>) -> PyResult<(Home, Bound<'_, PyAny>)> {
        let running = future_ops::running_loop(py)?;
        let future = future_ops::new_future_on(&running)?;
        Ok((Home::of(&running), future))
    }

    /// The calling thread runs this loop.
    pub fn runs_here(&self) -> bool {
        match self {
            Home::Ferro(l) => l.get().runs_here(),
            Home::Foreign { thread, .. } => *thread == current_thread(),
        }
    }

    /// Run `work` on the loop's thread, soon. A closed loop refuses and
    /// the work comes back.
    pub fn send(&self, py: Python<'_>, work: Box<dyn LoopWork>) -> Result<(), Box<dyn LoopWork>> {
        match self {
            Home::Ferro(l) => {
                let door = l.get().door();
                door.run_quietly(work).map_err(|LoopClosed(w)| w)?;
                wake_other_thread(py, Box::new(move || door.wake()));
                Ok(())
            }
            Home::Foreign { event_loop, .. } => {
                let callback = match Py::new(py, LoopCallback(Mutex::new(Some(work)))) {
                    Ok(callback) => callback,
                    Err(_) => return Ok(()),
                };
                let sent = event_loop.bind(py).call_method1(
                    pyo3::intern!(py, "call_soon_threadsafe"),
                    (callback.clone_ref(py),),
                );
                match sent {
                    Ok(_) => Ok(()),
                    // Closed: take the work back out of the callback.
                    Err(_) => callback.get().take().map_or(Ok(()), Err),
                }
            }
        }
    }

    pub fn event_loop(&self) -> &Py<PyAny> {
        match self {
            Home::Ferro(l) => l.as_any(),
            Home::Foreign { event_loop, .. } => event_loop,
        }
    }
}

/// Rust work as a Python callable, for loops that only take callables
/// (`call_soon_threadsafe`). Dropped unrun, it drops the work unrun.
#[pyclass(module = "ferroloop._native", frozen)]
pub struct LoopCallback(Mutex<Option<Box<dyn LoopWork>>>);

impl LoopCallback {
    fn take(&self) -> Option<Box<dyn LoopWork>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

#[pymethods]
impl LoopCallback {
    fn __call__(&self, py: Python<'_>) {
        if let Some(work) = self.take() {
            work.run(py);
        }
    }
}

/// Wake another thread (unpark it, or wake its loop) from this one, at the
/// moment that costs least under the GIL. The woken thread's first need is
/// the GIL; waking it while we still hold it makes it wake only to wait:
/// two context switches per wake-up more, for nothing. So a ferroloop loop
/// running here defers the wake to its next poll (when it lets go of the
/// GIL); a plain thread lets go of the GIL while it wakes the other; any
/// other loop wakes at once.
fn wake_other_thread(py: Python<'_>, wake: DeferredWake) {
    let running = match pyapi::get_running_loop(py).and_then(|f| f.call0()) {
        Ok(running) => running,
        Err(_) => return wake(),
    };
    if running.is_none() {
        return py.detach(wake);
    }
    let wake = match running.cast::<Loop>() {
        Ok(native) => match native.get().wake_when_idle(wake) {
            Ok(()) => return,
            Err(wake) => wake,
        },
        Err(_) => wake,
    };
    wake();
}

/// Resolve a waiter's future with None unless it is done already (it may
/// have been cancelled meanwhile). An error here has nobody to go to.
fn resolve(future: &Bound<'_, PyAny>) {
    let py = future.py();
    let _ = future_ops::resolve_if_pending(future, &py.None().into_bound(py));
}

/// A plain thread's parking spot.
#[derive(Default)]
pub struct Parker {
    woken: Mutex<bool>,
    bell: Condvar,
}

impl Parker {
    /// Block until unparked or `until` passes; true if unparked.
    pub fn park(&self, until: Option<Instant>) -> bool {
        let mut woken = self.woken.lock().unwrap_or_else(PoisonError::into_inner);
        while !*woken {
            match until {
                None => {
                    woken = self
                        .bell
                        .wait(woken)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some(until) => {
                    let now = Instant::now();
                    if now >= until {
                        return false;
                    }
                    woken = self
                        .bell
                        .wait_timeout(woken, until - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        true
    }

    fn unpark(&self) {
        *self.woken.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.bell.notify_one();
    }
}

enum Target {
    Task { future: Py<PyAny>, home: Home },
    Thread(Arc<Parker>),
}

/// One waiting party (see the module docs).
pub struct Waiter {
    state: AtomicU64,
    target: Target,
}

impl Waiter {
    /// A task waiting on `future`, on the loop `home`.
    pub fn task(future: Py<PyAny>, home: Home) -> Self {
        Waiter {
            state: AtomicU64::new(PENDING),
            target: Target::Task { future, home },
        }
    }

    /// A plain thread, parked in [`Waiter::park`].
    pub fn thread() -> Self {
        Waiter {
            state: AtomicU64::new(PENDING),
            target: Target::Thread(Arc::default()),
        }
    }

    fn change(&self, to: u64) -> Result<(), Outcome> {
        self.state
            .compare_exchange(PENDING, to, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(decode)
    }

    /// Grant op `op` (the caller reserved what it needs). False if the
    /// waiter is no longer pending: the caller drops its entry.
    pub fn grant(&self, op: u32) -> bool {
        self.change(GRANTED + u64::from(op)).is_ok()
    }

    /// Wake it to try again, without a reservation.
    pub fn recheck(&self) -> bool {
        self.change(RECHECK).is_ok()
    }

    /// Leave (or claim an op for itself): fails with what happened first.
    pub fn withdraw(&self) -> Result<(), Outcome> {
        self.change(WITHDRAWN)
    }

    pub fn is_pending(&self) -> bool {
        self.state.load(Ordering::Acquire) == PENDING
    }

    pub fn outcome(&self) -> Outcome {
        decode(self.state.load(Ordering::Acquire))
    }

    /// Wake it after a grant or recheck, with no source lock held.
    pub fn wake(&self, py: Python<'_>) {
        match &self.target {
            Target::Task { future, home } => {
                if home.runs_here() {
                    resolve(future.bind(py));
                } else {
                    // A refusal means the loop is closed: the task will never
                    // resume, and its op gives back what it holds when freed.
                    let future = future.clone_ref(py);
                    let work = move |py: Python<'_>| resolve(future.bind(py));
                    let _ = home.send(py, Box::new(work));
                }
            }
            Target::Thread(parker) => {
                let parker = Arc::clone(parker);
                wake_other_thread(py, Box::new(move || parker.unpark()));
            }
        }
    }

    /// The future a task waits on.
    pub fn future(&self) -> Option<&Py<PyAny>> {
        match &self.target {
            Target::Task { future, .. } => Some(future),
            Target::Thread(_) => None,
        }
    }

    /// Block the calling (plain) thread until woken or `until`; call with
    /// the interpreter detached.
    pub fn park(&self, until: Option<Instant>) -> bool {
        match &self.target {
            Target::Thread(parker) => parker.park(until),
            Target::Task { .. } => true,
        }
    }

    /// Visit the future and loop it holds. Only its owner, the awaitable
    /// that made it (`WaitOp`), may: the sources it waits in share the same
    /// `Arc`, and one reference visited twice makes the collector count
    /// references that do not exist (and free a live future). A source
    /// that is garbage with a waiter still in it keeps that task alive
    /// until the wait ends, as a leak, never a crash.
    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Target::Task { future, home } = &self.target {
            visit.call(future)?;
            visit.call(home.event_loop())?;
        }
        Ok(())
    }
}

fn decode(state: u64) -> Outcome {
    match state {
        PENDING => Outcome::Pending,
        WITHDRAWN => Outcome::Withdrawn,
        RECHECK => Outcome::Recheck,
        // Ops are numbered from a u32, so the difference fits.
        granted => Outcome::Granted((granted - GRANTED) as u32),
    }
}

/// Wake every waiter in `woken`, now that no source lock is held.
pub fn wake_all(py: Python<'_>, woken: Vec<Arc<Waiter>>) {
    for waiter in woken {
        waiter.wake(py);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn exactly_one_of_grant_recheck_withdraw_wins() {
        let w = Waiter::thread();
        assert!(w.is_pending());
        assert!(w.grant(7));
        assert!(!w.grant(1), "granted twice");
        assert!(!w.recheck());
        assert_eq!(w.withdraw(), Err(Outcome::Granted(7)));
        let w = Waiter::thread();
        assert_eq!(w.withdraw(), Ok(()));
        assert!(!w.grant(0), "a withdrawn waiter was granted");
        assert_eq!(w.outcome(), Outcome::Withdrawn);
        let w = Waiter::thread();
        assert!(w.recheck());
        assert_eq!(w.outcome(), Outcome::Recheck);
    }

    #[test]
    fn racing_granters_and_a_leaver_agree_on_one_outcome() {
        for _ in 0..200 {
            let w = Arc::new(Waiter::thread());
            let racers: Vec<_> = (0..4u32)
                .map(|k| {
                    let w = Arc::clone(&w);
                    std::thread::spawn(move || {
                        if k == 3 {
                            w.withdraw().is_ok()
                        } else {
                            w.grant(k)
                        }
                    })
                })
                .collect();
            let wins = racers
                .into_iter()
                .filter_map(|r| r.join().ok())
                .filter(|won| *won)
                .count();
            assert_eq!(wins, 1);
        }
    }

    #[test]
    fn a_parked_thread_wakes_on_unpark_or_times_out() {
        let w = Arc::new(Waiter::thread());
        let start = Instant::now();
        assert!(!w.park(Some(start + Duration::from_millis(20))));
        let waker = {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                assert!(w.grant(0));
                if let Target::Thread(p) = &w.target {
                    p.unpark();
                }
            })
        };
        assert!(w.park(None));
        waker.join().unwrap();
        assert_eq!(w.outcome(), Outcome::Granted(0));
    }
}
