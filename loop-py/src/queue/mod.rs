//! `ferroloop.Queue`, `LifoQueue`, `PriorityQueue`: asyncio's queues in
//! Rust, on any asyncio loop.
//!
//! The state (items, waiters, counters) lives here; the Python classes in
//! `ferroloop/_queue.py` only subclass [`QueueCore`] to give it asyncio's
//! `__init__(maxsize=0)` and names. The semantics are asyncio's
//! `queues.py` of 3.13, step for step (waking the next waiter, the
//! cancellation recovery, `shutdown`); only the data structures differ.
//!
//! `get()`, `put()` and `join()` return a [`op::QueueOp`], a native
//! awaitable: on a non-empty (non-full) queue the `await` completes inside
//! one `am_send` call, with no coroutine frame and no future. Only a get or
//! put that has to wait creates a future, with the running loop's
//! `create_future()` (so any loop works), and binds the queue to that loop
//! as asyncio's `_LoopBoundMixin` does.
//!
//! - [`items`]: the three orders.
//! - [`waiters`]: getter/putter/joiner futures and the `_getters` view.
//! - [`op`]: the awaitable.

mod items;
mod op;
mod waiters;

use crate::event_loop::Loop;
use crate::future_ops::{self, FutureMaker};
use crate::gil_cell::GilCell;
use crate::pyapi;
use items::{Items, Kind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};
use pyo3::PyTraverseError;
use waiters::{WaiterView, Waiters, Which};

/// What changes besides the items and waiters.
struct Counters {
    /// `maxsize` as given (shown by `maxsize` and the repr).
    maxsize: Py<PyAny>,
    /// `maxsize` as compared: `full()` is `limit > 0 and qsize >= limit`
    /// (a float `maxsize` works as in asyncio).
    limit: f64,
    unfinished: i64,
    shutdown: bool,
    /// The loop waiters were created on (asyncio's `_loop`).
    bound: Option<Py<PyAny>>,
    /// How to make futures on `bound` (found once, at binding).
    maker: Option<FutureMaker>,
}

/// The native half of `ferroloop.Queue`.
#[pyclass(module = "ferroloop._native", subclass, frozen)]
pub struct QueueCore {
    items: Items,
    waiters: Waiters,
    counters: GilCell<Counters>,
}

impl QueueCore {
    fn counters<R>(&self, py: Python<'_>, f: impl FnOnce(&mut Counters) -> R) -> R {
        self.counters.with(py, f)
    }

    fn is_full(&self, py: Python<'_>) -> bool {
        let limit = self.counters(py, |c| c.limit);
        limit > 0.0 && self.items.len(py) as f64 >= limit
    }

    fn is_shutdown(&self, py: Python<'_>) -> bool {
        self.counters(py, |c| c.shutdown)
    }

    fn unfinished(&self, py: Python<'_>) -> i64 {
        self.counters(py, |c| c.unfinished)
    }

    /// `get_nowait()` without raising: the item, or None when empty.
    fn take(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let item = self.items.pop(py)?;
        if item.is_some() {
            self.waiters.wake_next(py, Which::Putters)?;
        }
        Ok(item)
    }

    fn put_now(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<()> {
        if self.is_shutdown(py) {
            return Err(shut_down(py)?);
        }
        if self.is_full(py) {
            return Err(PyErr::from_type(
                pyapi::queue_full(py)?.cast::<PyType>()?.clone(),
                (),
            ));
        }
        self.items.push(py, item)?;
        self.counters(py, |c| c.unfinished += 1);
        self.waiters.wake_next(py, Which::Getters)
    }

    /// A future on the running loop for a waiting get/put/join; get and
    /// put bind the queue to that loop (asyncio's `_get_loop`).
    fn new_waiter<'py>(slf: &Bound<'py, Self>, bind: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if let Some(running) = slf.get().bound_loop_running_here(py) {
            return future_ops::new_future_on(&running);
        }
        let running = pyapi::get_running_loop(py)?.call0()?;
        if running.is_none() {
            return Err(PyRuntimeError::new_err("no running event loop"));
        }
        if !bind {
            return future_ops::new_future_on(&running);
        }
        // The bound loop's future maker, or None when it is another loop
        // (Err) or none yet (Ok(None)).
        let known = slf.get().counters(py, |c| match &c.bound {
            Some(l) if l.bind(py).is(&running) => Ok(c.maker.as_ref().map(|m| m.clone_ref(py))),
            Some(_) => Err(()),
            None => Ok(None),
        });
        match known {
            Ok(Some(maker)) => maker.make(py),
            Ok(None) => {
                let maker = FutureMaker::for_loop(&running)?;
                let future = maker.make(py)?;
                let old = slf.get().counters(py, |c| {
                    c.bound = Some(running.clone().unbind());
                    c.maker.replace(maker)
                });
                drop(old);
                Ok(future)
            }
            Err(()) => Err(PyRuntimeError::new_err(format!(
                "{} is bound to a different event loop",
                Self::__repr__(slf)?
            ))),
        }
    }

    /// The loop this queue is bound to, when that is a ferroloop loop the
    /// calling thread runs: then it is the running loop, and the waiter's
    /// loop, without asking asyncio (see [`Loop::runs_here`]).
    fn bound_loop_running_here<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        let bound = self.counters(py, |c| c.bound.as_ref().map(|l| l.clone_ref(py)));
        let bound = bound?.into_bound(py);
        let runs_here = bound.cast::<Loop>().is_ok_and(|l| l.get().runs_here());
        runs_here.then_some(bound)
    }
}

fn shut_down(py: Python<'_>) -> PyResult<PyErr> {
    Ok(PyErr::from_type(
        pyapi::queue_shut_down(py)?.cast::<PyType>()?.clone(),
        (),
    ))
}

#[pymethods]
impl QueueCore {
    /// Arguments are `__init__`'s (the Python subclass's).
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(
        py: Python<'_>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> Self {
        QueueCore {
            items: Items::new(py),
            waiters: Waiters::default(),
            counters: GilCell::new(Counters {
                maxsize: 0i32
                    .into_pyobject(py)
                    .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                limit: 0.0,
                unfinished: 0,
                shutdown: false,
                bound: None,
                maker: None,
            }),
        }
    }

    /// `__init__`'s work: order (0 FIFO, 1 LIFO, 2 priority) and maxsize.
    fn _setup(&self, py: Python<'_>, maxsize: Bound<'_, PyAny>, kind: u8) -> PyResult<()> {
        let kind = Kind::from_code(kind)?;
        let limit: f64 = maxsize.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "maxsize must be a number, not {}",
                maxsize
                    .get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string())
            ))
        })?;
        self.items.reset(py, kind)?;
        let old = self.counters(py, |c| {
            c.limit = limit;
            c.unfinished = 0;
            c.shutdown = false;
            std::mem::replace(&mut c.maxsize, maxsize.unbind())
        });
        drop(old);
        Ok(())
    }

    #[getter]
    fn maxsize(&self, py: Python<'_>) -> Py<PyAny> {
        self.counters(py, |c| c.maxsize.clone_ref(py))
    }

    #[getter]
    fn _maxsize(&self, py: Python<'_>) -> Py<PyAny> {
        self.maxsize(py)
    }

    /// Number of items in the queue.
    fn qsize(&self, py: Python<'_>) -> usize {
        self.items.len(py)
    }

    /// True if the queue is empty.
    fn empty(&self, py: Python<'_>) -> bool {
        self.items.len(py) == 0
    }

    /// True if there are maxsize items in the queue (never with maxsize <= 0).
    fn full(&self, py: Python<'_>) -> bool {
        self.is_full(py)
    }

    /// Put an item without blocking; QueueFull if none is free,
    /// QueueShutDown after shutdown().
    fn put_nowait(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<()> {
        self.put_now(py, item)
    }

    /// Remove and return an item if one is immediately available, else
    /// QueueEmpty (QueueShutDown when empty after shutdown()).
    fn get_nowait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.take(py)? {
            Some(item) => Ok(item),
            None if self.is_shutdown(py) => Err(shut_down(py)?),
            None => Err(PyErr::from_type(
                pyapi::queue_empty(py)?.cast::<PyType>()?.clone(),
                (),
            )),
        }
    }

    /// Remove and return an item, waiting while the queue is empty.
    fn get(slf: &Bound<'_, Self>) -> op::QueueOp {
        op::QueueOp::get(slf.clone().unbind())
    }

    /// Put an item, waiting while the queue is full.
    fn put(slf: &Bound<'_, Self>, item: Py<PyAny>) -> op::QueueOp {
        op::QueueOp::put(slf.clone().unbind(), item)
    }

    /// Wait until every item put has been marked done with task_done().
    fn join(slf: &Bound<'_, Self>) -> op::QueueOp {
        op::QueueOp::join(slf.clone().unbind())
    }

    /// One item taken from the queue has been processed.
    fn task_done(&self, py: Python<'_>) -> PyResult<()> {
        let left = self.counters(py, |c| {
            if c.unfinished <= 0 {
                return None;
            }
            c.unfinished -= 1;
            Some(c.unfinished)
        });
        match left {
            None => Err(PyValueError::new_err("task_done() called too many times")),
            Some(0) => self.waiters.wake_all(py, Which::Joiners),
            Some(_) => Ok(()),
        }
    }

    /// Shut the queue down: put raises QueueShutDown; get raises it once
    /// the queue is empty (at once with immediate=True, which also drops
    /// the items and their unfinished count). Waiting getters and putters
    /// are woken to see it.
    #[pyo3(signature = (immediate = false))]
    fn shutdown(&self, py: Python<'_>, immediate: bool) -> PyResult<()> {
        self.counters(py, |c| c.shutdown = true);
        if immediate {
            let dropped = self.items.drain(py)?;
            let left = self.counters(py, |c| {
                c.unfinished = (c.unfinished - dropped as i64).max(0);
                c.unfinished
            });
            if left == 0 {
                self.waiters.wake_all(py, Which::Joiners)?;
            }
        }
        self.waiters.wake_all(py, Which::Getters)?;
        self.waiters.wake_all(py, Which::Putters)
    }

    /// asyncio's `_format()`: what the repr shows after the class name.
    fn _format(&self, py: Python<'_>) -> PyResult<String> {
        let maxsize = self.maxsize(py);
        let mut out = format!("maxsize={}", maxsize.bind(py).repr()?);
        let items = self.items.snapshot(py)?;
        if !items.is_empty() {
            out.push_str(&format!(" _queue={}", items.repr()?));
        }
        for (which, name) in [(Which::Getters, "_getters"), (Which::Putters, "_putters")] {
            let n = self.waiters.len(py, which);
            if n > 0 {
                out.push_str(&format!(" {name}[{n}]"));
            }
        }
        let tasks = self.unfinished(py);
        if tasks != 0 {
            out.push_str(&format!(" tasks={tasks}"));
        }
        if self.is_shutdown(py) {
            out.push_str(" shutdown");
        }
        Ok(out)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!(
            "<{} at {:#x} {}>",
            slf.get_type().name()?,
            slf.as_ptr() as usize,
            slf.get()._format(slf.py())?
        ))
    }

    fn __str__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!(
            "<{} {}>",
            slf.get_type().name()?,
            slf.get()._format(slf.py())?
        ))
    }

    /// `Queue[int]`, as asyncio's.
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        pyapi::generic_alias(cls.py())?.call1((cls, item))
    }

    /// Items put and not yet marked done (asyncio's attribute).
    #[getter(_unfinished_tasks)]
    fn unfinished_tasks(&self, py: Python<'_>) -> i64 {
        self.unfinished(py)
    }

    #[setter(_unfinished_tasks)]
    fn set_unfinished_tasks(&self, py: Python<'_>, value: i64) {
        self.counters(py, |c| c.unfinished = value);
    }

    #[getter]
    fn _is_shutdown(&self, py: Python<'_>) -> bool {
        self.is_shutdown(py)
    }

    /// The waiting getters' futures (a live view, as asyncio's deque).
    #[getter]
    fn _getters(slf: &Bound<'_, Self>) -> WaiterView {
        WaiterView::new(slf.clone().unbind(), Which::Getters)
    }

    #[getter]
    fn _putters(slf: &Bound<'_, Self>) -> WaiterView {
        WaiterView::new(slf.clone().unbind(), Which::Putters)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.items.traverse(&visit)?;
        self.waiters.traverse(&visit)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.counters.with_in_gc(|c| {
                visit.call(&c.maxsize)?;
                visit.call(&c.bound)?;
                match &c.maker {
                    Some(maker) => maker.traverse(&visit),
                    None => Ok(()),
                }
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    fn __clear__(&self) {
        self.items.clear();
        self.waiters.clear();
        // SAFETY: called from `__clear__`; the loop drops after the closure.
        let bound = unsafe {
            self.counters
                .with_in_gc(|c| (c.bound.take(), c.maker.take()))
        };
        drop(bound);
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QueueCore>()?;
    m.add_class::<op::QueueOp>()?;
    m.add_class::<WaiterView>()?;
    op::install(m.py());
    Ok(())
}
