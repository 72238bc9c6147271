//! `Handle` and `TimerHandle`: what `call_soon*`, `call_later`, `call_at` and
//! `add_reader`/`add_writer` return, with asyncio's behaviour.
//!
//! Handles are frozen pyclasses: the loop reads them without borrow checks;
//! the only mutable parts are the cancelled flag (atomic) and the callback,
//! which `cancel()` drops so a cancelled handle holds no references (as
//! asyncio does, to break cycles early).

use crate::event_loop::Loop;
use crate::gil_cell::GilCell;
use crate::pyapi;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyTuple};
use pyo3::PyTraverseError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct Callback {
    func: Py<PyAny>,
    args: Py<PyTuple>,
}

/// Timer-only state, present on `TimerHandle`s.
pub struct Timer {
    pub when: f64,
    /// In the loop's heap (asyncio's `_scheduled`).
    pub scheduled: AtomicBool,
    /// Cancellations of scheduled timers, counted for heap compaction.
    cancels: Arc<AtomicUsize>,
}

#[pyclass(frozen, subclass, module = "ferroloop._native", name = "Handle")]
pub struct Handle {
    callback: GilCell<Option<Callback>>,
    context: Py<PyAny>,
    loop_: Py<PyAny>,
    cancelled: AtomicBool,
    source_traceback: Option<Py<PyAny>>,
    /// repr captured at cancel time in debug mode (asyncio's `_repr`).
    saved_repr: GilCell<Option<Py<PyAny>>>,
    pub timer: Option<Timer>,
}

/// `asyncio.TimerHandle`'s counterpart; its state lives in the base.
#[pyclass(frozen, extends = Handle, module = "ferroloop._native", name = "TimerHandle")]
pub struct TimerHandle;

/// What creating a handle needs.
pub struct NewHandle<'py> {
    pub callback: Bound<'py, PyAny>,
    pub args: Bound<'py, PyTuple>,
    pub context: Option<Bound<'py, PyAny>>,
    pub event_loop: &'py Bound<'py, PyAny>,
    pub debug: bool,
}

impl NewHandle<'_> {
    fn into_handle(self, timer: Option<Timer>) -> PyResult<Handle> {
        let py = self.callback.py();
        let context = match self.context {
            Some(ctx) if !ctx.is_none() => ctx,
            _ => pyapi::copy_current_context(py)?,
        };
        let source_traceback = if self.debug {
            Some(pyapi::extract_stack(py)?.call0()?.unbind())
        } else {
            None
        };
        Ok(Handle {
            callback: GilCell::new(Some(Callback {
                func: self.callback.unbind(),
                args: self.args.unbind(),
            })),
            context: context.unbind(),
            loop_: self.event_loop.clone().unbind(),
            cancelled: AtomicBool::new(false),
            source_traceback,
            saved_repr: GilCell::new(None),
            timer,
        })
    }

    pub fn build(self) -> PyResult<Py<Handle>> {
        let py = self.callback.py();
        Py::new(py, self.into_handle(None)?)
    }

    pub fn build_timer(self, when: f64, cancels: Arc<AtomicUsize>) -> PyResult<Py<Handle>> {
        let py = self.callback.py();
        let timer = Timer {
            when,
            scheduled: AtomicBool::new(false),
            cancels,
        };
        let init =
            PyClassInitializer::from(self.into_handle(Some(timer))?).add_subclass(TimerHandle);
        Ok(Bound::new(py, init)?.into_super().unbind())
    }
}

impl Handle {
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Run the callback in its context. Exceptions go to the loop's
    /// exception handler; only `KeyboardInterrupt` and `SystemExit` (and a
    /// failure of the handler itself to run) are returned.
    pub fn run(slf: &Bound<'_, Handle>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        if this.is_cancelled() {
            return Ok(());
        }
        // Own references for the call: the callback may cancel its handle.
        let callback = this.callback.with(py, |cb| {
            cb.as_ref()
                .map(|cb| (cb.func.clone_ref(py), cb.args.clone_ref(py)))
        });
        let Some((func, args)) = callback else {
            return Ok(());
        };
        let (func, args) = (func.into_bound(py), args.into_bound(py));
        match pyapi::run_in_context(this.context.bind(py), &func, &args) {
            Ok(()) => Ok(()),
            Err(err) => report_callback_error(slf, &func, &args, err),
        }
    }

    pub fn event_loop<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.loop_.bind(py)
    }
}

fn is_exit_exception(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<PyKeyboardInterrupt>(py) || err.is_instance_of::<PySystemExit>(py)
}

/// asyncio's `Handle._run` error path.
fn report_callback_error(
    slf: &Bound<'_, Handle>,
    func: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    err: PyErr,
) -> PyResult<()> {
    let py = slf.py();
    if is_exit_exception(py, &err) {
        return Err(err);
    }
    // The exception object carries its traceback into the handler.
    let exc = err.into_value(py);
    let report = || -> PyResult<()> {
        let source = pyapi::format_callback_source(py)?.call1((func, args))?;
        let context = PyDict::new(py);
        context.set_item("message", format!("Exception in callback {source}"))?;
        context.set_item("exception", exc.bind(py))?;
        context.set_item("handle", slf)?;
        if let Some(tb) = &slf.get().source_traceback {
            context.set_item("source_traceback", tb.bind(py))?;
        }
        slf.get()
            .loop_
            .bind(py)
            .call_method1("call_exception_handler", (context,))?;
        Ok(())
    };
    match report() {
        Err(e) if is_exit_exception(py, &e) => Err(e),
        // The handler could not even be called: never lose the error.
        Err(e) => {
            e.write_unraisable(py, Some(slf.as_any()));
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

#[pymethods]
impl Handle {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.context)?;
        visit.call(&self.loop_)?;
        visit.call(&self.source_traceback)?;
        // SAFETY: we are in `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.callback.with_in_gc(|cb| match cb {
                Some(cb) => visit.call(&cb.func).and_then(|()| visit.call(&cb.args)),
                None => Ok(()),
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited?;
        // SAFETY: as above.
        let visited = unsafe { self.saved_repr.with_in_gc(|r| visit.call(&*r)) };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    /// Break cycles through the callback (the only mutable reference).
    fn __clear__(&self) {
        // SAFETY: we are in `__clear__`; the taken callback is dropped after
        // the closure returns.
        let callback = unsafe { self.callback.with_in_gc(Option::take) };
        drop(callback);
    }

    /// Cancel the callback; a no-op if it already ran or was cancelled.
    fn cancel(slf: &Bound<'_, Self>) -> PyResult<()> {
        cancel_handle(slf)
    }

    fn cancelled(&self) -> bool {
        self.is_cancelled()
    }

    fn get_context(&self, py: Python<'_>) -> Py<PyAny> {
        self.context.clone_ref(py)
    }

    /// Run now, as asyncio's private `Handle._run()` (used by some tests).
    fn _run(slf: &Bound<'_, Self>) -> PyResult<()> {
        Handle::run(slf)
    }

    #[getter]
    fn _callback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.callback
            .with(py, |cb| cb.as_ref().map(|cb| cb.func.clone_ref(py)))
    }

    #[getter]
    fn _args(&self, py: Python<'_>) -> Option<Py<PyTuple>> {
        self.callback
            .with(py, |cb| cb.as_ref().map(|cb| cb.args.clone_ref(py)))
    }

    #[getter]
    fn _cancelled(&self) -> bool {
        self.is_cancelled()
    }

    #[getter]
    fn _loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.loop_.clone_ref(py)
    }

    #[getter]
    fn _context(&self, py: Python<'_>) -> Py<PyAny> {
        self.context.clone_ref(py)
    }

    #[getter]
    fn _source_traceback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.source_traceback.as_ref().map(|tb| tb.clone_ref(py))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(saved) = slf
            .get()
            .saved_repr
            .with(py, |r| r.as_ref().map(|r| r.clone_ref(py)))
        {
            return Ok(saved);
        }
        Ok(pyapi::handle_repr(py)?.call1((slf,))?.unbind())
    }
}

/// asyncio's `Handle.cancel`: mark cancelled, keep the repr in debug mode
/// (for "Executing <Handle …> took …" lines), then drop the callback's
/// references. Call only while no loop state is borrowed.
pub fn cancel_handle(slf: &Bound<'_, Handle>) -> PyResult<()> {
    let py = slf.py();
    let this = slf.get();
    if this.cancelled.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    if let Some(timer) = &this.timer {
        if timer.scheduled.load(Ordering::Acquire) {
            timer.cancels.fetch_add(1, Ordering::AcqRel);
        }
    }
    let debug = match this.loop_.bind(py).cast::<Loop>() {
        Ok(event_loop) => event_loop.get().get_debug(),
        Err(_) => false,
    };
    if debug {
        let repr = pyapi::handle_repr(py)?.call1((slf,))?.unbind();
        let old = this.saved_repr.with(py, |r| r.replace(repr));
        drop(old);
    }
    let callback = this.callback.with(py, Option::take);
    drop(callback);
    Ok(())
}

#[pymethods]
impl TimerHandle {
    fn when(slf: &Bound<'_, Self>) -> f64 {
        timer_of(slf).when
    }

    #[getter]
    fn _when(slf: &Bound<'_, Self>) -> f64 {
        timer_of(slf).when
    }

    #[getter]
    fn _scheduled(slf: &Bound<'_, Self>) -> bool {
        timer_of(slf).scheduled.load(Ordering::Acquire)
    }

    /// `hash(self.when())`, as asyncio.
    fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
        PyFloat::new(slf.py(), timer_of(slf).when).hash()
    }

    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Ok(other) = other.cast::<TimerHandle>() else {
            return Ok(py.NotImplemented());
        };
        let (a, b) = (timer_of(slf).when, timer_of(other).when);
        let result = match op {
            CompareOp::Lt => a < b,
            CompareOp::Le => a < b || timer_eq(slf, other)?,
            CompareOp::Gt => a > b,
            CompareOp::Ge => a > b || timer_eq(slf, other)?,
            CompareOp::Eq => timer_eq(slf, other)?,
            CompareOp::Ne => !timer_eq(slf, other)?,
        };
        Ok(PyBool::new(py, result).to_owned().into_any().unbind())
    }
}

fn timer_of<'a>(slf: &'a Bound<'_, TimerHandle>) -> &'a Timer {
    slf.as_super()
        .get()
        .timer
        .as_ref()
        .expect("a TimerHandle is always built with timer state")
}

/// asyncio's `TimerHandle.__eq__`: same deadline, callback, args and state.
fn timer_eq(a: &Bound<'_, TimerHandle>, b: &Bound<'_, TimerHandle>) -> PyResult<bool> {
    let (ha, hb) = (a.as_super().get(), b.as_super().get());
    if timer_of(a).when != timer_of(b).when || ha.is_cancelled() != hb.is_cancelled() {
        return Ok(false);
    }
    let py = a.py();
    let ca = ha._callback(py);
    let cb = hb._callback(py);
    let same_cb = match (&ca, &cb) {
        (Some(x), Some(y)) => x.bind(py).eq(y.bind(py))?,
        (None, None) => true,
        _ => false,
    };
    let same_args = match (ha._args(py), hb._args(py)) {
        (Some(x), Some(y)) => x.bind(py).eq(y.bind(py))?,
        (None, None) => true,
        _ => false,
    };
    Ok(same_cb && same_args)
}
