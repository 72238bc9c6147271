//! Where a queue keeps its items: FIFO and LIFO in a `VecDeque`, the
//! priority queue in a Python list ordered by `heapq` itself, so ordering
//! is exactly `heapq`'s (it compares with `<` and may raise or run
//! arbitrary `__lt__`, which is why it is never called inside a cell).

use crate::gil_cell::GilCell;
use crate::pyapi;
use pyo3::exceptions::PyValueError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::PyTraverseError;
use std::collections::VecDeque;

/// Which end `get` takes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Fifo,
    Lifo,
    Priority,
}

impl Kind {
    pub fn from_code(code: u8) -> PyResult<Kind> {
        match code {
            0 => Ok(Kind::Fifo),
            1 => Ok(Kind::Lifo),
            2 => Ok(Kind::Priority),
            _ => Err(PyValueError::new_err(format!("unknown queue kind {code}"))),
        }
    }
}

pub struct Items {
    kind: GilCell<Kind>,
    deque: GilCell<VecDeque<Py<PyAny>>>,
    /// Only the priority queue's items (a heap kept by `heapq`).
    heap: Py<PyList>,
}

impl Items {
    pub fn new(py: Python<'_>) -> Items {
        Items {
            kind: GilCell::new(Kind::Fifo),
            deque: GilCell::new(VecDeque::new()),
            heap: PyList::empty(py).unbind(),
        }
    }

    pub fn kind(&self, py: Python<'_>) -> Kind {
        self.kind.with(py, |k| *k)
    }

    /// Empty the queue and switch its order (`__init__` again).
    pub fn reset(&self, py: Python<'_>, kind: Kind) -> PyResult<()> {
        self.kind.with(py, |k| *k = kind);
        self.drain(py)?;
        Ok(())
    }

    /// Remove every item; returns how many there were.
    pub fn drain(&self, py: Python<'_>) -> PyResult<usize> {
        let old = self.deque.with(py, std::mem::take);
        let heap = self.heap.bind(py);
        let n = old.len() + heap.len();
        // Dropped here, outside the cell: a decref may run `__del__`.
        drop(old);
        heap.del_slice(0, heap.len())?;
        Ok(n)
    }

    pub fn len(&self, py: Python<'_>) -> usize {
        match self.kind(py) {
            Kind::Priority => self.heap.bind(py).len(),
            _ => self.deque.with(py, |d| d.len()),
        }
    }

    pub fn push(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<()> {
        match self.kind(py) {
            Kind::Priority => {
                pyapi::heappush(py)?.call1((self.heap.bind(py), item))?;
            }
            _ => self.deque.with(py, |d| d.push_back(item)),
        }
        Ok(())
    }

    /// The next item, or None when empty.
    pub fn pop(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.kind(py) {
            Kind::Fifo => Ok(self.deque.with(py, |d| d.pop_front())),
            Kind::Lifo => Ok(self.deque.with(py, |d| d.pop_back())),
            Kind::Priority => {
                let heap = self.heap.bind(py);
                if heap.is_empty() {
                    return Ok(None);
                }
                Ok(Some(pyapi::heappop(py)?.call1((heap,))?.unbind()))
            }
        }
    }

    /// The items in the order `asyncio`'s `_queue` shows them (a copy).
    pub fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self.kind(py) {
            Kind::Priority => self
                .heap
                .bind(py)
                .get_slice(0, usize::MAX)
                .cast_into()
                .map_err(Into::into),
            _ => {
                let refs: Vec<Py<PyAny>> = self
                    .deque
                    .with(py, |d| d.iter().map(|i| i.clone_ref(py)).collect());
                PyList::new(py, refs)
            }
        }
    }

    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.heap)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.deque.with_in_gc(|d| {
                for item in d.iter() {
                    visit.call(item)?;
                }
                Ok(())
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    /// GC clear: the deque's items go (the heap list is cleared by the
    /// collector through its own `tp_clear`).
    pub fn clear(&self) {
        // SAFETY: called from `__clear__`; the items drop after the closure.
        let old = unsafe { self.deque.with_in_gc(std::mem::take) };
        drop(old);
    }
}
