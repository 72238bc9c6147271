//! One implicit context shared by the handles scheduled while the context
//! variables do not change.
//!
//! asyncio copies the current context for every `call_soon` and `call_later` without
//! `context=`. Each copy is a `Context` the cycle collector tracks, and with
//! more than CPython's context freelist (255) alive at once, every copy
//! counts towards a collection: a burst of 10,000 queued callbacks, or a
//! thread feeding `call_soon_threadsafe`, spent about half its time in the
//! collector (`docs/decisions.md`). A copy of an unchanged context shares
//! its variable mapping with the last one, so the loop keeps that last copy
//! (the snapshot) and hands it to every handle whose fresh copy has the
//! same mapping; the fresh copy goes straight back to the freelist.
//!
//! Sharing starts only once many handles are waiting
//! ([`SHARE_FROM_DEPTH`]): with a few, the copies come from the freelist
//! and sharing would only add the run-time copy below. It ends at the end
//! of the tick in which no handle holds the snapshot any more.
//!
//! A shared snapshot is never entered: a handle holding it runs in a copy
//! made at run time (from the freelist, freed right after), so a variable
//! one callback sets is not seen by the next, as in asyncio. A handle whose
//! context is asked for (`get_context()`, `_context`) is given a private
//! copy first, so what the caller gets is what the callback runs in.

use crate::gil_cell::GilCell;
use crate::pyapi;
use pyo3::ffi;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};

/// The loop's last implicit snapshot and the identity of its variables.
#[derive(Default)]
pub struct Snapshot {
    last: Option<(Py<PyAny>, usize)>,
}

/// Handles waiting (ready, timers, or handed over by other threads) from
/// which a new snapshot is shared: past CPython's context freelist (255) the
/// copies are fresh allocations the collector counts, and below a few
/// dozen the run-time copy costs more than it saves (`call_soon_chain`,
/// one handle waiting at a time, is ~5 % slower when always sharing).
pub const SHARE_FROM_DEPTH: usize = 128;

/// What can count the handles waiting in it now (the loop).
pub trait Waiting {
    fn waiting_handles(&self) -> usize;
}

/// The loop's snapshot, and the loop to count its waiting handles (asked
/// only when a new snapshot could start).
pub struct Sharing<'a> {
    pub snapshot: &'a GilCell<Snapshot>,
    pub waiting: &'a dyn Waiting,
}

/// The context for a handle scheduled without `context=`, and whether it
/// is the shared snapshot (run it in a copy, see the module docs).
pub fn implicit_context<'py>(
    py: Python<'py>,
    sharing: Sharing<'_>,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
    let snapshot = sharing.snapshot;
    let fresh = pyapi::copy_current_context(py)?;
    let Some(vars) = vars_identity(&fresh) else {
        return Ok((fresh, false));
    };
    let shared = snapshot.with(py, |s| match &s.last {
        Some((ctx, last_vars)) if *last_vars == vars => Some(ctx.clone_ref(py)),
        _ => None,
    });
    if let Some(ctx) = shared {
        drop(fresh);
        return Ok((ctx.into_bound(py), true));
    }
    if sharing.waiting.waiting_handles() < SHARE_FROM_DEPTH {
        return Ok((fresh, false));
    }
    let replaced = snapshot.with(py, |s| s.last.replace((fresh.clone().unbind(), vars)));
    // Dropping the old snapshot may free a Context: outside `with`.
    drop(replaced);
    Ok((fresh, true))
}

/// Let go of a snapshot no handle holds any more (called at the end of a
/// tick), so the loop does not keep a context's values alive after the
/// callbacks that could see them have run.
pub fn release_unused(py: Python<'_>, snapshot: &GilCell<Snapshot>) {
    let unused = snapshot.with(py, |s| match &s.last {
        // SAFETY: reading the reference count of a live object we hold.
        Some((ctx, _)) if unsafe { ffi::Py_REFCNT(ctx.as_ptr()) } == 1 => s.last.take(),
        _ => None,
    });
    drop(unused);
}

/// Drop the snapshot (the loop is closing or being cleared by the collector).
pub fn clear(snapshot: &mut Snapshot) -> Option<Py<PyAny>> {
    snapshot.last.take().map(|(ctx, _)| ctx)
}

/// The snapshot for the loop's `__traverse__`.
pub fn held(snapshot: &Snapshot) -> Option<&Py<PyAny>> {
    snapshot.last.as_ref().map(|(ctx, _)| ctx)
}

/// Where `PyContext` keeps its variables (a HAMT): after the object header
/// and the `ctx_prev` pointer, in every CPython from 3.7 to 3.14. The
/// struct is internal (`pycore_context.h`), so module init checks the
/// layout on the running interpreter ([`check_layout`]) and sharing stays
/// off if it does not hold.
const VARS_OFFSET: usize = std::mem::size_of::<ffi::PyObject>() + std::mem::size_of::<usize>();

const UNCHECKED: u8 = 0;
const LAYOUT_OK: u8 = 1;
const LAYOUT_UNKNOWN: u8 = 2;
static LAYOUT: AtomicU8 = AtomicU8::new(UNCHECKED);

/// The identity of a context's variable mapping: equal for a context and
/// its copies until a variable is set in one of them. `None` when sharing
/// is off (layout not confirmed, a free-threaded build, or not an exact
/// Context).
fn vars_identity(ctx: &Bound<'_, PyAny>) -> Option<usize> {
    if cfg!(Py_GIL_DISABLED)
        || LAYOUT.load(Ordering::Relaxed) != LAYOUT_OK
        || !pyapi::is_context(ctx)
    {
        return None;
    }
    // SAFETY: `ctx` is a live exact Context, whose size (checked in
    // `check_layout` against `tp_basicsize`) covers a pointer at
    // VARS_OFFSET; the pointer is read, never dereferenced.
    Some(unsafe { read_vars(ctx.as_ptr()) })
}

/// # Safety
/// `ctx` is a live object at least `VARS_OFFSET + 8` bytes long.
unsafe fn read_vars(ctx: *mut ffi::PyObject) -> usize {
    // SAFETY: as the caller promises; an unaligned read is not needed (the
    // field is pointer-aligned after a pointer-aligned header).
    unsafe { *(ctx.cast::<u8>().add(VARS_OFFSET).cast::<usize>()) }
}

/// Confirm on this interpreter that the word at `VARS_OFFSET` behaves as
/// the variable mapping: shared by a context and its copy, changed by
/// setting a variable, and inside the object. Sharing is on only if so.
pub fn check_layout(py: Python<'_>) -> PyResult<()> {
    let ok = !cfg!(Py_GIL_DISABLED) && layout_behaves(py)?;
    LAYOUT.store(
        if ok { LAYOUT_OK } else { LAYOUT_UNKNOWN },
        Ordering::Relaxed,
    );
    Ok(())
}

fn layout_behaves(py: Python<'_>) -> PyResult<bool> {
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
