//! Waiting for a counter to reach zero, from any loop or thread: the core of
//! `Event` (a counter of one that `set()` zeroes, for good) and of
//! `AsyncWaitGroup` (Go's `sync.WaitGroup`: `add`, `done`, `wait`).
//!
//! Waiters register under the counter's lock, after checking it there, so a
//! `done()` on another thread cannot slip between the check and the
//! registration (multiloop's "register-after-done race"). Reaching zero
//! grants every registered waiter at once.

use super::wait::{Attempt, WaitBody, WaitOp};
use super::waiter::{wake_all, Waiter};
use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

struct CounterState {
    count: i64,
    waiters: Vec<Arc<Waiter>>,
}

pub struct Counter {
    state: Mutex<CounterState>,
}

impl Counter {
    fn new(count: i64) -> Self {
        Counter {
            state: Mutex::new(CounterState {
                count,
                waiters: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CounterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn count(&self) -> i64 {
        self.lock().count
    }

    /// Add `delta`; at zero every waiter is woken. The counter never goes
    /// below zero (the change is refused).
    pub fn add(&self, py: Python<'_>, delta: i64) -> Result<(), i64> {
        let woken = {
            let mut st = self.lock();
            let count = st.count.checked_add(delta).unwrap_or(-1);
            if count < 0 {
                return Err(st.count);
            }
            st.count = count;
            if count > 0 {
                return Ok(());
            }
            std::mem::take(&mut st.waiters)
                .into_iter()
                .filter(|w| w.grant(0))
                .collect::<Vec<_>>()
        };
        wake_all(py, woken);
        Ok(())
    }
}

/// A wait for the counter to be zero.
pub struct ZeroWait {
    counter: Arc<Counter>,
    what: &'static str,
}

impl ZeroWait {
    pub fn new(counter: &Arc<Counter>, what: &'static str) -> Self {
        ZeroWait {
            counter: Arc::clone(counter),
            what,
        }
    }
}

impl WaitBody for ZeroWait {
    fn what(&self) -> &'static str {
        self.what
    }

    fn attempt(&self, py: Python<'_>, waiter: Option<&Arc<Waiter>>) -> PyResult<Attempt> {
        let mut st = self.counter.lock();
        if st.count == 0 {
            return Ok(Attempt::Done(py.None()));
        }
        Ok(match waiter {
            Some(w) => {
                st.waiters.push(Arc::clone(w));
                Attempt::Registered
            }
            None => Attempt::NotYet,
        })
    }

    fn finish(&self, py: Python<'_>, _waiter: &Arc<Waiter>, _op: u32) -> PyResult<Py<PyAny>> {
        Ok(py.None())
    }

    fn leave(&self, _py: Python<'_>, waiter: &Arc<Waiter>, _granted: Option<u32>) {
        // Nothing was reserved for it: other waiters were woken too.
        self.counter
            .lock()
            .waiters
            .retain(|w| !Arc::ptr_eq(w, waiter));
    }

    fn traverse(&self, _visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        Ok(())
    }
}

/// multiloop's `Event`: set once, for good (trio's semantics, no `clear`);
/// `wait()` from any loop, `set()` from any thread.
#[pyclass(module = "ferroloop.toolkit", name = "Event", frozen)]
pub struct Event {
    counter: Arc<Counter>,
}

#[pymethods]
impl Event {
    #[new]
    fn new() -> Self {
        Event {
            counter: Arc::new(Counter::new(1)),
        }
    }

    fn is_set(&self) -> bool {
        self.counter.count() == 0
    }

    /// Set the event and wake every waiter, on whatever loop or thread.
    fn set(&self, py: Python<'_>) {
        let _ = self.counter.add(py, if self.is_set() { 0 } else { -1 });
    }

    /// Wait until the event is set (at once if it is).
    fn wait(&self) -> WaitOp {
        WaitOp::new(ZeroWait::new(&self.counter, "Event.wait"))
    }

    fn __repr__(&self) -> String {
        format!(
            "<Event is_set={}>",
            if self.is_set() { "True" } else { "False" }
        )
    }
}

/// The native half of `AsyncWaitGroup`.
#[pyclass(module = "ferroloop._native", subclass, frozen)]
pub struct WaitGroupCore {
    counter: Arc<Counter>,
}

#[pymethods]
impl WaitGroupCore {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> Self {
        WaitGroupCore {
            counter: Arc::new(Counter::new(0)),
        }
    }

    /// Add `delta` (may be negative) to the counter; at zero every waiter
    /// wakes. RuntimeError if the counter would go below zero.
    #[pyo3(signature = (delta = 1))]
    fn add(&self, py: Python<'_>, delta: i64) -> PyResult<()> {
        self.counter.add(py, delta).map_err(|count| {
            PyRuntimeError::new_err(format!(
                "AsyncWaitGroup counter would go negative ({count} {delta:+})"
            ))
        })
    }

    /// One task is done: `add(-1)`.
    fn done(&self, py: Python<'_>) -> PyResult<()> {
        self.counter.add(py, -1).map_err(|_| {
            PyRuntimeError::new_err("AsyncWaitGroup.done() called more times than add()")
        })
    }

    /// Wait until the counter is zero (at once if it is).
    fn wait(&self) -> WaitOp {
        WaitOp::new(ZeroWait::new(&self.counter, "AsyncWaitGroup.wait"))
    }

    /// The counter now.
    #[getter]
    fn _count(&self) -> i64 {
        self.counter.count()
    }
}

/// A counter for Rust users of this crate (the loop pool's drain).
pub fn new_counter() -> Arc<Counter> {
    Arc::new(Counter::new(0))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Event>()?;
    m.add_class::<WaitGroupCore>()?;
    Ok(())
}
