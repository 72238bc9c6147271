//! A handle's positional arguments, held without a tuple when there are
//! none or one.
//!
//! Nearly every `call_soon` carries zero arguments (a task's `__step`) or
//! one (a future's done callback gets the future): building, refcounting
//! and unpacking a tuple for those is most of what a tuple would cost, so
//! the common shapes keep the object itself and are called by vectorcall.
//! `Handle._args` still reads as a tuple (built on demand).

use pyo3::ffi;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;

pub enum CallArgs {
    None,
    One(Py<PyAny>),
    Many(Py<PyTuple>),
}

impl CallArgs {
    /// From a tuple of arguments (`add_reader(fd, cb, *args)` and friends).
    pub fn from_tuple(args: Bound<'_, PyTuple>) -> CallArgs {
        match args.len() {
            0 => CallArgs::None,
            1 => match args.get_item(0) {
                Ok(arg) => CallArgs::One(arg.unbind()),
                Err(_) => CallArgs::Many(args.unbind()),
            },
            _ => CallArgs::Many(args.unbind()),
        }
    }

    /// From positional arguments of a vectorcall.
    ///
    /// # Safety
    /// Every pointer in `args` is a live object (a vectorcall's argument
    /// array, borrowed for the call).
    #[inline(always)]
    pub unsafe fn from_vector(py: Python<'_>, args: &[*mut ffi::PyObject]) -> PyResult<CallArgs> {
        fn arg<'a, 'py>(py: Python<'py>, ptr: &'a *mut ffi::PyObject) -> &'a Bound<'py, PyAny> {
            // SAFETY: a live object, as the caller of `from_vector` promises.
            unsafe { Bound::ref_from_ptr(py, ptr) }
        }
        Ok(match args {
            [] => CallArgs::None,
            [one] => CallArgs::One(arg(py, one).clone().unbind()),
            many => CallArgs::Many(PyTuple::new(py, many.iter().map(|p| arg(py, p)))?.unbind()),
        })
    }

    pub fn clone_ref(&self, py: Python<'_>) -> CallArgs {
        match self {
            CallArgs::None => CallArgs::None,
            CallArgs::One(arg) => CallArgs::One(arg.clone_ref(py)),
            CallArgs::Many(args) => CallArgs::Many(args.clone_ref(py)),
        }
    }

    /// As asyncio's `Handle._args`.
    pub fn to_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match self {
            CallArgs::None => Ok(PyTuple::empty(py)),
            CallArgs::One(arg) => PyTuple::new(py, [arg.bind(py)]),
            CallArgs::Many(args) => Ok(args.bind(py).clone()),
        }
    }

    /// Drop knowing the GIL is held (see `handle::Fields::drop_attached`).
    pub fn drop_attached(self, py: Python<'_>) {
        match self {
            CallArgs::None => {}
            CallArgs::One(arg) => drop(arg.into_bound(py)),
            CallArgs::Many(args) => drop(args.into_bound(py)),
        }
    }

    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            CallArgs::None => Ok(()),
            CallArgs::One(arg) => visit.call(arg),
            CallArgs::Many(args) => visit.call(args),
        }
    }

    /// `func(*args)`: a new reference, or NULL with an exception set.
    ///
    /// # Safety
    /// Call with the GIL held and `func` a live object; the result must be
    /// taken over (or decref'd) by the caller.
    pub unsafe fn call_raw(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> *mut ffi::PyObject {
        let func = func.as_ptr();
        match self {
            // SAFETY (all arms): `func` and every argument are live objects
            // held for the call; a spare leading slot lets CPython prepend
            // `self` in place (PY_VECTORCALL_ARGUMENTS_OFFSET).
            CallArgs::None => unsafe {
                ffi::PyObject_Vectorcall(func, std::ptr::null(), 0, std::ptr::null_mut())
            },
            CallArgs::One(arg) => {
                let stack = [std::ptr::null_mut(), arg.bind(py).as_ptr()];
                unsafe {
                    ffi::PyObject_Vectorcall(
                        func,
                        stack.as_ptr().add(1),
                        1 | ffi::PY_VECTORCALL_ARGUMENTS_OFFSET,
                        std::ptr::null_mut(),
                    )
                }
            }
            CallArgs::Many(args) => unsafe {
                ffi::PyObject_Call(func, args.bind(py).as_ptr(), std::ptr::null_mut())
            },
        }
    }
}
