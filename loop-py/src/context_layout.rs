//! The two words of CPython's private structures that context sharing
//! (`shared_context`) reads: a `Context`'s variable mapping, and the
//! running thread's current context. Both structs are internal, so module
//! init checks each layout on the running interpreter ([`check`]) and what
//! does not hold is not used: without the first nothing is shared, without
//! the second a handle's context is copied before it is compared. Neither
//! is used on free-threaded builds.

use crate::pyapi;
use pyo3::ffi;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where `PyContext` keeps its variables (a HAMT): after the object header
/// and the `ctx_prev` pointer, in every CPython from 3.7 to 3.14.
const VARS_OFFSET: usize = std::mem::size_of::<ffi::PyObject>() + std::mem::size_of::<usize>();

/// Where `PyThreadState` keeps the thread's current context
/// (`offsetof(PyThreadState, context)` in each version's
/// `cpython/pystate.h`; the same in every patch release, as extensions
/// built for x.y.0 use the struct on x.y.z). Versions not listed copy.
#[cfg(not(Py_3_12))]
const CURRENT_CONTEXT_OFFSET: Option<usize> = Some(224);
#[cfg(all(Py_3_12, not(Py_3_14)))]
const CURRENT_CONTEXT_OFFSET: Option<usize> = Some(208);
#[cfg(Py_3_14)]
const CURRENT_CONTEXT_OFFSET: Option<usize> = None;

/// `sizeof(PyThreadState)` is at least this on the versions above, so the
/// word read is inside the struct (checked at compile time).
const THREAD_STATE_MIN_SIZE: usize = 288;
const _: () = assert!(match CURRENT_CONTEXT_OFFSET {
    Some(offset) => offset + std::mem::size_of::<usize>() <= THREAD_STATE_MIN_SIZE,
    None => true,
});

static VARS_OK: AtomicBool = AtomicBool::new(false);
static CURRENT_OK: AtomicBool = AtomicBool::new(false);

/// The identity of a context's variable mapping: equal for a context and
/// its copies until a variable is set in one of them. `None` when sharing
/// is off (layout not confirmed, a free-threaded build, or not an exact
/// Context).
#[inline]
pub fn vars_identity(ctx: &Bound<'_, PyAny>) -> Option<usize> {
    if cfg!(Py_GIL_DISABLED) || !VARS_OK.load(Ordering::Relaxed) || !pyapi::is_context(ctx) {
        return None;
    }
    // SAFETY: `ctx` is a live exact Context, whose size (checked in
    // `vars_behave` against `tp_basicsize`) covers a pointer at
    // VARS_OFFSET; the pointer is read, never dereferenced.
    Some(unsafe { read_vars(ctx.as_ptr()) })
}

/// The variables of this thread's current context, read in place (no copy);
/// `None` if that layout is not confirmed or the thread has no context yet.
#[inline]
pub fn current_vars(_py: Python<'_>) -> Option<usize> {
    let offset = CURRENT_CONTEXT_OFFSET?;
    if cfg!(Py_GIL_DISABLED) || !CURRENT_OK.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: the GIL is held (`_py`), so this thread has a thread state,
    // and `check` confirmed the word at `offset` (inside the struct) is its
    // current context, a Context or NULL; the type is checked before its
    // variables are read.
    unsafe {
        let ctx = read_current(offset);
        if ctx.is_null() || ffi::PyContext_CheckExact(ctx) == 0 {
            return None;
        }
        Some(read_vars(ctx))
    }
}

/// # Safety
/// `ctx` is a live object at least `VARS_OFFSET + 8` bytes long.
#[inline]
pub unsafe fn read_vars(ctx: *mut ffi::PyObject) -> usize {
    // SAFETY: as the caller promises; the field is pointer-aligned after a
    // pointer-aligned header.
    unsafe { *(ctx.cast::<u8>().add(VARS_OFFSET).cast::<usize>()) }
}

/// # Safety
/// The GIL is held and `offset` is `CURRENT_CONTEXT_OFFSET`'s (inside the
/// struct, see `THREAD_STATE_MIN_SIZE`).
#[inline]
unsafe fn read_current(offset: usize) -> *mut ffi::PyObject {
    // SAFETY: as the caller promises: the thread state is live and the
    // word is inside it and pointer-aligned (offsets are multiples of 8).
    unsafe {
        *(ffi::PyThreadState_Get()
            .cast::<u8>()
            .add(offset)
            .cast::<*mut ffi::PyObject>())
    }
}

/// Confirm both layouts on this interpreter (module init).
pub fn check(py: Python<'_>) -> PyResult<()> {
    let vars = !cfg!(Py_GIL_DISABLED) && vars_behave(py)?;
    VARS_OK.store(vars, Ordering::Relaxed);
    let current = vars && current_behaves(py)?;
    CURRENT_OK.store(current, Ordering::Relaxed);
    Ok(())
}

/// Whether the layouts were confirmed: (variables, current context).
#[cfg(feature = "test-hooks")]
pub fn confirmed() -> (bool, bool) {
    (
        VARS_OK.load(Ordering::Relaxed),
        CURRENT_OK.load(Ordering::Relaxed),
    )
}

/// The word at `VARS_OFFSET` is shared by a context and its copy, changed
/// by setting a variable, and inside the object.
fn vars_behave(py: Python<'_>) -> PyResult<bool> {
    // SAFETY: PyContext_Type is CPython's static type object.
    let size = unsafe { (*std::ptr::addr_of_mut!(ffi::PyContext_Type)).tp_basicsize };
    if usize::try_from(size).map_or(true, |s| s < VARS_OFFSET + std::mem::size_of::<usize>()) {
        return Ok(false);
    }
    let a = pyapi::new_context(py)?;
    let b = pyapi::copy_context(&a)?;
    // SAFETY: both are live exact Contexts at least `size` bytes long.
    let (va, vb) = unsafe { (read_vars(a.as_ptr()), read_vars(b.as_ptr())) };
    if va == 0 || va != vb {
        return Ok(false);
    }
    let var = py
        .import("contextvars")?
        .getattr("ContextVar")?
        .call1(("ferroloop_layout_check",))?;
    a.call_method1("run", (var.getattr("set")?, 1))?;
    // SAFETY: as above.
    let (va2, vb2) = unsafe { (read_vars(a.as_ptr()), read_vars(b.as_ptr())) };
    Ok(va2 != 0 && va2 != va && vb2 == vb)
}

/// The word at `CURRENT_CONTEXT_OFFSET` follows entering and leaving two
/// nested contexts.
fn current_behaves(py: Python<'_>) -> PyResult<bool> {
    let Some(offset) = CURRENT_CONTEXT_OFFSET else {
        return Ok(false);
    };
    let (a, b) = (pyapi::new_context(py)?, pyapi::new_context(py)?);
    // SAFETY: `a` and `b` are live, fresh Contexts, entered and left in
    // nested order (each Exit follows a successful Enter of the same
    // context); the reads are inside the thread state (the assertion by
    // `THREAD_STATE_MIN_SIZE`) with the GIL held.
    unsafe {
        if ffi::PyContext_Enter(a.as_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        let in_a = read_current(offset);
        let in_b = if ffi::PyContext_Enter(b.as_ptr()) < 0 {
            None
        } else {
            let seen = read_current(offset);
            let left = ffi::PyContext_Exit(b.as_ptr());
            (left == 0).then_some(seen)
        };
        let back = read_current(offset);
        if ffi::PyContext_Exit(a.as_ptr()) < 0 || in_b.is_none() {
            return Err(PyErr::fetch(py));
        }
        Ok(in_a == a.as_ptr() && in_b == Some(b.as_ptr()) && back == a.as_ptr())
    }
}
