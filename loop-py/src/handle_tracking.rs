//! Handles and the cycle collector: a handle the loop holds is kept off
//! the collector's lists and visited through the loop instead; one the
//! loop lets go of goes back on them if anyone else holds it. Also the
//! sole-reference test that decides when a handle can be emptied, reused,
//! or run without copying its references.

use crate::handle::{Core, TimerHandle};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// How the loop's `__traverse__` visits a handle it holds. A tracked handle
/// is visited as an object. An untracked one (queued or scheduled, see
/// [`untrack_while_queued`]) is invisible to the collector, so the loop
/// visits the handle's references in its place: the collector then still
/// sees every reference the handle holds, counted once, and a cycle through
/// a queued handle (a loop nobody closed, its handles pointing back at it)
/// is found as it would be with the handle tracked. Only the loop holding
/// the handle in its queue may do this, and only for its one reference.
pub fn visit_owned<T>(
    handle: &Py<T>,
    core: &Core,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    // SAFETY: a live GC-enabled object (every pyclass is); reading the
    // tracked flag has no side effects.
    if unsafe { pyo3::ffi::PyObject_GC_IsTracked(handle.as_ptr()) } != 0 {
        visit.call(handle)
    } else {
        core.traverse(visit)
    }
}

/// The loop lets go of a timer: back on the collector's lists if someone
/// else still holds it (it was untracked while scheduled).
#[inline]
pub fn release_timer(timer: Bound<'_, TimerHandle>) {
    if !is_sole_reference(timer.as_any()) {
        track(timer.as_any());
    }
}

/// Keep a handle out of the cycle collector's lists while the loop holds it:
/// a fresh `call_soon` handle while it waits in the ready queue, a timer
/// while it is scheduled. A burst of 10,000 queued callbacks otherwise makes
/// every young collection walk them (measured: ~40 % of the collector's cost
/// in `call_soon_burst`), and so does a heap of pending timers (a seventh of
/// `timer_fire`'s instructions). A held handle is reachable through the
/// loop, so leaving it untracked can never let the collector free a live
/// object, and the loop's `__traverse__` visits its references in its place
/// ([`visit_owned`]); [`AnyHandle::release`] and [`release_timer`] track it
/// again if anyone holds it afterwards.
#[inline]
pub fn untrack_while_queued<T>(handle: &Bound<'_, T>) {
    #[cfg(not(Py_GIL_DISABLED))]
    // SAFETY: a live GC-enabled object (every pyclass is); untracking an
    // object only removes it from the collector's lists (a no-op if it is
    // not on them).
    unsafe {
        pyo3::ffi::PyObject_GC_UnTrack(handle.as_ptr().cast())
    };
    #[cfg(Py_GIL_DISABLED)]
    let _ = handle;
}

/// Only the caller's reference exists and no weak reference (so no one can
/// observe a reuse: a weak reference would see the handle come back to life
/// as another callback's).
#[inline]
pub(crate) fn is_sole_reference(obj: &Bound<'_, PyAny>) -> bool {
    let ptr = obj.as_ptr();
    // SAFETY: `ptr` is a live object we hold. Its type is a `weakref`
    // pyclass, for which pyo3 declares `__weaklistoffset__`, so CPython set
    // `tp_weaklistoffset` to a positive offset of one pointer-sized slot in
    // the object that holds the head of its weak reference list (null when
    // there is none); reading it is what CPython's weakref code does.
    unsafe {
        if pyo3::ffi::Py_REFCNT(ptr) != 1 {
            return false;
        }
        let offset = (*pyo3::ffi::Py_TYPE(ptr)).tp_weaklistoffset;
        offset <= 0 || {
            let slot = ptr
                .cast::<u8>()
                .offset(offset)
                .cast::<*mut pyo3::ffi::PyObject>();
            (*slot).is_null()
        }
    }
}

/// Put a handle (back) on the collector's lists if it is not on them.
#[inline]
pub fn track(obj: &Bound<'_, PyAny>) {
    let ptr = obj.as_ptr();
    // SAFETY: `ptr` is a live GC-enabled object held by `obj`; it is tracked
    // only if it is not tracked now (tracking twice is a fatal error).
    unsafe {
        if pyo3::ffi::PyObject_GC_IsTracked(ptr) == 0 {
            pyo3::ffi::PyObject_GC_Track(ptr.cast());
        }
    }
}
