//! Closing a loop: what it still queues is dropped, not run, and its
//! poller's kernel objects go at once (as asyncio closes its selector).

use super::{Loop, ScheduledTimer};
use crate::handle::AnyHandle;
use crate::handle_pool::HandlePool;
use crate::shared_context;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::atomic::Ordering;

impl Loop {
    /// `_close`'s work (see its docs for `finalizing`).
    pub(super) fn close_now(&self, py: Python<'_>, finalizing: bool) -> PyResult<()> {
        if self.state.owner() != 0 {
            return Err(PyRuntimeError::new_err("Cannot close a running event loop"));
        }
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.injector.close();
        let (ready, timers, fds, deferred) = {
            let mut st = self.state()?;
            // Deferred work is dropped, not run: a closed loop does no I/O.
            let deferred = std::mem::take(&mut st.tick_end);
            let mut ready: Vec<AnyHandle> = st.ready.drain().collect();
            ready.extend(st.spare.drain());
            let mut timers = Vec::new();
            st.timers.clear(&mut timers);
            let fds = st.reactor.drain();
            // The epoll fd and eventfd go now, as asyncio closes its selector.
            st.reactor.close();
            (ready, timers, fds, deferred)
        };
        let mut queued: Vec<AnyHandle> = Vec::new();
        self.injector.take_all(&mut queued);
        if finalizing {
            let cores = ready.iter().chain(&queued).filter_map(AnyHandle::core);
            for core in cores.chain(timers.iter().filter_map(ScheduledTimer::core)) {
                core.forget(py);
            }
        }
        for handle in ready.into_iter().chain(queued) {
            drop(handle.release(py));
        }
        let pooled = self.pool.with(py, HandlePool::clear);
        let snapshot = self.snapshot.with(py, shared_context::clear);
        drop((timers, fds, pooled, deferred, snapshot));
        self.loop_keyword.clear(py);
        Ok(())
    }
}
