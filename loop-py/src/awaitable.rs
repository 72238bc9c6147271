//! Native awaitables: pyclasses that `await` drives without a coroutine
//! frame, through the `am_send` slot.
//!
//! `PyIter_Send` (what `await` and the C `Task`'s steps call on 3.11) uses a
//! type's `am_send` when it has one: the value comes back as a return value,
//! not as a `StopIteration` raised, normalized and caught. PyO3 has no
//! method for that slot, so [`install_am_send`] sets it on the type; the
//! type's `__next__`/`send` stay for every other driver (3.12+'s `SEND`
//! opcode calls `tp_iternext`).
//!
//! Used by the WebSocket `receive()` and by `ferroloop.Queue`'s operations.

use pyo3::exceptions::{PyBaseException, PyRuntimeError, PyStopIteration};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTypeMethods;
use pyo3::PyClass;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a step gives its driver.
pub enum Step {
    /// Wait on this (a loop future, or an object the driver knows).
    Yield(Py<PyAny>),
    /// The `await` is over with this value.
    Return(Py<PyAny>),
}

impl Step {
    /// The step as `__next__`/`send` return it: a yielded value, or
    /// `StopIteration(value)` raised.
    pub fn into_next(self) -> PyResult<Py<PyAny>> {
        match self {
            Step::Yield(obj) => Ok(obj),
            Step::Return(value) => Err(PyStopIteration::new_err((value,))),
        }
    }
}

/// A pyclass whose instances are stepped by [`am_send`].
pub trait NativeAwaitable: PyClass {
    /// Named in the error a panic turns into.
    const WHAT: &'static str;

    /// One step, as `send(None)` would take it.
    fn advance(slf: &Bound<'_, Self>) -> PyResult<Step>;

    /// Stop waiting (thrown into or closed): leave whatever it waits in.
    fn withdraw(slf: &Bound<'_, Self>) -> PyResult<()>;
}

/// The coroutine protocol of a [`NativeAwaitable`] (`__await__`,
/// `__next__`, `send`, `throw`, `close`) in a `#[pymethods]` block, with
/// the type's own methods after it.
macro_rules! native_awaitable_pymethods {
    ($ty:ty { $($own:tt)* }) => {
        #[pyo3::pymethods]
        impl $ty {
            fn __await__(slf: pyo3::Bound<'_, Self>) -> pyo3::Bound<'_, Self> {
                slf
            }

            /// `next()`; `await` and task steps use the `am_send` slot.
            fn __next__(slf: &pyo3::Bound<'_, Self>) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                <Self as $crate::awaitable::NativeAwaitable>::advance(slf)?.into_next()
            }

            /// Drivers send None; like a coroutine awaiting a future, the
            /// value is not used.
            fn send(
                slf: &pyo3::Bound<'_, Self>,
                value: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                let _ = value;
                <Self as $crate::awaitable::NativeAwaitable>::advance(slf)?.into_next()
            }

            #[pyo3(signature = (typ, val=None, tb=None))]
            fn throw(
                slf: &pyo3::Bound<'_, Self>,
                typ: &pyo3::Bound<'_, pyo3::PyAny>,
                val: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
                tb: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                // Withdrawn first: a bad exception argument must not leave
                // the waiter registered (a later wake-up would go to nobody).
                <Self as $crate::awaitable::NativeAwaitable>::withdraw(slf)?;
                Err($crate::awaitable::thrown(typ, val, tb)?)
            }

            fn close(slf: &pyo3::Bound<'_, Self>) -> pyo3::PyResult<()> {
                <Self as $crate::awaitable::NativeAwaitable>::withdraw(slf)
            }

            $($own)*
        }
    };
}
pub(crate) use native_awaitable_pymethods;

/// The exception `throw(typ, val, tb)` raises, normalized as a generator's
/// `throw` does (an instance, or a class called with `val`).
pub fn thrown(
    typ: &Bound<'_, PyAny>,
    val: Option<&Bound<'_, PyAny>>,
    tb: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyErr> {
    let err = if typ.is_instance_of::<PyBaseException>() {
        typ.clone()
    } else {
        match val.filter(|v| !v.is_none()) {
            Some(v) if v.is_instance(typ)? => v.clone(),
            Some(v) => typ.call1((v,))?,
            None => typ.call0()?,
        }
    };
    if let Some(tb) = tb.filter(|t| !t.is_none()) {
        err.call_method1(pyo3::intern!(typ.py(), "with_traceback"), (tb,))?;
    }
    Ok(PyErr::from_value(err))
}

/// `am_send` for `T`: one [`NativeAwaitable::advance`].
unsafe extern "C" fn am_send<T: NativeAwaitable>(
    iter: *mut ffi::PyObject,
    _arg: *mut ffi::PyObject,
    result: *mut *mut ffi::PyObject,
) -> ffi::PySendResult {
    // SAFETY: the interpreter calls slots attached, with `iter` a live
    // instance of the type the slot is installed on.
    let py = unsafe { Python::assume_attached() };
    let obj = unsafe { Bound::from_borrowed_ptr(py, iter) };
    let stepped = catch_unwind(AssertUnwindSafe(|| match obj.cast::<T>() {
        Ok(slf) => T::advance(slf),
        Err(e) => Err(PyErr::from(e)),
    }));
    let (status, value) = match stepped {
        Ok(Ok(Step::Yield(v))) => (ffi::PySendResult::PYGEN_NEXT, v.into_ptr()),
        Ok(Ok(Step::Return(v))) => (ffi::PySendResult::PYGEN_RETURN, v.into_ptr()),
        Ok(Err(e)) => {
            e.restore(py);
            (ffi::PySendResult::PYGEN_ERROR, std::ptr::null_mut())
        }
        Err(_) => {
            PyRuntimeError::new_err(format!("panic in {}", T::WHAT)).restore(py);
            (ffi::PySendResult::PYGEN_ERROR, std::ptr::null_mut())
        }
    };
    // SAFETY: `result` is the caller's out-pointer; it owns the new
    // reference (NEXT/RETURN) or gets NULL with an exception set (ERROR).
    unsafe { *result = value };
    status
}

/// Give `T`'s type its `am_send` slot. Call once per type (from a
/// `PyOnceLock` or module init), before instances are awaited.
pub fn install_am_send<T: NativeAwaitable>(py: Python<'_>) {
    let tp = py.get_type::<T>().as_type_ptr();
    // SAFETY: `tp` is our heap type, alive for the interpreter; it has an
    // async-methods table (it defines `__await__`) that belongs to the type
    // object itself. Setting `am_send` before any instance is sent to only
    // adds a faster path to the same behaviour.
    unsafe {
        let table = (*tp).tp_as_async;
        if !table.is_null() {
            (*table).am_send = Some(am_send::<T>);
        }
    }
}
