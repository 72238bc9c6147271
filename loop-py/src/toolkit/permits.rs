//! A FIFO pool of permits shared by tasks on any loops: the core of
//! multiloop's `Semaphore`, `CapacityLimiter` and `Lock`.
//!
//! `floor(total)` permits; `held` of them are out. A release (or a larger
//! total) grants the first waiting party a permit at once, under the lock,
//! before anyone can take it (the permit counts as held from then on). A
//! waiter granted a permit but cancelled before it ran gives it back, and
//! the release passes it to the next waiter: permits are neither lost nor
//! made twice. `try_acquire` succeeds only when a permit is free, which
//! never happens while someone waits.

use super::wait::{Attempt, WaitBody, WaitOp};
use super::waiter::{wake_all, Waiter};
use pyo3::exceptions::PyValueError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

struct PermitState {
    total: f64,
    held: usize,
    waiters: VecDeque<Arc<Waiter>>,
}

impl PermitState {
    fn capacity(&self) -> usize {
        // Negative or NaN totals are refused where they are set.
        self.total.floor() as usize
    }

    fn free(&self) -> usize {
        self.capacity().saturating_sub(self.held)
    }

    /// Grant free permits to waiters, in order.
    fn settle(&mut self, woken: &mut Vec<Arc<Waiter>>) {
        while self.free() > 0 {
            let Some(w) = self.waiters.pop_front() else {
                break;
            };
            if w.grant(0) {
                self.held += 1;
                woken.push(w);
            }
        }
    }

    fn take_free(&mut self) -> bool {
        while self.waiters.front().is_some_and(|w| !w.is_pending()) {
            self.waiters.pop_front();
        }
        if self.waiters.is_empty() && self.free() > 0 {
            self.held += 1;
            return true;
        }
        false
    }
}

pub struct Permits {
    state: Mutex<PermitState>,
}

impl Permits {
    fn lock(&self) -> MutexGuard<'_, PermitState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Give one permit back (to the next waiter, if any). False if none
    /// was held.
    fn give_back(&self, py: Python<'_>) -> bool {
        let mut woken = Vec::new();
        {
            let mut st = self.lock();
            if st.held == 0 {
                return false;
            }
            st.held -= 1;
            st.settle(&mut woken);
        }
        wake_all(py, woken);
        true
    }
}

struct Acquire(Arc<Permits>);

impl WaitBody for Acquire {
    fn what(&self) -> &'static str {
        "acquire"
    }

    fn attempt(&self, py: Python<'_>, waiter: Option<&Arc<Waiter>>) -> PyResult<Attempt> {
        let mut st = self.0.lock();
        if st.take_free() {
            return Ok(Attempt::Done(py.None()));
        }
        Ok(match waiter {
            Some(w) => {
                st.waiters.push_back(Arc::clone(w));
                Attempt::Registered
            }
            None => Attempt::NotYet,
        })
    }

    fn finish(&self, py: Python<'_>, _waiter: &Arc<Waiter>, _op: u32) -> PyResult<Py<PyAny>> {
        Ok(py.None())
    }

    fn leave(&self, py: Python<'_>, waiter: &Arc<Waiter>, granted: Option<u32>) {
        self.0.lock().waiters.retain(|w| !Arc::ptr_eq(w, waiter));
        if granted.is_some() {
            self.0.give_back(py);
        }
    }

    fn traverse(&self, _visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        Ok(())
    }
}

fn check_total(total: f64) -> PyResult<f64> {
    if total.is_nan() || total < 0.0 {
        return Err(PyValueError::new_err("the number of permits must be >= 0"));
    }
    Ok(total)
}

/// The native half of `Lock`, `Semaphore` and `CapacityLimiter`.
#[pyclass(module = "ferroloop._native", subclass, frozen)]
pub struct PermitsCore {
    permits: Arc<Permits>,
    /// The ValueError of a release when no permit is out.
    over_release: String,
}

#[pymethods]
impl PermitsCore {
    #[new]
    #[pyo3(signature = (total, over_release = "released too many times".to_owned()))]
    fn new(total: f64, over_release: String) -> PyResult<Self> {
        Ok(PermitsCore {
            permits: Arc::new(Permits {
                state: Mutex::new(PermitState {
                    total: check_total(total)?,
                    held: 0,
                    waiters: VecDeque::new(),
                }),
            }),
            over_release,
        })
    }

    /// Take a permit, waiting in line for one.
    fn _acquire(&self) -> WaitOp {
        WaitOp::new(Acquire(Arc::clone(&self.permits)))
    }

    /// Take a free permit now; False if none is free.
    fn _try_acquire(&self) -> bool {
        self.permits.lock().take_free()
    }

    /// Give a permit back; it goes to the first waiter, if any.
    fn _release(&self, py: Python<'_>) -> PyResult<()> {
        if self.permits.give_back(py) {
            Ok(())
        } else {
            Err(PyValueError::new_err(self.over_release.clone()))
        }
    }

    /// Change the total; new permits go to waiters at once.
    fn _set_total(&self, py: Python<'_>, total: f64) -> PyResult<()> {
        let total = check_total(total)?;
        let mut woken = Vec::new();
        {
            let mut st = self.permits.lock();
            st.total = total;
            st.settle(&mut woken);
        }
        wake_all(py, woken);
        Ok(())
    }

    /// `(total, held)`, read together.
    fn _snapshot(&self) -> (f64, usize) {
        let st = self.permits.lock();
        (st.total, st.held)
    }

    /// Parties waiting for a permit.
    fn _waiting(&self) -> usize {
        self.permits
            .lock()
            .waiters
            .iter()
            .filter(|w| w.is_pending())
            .count()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PermitsCore>()
}
