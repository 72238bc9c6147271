//! The few calls the native code makes on asyncio futures it waits on or
//! resolves: `done()`, `result()`, `set_result()`, and the
//! `_asyncio_future_blocking` flag a yielded future carries; and making a
//! waiter's future on whichever loop runs ([`new_future_on`]).
//!
//! On an exact `asyncio.Future` (what asyncio's, uvloop's and ferroloop's
//! `create_future()` return) each goes straight to the C method (or the
//! flag's setter) looked up once, without the attribute lookup a method
//! call does every time; any other future (a subclass, another library's)
//! gets the ordinary method call, so an override is honoured.

use crate::event_loop::Loop;
use crate::pyapi;
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// `asyncio.Future` and its own attributes, looked up once from its type dict.
struct Slots {
    future: Py<PyAny>,
    done: Py<PyAny>,
    result: Py<PyAny>,
    set_result: Py<PyAny>,
    blocking: Py<PyAny>,
}

fn slots(py: Python<'_>) -> PyResult<&'static Slots> {
    static CELL: PyOnceLock<Slots> = PyOnceLock::new();
    CELL.get_or_try_init(py, || {
        let future = pyapi::future_type(py)?;
        let attr = |name: &str| -> PyResult<Py<PyAny>> {
            // From the class's own `__dict__`: the descriptor, not a bound method.
            Ok(future.getattr("__dict__")?.get_item(name)?.unbind())
        };
        Ok::<_, PyErr>(Slots {
            future: future.clone().unbind(),
            done: attr("done")?,
            result: attr("result")?,
            set_result: attr("set_result")?,
            blocking: attr("_asyncio_future_blocking")?,
        })
    })
}

/// The slots when `fut` is exactly `asyncio.Future`, else None.
fn exact(fut: &Bound<'_, PyAny>) -> PyResult<Option<&'static Slots>> {
    let s = slots(fut.py())?;
    // SAFETY: reading the type pointer of a live object.
    let exact = unsafe { ffi::Py_TYPE(fut.as_ptr()).cast::<ffi::PyObject>() } == s.future.as_ptr();
    Ok(exact.then_some(s))
}

/// `descriptor(self, *args)`: a method descriptor called on its instance
/// (`args` starts with `self`).
fn call_descriptor<'py, const N: usize>(
    py: Python<'py>,
    descriptor: &Py<PyAny>,
    args: [&Bound<'py, PyAny>; N],
) -> PyResult<Bound<'py, PyAny>> {
    let stack = args.map(|a| a.as_ptr());
    // SAFETY: `stack` holds N live objects borrowed for the call; the
    // result is a new reference or NULL with an exception set.
    unsafe {
        let result =
            ffi::PyObject_Vectorcall(descriptor.as_ptr(), stack.as_ptr(), N, std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, result)
    }
}

/// `fut.done()`.
pub fn is_done(fut: &Bound<'_, PyAny>) -> PyResult<bool> {
    done_with(exact(fut)?, fut)
}

fn done_with(slots: Option<&Slots>, fut: &Bound<'_, PyAny>) -> PyResult<bool> {
    let done = match slots {
        Some(s) => call_descriptor(fut.py(), &s.done, [fut])?,
        None => fut.call_method0(intern!(fut.py(), "done"))?,
    };
    done.is_truthy()
}

/// `fut.result()`: its result, or its exception raised.
pub fn result<'py>(fut: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match exact(fut)? {
        Some(s) => call_descriptor(fut.py(), &s.result, [fut]),
        None => fut.call_method0(intern!(fut.py(), "result")),
    }
}

/// `fut.set_result(value)`.
pub fn set_result(fut: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    set_result_with(exact(fut)?, fut, value)
}

fn set_result_with(
    slots: Option<&Slots>,
    fut: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    match slots {
        Some(s) => call_descriptor(fut.py(), &s.set_result, [fut, value]).map(drop),
        None => fut
            .call_method1(intern!(fut.py(), "set_result"), (value,))
            .map(drop),
    }
}

/// `if not fut.done(): fut.set_result(value)`; true if it resolved it.
pub fn resolve_if_pending(fut: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let slots = exact(fut)?;
    if done_with(slots, fut)? {
        return Ok(false);
    }
    set_result_with(slots, fut, value)?;
    Ok(true)
}

/// `fut._asyncio_future_blocking = True`: what `await fut` sets before
/// yielding it, and what a task checks on what it is given.
pub fn set_blocking(fut: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = fut.py();
    let Some(s) = exact(fut)? else {
        return fut.setattr(intern!(py, "_asyncio_future_blocking"), true);
    };
    let descriptor = s.blocking.bind(py);
    // SAFETY: `descriptor` is the getset descriptor from asyncio.Future's
    // own dict and `fut` is an exact instance of that type, so its
    // `tp_descr_set` applies; it returns 0, or -1 with an exception set.
    let status = unsafe {
        match (*ffi::Py_TYPE(descriptor.as_ptr())).tp_descr_set {
            Some(set) => set(descriptor.as_ptr(), fut.as_ptr(), ffi::Py_True()),
            None => return fut.setattr(intern!(py, "_asyncio_future_blocking"), true),
        }
    };
    if status < 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(())
}

/// The loop running on this thread, or asyncio's "no running event loop".
pub fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let running = pyapi::get_running_loop(py)?.call0()?;
    if running.is_none() {
        return Err(PyRuntimeError::new_err("no running event loop"));
    }
    Ok(running)
}

/// How to make futures on one loop, as cheaply as its class allows:
/// ferroloop's own loop makes them natively; a loop whose `create_future` is
/// known to be `Future(loop=self)` and nothing else (the stdlib's
/// `BaseEventLoop.create_future`, a Python frame; uvloop's, two Cython
/// calls) gets `Future(loop=event_loop)` directly; any other loop is asked.
/// Kept by whoever makes many futures on one loop (a bound `Queue`).
pub enum FutureMaker {
    Native(Py<Loop>),
    /// `Future(**kwargs)`, kwargs being `{"loop": event_loop}`.
    WithLoop(Py<PyDict>),
    /// The loop's bound `create_future`.
    Method(Py<PyAny>),
}

impl FutureMaker {
    pub fn for_loop(event_loop: &Bound<'_, PyAny>) -> PyResult<FutureMaker> {
        let py = event_loop.py();
        let class = event_loop.get_type();
        if class.is(pyapi::ferroloop_loop_class(py)?) {
            if let Ok(native) = event_loop.cast::<Loop>() {
                return Ok(FutureMaker::Native(native.clone().unbind()));
            }
        }
        let create_future = pyo3::intern!(py, "create_future");
        if is_plain_create_future(&class.getattr(create_future)?)? {
            let kwargs = PyDict::new(py);
            kwargs.set_item(pyo3::intern!(py, "loop"), event_loop)?;
            return Ok(FutureMaker::WithLoop(kwargs.unbind()));
        }
        Ok(FutureMaker::Method(
            event_loop.getattr(create_future)?.unbind(),
        ))
    }

    pub fn make<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            FutureMaker::Native(l) => Loop::create_future(l.bind(py)),
            FutureMaker::WithLoop(kwargs) => {
                slots(py)?.future.bind(py).call((), Some(kwargs.bind(py)))
            }
            FutureMaker::Method(method) => method.bind(py).call0(),
        }
    }

    pub fn clone_ref(&self, py: Python<'_>) -> FutureMaker {
        match self {
            FutureMaker::Native(l) => FutureMaker::Native(l.clone_ref(py)),
            FutureMaker::WithLoop(kwargs) => FutureMaker::WithLoop(kwargs.clone_ref(py)),
            FutureMaker::Method(method) => FutureMaker::Method(method.clone_ref(py)),
        }
    }

    pub fn traverse(&self, visit: &pyo3::gc::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        match self {
            FutureMaker::Native(l) => visit.call(l),
            FutureMaker::WithLoop(kwargs) => visit.call(kwargs),
            FutureMaker::Method(method) => visit.call(method),
        }
    }
}

/// `function` is a `create_future` known to do only `Future(loop=self)`.
fn is_plain_create_future(function: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = function.py();
    if function.is(pyapi::stock_create_future(py)?) {
        return Ok(true);
    }
    // uvloop's, when uvloop is in use (never imported here for this).
    match pyapi::sys_modules(py)?.get_item("uvloop") {
        Ok(uvloop) => Ok(uvloop
            .getattr(pyo3::intern!(py, "Loop"))
            .and_then(|l| l.getattr(pyo3::intern!(py, "create_future")))
            .is_ok_and(|f| f.is(function))),
        Err(_) => Ok(false),
    }
}

/// `event_loop.create_future()` (see [`FutureMaker`]), for a caller that
/// makes one future on this loop.
pub fn new_future_on<'py>(event_loop: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = event_loop.py();
    if event_loop.get_type().is(pyapi::ferroloop_loop_class(py)?) {
        if let Ok(native) = event_loop.cast::<Loop>() {
            return Loop::create_future(native);
        }
    }
    FutureMaker::for_loop(event_loop)?.make(py)
}

/// What `asyncio.iscoroutine` / `asyncio.isfuture` would say of an object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Coroutine,
    Future,
    Other,
}

/// Classify `obj` as asyncio would, answering the common cases (a native
/// coroutine, an exact `asyncio.Future`/`Task`, a function) without
/// calling asyncio's Python-level checks.
pub fn kind_of(obj: &Bound<'_, PyAny>) -> PyResult<Kind> {
    let py = obj.py();
    let ptr = obj.as_ptr();
    // SAFETY: type checks on a live object.
    let (coroutine, function) = unsafe {
        (
            ffi::PyCoro_CheckExact(ptr) != 0,
            ffi::PyFunction_Check(ptr) != 0 || ffi::PyCFunction_Check(ptr) != 0,
        )
    };
    if coroutine {
        return Ok(Kind::Coroutine);
    }
    let class = obj.get_type();
    if class.is(&slots(py)?.future) || class.is(pyapi::task_type(py)?) {
        return Ok(Kind::Future);
    }
    if function || obj.is_none() {
        return Ok(Kind::Other);
    }
    if pyapi::is_coroutine(py)?.call1((obj,))?.is_truthy()? {
        return Ok(Kind::Coroutine);
    }
    if pyapi::is_future(py)?.call1((obj,))?.is_truthy()? {
        return Ok(Kind::Future);
    }
    Ok(Kind::Other)
}
