//! The timers a loop keeps in its heap.

use crate::handle::{release_timer, AnyHandle, Core, TimerHandle};
use loop_core::timers::TimerEntry;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// A timer in the heap, untracked by the cycle collector while it is there
/// (see `handle::untrack_while_queued`). `None` only once taken out.
pub(super) struct ScheduledTimer(Option<Py<TimerHandle>>);

impl ScheduledTimer {
    pub(super) fn new(timer: Py<TimerHandle>) -> Self {
        ScheduledTimer(Some(timer))
    }

    /// Out of the heap to run: the ready queue's release tracks it again.
    pub(super) fn take(mut self) -> Option<Py<TimerHandle>> {
        self.0.take()
    }

    pub(super) fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match &self.0 {
            Some(timer) => AnyHandle::visit_timer(timer, visit),
            None => Ok(()),
        }
    }

    pub(super) fn core(&self) -> Option<&Core> {
        self.0.as_ref().map(|timer| timer.get().core())
    }
}

impl Drop for ScheduledTimer {
    /// Dropped unrun (cancelled, compacted away, loop closed or freed):
    /// back on the collector's lists if someone else holds it.
    fn drop(&mut self) {
        if let Some(timer) = self.0.take() {
            // Without an interpreter to attach to (finalizing), the closure
            // is dropped unrun and with it the reference: a plain decref.
            let _ = Python::try_attach(move |py| release_timer(timer.into_bound(py)));
        }
    }
}

impl TimerEntry for ScheduledTimer {
    fn is_cancelled(&self) -> bool {
        self.0.as_ref().map_or(true, |t| t.get().is_cancelled())
    }
}
