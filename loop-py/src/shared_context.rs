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
//! (the snapshot) and hands it to every handle scheduled while the current
//! context has the same mapping, read in place without a copy
//! (`context_layout`; where that read is not confirmed, a fresh copy is
//! compared and goes straight back to the freelist).
//!
//! Sharing starts only once many handles are waiting
//! ([`SHARE_FROM_DEPTH`]): with a few, the copies come from the freelist
//! and sharing would only add the run-time copy below. It ends at the end
//! of the tick in which no handle holds the snapshot any more.
//!
//! A shared snapshot is never entered: a handle holding it runs in a
//! private copy ([`run_in_copy`]), so a variable one callback sets is not
//! seen by the next, as in asyncio. A copy its callback left as it found it
//! (no variable set, no reference kept) cannot be told from a fresh copy,
//! so the loop keeps it (the spare) for the next handle of the same
//! variables instead of freeing it and copying again. A handle whose
//! context is asked for (`get_context()`, `_context`) is given a private
//! copy first, so what the caller gets is what the callback runs in.

use crate::call_args::CallArgs;
use crate::context_layout::{current_vars, read_vars, vars_identity};
use crate::gil_cell::GilCell;
use crate::pyapi;
use pyo3::ffi;
use pyo3::prelude::*;

/// The loop's last implicit snapshot and the identity of its variables,
/// and the spare copy to run shared handles in.
#[derive(Default)]
pub struct Snapshot {
    last: Option<(Py<PyAny>, usize)>,
    /// A private Context nobody else holds, left unchanged by the callback
    /// that last ran in it (see [`run_in_copy`]).
    spare: Option<Py<PyAny>>,
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
    // The current context's variables, read in place where that read is
    // confirmed (an unchanged context then costs no copy at all), else
    // from a fresh copy.
    let (fresh, vars) = match current_vars(py) {
        Some(vars) => (None, vars),
        None => {
            let fresh = pyapi::copy_current_context(py)?;
            match vars_identity(&fresh) {
                Some(vars) => (Some(fresh), vars),
                None => return Ok((fresh, false)),
            }
        }
    };
    if let Some(ctx) = shared_for(py, &sharing, vars) {
        return Ok((ctx, true));
    }
    let fresh = match fresh {
        Some(fresh) => fresh,
        None => pyapi::copy_current_context(py)?,
    };
    Ok(start_sharing(py, &sharing, fresh, vars))
}

/// The snapshot, if it has the variables `vars`.
#[inline]
fn shared_for<'py>(
    py: Python<'py>,
    sharing: &Sharing<'_>,
    vars: usize,
) -> Option<Bound<'py, PyAny>> {
    sharing.snapshot.with(py, |s| match &s.last {
        Some((ctx, last_vars)) if *last_vars == vars => Some(ctx.clone_ref(py).into_bound(py)),
        _ => None,
    })
}

/// `fresh` (a copy of the current context, of variables `vars`) for a
/// handle; it becomes the snapshot if enough handles are waiting.
fn start_sharing<'py>(
    py: Python<'py>,
    sharing: &Sharing<'_>,
    fresh: Bound<'py, PyAny>,
    vars: usize,
) -> (Bound<'py, PyAny>, bool) {
    if sharing.waiting.waiting_handles() < SHARE_FROM_DEPTH {
        return (fresh, false);
    }
    let replaced = sharing
        .snapshot
        .with(py, |s| s.last.replace((fresh.clone().unbind(), vars)));
    // Dropping the old snapshot may free a Context: outside `with`.
    drop(replaced);
    (fresh, true)
}

/// Run `func(*args)` in a private copy of `ctx`, a shared snapshot, as
/// asyncio runs each handle in its own context. The loop's spare copy is
/// used when it has the same variables; the copy goes back as the spare if
/// the callback left it as it found it: no variable set (the mapping's
/// identity is unchanged) and no reference kept (a `Token` from `set()`
/// keeps one). `snapshot` (the running loop's, which holds the spare) is
/// `None` outside the loop's own run (`Handle._run()`): a fresh copy every
/// time.
pub fn run_in_copy(
    snapshot: Option<&GilCell<Snapshot>>,
    ctx: &Bound<'_, PyAny>,
    func: &Bound<'_, PyAny>,
    args: &CallArgs,
) -> PyResult<()> {
    let py = ctx.py();
    let reuse = snapshot.zip(vars_identity(ctx));
    // Taken out while the callback runs: a nested run copies afresh.
    let kept = reuse.and_then(|(cell, _)| cell.with(py, |s| s.spare.take()));
    let own = match (kept, reuse) {
        // SAFETY: the spare is a live exact Context (one of our copies).
        (Some(c), Some((_, vars))) if unsafe { read_vars(c.as_ptr()) } == vars => c.into_bound(py),
        // Another snapshot's spare (dropped here, outside `with`).
        _ => pyapi::copy_context(ctx)?,
    };
    let result = pyapi::run_in_context(&own, func, args);
    if let Some((cell, vars)) = reuse {
        // SAFETY: reading the reference count and variables of a live
        // exact Context we hold.
        let clean = unsafe { ffi::Py_REFCNT(own.as_ptr()) == 1 && read_vars(own.as_ptr()) == vars };
        if clean {
            let displaced = cell.with(py, |s| s.spare.replace(own.unbind()));
            drop(displaced);
        }
    }
    result
}

/// Let go of a snapshot no handle holds any more (called at the end of a
/// tick), and of a spare copy of other variables than the snapshot's, so
/// the loop does not keep a context's values alive after the callbacks
/// that could see them have run.
pub fn release_unused(py: Python<'_>, snapshot: &GilCell<Snapshot>) {
    let unused = snapshot.with(py, |s| {
        let last = match &s.last {
            // SAFETY: reading the reference count of a live object we hold.
            Some((ctx, _)) if unsafe { ffi::Py_REFCNT(ctx.as_ptr()) } == 1 => s.last.take(),
            _ => None,
        };
        let spare = match (&s.spare, &s.last) {
            // SAFETY: the spare is a live exact Context we hold.
            (Some(c), Some((_, vars))) if unsafe { read_vars(c.as_ptr()) } == *vars => None,
            _ => s.spare.take(),
        };
        (last, spare)
    });
    drop(unused);
}

/// Drop the snapshot and the spare (the loop is closing or being cleared by
/// the collector).
pub fn clear(snapshot: &mut Snapshot) -> [Option<Py<PyAny>>; 2] {
    [
        snapshot.last.take().map(|(ctx, _)| ctx),
        snapshot.spare.take(),
    ]
}

/// The snapshot and the spare, for the loop's `__traverse__`.
pub fn held(snapshot: &Snapshot) -> [Option<&Py<PyAny>>; 2] {
    [
        snapshot.last.as_ref().map(|(ctx, _)| ctx),
        snapshot.spare.as_ref(),
    ]
}
