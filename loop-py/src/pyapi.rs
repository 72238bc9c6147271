//! Python objects the native loop uses, looked up once per interpreter,
//! and the few raw C-API calls it makes.

use crate::call_args::CallArgs;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

macro_rules! cached_attr {
    ($name:ident, $module:literal, $attr:literal) => {
        pub fn $name(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
            static CELL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
            CELL.get_or_try_init(py, || {
                Ok::<_, PyErr>(py.import($module)?.getattr($attr)?.unbind())
            })
            .map(|obj| obj.bind(py))
        }
    };
}

cached_attr!(future_type, "asyncio", "Future");
cached_attr!(task_type, "asyncio", "Task");
cached_attr!(stdlib_create_task, "ferroloop._loop", "_stdlib_create_task");
cached_attr!(
    format_callback_source,
    "ferroloop._format",
    "format_callback_source"
);
cached_attr!(handle_repr, "ferroloop._format", "handle_repr");
cached_attr!(extract_stack, "ferroloop._format", "extract_stack");
cached_attr!(log_slow_callback, "ferroloop._format", "log_slow_callback");
cached_attr!(is_coroutine, "asyncio", "iscoroutine");
cached_attr!(is_future, "asyncio", "isfuture");
cached_attr!(abstract_event_loop, "asyncio", "AbstractEventLoop");
// asyncio's own check, without the DeprecationWarning of the public name (3.14+).
cached_attr!(
    is_coroutine_function,
    "ferroloop._loop",
    "_iscoroutinefunction"
);
cached_attr!(cancelled_error, "asyncio", "CancelledError");
cached_attr!(invalid_state_error, "asyncio", "InvalidStateError");
cached_attr!(enter_task, "asyncio.tasks", "_enter_task");
cached_attr!(leave_task, "asyncio.tasks", "_leave_task");
cached_attr!(current_task, "asyncio", "current_task");
cached_attr!(asyncio_logger, "asyncio.log", "logger");
cached_attr!(ferroloop_logger, "ferroloop._loop", "backend_logger");

// ferroloop.Queue (src/queue): its exceptions, the running loop, heapq.
cached_attr!(queue_empty, "asyncio", "QueueEmpty");
cached_attr!(queue_full, "asyncio", "QueueFull");
cached_attr!(queue_shut_down, "ferroloop._queue", "QueueShutDown");
cached_attr!(get_running_loop, "asyncio.events", "_get_running_loop");
cached_attr!(ferroloop_loop_class, "ferroloop._loop", "Loop");
cached_attr!(base_event_loop, "asyncio.base_events", "BaseEventLoop");
cached_attr!(sys_modules, "sys", "modules");

/// `BaseEventLoop.create_future`, the function stdlib loops inherit.
pub fn stock_create_future(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static CELL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CELL.get_or_try_init(py, || {
        Ok::<_, PyErr>(base_event_loop(py)?.getattr("create_future")?.unbind())
    })
    .map(|obj| obj.bind(py))
}
// The toolkit's exceptions (multiloop's names).
cached_attr!(
    toolkit_timeout_error,
    "ferroloop.toolkit.exceptions",
    "TimeoutError"
);
cached_attr!(
    toolkit_channel_closed,
    "ferroloop.toolkit.exceptions",
    "ChannelClosedError"
);
cached_attr!(
    toolkit_would_block,
    "ferroloop.toolkit.exceptions",
    "WouldBlock"
);
cached_attr!(
    toolkit_pool_closed,
    "ferroloop.toolkit.exceptions",
    "ThreadPoolClosedError"
);
cached_attr!(toolkit_within, "ferroloop.toolkit._timeouts", "within");
cached_attr!(toolkit_in_scope, "ferroloop.toolkit.pool", "_run_in_scope");
cached_attr!(heappush, "heapq", "heappush");
cached_attr!(heappop, "heapq", "heappop");
cached_attr!(generic_alias, "types", "GenericAlias");

/// `callable(*positional)` by vectorcall, the arguments on the stack.
pub fn vectorcall<'py>(
    callable: &Bound<'py, PyAny>,
    positional: &[&Bound<'py, PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    let py = callable.py();
    // One spare leading slot lets CPython prepend `self` without copying;
    // the usual few arguments fit on the stack (no allocation per call).
    const INLINE: usize = 8;
    let len = 1 + positional.len();
    let mut inline = [std::ptr::null_mut::<ffi::PyObject>(); INLINE];
    let mut spilled = Vec::new();
    let stack: &mut [*mut ffi::PyObject] = if len <= INLINE {
        &mut inline[..len]
    } else {
        spilled.resize(len, std::ptr::null_mut());
        &mut spilled
    };
    for (slot, arg) in stack[1..].iter_mut().zip(positional) {
        *slot = arg.as_ptr();
    }
    let nargs = positional.len() | ffi::PY_VECTORCALL_ARGUMENTS_OFFSET;
    // SAFETY: every pointer in `stack` after the spare slot is a live object
    // borrowed for the call; the result is a new reference or NULL with an
    // exception set, which `from_owned_ptr_or_err` turns into a PyErr.
    unsafe {
        let result = ffi::PyObject_Vectorcall(
            callable.as_ptr(),
            stack.as_ptr().add(1),
            nargs,
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, result)
    }
}

/// A new copy of the current `contextvars` context.
pub fn copy_current_context(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: PyContext_CopyCurrent returns a new reference or NULL with an
    // exception set; called with the GIL held.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_CopyCurrent()) }
}

/// A copy of `ctx`, which must be an exact `contextvars.Context`.
pub fn copy_context<'py>(ctx: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyContext_Copy takes a live Context (the caller's promise;
    // it raises TypeError for anything else) and returns a new reference
    // or NULL with an exception set; called with the GIL held.
    unsafe { Bound::from_owned_ptr_or_err(ctx.py(), ffi::PyContext_Copy(ctx.as_ptr())) }
}

/// A new, empty `contextvars.Context`.
pub fn new_context(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: PyContext_New returns a new reference or NULL with an
    // exception set; called with the GIL held.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_New()) }
}

/// True for an exact `contextvars.Context`.
pub fn is_context(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a type check on a live object.
    unsafe { ffi::PyContext_CheckExact(obj.as_ptr()) != 0 }
}

/// `context.run(func, *args)`, entering the context through the C API.
#[inline(always)]
pub fn run_in_context<'py>(
    context: &Bound<'py, PyAny>,
    func: &Bound<'py, PyAny>,
    args: &CallArgs,
) -> PyResult<()> {
    let py = context.py();
    if !is_context(context) {
        return run_in_foreign_context(context, func, args);
    }
    // SAFETY: `context` is an exact Context. Enter fails (returns -1 with
    // RuntimeError set) if it is already entered; Exit is called exactly once
    // after a successful Enter, right after the call and before its error
    // (if any) is fetched: fetching a PyO3 `PanicException` resumes the
    // panic in Rust, which must not unwind past an entered context (as
    // CPython's own `Context.run`, Exit runs with the error still set).
    unsafe {
        if ffi::PyContext_Enter(context.as_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        let raw = args.call_raw(py, func);
        if ffi::PyContext_Exit(context.as_ptr()) < 0 {
            if !raw.is_null() {
                ffi::Py_DECREF(raw);
            }
            return Err(PyErr::fetch(py));
        }
        Bound::from_owned_ptr_or_err(py, raw).map(drop)
    }
}

/// Run Rust code `f` inside `context` (an exact `contextvars.Context`, as
/// the loop copies them): what it calls into Python sees the context's
/// variables. The context is left again even if `f` panics.
pub fn with_context<R>(context: &Bound<'_, PyAny>, f: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    struct Entered<'a, 'py>(&'a Bound<'py, PyAny>);
    impl Drop for Entered<'_, '_> {
        fn drop(&mut self) {
            // SAFETY: entered below exactly once; exited exactly once here.
            // Exit fails only for a context that is not the current one,
            // which this nesting rules out; an error it sets is dropped
            // rather than left pending.
            if unsafe { ffi::PyContext_Exit(self.0.as_ptr()) } < 0 {
                drop(PyErr::take(self.0.py()));
            }
        }
    }
    let py = context.py();
    if !is_context(context) {
        return Err(PyTypeError::new_err("an instance of Context was expected"));
    }
    // SAFETY: `context` is an exact Context; Enter fails (RuntimeError set)
    // if it is already entered.
    if unsafe { ffi::PyContext_Enter(context.as_ptr()) } < 0 {
        return Err(PyErr::fetch(py));
    }
    let entered = Entered(context);
    let result = f();
    drop(entered);
    result
}

/// Not a real Context (a user passed something else): let Python raise
/// what `context.run` raises. Kept out of line, off the hot path.
#[cold]
#[inline(never)]
fn run_in_foreign_context<'py>(
    context: &Bound<'py, PyAny>,
    func: &Bound<'py, PyAny>,
    args: &CallArgs,
) -> PyResult<()> {
    let py = context.py();
    let mut call_args = vec![func.clone()];
    call_args.extend(args.to_tuple(py)?.iter());
    context.call_method1("run", PyTuple::new(py, call_args)?)?;
    Ok(())
}

/// asyncio's `_check_callback` (debug mode only, as in asyncio).
#[cold]
pub fn check_callback(callback: &Bound<'_, PyAny>, method: &str) -> PyResult<()> {
    let py = callback.py();
    if is_coroutine(py)?.call1((callback,))?.is_truthy()?
        || is_coroutine_function(py)?.call1((callback,))?.is_truthy()?
    {
        return Err(PyTypeError::new_err(format!(
            "coroutines cannot be used with {method}()"
        )));
    }
    if !callback.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "a callable object was expected by {method}(), got {}",
            callback.repr()?
        )));
    }
    Ok(())
}
