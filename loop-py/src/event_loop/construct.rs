//! The futures and tasks the loop makes: `create_task`, and
//! `Future(loop=self)` and `Task(coro, loop=self)` without a keyword dict
//! per call.
//!
//! asyncio's C `Future` and `Task` are types without vectorcall: calling one
//! with keywords makes CPython build a dict of them for `tp_init`, every
//! time. The loop keeps one `{"loop": self}` and passes it to
//! `PyObject_Call` instead (`tp_init` only reads it). Leaving `loop` out is
//! no cheaper: the constructor then asks for the running loop, which on 3.11
//! costs a `getpid` system call.

use super::Loop;
use crate::gil_cell::GilCell;
use crate::pyapi;
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::PyTraverseError;
use std::sync::atomic::Ordering;

/// The loop's cached `{"loop": loop}`. It refers to the loop that holds it:
/// the loop visits it for the cycle collector and drops it on close.
pub(super) struct LoopKeyword(GilCell<Option<Py<PyDict>>>);

impl LoopKeyword {
    pub(super) fn new() -> Self {
        LoopKeyword(GilCell::new(None))
    }

    /// `{"loop": slf}`, made on first use.
    #[inline(always)]
    fn get<'py>(slf: &Bound<'py, Loop>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let cell = &slf.get().loop_keyword.0;
        if let Some(kwargs) = cell.with(py, |k| k.as_ref().map(|d| d.clone_ref(py))) {
            return Ok(kwargs.into_bound(py));
        }
        // Made outside the cell: allocating can run the collector, which
        // visits the cell.
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "loop"), slf)?;
        let kept = kwargs.clone().unbind();
        let replaced = cell.with(py, |k| k.replace(kept));
        drop(replaced);
        Ok(kwargs)
    }

    /// Drop it (the loop closes, or the collector breaks the cycle).
    pub(super) fn clear(&self, py: Python<'_>) {
        let taken = self.0.with(py, Option::take);
        drop(taken);
    }

    /// # Safety
    /// Only from the loop's `__traverse__`.
    pub(super) unsafe fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the caller is `__traverse__`; the closure only visits.
        let visited = unsafe { self.0.with_in_gc(|k| visit.call(&*k)) };
        // Free-threaded: a cell held elsewhere is not visited (see
        // `Loop::__traverse__`).
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    /// `__clear__`'s [`clear`](Self::clear), without a `Python` token.
    ///
    /// # Safety
    /// Only from the loop's `__clear__`.
    pub(super) unsafe fn clear_in_gc(&self) {
        // SAFETY: the caller is `__clear__`; the dict is dropped after the
        // closure returns.
        let taken = unsafe { self.0.with_in_gc(Option::take) };
        drop(taken);
    }
}

impl Loop {
    /// asyncio's `create_task(coro, *, name=None, context=None)` (3.11 to
    /// 3.13.0), entered from `fastcall`. With no task factory the task
    /// is built here; with one, the running version's own
    /// `BaseEventLoop.create_task` decides what the factory is given
    /// (which changed between versions and patch releases). Versions whose
    /// asyncio takes `**kwargs` get the stdlib method itself (see
    /// `_loop.py`).
    #[inline(always)]
    pub(crate) fn create_task<'py>(
        slf: &Bound<'py, Self>,
        coro: &Bound<'py, PyAny>,
        name: Option<&Bound<'py, PyAny>>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get();
        this.check_closed()?;
        let given = |a: Option<&Bound<'py, PyAny>>| a.is_some_and(|a| !a.is_none());
        if !given(name) && !given(context) && !this.has_task_factory.load(Ordering::Relaxed) {
            return Loop::construct_on_loop(slf, pyapi::task_type(slf.py())?, &[coro]);
        }
        Loop::create_task_with(slf, coro, name, context)
    }

    /// [`create_task`](Self::create_task) with a task factory, a name or a
    /// context. Out of line: the usual call has none of them.
    #[cold]
    #[inline(never)]
    fn create_task_with<'py>(
        slf: &Bound<'py, Self>,
        coro: &Bound<'py, PyAny>,
        name: Option<&Bound<'py, PyAny>>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if slf.get().has_task_factory.load(Ordering::Relaxed) {
            let kw = PyDict::new(py);
            kw.set_item("name", name)?;
            kw.set_item("context", context)?;
            return pyapi::stdlib_create_task(py)?.call((slf, coro), Some(&kw));
        }
        let kw = PyDict::new(py);
        kw.set_item("loop", slf)?;
        if let Some(n) = name.filter(|n| !n.is_none()) {
            kw.set_item("name", n)?;
        }
        if let Some(c) = context.filter(|c| !c.is_none()) {
            kw.set_item("context", c)?;
        }
        pyapi::task_type(py)?.call((coro,), Some(&kw))
    }

    /// `ty(*positional, loop=self)` for asyncio's `Future` and `Task`.
    #[inline(always)]
    pub(super) fn construct_on_loop<'py>(
        slf: &Bound<'py, Self>,
        ty: &Bound<'py, PyAny>,
        positional: &[&Bound<'py, PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = LoopKeyword::get(slf)?;
        ty.call(PyTuple::new(slf.py(), positional)?, Some(&kwargs))
    }
}
