//! `Handle` and `TimerHandle`: what `call_soon*`, `call_later`, `call_at` and
//! `add_reader`/`add_writer` return, with asyncio's behaviour.
//!
//! Both are frozen pyclasses over a shared [`Core`]: the loop reads them
//! without borrow checks; the mutable parts are the cancelled flag (atomic)
//! and the references (a [`GilCell`]). `cancel()` drops the callback so a
//! cancelled handle holds no references to it (as asyncio does, to break
//! cycles early).
//!
//! The two classes are siblings, not base and subclass as in asyncio: the
//! loop holds either through [`AnyHandle`], and neither needs a downcast.
//! Both take part in Python's cycle collector (`__traverse__`/`__clear__`)
//! and support weak references, as asyncio's do.
//!
//! `call_soon` handles are the loop's hottest allocation (every task step and
//! future callback makes one, and almost every caller drops it at once). The
//! loop recycles them ([`HandlePool`](crate::handle_pool::HandlePool)): when it lets go of a handle nobody
//! else holds, the handle is emptied and reused by a later `call_soon`,
//! skipping allocation and the cycle collector's bookkeeping. While queued
//! they are also kept off the collector's lists ([`untrack_while_queued`]).

use crate::call_args::CallArgs;
use crate::event_loop::{IoPort, Loop, NativeWork};
use crate::gil_cell::GilCell;
use crate::handle_tracking::is_sole_reference;
pub use crate::handle_tracking::{release_timer, track, untrack_while_queued, visit_owned};
use crate::pyapi;
use crate::shared_context::{self, Sharing, Snapshot};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PySystemExit};
use pyo3::gc::PyVisit;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyTuple};
use pyo3::PyTraverseError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct Callback {
    func: Py<PyAny>,
    args: CallArgs,
}

/// A handle's references. All `None` only while a handle waits in a
/// [`HandlePool`](crate::handle_pool::HandlePool).
#[derive(Default)]
pub struct Fields {
    callback: Option<Callback>,
    context: Option<Py<PyAny>>,
    /// `context` is the loop's shared implicit snapshot: run in a copy, and
    /// hand out a private copy (see `shared_context`).
    context_shared: bool,
    loop_: Option<Py<PyAny>>,
    source_traceback: Option<Py<PyAny>>,
    /// repr captured at cancel time in debug mode (asyncio's `_repr`).
    saved_repr: Option<Py<PyAny>>,
}

impl Fields {
    #[inline]
    fn is_empty(&self) -> bool {
        self.callback.is_none()
            && self.context.is_none()
            && self.loop_.is_none()
            && self.source_traceback.is_none()
            && self.saved_repr.is_none()
    }

    /// Drop the references knowing the GIL is held: a `Bound` decrefs
    /// directly, where dropping a `Py` first asks a thread-local whether
    /// the thread is attached (a `__tls_get_addr` call in a shared library).
    #[inline(always)]
    fn drop_attached(self, py: Python<'_>) {
        let Fields {
            callback,
            context,
            context_shared: _,
            loop_,
            source_traceback,
            saved_repr,
        } = self;
        if let Some(Callback { func, args }) = callback {
            drop(func.into_bound(py));
            args.drop_attached(py);
        }
        // One by one, not through an array: this runs once per callback.
        if let Some(obj) = context {
            drop(obj.into_bound(py));
        }
        if let Some(obj) = loop_ {
            drop(obj.into_bound(py));
        }
        if source_traceback.is_some() || saved_repr.is_some() {
            drop_debug_fields(py, source_traceback, saved_repr);
        }
    }
}

/// The fields only debug mode and `cancel()` fill.
#[cold]
#[inline(never)]
fn drop_debug_fields(py: Python<'_>, a: Option<Py<PyAny>>, b: Option<Py<PyAny>>) {
    for obj in [a, b].into_iter().flatten() {
        drop(obj.into_bound(py));
    }
}

/// State shared by both handle classes.
pub struct Core {
    fields: GilCell<Fields>,
    cancelled: AtomicBool,
}

/// A `call_soon`, fd or signal handle.
#[pyclass(frozen, weakref, module = "ferroloop._native", name = "Handle")]
pub struct Handle {
    core: Core,
}

/// A `call_later`/`call_at` handle.
#[pyclass(frozen, weakref, module = "ferroloop._native", name = "TimerHandle")]
pub struct TimerHandle {
    core: Core,
    pub when: f64,
    /// In the loop's heap (asyncio's `_scheduled`).
    pub scheduled: AtomicBool,
    /// Cancellations of scheduled timers, counted for heap compaction.
    cancels: Arc<AtomicUsize>,
}

/// Either kind, as the ready queue and the injector hold them, a native
/// owner's readiness ([`IoPort`]: queued by the tick only), or Rust work
/// sent through the loop's door (see `event_loop::door`).
pub enum AnyHandle {
    Plain(Py<Handle>),
    Timer(Py<TimerHandle>),
    Io(Py<IoPort>),
    Native(NativeWork),
}

impl AnyHandle {
    /// The core of a Python handle (an I/O port or native work has none).
    pub fn core(&self) -> Option<&Core> {
        match self {
            AnyHandle::Plain(h) => Some(&h.get().core),
            AnyHandle::Timer(h) => Some(&h.get().core),
            AnyHandle::Io(_) | AnyHandle::Native(_) => None,
        }
    }

    /// The handle object (none for native work).
    pub fn bind<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyAny>> {
        match self {
            AnyHandle::Plain(h) => Some(h.bind(py).as_any()),
            AnyHandle::Timer(h) => Some(h.bind(py).as_any()),
            AnyHandle::Io(port) => Some(port.bind(py).as_any()),
            AnyHandle::Native(_) => None,
        }
    }

    /// The loop's `__traverse__` visit of a handle it queues (see
    /// [`visit_owned`]).
    pub fn visit_owned(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            AnyHandle::Plain(h) => visit_owned(h, &h.get().core, visit),
            AnyHandle::Timer(h) => Self::visit_timer(h, visit),
            AnyHandle::Io(port) => visit.call(port),
            // Its references are out of the collector's sight while queued.
            AnyHandle::Native(_) => Ok(()),
        }
    }

    /// [`visit_owned`] for a timer the loop holds in its heap.
    pub fn visit_timer(
        timer: &Py<TimerHandle>,
        visit: &PyVisit<'_>,
    ) -> Result<(), PyTraverseError> {
        visit_owned(timer, &timer.get().core, visit)
    }

    /// The loop lets go of a handle (it ran, was skipped, or the loop
    /// closed). A `call_soon` handle nobody else holds is emptied and
    /// returned for the loop's [`HandlePool`](crate::handle_pool::HandlePool); one that someone holds goes
    /// back on the cycle collector's lists (see [`untrack_while_queued`]).
    /// Call with no loop state borrowed: emptying drops references.
    #[inline(always)]
    pub fn release(self, py: Python<'_>) -> Option<Py<Handle>> {
        let handle = match self {
            AnyHandle::Plain(handle) => handle,
            AnyHandle::Timer(timer) => {
                release_timer(timer.into_bound(py));
                return None;
            }
            AnyHandle::Io(port) => {
                drop(port.into_bound(py));
                return None;
            }
            AnyHandle::Native(_) => return None,
        };
        let obj = handle.bind(py).as_any();
        if cfg!(not(Py_GIL_DISABLED)) && is_sole_reference(obj) {
            // Emptied already when it ran on its own references (`run_sole`).
            let fields = handle
                .get()
                .core
                .fields
                .with(py, |f| (!f.is_empty()).then(|| std::mem::take(f)));
            let Some(fields) = fields else {
                return Some(handle);
            };
            fields.drop_attached(py);
            // Dropping the fields ran arbitrary code; nothing can reach an
            // untracked, unreferenced handle, but check rather than assume.
            if is_sole_reference(obj) {
                return Some(handle);
            }
        }
        track(obj);
        drop(handle.into_bound(py));
        None
    }

    /// Run it (see [`Core::run`]) for `event_loop`, whose snapshot is
    /// `snapshot`. `shown_after`: the handle is shown after the run (debug
    /// mode's slow-callback line), so it must keep its callback.
    #[inline(always)]
    pub fn run(
        &self,
        py: Python<'_>,
        event_loop: &Bound<'_, PyAny>,
        snapshot: &GilCell<Snapshot>,
        shown_after: bool,
    ) -> PyResult<()> {
        let (this, core) = match self {
            AnyHandle::Plain(h) => (h.bind(py).as_any(), &h.get().core),
            AnyHandle::Timer(h) => (h.bind(py).as_any(), &h.get().core),
            AnyHandle::Io(port) => return IoPort::run(port.bind(py), event_loop),
            AnyHandle::Native(work) => {
                work.run(py);
                return Ok(());
            }
        };
        if !shown_after && cfg!(not(Py_GIL_DISABLED)) && is_sole_reference(this) {
            return core.run_sole(this, snapshot);
        }
        core.run(this, Some(snapshot))
    }
}

/// What creating a handle needs.
pub struct NewHandle<'py> {
    pub callback: Bound<'py, PyAny>,
    pub args: CallArgs,
    pub context: Option<Bound<'py, PyAny>>,
    pub event_loop: &'py Bound<'py, PyAny>,
    pub debug: bool,
    /// The loop's snapshot, for a handle that may share it (`call_soon*`);
    /// `None` gives an implicit context a private copy.
    pub sharing: Option<Sharing<'py>>,
}

impl NewHandle<'_> {
    #[inline(always)]
    fn into_fields(self) -> PyResult<Fields> {
        let py = self.callback.py();
        let (context, context_shared) = match (self.context, self.sharing) {
            (Some(ctx), _) if !ctx.is_none() => (ctx, false),
            (_, Some(sharing)) => shared_context::implicit_context(py, sharing)?,
            (_, None) => (pyapi::copy_current_context(py)?, false),
        };
        let source_traceback = if self.debug {
            Some(source_traceback(py)?)
        } else {
            None
        };
        Ok(Fields {
            callback: Some(Callback {
                func: self.callback.unbind(),
                args: self.args,
            }),
            context: Some(context.unbind()),
            context_shared,
            loop_: Some(self.event_loop.clone().unbind()),
            source_traceback,
            saved_repr: None,
        })
    }

    /// An fd or signal handle (tracked by the cycle collector).
    pub fn build(self) -> PyResult<Py<Handle>> {
        let py = self.callback.py();
        let handle = Py::new(
            py,
            Handle {
                core: Core::new(self.into_fields()?),
            },
        )?;
        Ok(handle)
    }

    /// A `call_soon` handle about to be queued: recycled from `pool` when
    /// it has one, untracked while queued either way.
    #[inline(always)]
    pub fn build_queued(self, pool: Option<Py<Handle>>) -> PyResult<Py<Handle>> {
        let py = self.callback.py();
        let fields = self.into_fields()?;
        let handle = match pool {
            Some(handle) => {
                handle.get().core.refill(py, fields);
                handle
            }
            None => Py::new(
                py,
                Handle {
                    core: Core::new(fields),
                },
            )?,
        };
        untrack_while_queued(handle.bind(py));
        Ok(handle)
    }

    /// A timer about to be scheduled, untracked while the loop holds it.
    pub fn build_timer(self, when: f64, cancels: Arc<AtomicUsize>) -> PyResult<Py<TimerHandle>> {
        let py = self.callback.py();
        let timer = Py::new(
            py,
            TimerHandle {
                core: Core::new(self.into_fields()?),
                when,
                scheduled: AtomicBool::new(false),
                cancels,
            },
        )?;
        untrack_while_queued(timer.bind(py));
        Ok(timer)
    }
}

/// Where a handle was created (debug mode only).
#[cold]
#[inline(never)]
fn source_traceback(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(pyapi::extract_stack(py)?.call0()?.unbind())
}

impl Core {
    fn new(fields: Fields) -> Core {
        Core {
            fields: GilCell::new(fields),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Fill an emptied (pooled) handle; its old fields are all `None`, so
    /// nothing is dropped here.
    fn refill(&self, py: Python<'_>, fields: Fields) {
        let old = self.fields.with(py, |f| std::mem::replace(f, fields));
        // Empty, so forgetting it leaks nothing; skips the drop glue's
        // checks on the per-callback path.
        debug_assert!(old.is_empty());
        std::mem::forget(old);
        self.cancelled.store(false, Ordering::Release);
    }

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    fn loop_obj<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.fields
            .with(py, |f| f.loop_.as_ref().map(|l| l.clone_ref(py)))
            .map(|l| l.into_bound(py))
    }

    /// Run the callback in its context. Exceptions go to the loop's
    /// exception handler; only `KeyboardInterrupt` and `SystemExit` are
    /// returned. `this` is the handle object owning this core; `snapshot`
    /// the running loop's (for its spare copy, see
    /// [`shared_context::run_in_copy`]).
    pub fn run(
        &self,
        this: &Bound<'_, PyAny>,
        snapshot: Option<&GilCell<Snapshot>>,
    ) -> PyResult<()> {
        let py = this.py();
        if self.is_cancelled() {
            return Ok(());
        }
        // Own references for the call: the callback may cancel its handle.
        let call = self.fields.with(py, |f| {
            let cb = f.callback.as_ref()?;
            let ctx = f.context.as_ref()?;
            Some((
                cb.func.clone_ref(py),
                cb.args.clone_ref(py),
                ctx.clone_ref(py),
                f.context_shared,
            ))
        });
        let Some((func, args, context, context_shared)) = call else {
            return Ok(());
        };
        let (func, context) = (func.into_bound(py), context.into_bound(py));
        // A failed copy (MemoryError) is the callback's error, reported as
        // one; only exit exceptions leave `run`.
        let outcome = if context_shared {
            shared_context::run_in_copy(snapshot, &context, &func, &args)
        } else {
            pyapi::run_in_context(&context, &func, &args)
        };
        let result = match outcome {
            Ok(()) => Ok(()),
            Err(err) => self.report_error(this, &func, &args, err),
        };
        args.drop_attached(py);
        result
    }

    /// `run` for a handle only the loop holds (see [`is_sole_reference`])
    /// and that nobody is shown after the run:
    /// nothing can reach it while its callback runs, so the callback,
    /// arguments and context are moved out for the call instead of copied.
    /// They go back in before an error is reported, since the report shows
    /// the handle.
    fn run_sole(&self, this: &Bound<'_, PyAny>, snapshot: &GilCell<Snapshot>) -> PyResult<()> {
        let py = this.py();
        if self.is_cancelled() {
            return Ok(());
        }
        let fields = self.fields.with(py, std::mem::take);
        let (Some(callback), Some(context)) = (&fields.callback, &fields.context) else {
            fields.drop_attached(py);
            return Ok(());
        };
        let (func, context) = (callback.func.bind(py), context.bind(py));
        let outcome = if fields.context_shared {
            // A failed copy (MemoryError) is the callback's error, as in `run`.
            shared_context::run_in_copy(Some(snapshot), context, func, &callback.args)
        } else {
            pyapi::run_in_context(context, func, &callback.args)
        };
        let Err(err) = outcome else {
            fields.drop_attached(py);
            return Ok(());
        };
        let (func, args) = (func.clone(), callback.args.clone_ref(py));
        self.fields.with(py, |f| *f = fields);
        let result = self.report_error(this, &func, &args, err);
        args.drop_attached(py);
        result
    }

    /// asyncio's `Handle._run` error path (out of line: `run` is the
    /// hottest function of the loop and this is most of its code).
    #[cold]
    #[inline(never)]
    fn report_error(
        &self,
        this: &Bound<'_, PyAny>,
        func: &Bound<'_, PyAny>,
        args: &CallArgs,
        err: PyErr,
    ) -> PyResult<()> {
        let py = this.py();
        if is_exit_exception(py, &err) {
            return Err(err);
        }
        let err = panic_as_runtime_error(py, err);
        // The exception object carries its traceback into the handler.
        let exc = err.into_value(py);
        let report = || -> PyResult<()> {
            let source = pyapi::format_callback_source(py)?.call1((func, args.to_tuple(py)?))?;
            let context = PyDict::new(py);
            context.set_item("message", format!("Exception in callback {source}"))?;
            context.set_item("exception", exc.bind(py))?;
            context.set_item("handle", this)?;
            let tb = self
                .fields
                .with(py, |f| f.source_traceback.as_ref().map(|t| t.clone_ref(py)));
            if let Some(tb) = tb {
                context.set_item("source_traceback", tb)?;
            }
            if let Some(event_loop) = self.loop_obj(py) {
                event_loop.call_method1("call_exception_handler", (context,))?;
            }
            Ok(())
        };
        match report() {
            Err(e) if is_exit_exception(py, &e) => Err(e),
            // The handler could not even be called: never lose the error.
            Err(e) => {
                e.write_unraisable(py, Some(this));
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// asyncio's `Handle.cancel`: mark cancelled, keep the repr in debug
    /// mode (for "Executing <Handle …> took …" lines), then drop the
    /// callback's references. Returns false if it was cancelled already.
    /// Call only while no loop state is borrowed.
    fn cancel(&self, this: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = this.py();
        if self.cancelled.swap(true, Ordering::AcqRel) {
            return Ok(false);
        }
        let debug = match self.loop_obj(py) {
            Some(event_loop) => event_loop
                .cast::<Loop>()
                .map(|l| l.get().is_debug())
                .unwrap_or(false),
            None => false,
        };
        if debug {
            let repr = pyapi::handle_repr(py)?.call1((this,))?.unbind();
            let old = self.fields.with(py, |f| f.saved_repr.replace(repr));
            drop(old);
        }
        let callback = self.fields.with(py, |f| f.callback.take());
        drop(callback);
        Ok(true)
    }

    fn callback_func(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.fields
            .with(py, |f| f.callback.as_ref().map(|cb| cb.func.clone_ref(py)))
    }

    fn callback_args<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let args = self
            .fields
            .with(py, |f| f.callback.as_ref().map(|cb| cb.args.clone_ref(py)));
        args.map(|a| a.to_tuple(py)).transpose()
    }

    /// The context the callback runs in; a shared snapshot is first
    /// replaced by a private copy, so the caller and the callback see one
    /// context (as a handle's own copy in asyncio).
    fn context(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some((ctx, shared)) = self.fields.with(py, |f| {
            f.context
                .as_ref()
                .map(|c| (c.clone_ref(py), f.context_shared))
        }) else {
            return Ok(None);
        };
        if !shared {
            return Ok(Some(ctx));
        }
        let own = pyapi::copy_context(ctx.bind(py))?.unbind();
        let replaced = self.fields.with(py, |f| {
            // Still the same shared snapshot (making the copy could run a
            // collection, and so other code): swap in the private copy.
            match &f.context {
                Some(c) if f.context_shared && c.is(&ctx) => {
                    f.context_shared = false;
                    f.context.replace(own.clone_ref(py))
                }
                _ => None,
            }
        });
        drop(replaced);
        Ok(self.field(py, |f| f.context.as_ref()))
    }

    fn field(
        &self,
        py: Python<'_>,
        pick: impl FnOnce(&Fields) -> Option<&Py<PyAny>>,
    ) -> Option<Py<PyAny>> {
        self.fields.with(py, |f| pick(f).map(|o| o.clone_ref(py)))
    }

    fn repr(&self, this: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = this.py();
        if let Some(saved) = self.field(py, |f| f.saved_repr.as_ref()) {
            return Ok(saved);
        }
        Ok(pyapi::handle_repr(py)?.call1((this,))?.unbind())
    }

    /// GC visit of the references this core holds.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.fields.with_in_gc(|f| {
                if let Some(cb) = &f.callback {
                    visit.call(&cb.func)?;
                    cb.args.visit(visit)?;
                }
                visit.call(&f.context)?;
                visit.call(&f.loop_)?;
                visit.call(&f.source_traceback)?;
                visit.call(&f.saved_repr)
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    /// Drop every reference now (the handle is garbage with its loop,
    /// see `Loop::_close`).
    pub(crate) fn forget(&self, py: Python<'_>) {
        let fields = self.fields.with(py, std::mem::take);
        fields.drop_attached(py);
    }

    /// GC clear: drop every reference (the object is unreachable).
    fn clear(&self) {
        // SAFETY: called from `__clear__`; the fields are dropped after the
        // closure returns.
        let fields = unsafe { self.fields.with_in_gc(std::mem::take) };
        drop(fields);
    }
}

/// A Rust panic inside a native callback reaches us as PyO3's
/// `PanicException`, a `BaseException`; the exception handler gets a
/// `RuntimeError` instead (the panic as its `__cause__`), like any bug.
fn panic_as_runtime_error(py: Python<'_>, err: PyErr) -> PyErr {
    if !err.is_instance_of::<PanicException>(py) {
        return err;
    }
    let wrapped = PyRuntimeError::new_err(format!("Rust panic in a callback: {}", err.value(py)));
    wrapped.set_cause(py, Some(err));
    wrapped
}

fn is_exit_exception(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<PyKeyboardInterrupt>(py) || err.is_instance_of::<PySystemExit>(py)
}

/// Cancel a handle from Rust (fd callbacks being replaced or removed).
pub fn cancel_handle(handle: &Bound<'_, Handle>) -> PyResult<()> {
    handle.get().core.cancel(handle.as_any()).map(drop)
}

/// The Python methods both classes share, plus each class's own.
macro_rules! handle_pymethods {
    ($ty:ty { $($own:tt)* }) => {
        #[pymethods]
        impl $ty {
            /// Cancel the callback; a no-op if it already ran or was cancelled.
            fn cancel(slf: &Bound<'_, Self>) -> PyResult<()> {
                Self::on_cancel(slf, slf.get().core.cancel(slf.as_any())?);
                Ok(())
            }

            fn cancelled(&self) -> bool {
                self.core.is_cancelled()
            }

            fn get_context(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
                self.core.context(py)
            }

            /// Run now, as asyncio's private `Handle._run()` (used by some tests).
            fn _run(slf: &Bound<'_, Self>) -> PyResult<()> {
                slf.get().core.run(slf.as_any(), None)
            }

            #[getter]
            fn _callback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                self.core.callback_func(py)
            }

            #[getter]
            fn _args<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
                self.core.callback_args(py)
            }

            #[getter]
            fn _cancelled(&self) -> bool {
                self.core.is_cancelled()
            }

            #[getter]
            fn _loop(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                self.core.field(py, |f| f.loop_.as_ref())
            }

            #[getter]
            fn _context(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
                self.core.context(py)
            }

            #[getter]
            fn _source_traceback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                self.core.field(py, |f| f.source_traceback.as_ref())
            }

            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
                slf.get().core.repr(slf.as_any())
            }

            fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
                self.core.traverse(&visit)
            }

            /// Break cycles: an unreachable handle drops its references.
            fn __clear__(&self) {
                self.core.clear();
            }

            $($own)*
        }
    };
}

handle_pymethods!(Handle {});

impl Handle {
    fn on_cancel(_slf: &Bound<'_, Self>, _first: bool) {}

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.core.is_cancelled()
    }
}

handle_pymethods!(TimerHandle {
    fn when(&self) -> f64 {
        self.when
    }

    #[getter]
    fn _when(&self) -> f64 {
        self.when
    }

    #[getter]
    fn _scheduled(&self) -> bool {
        self.scheduled.load(Ordering::Acquire)
    }

    /// `hash(self.when())`, as asyncio.
    fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
        PyFloat::new(slf.py(), slf.get().when).hash()
    }

    fn __richcmp__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Ok(other) = other.cast::<TimerHandle>() else {
            return Ok(py.NotImplemented());
        };
        let (a, b) = (slf.get().when, other.get().when);
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
});

impl TimerHandle {
    /// A scheduled timer's cancellation is counted for heap compaction.
    fn on_cancel(slf: &Bound<'_, Self>, first: bool) {
        let this = slf.get();
        if first && this.scheduled.load(Ordering::Acquire) {
            this.cancels.fetch_add(1, Ordering::AcqRel);
        }
    }

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.core.is_cancelled()
    }

    pub(crate) fn core(&self) -> &Core {
        &self.core
    }
}

/// asyncio's `TimerHandle.__eq__`: same deadline, callback, args and state.
fn timer_eq(a: &Bound<'_, TimerHandle>, b: &Bound<'_, TimerHandle>) -> PyResult<bool> {
    let (ta, tb) = (a.get(), b.get());
    if ta.when != tb.when || ta.is_cancelled() != tb.is_cancelled() {
        return Ok(false);
    }
    let py = a.py();
    let same = |x: Option<Bound<'_, PyAny>>, y: Option<Bound<'_, PyAny>>| -> PyResult<bool> {
        match (x, y) {
            (Some(x), Some(y)) => x.eq(y),
            (None, None) => Ok(true),
            _ => Ok(false),
        }
    };
    let same_cb = same(
        ta.core.callback_func(py).map(|f| f.into_bound(py)),
        tb.core.callback_func(py).map(|f| f.into_bound(py)),
    )?;
    let same_args = same(
        ta.core.callback_args(py)?.map(Bound::into_any),
        tb.core.callback_args(py)?.map(Bound::into_any),
    )?;
    Ok(same_cb && same_args)
}
