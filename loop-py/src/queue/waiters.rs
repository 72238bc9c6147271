//! The futures of waiting getters, putters and joiners, and `_getters` /
//! `_putters`: a live view of the first two, for code that inspects
//! asyncio's deques.
//!
//! Every call on a future (`done`, `set_result`, `cancelled`) runs outside
//! the cell: a future's callbacks are scheduled, but a subclass could run
//! anything.

use super::QueueCore;
use crate::future_ops;
use crate::gil_cell::GilCell;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::PyTraverseError;
use std::collections::VecDeque;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Which {
    Getters,
    Putters,
    Joiners,
}

pub struct Waiters {
    lists: GilCell<[VecDeque<Py<PyAny>>; 3]>,
}

impl Default for Waiters {
    fn default() -> Self {
        Waiters {
            lists: GilCell::new(Default::default()),
        }
    }
}

fn slot(which: Which) -> usize {
    match which {
        Which::Getters => 0,
        Which::Putters => 1,
        Which::Joiners => 2,
    }
}

impl Waiters {
    pub fn len(&self, py: Python<'_>, which: Which) -> usize {
        self.lists.with(py, |l| l[slot(which)].len())
    }

    pub fn push(&self, py: Python<'_>, which: Which, fut: Py<PyAny>) {
        self.lists.with(py, |l| l[slot(which)].push_back(fut));
    }

    /// Remove `fut` if it is still there (asyncio's `deque.remove`, its
    /// ValueError ignored).
    pub fn remove(&self, py: Python<'_>, which: Which, fut: &Bound<'_, PyAny>) -> bool {
        let removed = self.lists.with(py, |l| {
            let list = &mut l[slot(which)];
            let at = list.iter().position(|w| w.as_ptr() == fut.as_ptr());
            at.and_then(|i| list.remove(i))
        });
        // Dropped here, outside the cell.
        removed.is_some()
    }

    fn pop(&self, py: Python<'_>, which: Which) -> Option<Py<PyAny>> {
        self.lists.with(py, |l| l[slot(which)].pop_front())
    }

    /// asyncio's `_wakeup_next`: resolve the first waiter not done yet.
    pub fn wake_next(&self, py: Python<'_>, which: Which) -> PyResult<()> {
        while let Some(waiter) = self.pop(py, which) {
            if future_ops::resolve_if_pending(waiter.bind(py), &py.None().into_bound(py))? {
                break;
            }
        }
        Ok(())
    }

    /// Resolve every waiter (shutdown, and `join()` once all tasks are done).
    pub fn wake_all(&self, py: Python<'_>, which: Which) -> PyResult<()> {
        let all = self.lists.with(py, |l| std::mem::take(&mut l[slot(which)]));
        for waiter in all {
            future_ops::resolve_if_pending(waiter.bind(py), &py.None().into_bound(py))?;
        }
        Ok(())
    }

    fn snapshot<'py>(&self, py: Python<'py>, which: Which) -> PyResult<Bound<'py, PyList>> {
        let refs: Vec<Py<PyAny>> = self.lists.with(py, |l| {
            l[slot(which)].iter().map(|w| w.clone_ref(py)).collect()
        });
        PyList::new(py, refs)
    }

    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.lists.with_in_gc(|l| {
                for waiter in l.iter().flatten() {
                    visit.call(waiter)?;
                }
                Ok(())
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    pub fn clear(&self) {
        // SAFETY: called from `__clear__`; the futures drop after the closure.
        let all = unsafe { self.lists.with_in_gc(std::mem::take) };
        drop(all);
    }
}

/// `queue._getters` / `queue._putters`: `len`, truth, iteration, `append`
/// and `remove` on the queue's own waiters.
#[pyclass(module = "ferroloop._native", frozen)]
pub struct WaiterView {
    queue: Py<QueueCore>,
    which: Which,
}

impl WaiterView {
    pub fn new(queue: Py<QueueCore>, which: Which) -> Self {
        WaiterView { queue, which }
    }

    fn waiters<'a>(&'a self, py: Python<'_>) -> &'a Waiters {
        &self.queue.bind_borrowed(py).get().waiters
    }
}

#[pymethods]
impl WaiterView {
    fn __len__(&self, py: Python<'_>) -> usize {
        self.waiters(py).len(py, self.which)
    }

    fn __bool__(&self, py: Python<'_>) -> bool {
        self.__len__(py) > 0
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self
            .waiters(py)
            .snapshot(py, self.which)?
            .try_iter()?
            .into_any())
    }

    fn append(&self, py: Python<'_>, future: Py<PyAny>) {
        self.waiters(py).push(py, self.which, future);
    }

    fn remove(&self, py: Python<'_>, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.waiters(py).remove(py, self.which, future) {
            Ok(())
        } else {
            Err(pyo3::exceptions::PyValueError::new_err("waiter not found"))
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "deque({})",
            self.waiters(py).snapshot(py, self.which)?.repr()?
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.queue)
    }
}
