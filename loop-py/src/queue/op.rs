//! `QueueOp`: what `get()`, `put(item)` and `join()` return.
//!
//! A native awaitable ([`crate::awaitable`]) that does asyncio's coroutine
//! body when first stepped: take (or put) at once when it can — the
//! `await` then ends inside that one step, with no frame and no future —
//! else create a future on the running loop, queue it as a waiter and yield
//! it to the task. Resumed, it checks the future as `await future` would
//! and tries again. Thrown into (the task cancelled) or closed while
//! waiting, it runs asyncio's `except:` recovery: drop its waiter, and pass
//! the wake-up on if it got one it will not use (a cancelled getter never
//! loses an item).
//!
//! It has `send`/`throw`/`close`/`__await__`, so `asyncio.iscoroutine`
//! accepts it in `create_task`, `ensure_future`, `wait_for` and `gather`.

use super::waiters::Which;
use super::{shut_down, QueueCore};
use crate::awaitable::{self, NativeAwaitable, Step};
use crate::future_ops;
use crate::gil_cell::GilCell;
use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OpKind {
    Get,
    Put,
    Join,
}

impl OpKind {
    fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Join => "join",
        }
    }
}

#[derive(Default)]
struct OpState {
    /// `put`'s item, until it is in the queue.
    item: Option<Py<PyAny>>,
    /// The future yielded to the driver while waiting.
    waiter: Option<Py<PyAny>>,
    finished: bool,
}

#[pyclass(module = "ferroloop._native", frozen)]
pub struct QueueOp {
    queue: Py<QueueCore>,
    kind: OpKind,
    state: GilCell<OpState>,
}

impl QueueOp {
    fn new(queue: Py<QueueCore>, kind: OpKind, item: Option<Py<PyAny>>) -> Self {
        QueueOp {
            queue,
            kind,
            state: GilCell::new(OpState {
                item,
                ..OpState::default()
            }),
        }
    }

    pub(super) fn get(queue: Py<QueueCore>) -> Self {
        Self::new(queue, OpKind::Get, None)
    }

    pub(super) fn put(queue: Py<QueueCore>, item: Py<PyAny>) -> Self {
        Self::new(queue, OpKind::Put, Some(item))
    }

    pub(super) fn join(queue: Py<QueueCore>) -> Self {
        Self::new(queue, OpKind::Join, None)
    }

    fn which(&self) -> Which {
        match self.kind {
            OpKind::Get => Which::Getters,
            OpKind::Put => Which::Putters,
            OpKind::Join => Which::Joiners,
        }
    }

    /// Over: a later step raises; what it held is dropped (outside the cell).
    fn finish(&self, py: Python<'_>) {
        let held = self.state.with(py, |s| {
            s.finished = true;
            (s.item.take(), s.waiter.take())
        });
        drop(held);
    }

    fn step(slf: &Bound<'_, Self>) -> PyResult<Step> {
        let py = slf.py();
        let me = slf.get();
        let (finished, waiter) = me.state.with(py, |s| (s.finished, s.waiter.take()));
        if finished {
            return Err(PyRuntimeError::new_err(format!(
                "cannot reuse already awaited {}()",
                me.kind.name()
            )));
        }
        let stepped = me.run(py, waiter);
        if !matches!(stepped, Ok(Step::Yield(_))) {
            me.finish(py);
        }
        stepped
    }

    /// asyncio's coroutine body, from the top or from the `await` of
    /// `waiter`.
    fn run(&self, py: Python<'_>, waiter: Option<Py<PyAny>>) -> PyResult<Step> {
        let queue = self.queue.bind(py);
        if let Some(waiter) = waiter {
            let waiter = waiter.into_bound(py);
            // `await future`'s resumption: its result, or its exception.
            if let Err(err) = future_ops::result(&waiter) {
                self.recover(queue, &waiter)?;
                return Err(err);
            }
            if self.kind == OpKind::Join {
                return Ok(Step::Return(py.None()));
            }
        }
        let core = queue.get();
        match self.kind {
            OpKind::Get => {
                if let Some(item) = core.take(py)? {
                    return Ok(Step::Return(item));
                }
                if core.is_shutdown(py) {
                    return Err(shut_down(py)?);
                }
                self.wait(queue, true)
            }
            OpKind::Put => {
                if core.is_full(py) {
                    if core.is_shutdown(py) {
                        return Err(shut_down(py)?);
                    }
                    return self.wait(queue, true);
                }
                let item = self.state.with(py, |s| s.item.take());
                let item = item.ok_or_else(|| PyRuntimeError::new_err("put() has no item left"))?;
                core.put_now(py, item)?;
                Ok(Step::Return(py.None()))
            }
            OpKind::Join => {
                if core.unfinished(py) <= 0 {
                    return Ok(Step::Return(py.None()));
                }
                self.wait(queue, false)
            }
        }
    }

    fn wait(&self, queue: &Bound<'_, QueueCore>, bind: bool) -> PyResult<Step> {
        let py = queue.py();
        let future = QueueCore::new_waiter(queue, bind)?;
        queue
            .get()
            .waiters
            .push(py, self.which(), future.clone().unbind());
        future_ops::set_blocking(&future)?;
        let old = self
            .state
            .with(py, |s| s.waiter.replace(future.clone().unbind()));
        drop(old);
        Ok(Step::Yield(future.unbind()))
    }

    /// asyncio's `except:` around `await waiter` (get/put), or `Event.wait`'s
    /// `finally` (join).
    fn recover(&self, queue: &Bound<'_, QueueCore>, waiter: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = queue.py();
        let core = queue.get();
        let which = self.which();
        if self.kind == OpKind::Join {
            core.waiters.remove(py, which, waiter);
            return Ok(());
        }
        waiter.call_method0(intern!(py, "cancel"))?;
        core.waiters.remove(py, which, waiter);
        let can_proceed = match self.kind {
            OpKind::Get => core.items.len(py) > 0,
            _ => !core.is_full(py),
        };
        // Woken but leaving: the next waiter gets the wake-up.
        if can_proceed && !waiter.call_method0(intern!(py, "cancelled"))?.is_truthy()? {
            core.waiters.wake_next(py, which)?;
        }
        Ok(())
    }

    /// Leave: recover if waiting, and end.
    fn withdraw(&self, py: Python<'_>) -> PyResult<()> {
        let waiter = self.state.with(py, |s| s.waiter.take());
        self.finish(py);
        match waiter {
            Some(waiter) => self.recover(self.queue.bind(py), &waiter.into_bound(py)),
            None => Ok(()),
        }
    }
}

impl NativeAwaitable for QueueOp {
    const WHAT: &'static str = "a queue operation";

    fn advance(slf: &Bound<'_, Self>) -> PyResult<Step> {
        Self::step(slf)
    }

    fn withdraw(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().withdraw(slf.py())
    }
}

awaitable::native_awaitable_pymethods!(QueueOp {
    /// What a task's repr shows for its coroutine (`Queue.get`).
    #[getter]
    fn __qualname__(&self) -> String {
        format!("Queue.{}", self.kind.name())
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.kind.name()
    }

    fn __repr__(&self) -> String {
        format!("<ferroloop Queue.{}() awaitable>", self.kind.name())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.queue)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.state.with_in_gc(|s| {
                visit.call(&s.item)?;
                visit.call(&s.waiter)
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    fn __clear__(&self) {
        // SAFETY: called from `__clear__`; the references drop after it.
        let held = unsafe { self.state.with_in_gc(|s| (s.item.take(), s.waiter.take())) };
        drop(held);
    }
});

/// Give `QueueOp` its `am_send` slot (module init).
pub(super) fn install(py: Python<'_>) {
    awaitable::install_am_send::<QueueOp>(py);
}
