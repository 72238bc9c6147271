//! Waiting on a toolkit source, from a task or from a plain thread.
//!
//! Each waitable thing (a channel operation, a `select`, a permit, an event,
//! a wait group) is a [`WaitBody`]: it can try to complete at once, or
//! register a [`Waiter`] in its sources under their locks (re-checking there,
//! so no wake-up is lost between the try and the registration), complete an
//! op it was granted, and leave, giving back a grant it will not use.
//!
//! [`WaitOp`] drives a body for a task: a native awaitable (no coroutine
//! frame) that completes inside its first step when it can, and otherwise
//! yields a future made on the running loop, whatever loop that is.
//! Thrown into (the task cancelled) or closed while waiting, it leaves; a
//! grant that raced the cancellation is handed on, never lost.
//! [`wait_blocking`] drives a body for a plain thread, with the interpreter
//! detached while it sleeps, waking for signals.

use super::waiter::{Home, Outcome, Waiter};
use crate::awaitable::{self, NativeAwaitable, Step};
use crate::future_ops;
use crate::pyapi;
use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3::PyTraverseError;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What a try gave.
pub enum Attempt {
    /// Completed, with this value.
    Done(Py<PyAny>),
    /// Not possible now (tried without a waiter).
    NotYet,
    /// The waiter is registered and will be woken.
    Registered,
    /// While registering, another source granted the waiter op `k` first.
    Granted(u32),
}

/// Something a task or thread can wait for (see the module docs).
pub trait WaitBody: Send + Sync {
    /// Named in errors and reprs (`"Channel.recv"`).
    fn what(&self) -> &'static str;

    /// Complete now if possible. With a waiter: register it where it must
    /// wait; completing instead first withdraws it (a `select` that finds an
    /// op ready after registering for others), which fails if another
    /// source granted it meanwhile ([`Attempt::Granted`]).
    fn attempt(&self, py: Python<'_>, waiter: Option<&Arc<Waiter>>) -> PyResult<Attempt>;

    /// The waiter was granted op `op`: complete it, and drop the waiter's
    /// other registrations.
    fn finish(&self, py: Python<'_>, waiter: &Arc<Waiter>, op: u32) -> PyResult<Py<PyAny>>;

    /// The waiter leaves: drop its registrations, and give back `granted`,
    /// an op it was granted and will not complete.
    fn leave(&self, py: Python<'_>, waiter: &Arc<Waiter>, granted: Option<u32>);

    /// The Python objects it holds, for the collector.
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;

    /// What to return instead of waiting (`select(..., default=x)`).
    fn fallback(&self, _py: Python<'_>) -> Option<Py<PyAny>> {
        None
    }
}

/// Leave after the waiter stopped waiting for its own reasons.
fn abandon(py: Python<'_>, body: &dyn WaitBody, waiter: &Arc<Waiter>) {
    let granted = match waiter.withdraw() {
        Ok(()) => None,
        Err(Outcome::Granted(op)) => Some(op),
        Err(_) => None,
    };
    body.leave(py, waiter, granted);
}

#[derive(Default)]
struct OpState {
    /// Registered and waiting on its future.
    waiter: Option<Arc<Waiter>>,
    finished: bool,
}

/// A task's wait on a [`WaitBody`]: what `await ch.recv()` and the like get.
#[pyclass(module = "ferroloop._native", frozen)]
pub struct WaitOp {
    body: Box<dyn WaitBody>,
    state: Mutex<OpState>,
}

impl WaitOp {
    pub fn new(body: impl WaitBody + 'static) -> Self {
        WaitOp {
            body: Box::new(body),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, OpState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn step(&self, py: Python<'_>) -> PyResult<Step> {
        let (finished, waiter) = {
            let mut s = self.state();
            (s.finished, s.waiter.take())
        };
        if finished {
            return Err(PyRuntimeError::new_err(format!(
                "cannot reuse already awaited {}()",
                self.body.what()
            )));
        }
        let stepped = self.advance(py, waiter);
        if !matches!(stepped, Ok(Step::Yield(_))) {
            self.state().finished = true;
        }
        stepped
    }

    /// From the top, or from the wait on `resumed`'s future.
    fn advance(&self, py: Python<'_>, resumed: Option<Arc<Waiter>>) -> PyResult<Step> {
        let body = &*self.body;
        if let Some(w) = resumed {
            if let Some(future) = w.future() {
                // `await future`'s resumption: its exception, if it has one.
                if let Err(err) = future_ops::result(future.bind(py)) {
                    abandon(py, body, &w);
                    return Err(err);
                }
            }
            match w.withdraw() {
                Err(Outcome::Granted(op)) => return body.finish(py, &w, op).map(Step::Return),
                // Rechecked (or its future resolved by someone else): the
                // waiter is spent; try again with a new one.
                _ => body.leave(py, &w, None),
            }
        }
        if let Attempt::Done(value) = body.attempt(py, None)? {
            return Ok(Step::Return(value));
        }
        if let Some(value) = body.fallback(py) {
            return Ok(Step::Return(value));
        }
        let (home, future) = Home::running(py)?;
        let waiter = Arc::new(Waiter::task(future.clone().unbind(), home));
        match body.attempt(py, Some(&waiter))? {
            Attempt::Done(value) => Ok(Step::Return(value)),
            Attempt::Granted(op) => body.finish(py, &waiter, op).map(Step::Return),
            Attempt::NotYet | Attempt::Registered => {
                future_ops::set_blocking(&future)?;
                self.state().waiter = Some(waiter);
                Ok(Step::Yield(future.unbind()))
            }
        }
    }

    /// Stop waiting (thrown into, closed, or freed) and end.
    fn withdraw(&self, py: Python<'_>) {
        let waiter = {
            let mut s = self.state();
            s.finished = true;
            s.waiter.take()
        };
        if let Some(w) = waiter {
            abandon(py, &*self.body, &w);
        }
    }
}

impl Drop for WaitOp {
    /// Freed while waiting (its task was destroyed, or its loop closed
    /// before it ran again): give back what it was granted.
    fn drop(&mut self) {
        let waiter = self
            .state
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .waiter
            .take();
        if let Some(w) = waiter {
            let body = &*self.body;
            // Without an interpreter (finalizing) nothing can wait anymore.
            let _ = Python::try_attach(|py| abandon(py, body, &w));
        }
    }
}

impl NativeAwaitable for WaitOp {
    const WHAT: &'static str = "a toolkit wait";

    fn advance(slf: &Bound<'_, Self>) -> PyResult<Step> {
        slf.get().step(slf.py())
    }

    fn withdraw(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().withdraw(slf.py());
        Ok(())
    }
}

awaitable::native_awaitable_pymethods!(WaitOp {
    #[getter]
    fn __qualname__(&self) -> &'static str {
        self.body.what()
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.body.what()
    }

    fn __repr__(&self) -> String {
        format!("<ferroloop {}() awaitable>", self.body.what())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.body.traverse(&visit)?;
        if let Ok(s) = self.state.try_lock() {
            if let Some(w) = &s.waiter {
                w.traverse(&visit)?;
            }
        }
        Ok(())
    }
});

/// Give `WaitOp` its `am_send` slot (module init).
pub fn install(py: Python<'_>) {
    awaitable::install_am_send::<WaitOp>(py);
}

/// Run `body` on a plain thread, blocking until it completes or `timeout`
/// seconds pass (toolkit `TimeoutError(timed_out)`); Ctrl-C and other
/// signal handlers run while it waits.
pub fn wait_blocking(
    py: Python<'_>,
    body: &dyn WaitBody,
    timeout: Option<f64>,
    timed_out: &str,
) -> PyResult<Py<PyAny>> {
    if let Attempt::Done(value) = body.attempt(py, None)? {
        return Ok(value);
    }
    let deadline = match timeout {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "timeout must be a non-negative number",
            ))
        }
        Some(t) => Some(Instant::now() + Duration::from_secs_f64(t)),
        None => None,
    };
    // Long waits sleep in slices, so a signal's handler (Ctrl-C) runs soon.
    const SLICE: Duration = Duration::from_millis(100);
    loop {
        let waiter = Arc::new(Waiter::thread());
        match body.attempt(py, Some(&waiter))? {
            Attempt::Done(value) => return Ok(value),
            Attempt::Granted(op) => return body.finish(py, &waiter, op),
            Attempt::NotYet | Attempt::Registered => {}
        }
        loop {
            let slice_end = Instant::now() + SLICE;
            let until = deadline.map_or(slice_end, |d| d.min(slice_end));
            if py.detach(|| waiter.park(Some(until))) {
                break;
            }
            if let Err(err) = py.check_signals() {
                abandon(py, body, &waiter);
                return Err(err);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                match waiter.withdraw() {
                    Ok(()) => {
                        body.leave(py, &waiter, None);
                        return Err(timeout_error(py, timed_out)?);
                    }
                    // Granted as time ran out: take it rather than lose it.
                    Err(Outcome::Granted(op)) => return body.finish(py, &waiter, op),
                    Err(_) => break,
                }
            }
        }
        match waiter.withdraw() {
            Err(Outcome::Granted(op)) => return body.finish(py, &waiter, op),
            _ => body.leave(py, &waiter, None),
        }
    }
}

/// The toolkit's `TimeoutError(message)`.
pub fn timeout_error(py: Python<'_>, message: &str) -> PyResult<PyErr> {
    Ok(PyErr::from_type(
        pyapi::toolkit_timeout_error(py)?.cast::<PyType>()?.clone(),
        message.to_owned(),
    ))
}
