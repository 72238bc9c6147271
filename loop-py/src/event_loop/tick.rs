//! The tick: asyncio's `BaseEventLoop._run_once`, step for step — poll, I/O
//! callbacks, due timers, then exactly the callbacks ready at that point —
//! and the callback boundary where Rust panics are caught.
//!
//! Running one handle (`run_handle`, the handle's `run`, `release`,
//! `recycle`) inlines into the tick's loop, for the instruction cache (see
//! `fastcall`).

use super::io_port::Readiness;
use super::{Graveyard, Loop};
use crate::handle::{AnyHandle, Handle};
use crate::handle_pool::HandlePool;
use crate::pyapi;
use crate::shared_context::Waiting;
use loop_core::clock;
use loop_core::ready::ReadyQueue;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

impl Loop {
    /// One iteration: poll, I/O callbacks, due timers, then exactly the
    /// callbacks that are ready at that point.
    pub(super) fn run_once(&self, slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let mut graveyard: Graveyard = Vec::new();
        let blocking;
        let mut slept_long = false;
        let mut fell_back = None;
        let mut batch = {
            let mut guard = self.state()?;
            let st = &mut *guard;
            self.absorb_injected(st);
            st.stats.ticks += 1;
            if self.timer_cancels.load(Ordering::Relaxed) > 0 {
                let cancels = self.timer_cancels.swap(0, Ordering::AcqRel);
                st.stats.timers_cancelled += cancels as u64;
                st.timers.note_cancelled_n(cancels, &mut graveyard);
            }
            // A clock read of this tick that the timer phase can reuse: the
            // end of a blocking poll (read for `poll_seconds` anyway).
            let mut after_poll = None;
            let mut deadline_read = None;
            let timeout = if !st.ready.is_empty()
                || !st.tick_end.is_empty()
                || self.stopping.load(Ordering::Acquire)
            {
                0
            } else {
                match st.timers.next_deadline(&mut graveyard) {
                    Some(deadline) => {
                        let now = clock::monotonic();
                        deadline_read = Some(now);
                        clock::timeout_millis(deadline - now)
                    }
                    None => -1,
                }
            };
            blocking = timeout != 0;
            let mut events = std::mem::take(&mut st.events);
            events.clear();
            let wakes = std::mem::take(&mut st.deferred_wakes);
            let reactor = &mut st.reactor;
            let waited = if blocking {
                // Only a poll that can block is worth releasing the GIL for
                // (or timing: the only clock reads `loop.stats()` adds).
                let start = deadline_read.unwrap_or_else(clock::monotonic);
                let waited = py.detach(|| {
                    // Woken with the GIL free: they can run at once.
                    run_wakes(wakes);
                    reactor.poll(timeout, &mut events)
                });
                let end = clock::monotonic();
                st.stats.note_blocking_poll(end - start);
                slept_long = end - start >= HandlePool::IDLE_SECONDS;
                after_poll = Some(end);
                waited
            } else {
                run_wakes(wakes);
                if reactor.is_empty() {
                    // Nothing to poll and nothing to wait for: skip the
                    // syscall. Threadsafe callbacks are taken from the
                    // injector below.
                    Ok(loop_core::poller::Wait::default())
                } else {
                    st.stats.note_poll();
                    reactor.poll(0, &mut events)
                }
            };
            if let Ok(wait) = &waited {
                if wait.fell_back {
                    let reason = st.reactor.fallback_reason().map(str::to_string);
                    fell_back = Some((st.reactor.backend().name(), reason));
                }
            }
            match waited {
                Ok(wait) if wait.woken => self.injector.acknowledge_wake(),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    st.events = events;
                    return Err(crate::errors::os_error(&e));
                }
            }
            for ready in &events {
                let Some(source) = st.reactor.get(ready.fd) else {
                    continue;
                };
                let fds = &source.data;
                let live = |h: &&Py<Handle>| !h.get().is_cancelled();
                if ready.readable {
                    if let Some(h) = fds.reader.as_ref().filter(live) {
                        st.ready.push(AnyHandle::Plain(h.clone_ref(py)));
                    }
                }
                if ready.writable {
                    if let Some(h) = fds.writer.as_ref().filter(live) {
                        st.ready.push(AnyHandle::Plain(h.clone_ref(py)));
                    }
                }
                if let Some((port, wanted)) = &fds.native {
                    let reported = Readiness {
                        readable: ready.readable && wanted.readable,
                        writable: ready.writable && wanted.writable,
                    };
                    if reported != Readiness::default() && port.get().report(reported) {
                        st.ready.push(AnyHandle::Io(port.clone_ref(py)));
                    }
                }
            }
            st.events = events;
            self.absorb_injected(st);
            let end = if st.timers.is_empty() {
                f64::NEG_INFINITY
            } else {
                after_poll.unwrap_or_else(clock::monotonic) + self.clock_resolution
            };
            let mut fired = 0;
            while let Some(timer) = st.timers.pop_due(end, &mut graveyard) {
                if let Some(timer) = timer.take() {
                    timer.get().scheduled.store(false, Ordering::Release);
                    st.ready.push(AnyHandle::Timer(timer));
                    fired += 1;
                }
            }
            st.stats.timers_fired += fired;
            // The batch takes the ready items; the ready queue takes the
            // spare's storage (no allocation per tick).
            let mut batch = std::mem::replace(&mut st.spare, ReadyQueue::unallocated());
            batch.swap(&mut st.ready);
            // Counted as a batch; the ones an exception leaves unrun are
            // taken back below.
            st.stats.callbacks += batch.len() as u64;
            batch
        };
        drop(graveyard);
        if let Some((name, reason)) = fell_back {
            self.ring_failed(py, name, reason)?;
        }
        if slept_long {
            // An emptied handle holds no references: freeing it runs no Python.
            drop(self.pool.with(py, HandlePool::trim_idle));
        }
        if blocking {
            // Run Python-level signal handlers now (Ctrl-C raises here) rather
            // than at some later bytecode: the loop may have nothing to run.
            py.check_signals()?;
        }
        let debug = self.is_debug();
        while let Some(handle) = batch.pop() {
            let result = self.run_handle(slf, &handle, debug);
            if let Some(emptied) = handle.release(py) {
                self.recycle(py, emptied);
            }
            if let Err(err) = result {
                return Err(self.abandon_batch(py, &mut batch, err));
            }
        }
        if let Ok(mut st) = self.state.try_borrow_mut() {
            st.spare = batch;
        }
        self.run_tick_end(py);
        crate::shared_context::release_unused(py, &self.snapshot);
        // The bytecode boundary a C callback lacks: a signal it tripped
        // (`_thread.interrupt_main`) is handled now, not after a poll that
        // may block with nothing else scheduled.
        py.check_signals()
    }

    /// The io_uring ring failed mid-run and the poller went on with epoll:
    /// say so once, as a warning on the `ferroloop` logger.
    #[cold]
    #[inline(never)]
    fn ring_failed(
        &self,
        py: Python<'_>,
        name: &'static str,
        reason: Option<String>,
    ) -> PyResult<()> {
        self.note_fallback(name, reason.clone());
        let message = reason.unwrap_or_else(|| format!("the event loop now runs on {name}"));
        pyapi::ferroloop_logger(py)?.call_method1("warning", (message,))?;
        Ok(())
    }

    /// KeyboardInterrupt/SystemExit out of a callback: the callbacks not run
    /// yet keep their place at the front of the ready queue, the tick's end
    /// hooks still run, and the error goes on up.
    #[cold]
    #[inline(never)]
    fn abandon_batch(
        &self,
        py: Python<'_>,
        batch: &mut ReadyQueue<AnyHandle>,
        err: PyErr,
    ) -> PyErr {
        if let Ok(mut st) = self.state.try_borrow_mut() {
            st.stats.callbacks = st.stats.callbacks.saturating_sub(batch.len() as u64);
            st.ready.prepend(batch);
        }
        self.run_tick_end(py);
        err
    }

    /// The hooks deferred to the end of this tick. Hooks they add run at
    /// the end of the next one (whose poll then does not block).
    fn run_tick_end(&self, py: Python<'_>) {
        let hooks = match self.state.try_borrow_mut() {
            Ok(mut st) if !st.tick_end.is_empty() => std::mem::take(&mut st.tick_end),
            _ => return,
        };
        for hook in hooks {
            hook.run(py);
        }
    }

    /// Keep an emptied handle for the next `call_soon`.
    #[inline(always)]
    pub(super) fn recycle(&self, py: Python<'_>, handle: Py<Handle>) {
        let overflow = self.pool.with(py, |pool| pool.put(handle));
        // An emptied handle holds no references: freeing it runs no Python.
        drop(overflow);
    }

    /// Run one handle; a Rust panic becomes a RuntimeError for the
    /// exception handler instead of a BaseException killing `run_forever`.
    #[inline(always)]
    pub(super) fn run_handle(
        &self,
        slf: &Bound<'_, Self>,
        handle: &AnyHandle,
        debug: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let start = if debug { clock::monotonic() } else { 0.0 };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            handle.run(py, slf.as_any(), &self.snapshot, debug)
        }));
        let result = match outcome {
            Ok(result) => result,
            Err(panic) => report_panic(slf, handle.bind(py), panic),
        };
        if debug {
            self.note_slow_callback(py, handle, start)?;
        }
        result
    }

    /// Debug mode: log a callback that ran longer than
    /// `slow_callback_duration` (out of line, off the normal path).
    #[cold]
    #[inline(never)]
    fn note_slow_callback(&self, py: Python<'_>, handle: &AnyHandle, start: f64) -> PyResult<()> {
        let took = clock::monotonic() - start;
        if took >= f64::from_bits(self.slow_callback.load(Ordering::Relaxed)) {
            let shown = match handle.bind(py) {
                Some(h) => h.clone(),
                None => pyo3::types::PyString::new(py, "<native work>").into_any(),
            };
            pyapi::log_slow_callback(py)?.call1((shown, took))?;
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn report_panic(
    slf: &Bound<'_, Loop>,
    handle: Option<&Bound<'_, PyAny>>,
    panic: Box<dyn std::any::Any + Send>,
) -> PyResult<()> {
    let py = slf.py();
    let what = panic_message(panic.as_ref());
    let exc = PyRuntimeError::new_err(format!("ferroloop internal error (Rust panic): {what}"));
    let context = PyDict::new(py);
    context.set_item(
        "message",
        "Rust panic in ferroloop while running a callback",
    )?;
    context.set_item("exception", exc.into_value(py))?;
    if let Some(handle) = handle {
        context.set_item("handle", handle)?;
    }
    slf.call_method1("call_exception_handler", (context,))?;
    Ok(())
}

pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// Gives the loop up when `_run` returns or raises.
pub(super) struct RunGuard<'a>(pub(super) &'a Loop);

/// Run deferred wake-ups (see `Loop::wake_when_idle`).
fn run_wakes(wakes: Vec<super::DeferredWake>) {
    for wake in wakes {
        wake();
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut st) = self.0.state.try_borrow_mut() {
            st.stats.run_ended(clock::monotonic());
            // The loop stops: nobody may wait for its next poll.
            run_wakes(std::mem::take(&mut st.deferred_wakes));
        }
        self.0.stopping.store(false, Ordering::Release);
        self.0.state.release();
    }
}

impl Waiting for Loop {
    /// Handles waiting to run, each holding a context: ready in this
    /// tick's queue and timers in the heap (when the state can be looked
    /// at), plus those other threads handed over.
    fn waiting_handles(&self) -> usize {
        let queued = self
            .state
            .try_borrow_mut()
            .map_or(0, |st| st.ready.len() + st.timers.len());
        queued + self.injector.len()
    }
}
