//! `AppTask`: drives one request's app coroutine, stepping it eagerly.
//!
//! On CPython 3.11 an `asyncio.Task` per request costs about 1.2 µs
//! (registration in a Python-level `WeakSet`, a scheduled first step, a
//! done callback) — more than the rest of the request's Python work. An
//! `AppTask` runs the coroutine's first step at once, inside the read
//! callback, so an app that answers without waiting never touches the ready
//! queue. When the coroutine awaits a future, the task waits on it exactly
//! as `asyncio.Task.__step`/`__wakeup` do, in its own copied context, and is
//! `asyncio.current_task()` while it runs, with `cancel`, `cancelling`,
//! `uncancel`, done callbacks and `_fut_waiter` (anyio's cancel scopes and
//! `asyncio.timeout` rely on these). It is not an `asyncio.Task` instance
//! and not in `asyncio.all_tasks()` (docs/loop.md: differences from asyncio).

use super::owner::TaskOwner;
use crate::event_loop::Loop;
use crate::pyapi;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PySystemExit};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

enum Outcome {
    Pending,
    Result(Py<PyAny>),
    Error(Py<PyAny>),
    Cancelled,
}

#[pyclass(weakref, module = "ferroloop._native")]
pub struct AppTask {
    coro: Option<Py<PyAny>>,
    context: Py<PyAny>,
    event_loop: Py<Loop>,
    /// The connection's exchange the app serves.
    owner: Option<Arc<dyn TaskOwner>>,
    fut_waiter: Option<Py<PyAny>>,
    must_cancel: bool,
    cancel_message: Option<Py<PyAny>>,
    cancels_requested: u64,
    outcome: Outcome,
    callbacks: Vec<(Py<PyAny>, Option<Py<PyAny>>)>,
    name: Option<Py<PyAny>>,
    wakeup: Option<Py<PyAny>>,
}

/// What a step of the coroutine produced.
enum Stepped {
    Yielded(Py<PyAny>),
    Returned(Py<PyAny>),
    Raised(PyErr),
}

impl AppTask {
    /// Make the task (its first step is `first_step`), in a copy of the
    /// current context, or a new empty one when `fresh_context`
    /// (`reset_contextvars`).
    pub(super) fn new(
        py: Python<'_>,
        coro: Bound<'_, PyAny>,
        event_loop: Py<Loop>,
        owner: Arc<dyn TaskOwner>,
        fresh_context: bool,
    ) -> PyResult<Py<AppTask>> {
        let context = if fresh_context {
            pyapi::new_context(py)?
        } else {
            pyapi::copy_current_context(py)?
        }
        .unbind();
        let task = Py::new(
            py,
            AppTask {
                coro: Some(coro.unbind()),
                context,
                event_loop,
                owner: Some(owner),
                fut_waiter: None,
                must_cancel: false,
                cancel_message: None,
                cancels_requested: 0,
                outcome: Outcome::Pending,
                callbacks: Vec::new(),
                name: None,
                wakeup: None,
            },
        )?;
        Ok(task)
    }

    /// Run the first step now, in the caller's (read callback's) turn.
    pub(super) fn first_step(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::step(slf, None)
    }

    pub(super) fn is_done(&self) -> bool {
        !matches!(self.outcome, Outcome::Pending)
    }

    /// Step again now: what the task waits on (a native awaitable, which
    /// resumes the task itself) is ready, and no task is running.
    pub(super) fn resume(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::step(slf, None)
    }

    /// `asyncio.Task.__step`.
    fn step<'py>(slf: &Bound<'py, Self>, mut exc: Option<Bound<'py, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let (coro, context, event_loop) = {
            let mut me = slf.borrow_mut();
            if me.is_done() {
                return Ok(());
            }
            if me.must_cancel {
                me.must_cancel = false;
                let msg = me.cancel_message.as_ref().map(|m| m.clone_ref(py));
                let err = match msg {
                    Some(m) => pyapi::cancelled_error(py)?.call1((m,))?,
                    None => pyapi::cancelled_error(py)?.call0()?,
                };
                exc = Some(err);
            }
            me.fut_waiter = None;
            let Some(coro) = me.coro.as_ref().map(|c| c.clone_ref(py)) else {
                return Ok(());
            };
            (coro, me.context.clone_ref(py), me.event_loop.clone_ref(py))
        };
        let stepped = Self::run_step(
            slf,
            coro.bind(py),
            context.bind(py),
            event_loop.bind(py),
            exc,
        )?;
        match stepped {
            Stepped::Returned(value) => {
                // Cancelled during its last step: cancelled, as in asyncio.
                let cancelled = std::mem::take(&mut slf.borrow_mut().must_cancel);
                if cancelled {
                    Self::finish(slf, Outcome::Cancelled)
                } else {
                    Self::finish(slf, Outcome::Result(value))
                }
            }
            Stepped::Raised(err) => {
                if err.is_instance(py, pyapi::cancelled_error(py)?) {
                    Self::finish(slf, Outcome::Cancelled)
                } else if err.is_instance_of::<PyKeyboardInterrupt>(py)
                    || err.is_instance_of::<PySystemExit>(py)
                {
                    Self::finish(
                        slf,
                        Outcome::Error(err.value(py).clone().into_any().unbind()),
                    )?;
                    Err(err)
                } else {
                    Self::finish(
                        slf,
                        Outcome::Error(err.value(py).clone().into_any().unbind()),
                    )
                }
            }
            Stepped::Yielded(obj) => {
                Self::wait_on(slf, obj.into_bound(py))?;
                // The app waits: what it has sent so far (a response head,
                // a streamed event) goes out now rather than with the next
                // body message.
                let owner = slf.borrow().owner.clone();
                if let Some(owner) = owner {
                    owner.app_waits(py)?;
                }
                Ok(())
            }
        }
    }

    /// One `send`/`throw` into the coroutine, as the current task, in the
    /// task's context.
    fn run_step(
        slf: &Bound<'_, Self>,
        coro: &Bound<'_, PyAny>,
        context: &Bound<'_, PyAny>,
        event_loop: &Bound<'_, Loop>,
        exc: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Stepped> {
        let py = slf.py();
        // SAFETY: `context` is an exact Context (copy_current_context made
        // it); Enter fails with RuntimeError if it is already entered (a
        // step re-entering its own task), which we report. Exit follows
        // every successful Enter exactly once.
        if unsafe { ffi::PyContext_Enter(context.as_ptr()) } < 0 {
            return Err(PyErr::fetch(py));
        }
        let entered = pyapi::enter_task(py)
            .and_then(|f| pyapi::vectorcall(f, &[event_loop.as_any(), slf.as_any()]));
        let stepped = match entered {
            Err(e) => Stepped::Raised(e),
            Ok(_) => {
                // A PyO3 panic raised inside the step resumes as a Rust
                // panic when its error is fetched: catch it so the task is
                // left and the context exited, then let it go on.
                let stepped = catch_unwind(AssertUnwindSafe(|| match exc {
                    None => {
                        let mut result: *mut ffi::PyObject = std::ptr::null_mut();
                        // SAFETY: `coro` is live; PyIter_Send returns a new
                        // reference in `result` for NEXT/RETURN and sets an
                        // exception for ERROR.
                        let status =
                            unsafe { ffi::PyIter_Send(coro.as_ptr(), ffi::Py_None(), &mut result) };
                        match status {
                            ffi::PySendResult::PYGEN_NEXT => {
                                // SAFETY: a new reference (see above).
                                Stepped::Yielded(
                                    unsafe { Bound::from_owned_ptr(py, result) }.unbind(),
                                )
                            }
                            ffi::PySendResult::PYGEN_RETURN => {
                                // SAFETY: a new reference (see above).
                                Stepped::Returned(
                                    unsafe { Bound::from_owned_ptr(py, result) }.unbind(),
                                )
                            }
                            _ => Stepped::Raised(PyErr::fetch(py)),
                        }
                    }
                    Some(exc) => match coro.call_method1(intern!(py, "throw"), (exc,)) {
                        Ok(obj) => Stepped::Yielded(obj.unbind()),
                        Err(e) if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) => {
                            match e.value(py).getattr(intern!(py, "value")) {
                                Ok(value) => Stepped::Returned(value.unbind()),
                                Err(e) => Stepped::Raised(e),
                            }
                        }
                        Err(e) => Stepped::Raised(e),
                    },
                }));
                let left = pyapi::leave_task(py)
                    .and_then(|f| pyapi::vectorcall(f, &[event_loop.as_any(), slf.as_any()]));
                if let Err(e) = left {
                    // SAFETY: balance the Enter above before reporting.
                    unsafe { ffi::PyContext_Exit(context.as_ptr()) };
                    return Err(e);
                }
                match stepped {
                    Ok(stepped) => stepped,
                    Err(panic) => {
                        // SAFETY: balance the Enter above before unwinding.
                        unsafe { ffi::PyContext_Exit(context.as_ptr()) };
                        std::panic::resume_unwind(panic);
                    }
                }
            }
        };
        // SAFETY: matches the successful Enter above.
        if unsafe { ffi::PyContext_Exit(context.as_ptr()) } < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(stepped)
    }

    /// The coroutine yielded: wait on the future (or go again after a bare
    /// `yield`), as `Task.__step` does.
    fn wait_on(slf: &Bound<'_, Self>, obj: Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        if obj.is_none() {
            let again = slf.getattr(intern!(py, "_step"))?;
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_soon"), (again,))?;
            return Ok(());
        }
        if is_self_resuming(&obj) {
            // A native `receive()` awaitable: it resumes the task itself
            // (no done callback); it is the waiter `cancel()` cancels.
            let (must_cancel, msg) = {
                let mut me = slf.borrow_mut();
                me.fut_waiter = Some(obj.clone().unbind());
                (
                    me.must_cancel,
                    me.cancel_message.as_ref().map(|m| m.clone_ref(py)),
                )
            };
            if must_cancel
                && obj
                    .call_method1(intern!(py, "cancel"), (msg,))?
                    .is_truthy()?
            {
                slf.borrow_mut().must_cancel = false;
            }
            return Ok(());
        }
        let blocking = obj.getattr_opt(intern!(py, "_asyncio_future_blocking"))?;
        let is_future = match &blocking {
            Some(b) => !b.is_none(),
            None => false,
        };
        if !is_future
            || !blocking
                .map(|b| b.is_truthy())
                .transpose()?
                .unwrap_or(false)
        {
            let msg = if is_future {
                format!(
                    "yield was used instead of yield from in task {} with {}",
                    slf.repr()?,
                    obj.repr()?
                )
            } else {
                format!("Task got bad yield: {}", obj.repr()?)
            };
            let err = PyRuntimeError::new_err(msg).into_value(py);
            let again = slf.getattr(intern!(py, "_step"))?;
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_soon"), (again, err))?;
            return Ok(());
        }
        let own_loop = obj.call_method0(intern!(py, "get_loop"))?;
        if !own_loop.is(event_loop.bind(py)) {
            let err = PyRuntimeError::new_err(format!(
                "Task {} got Future {} attached to a different loop",
                slf.repr()?,
                obj.repr()?
            ))
            .into_value(py);
            let again = slf.getattr(intern!(py, "_step"))?;
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_soon"), (again, err))?;
            return Ok(());
        }
        obj.setattr(intern!(py, "_asyncio_future_blocking"), false)?;
        let wakeup = {
            let cached = slf.borrow().wakeup.as_ref().map(|w| w.clone_ref(py));
            match cached {
                Some(w) => w,
                None => {
                    let w = slf.getattr(intern!(py, "_wakeup"))?.unbind();
                    slf.borrow_mut().wakeup = Some(w.clone_ref(py));
                    w
                }
            }
        };
        obj.call_method1(intern!(py, "add_done_callback"), (wakeup,))?;
        let (must_cancel, msg) = {
            let mut me = slf.borrow_mut();
            me.fut_waiter = Some(obj.clone().unbind());
            (
                me.must_cancel,
                me.cancel_message.as_ref().map(|m| m.clone_ref(py)),
            )
        };
        if must_cancel
            && obj
                .call_method1(intern!(py, "cancel"), (msg,))?
                .is_truthy()?
        {
            slf.borrow_mut().must_cancel = false;
        }
        Ok(())
    }

    fn finish(slf: &Bound<'_, Self>, outcome: Outcome) -> PyResult<()> {
        let py = slf.py();
        // The finished coroutine stays (`get_coro()` returns it, as on a
        // Task); its frame is already gone.
        let (callbacks, owner, event_loop) = {
            let mut me = slf.borrow_mut();
            me.outcome = outcome;
            me.fut_waiter = None;
            (
                std::mem::take(&mut me.callbacks),
                me.owner.take(),
                me.event_loop.clone_ref(py),
            )
        };
        // The wakeup bound method refers back to the task: break the cycle.
        let wakeup = slf.borrow_mut().wakeup.take();
        drop(wakeup);
        for (callback, context) in callbacks {
            Self::schedule_callback(slf, event_loop.bind(py), callback, context)?;
        }
        if let Some(owner) = owner {
            let (error, cancelled) = {
                let me = slf.borrow();
                match &me.outcome {
                    Outcome::Error(e) => (Some(e.clone_ref(py)), false),
                    Outcome::Cancelled => (None, true),
                    _ => (None, false),
                }
            };
            owner.app_finished(py, error.map(|e| e.into_bound(py)), cancelled)?;
        }
        Ok(())
    }

    fn schedule_callback(
        slf: &Bound<'_, Self>,
        event_loop: &Bound<'_, Loop>,
        callback: Py<PyAny>,
        context: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let kwargs = pyo3::types::PyDict::new(py);
        if let Some(ctx) = context {
            kwargs.set_item(intern!(py, "context"), ctx)?;
        }
        event_loop.call_method(intern!(py, "call_soon"), (callback, slf), Some(&kwargs))?;
        Ok(())
    }

    fn not_done_error(py: Python<'_>, what: &str) -> PyResult<PyErr> {
        Ok(PyErr::from_value(
            pyapi::invalid_state_error(py)?.call1((what,))?,
        ))
    }

    fn cancelled_err(py: Python<'_>) -> PyResult<PyErr> {
        Ok(PyErr::from_value(pyapi::cancelled_error(py)?.call0()?))
    }
}

#[pymethods]
impl AppTask {
    #[pyo3(signature = (exc=None))]
    fn _step(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        Self::step(slf, exc)
    }

    /// `asyncio.Task.__wakeup`.
    fn _wakeup(slf: &Bound<'_, Self>, future: &Bound<'_, PyAny>) -> PyResult<()> {
        match future.call_method0(intern!(slf.py(), "result")) {
            Ok(_) => Self::step(slf, None),
            Err(e) => Self::step(slf, Some(e.value(slf.py()).clone().into_any())),
        }
    }

    #[pyo3(signature = (msg=None))]
    fn cancel(slf: &Bound<'_, Self>, msg: Option<Py<PyAny>>) -> PyResult<bool> {
        let py = slf.py();
        let waiter = {
            let mut me = slf.borrow_mut();
            if me.is_done() {
                return Ok(false);
            }
            me.cancels_requested += 1;
            me.fut_waiter.as_ref().map(|w| w.clone_ref(py))
        };
        if let Some(waiter) = waiter {
            if waiter
                .bind(py)
                .call_method1(
                    intern!(py, "cancel"),
                    (msg.as_ref().map(|m| m.clone_ref(py)),),
                )?
                .is_truthy()?
            {
                // The wakeup throws CancelledError into the coroutine.
                return Ok(true);
            }
        }
        let mut me = slf.borrow_mut();
        me.must_cancel = true;
        me.cancel_message = msg;
        Ok(true)
    }

    fn cancelling(&self) -> u64 {
        self.cancels_requested
    }

    fn uncancel(&mut self) -> u64 {
        if self.cancels_requested > 0 {
            self.cancels_requested -= 1;
            // 3.13's Task also withdraws a cancellation not yet delivered
            // when the count returns to zero (CPython gh-116720).
            if cfg!(Py_3_13) && self.cancels_requested == 0 {
                self.must_cancel = false;
            }
        }
        self.cancels_requested
    }

    fn done(&self) -> bool {
        self.is_done()
    }

    fn cancelled(&self) -> bool {
        matches!(self.outcome, Outcome::Cancelled)
    }

    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.outcome {
            Outcome::Pending => Err(Self::not_done_error(py, "Result is not set.")?),
            Outcome::Result(v) => Ok(v.clone_ref(py)),
            Outcome::Error(e) => Err(PyErr::from_value(e.bind(py).clone())),
            Outcome::Cancelled => Err(Self::cancelled_err(py)?),
        }
    }

    fn exception(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.outcome {
            Outcome::Pending => Err(Self::not_done_error(py, "Exception is not set.")?),
            Outcome::Result(_) => Ok(None),
            Outcome::Error(e) => Ok(Some(e.clone_ref(py))),
            Outcome::Cancelled => Err(Self::cancelled_err(py)?),
        }
    }

    #[pyo3(signature = (callback, *, context=None))]
    fn add_done_callback(
        slf: &Bound<'_, Self>,
        callback: Py<PyAny>,
        context: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if slf.borrow().is_done() {
            let event_loop = slf.borrow().event_loop.clone_ref(py);
            return Self::schedule_callback(slf, event_loop.bind(py), callback, context);
        }
        slf.borrow_mut().callbacks.push((callback, context));
        Ok(())
    }

    fn remove_done_callback(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<usize> {
        let callbacks = std::mem::take(&mut slf.borrow_mut().callbacks);
        let mut kept = Vec::with_capacity(callbacks.len());
        let mut removed = 0;
        for (cb, ctx) in callbacks {
            if cb.bind(slf.py()).eq(callback)? {
                removed += 1;
            } else {
                kept.push((cb, ctx));
            }
        }
        slf.borrow_mut().callbacks = kept;
        Ok(removed)
    }

    fn get_loop(&self, py: Python<'_>) -> Py<Loop> {
        self.event_loop.clone_ref(py)
    }

    fn get_coro(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.coro.as_ref().map(|c| c.clone_ref(py))
    }

    fn get_context(&self, py: Python<'_>) -> Py<PyAny> {
        self.context.clone_ref(py)
    }

    fn get_name(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(name) = slf.borrow().name.as_ref() {
            return Ok(name.clone_ref(py));
        }
        let name = format!("ferroloop-request-{:x}", slf.as_ptr() as usize)
            .into_pyobject(py)?
            .into_any()
            .unbind();
        slf.borrow_mut().name = Some(name.clone_ref(py));
        Ok(name)
    }

    fn set_name(&mut self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.name = Some(value.str()?.into_any().unbind());
        let _ = py;
        Ok(())
    }

    #[pyo3(signature = (*, limit=None))]
    fn get_stack<'py>(
        &self,
        py: Python<'py>,
        limit: Option<Bound<'py, PyAny>>,
    ) -> Bound<'py, PyList> {
        let _ = limit;
        PyList::empty(py)
    }

    #[getter]
    fn _fut_waiter(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.fut_waiter.as_ref().map(|w| w.clone_ref(py))
    }

    #[getter]
    fn _loop(&self, py: Python<'_>) -> Py<Loop> {
        self.event_loop.clone_ref(py)
    }

    #[getter]
    fn _must_cancel(&self) -> bool {
        self.must_cancel
    }

    #[getter]
    fn _coro(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.get_coro(py)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let state = match slf.borrow().outcome {
            Outcome::Pending => "pending",
            Outcome::Cancelled => "cancelled",
            _ => "finished",
        };
        let name = Self::get_name(slf)?;
        Ok(format!(
            "<AppTask {state} name={}>",
            name.bind(slf.py()).repr()?
        ))
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(c) = &self.coro {
            visit.call(c)?;
        }
        if let Some(w) = &self.fut_waiter {
            visit.call(w)?;
        }
        if let Some(w) = &self.wakeup {
            visit.call(w)?;
        }
        for (cb, ctx) in &self.callbacks {
            visit.call(cb)?;
            if let Some(ctx) = ctx {
                visit.call(ctx)?;
            }
        }
        if let Outcome::Result(v) | Outcome::Error(v) = &self.outcome {
            visit.call(v)?;
        }
        if let Some(owner) = &self.owner {
            owner.traverse(&visit)?;
        }
        visit.call(&self.context)?;
        if let Some(m) = &self.cancel_message {
            visit.call(m)?;
        }
        if let Some(n) = &self.name {
            visit.call(n)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.coro = None;
        self.fut_waiter = None;
        self.wakeup = None;
        self.callbacks.clear();
        self.owner = None;
        self.cancel_message = None;
        self.name = None;
    }
}

/// The type of a native awaitable that resumes its task itself, with no
/// done callback: the WebSocket `receive()`'s, registered by the layer
/// above (asgi::ws) so this module need not know it.
static SELF_RESUMING: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub(super) fn register_self_resuming(ty: &Bound<'_, PyType>) {
    let _ = SELF_RESUMING.set(ty.py(), ty.clone().unbind());
}

pub(super) fn is_self_resuming(obj: &Bound<'_, PyAny>) -> bool {
    SELF_RESUMING
        .get(obj.py())
        .is_some_and(|ty| obj.get_type().is(ty.bind(obj.py())))
}
