//! The native half of `ferroloop.Loop`: its state, scheduling and timers, and
//! the Python methods. The tick lives in [`tick`], fd callbacks in
//! [`fd_callbacks`].

mod close;
mod construct;
mod door;
mod fastcall;
mod fd_callbacks;
mod io_port;
mod scheduled;
mod tick;

pub(crate) use door::{LoopClosed, LoopWork, NativeWork};

pub(crate) use fastcall::install as install_fastcall_methods;
pub(crate) use io_port::{Dispatch, IoPort, Readiness};

use construct::LoopKeyword;
use fd_callbacks::FdCallbacks;
use scheduled::ScheduledTimer;
use tick::{panic_message, RunGuard};

use crate::call_args::CallArgs;
use crate::errors::{closed, not_thread_safe, to_pyerr};
use crate::gil_cell::GilCell;
use crate::handle::{track, AnyHandle, Handle, NewHandle, TimerHandle};
use crate::handle_pool::HandlePool;
use crate::owner::{current_thread, Owned, Refused};
use crate::pyapi;
use crate::shared_context::{self, Sharing, Snapshot};
use loop_core::clock;
use loop_core::injector::Injector;
use loop_core::poller::BackendChoice;
use loop_core::reactor::{Reactor, Ready};
use loop_core::ready::ReadyQueue;
use loop_core::stats::LoopStats;
use loop_core::timers::Timers;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::PyTraverseError;
use std::cell::RefMut;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Everything only the loop's thread touches.
struct State {
    ready: ReadyQueue<AnyHandle>,
    /// The emptied queue of the previous tick, reused to avoid allocation.
    spare: ReadyQueue<AnyHandle>,
    timers: Timers<ScheduledTimer>,
    reactor: Reactor<FdCallbacks>,
    events: Vec<Ready>,
    /// Run once this tick's callbacks have run (see [`TickEnd`]).
    tick_end: Vec<Box<dyn TickEnd>>,
    /// `loop.stats()`'s counters.
    stats: LoopStats,
    /// Storage for the batches taken from the injector (kept for reuse).
    injected: Vec<AnyHandle>,
    /// Wake-ups of other threads, deferred to the loop's next poll (see
    /// [`Loop::wake_when_idle`]).
    deferred_wakes: Vec<DeferredWake>,
}

/// A wake-up of another thread (unparking it, or waking its loop's poll):
/// GIL-free Rust, run with the interpreter detached.
pub(crate) type DeferredWake = Box<dyn FnOnce() + Send>;

/// Work a component defers to the end of the current tick, after every
/// callback that was ready has run: the HTTP server writes the responses
/// finished during a tick together there (a "cork"), so a client is woken
/// once per tick instead of once per response.
pub(crate) trait TickEnd: Send {
    /// Runs with no loop state borrowed; it may call back into the loop.
    /// Errors are the component's to report: the tick goes on.
    fn run(self: Box<Self>, py: Python<'_>);

    /// The Python objects it holds, for the loop's `__traverse__`.
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;
}

#[pyclass(frozen, subclass, module = "ferroloop._native", name = "Loop")]
pub struct Loop {
    state: Owned<State>,
    injector: Arc<Injector<AnyHandle>>,
    closed: AtomicBool,
    stopping: AtomicBool,
    debug: AtomicBool,
    /// f64 bits of `slow_callback_duration`.
    slow_callback: AtomicU64,
    clock_resolution: f64,
    timer_cancels: Arc<AtomicUsize>,
    task_factory: Mutex<Option<Py<PyAny>>>,
    /// `task_factory` is set: read by `create_task` without the lock.
    has_task_factory: AtomicBool,
    /// Emptied `call_soon` handles for reuse. Outside the loop's state so
    /// that `call_soon_threadsafe` from another thread (GIL held) can take
    /// one too: a producer thread otherwise allocates every handle.
    pool: GilCell<HandlePool>,
    /// The implicit context `call_soon*` handles share while the context
    /// variables are unchanged (see `shared_context`).
    snapshot: GilCell<Snapshot>,
    /// `{"loop": self}` for the `Future` and `Task` it makes.
    loop_keyword: LoopKeyword,
    /// This process is a child forked from inside a run of this loop: for
    /// asyncio no loop runs here (see [`Loop::runs_here`]).
    forked_in_run: AtomicBool,
    /// The poller backend and why it is not io_uring when io_uring was
    /// preferred; readable from any thread (`stats()`, the server's
    /// metrics), changed only by a fall-back from io_uring mid-run.
    backend: Mutex<BackendState>,
}

/// What [`Loop::backend`] keeps.
#[derive(Clone)]
pub(crate) struct BackendState {
    pub(crate) name: &'static str,
    pub(crate) fallback: Option<String>,
}

/// A freed loop's door refuses from then on (work sent to it would never
/// run); what was queued is dropped with the injector's last door.
impl Drop for Loop {
    fn drop(&mut self) {
        self.injector.close();
    }
}

/// References to drop once no loop state is borrowed: a decref can run
/// `__del__`, which can call back into the loop.
type Graveyard = Vec<ScheduledTimer>;

fn number_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    obj.extract::<f64>().map_err(|_| {
        let type_name = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        PyTypeError::new_err(format!("{what} must be a real number, not {type_name}"))
    })
}

impl Loop {
    pub(crate) fn backend_state(&self) -> BackendState {
        self.backend
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The poller switched from io_uring to epoll mid-run.
    fn note_fallback(&self, name: &'static str, fallback: Option<String>) {
        *self.backend.lock().unwrap_or_else(PoisonError::into_inner) =
            BackendState { name, fallback };
    }
}

impl Loop {
    fn state(&self) -> PyResult<RefMut<'_, State>> {
        self.state
            .try_borrow_mut()
            .map_err(|refused| match refused {
                Refused::OtherThread => not_thread_safe(),
                Refused::Busy => PyRuntimeError::new_err(
                    "ferroloop: loop state is busy (re-entrant call from a destructor)",
                ),
            })
    }

    #[inline]
    fn check_closed(&self) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(closed())
        } else {
            Ok(())
        }
    }

    #[inline]
    pub(crate) fn is_debug(&self) -> bool {
        self.debug.load(Ordering::Relaxed)
    }

    /// asyncio's debug-mode checks for `call_soon*` (out of line: the
    /// scheduling path runs them only in debug mode).
    #[cold]
    #[inline(never)]
    fn debug_checks(
        &self,
        callback: &Bound<'_, PyAny>,
        method: &str,
        thread_bound: bool,
    ) -> PyResult<()> {
        if thread_bound {
            self.check_thread()?;
        }
        pyapi::check_callback(callback, method)
    }

    /// The implicit-context snapshot for a handle made without `context=`.
    fn sharing(&self) -> Sharing<'_> {
        Sharing {
            snapshot: &self.snapshot,
            waiting: self,
        }
    }

    /// asyncio's `_check_thread` (debug mode only).
    fn check_thread(&self) -> PyResult<()> {
        if self.state.admits_current() {
            Ok(())
        } else {
            Err(not_thread_safe())
        }
    }

    /// Move callbacks queued by other threads into the ready queue (and
    /// timers into the heap), in the order they were queued.
    #[inline]
    fn absorb_injected(&self, st: &mut State) {
        if !self.injector.is_empty() {
            self.absorb_injected_now(st);
        }
    }

    #[inline(never)]
    fn absorb_injected_now(&self, st: &mut State) {
        let State {
            injected,
            ready,
            timers,
            stats,
            ..
        } = st;
        self.injector.take_all(injected);
        stats.threadsafe_calls += injected.len() as u64;
        for handle in injected.drain(..) {
            match handle {
                AnyHandle::Timer(timer) => {
                    let when = timer.get().when;
                    timers.push(when, ScheduledTimer::new(timer));
                }
                plain => ready.push(plain),
            }
        }
    }

    /// Wake another thread when this loop next lets go of the interpreter
    /// (its next poll), not now. Called on the loop's own thread, from a
    /// callback: the thread woken now would only wait for the GIL this
    /// loop holds until then, costing two more context switches per
    /// cross-thread round trip. Refused (`wake` comes back) off the loop's
    /// thread or while it is not running: the caller wakes at once.
    pub(crate) fn wake_when_idle(&self, wake: DeferredWake) -> Result<(), DeferredWake> {
        if self.state.owner() != current_thread() {
            return Err(wake);
        }
        match self.state.try_borrow_mut() {
            Ok(mut st) => {
                st.deferred_wakes.push(wake);
                Ok(())
            }
            Err(_) => Err(wake),
        }
    }

    /// Run `hook` at the end of the current tick (or of the next one, when
    /// no tick is running). Refused with the loop's state borrowed, e.g.
    /// from a destructor; the caller then does the work at once.
    pub(crate) fn at_tick_end(&self, hook: Box<dyn TickEnd>) -> PyResult<()> {
        self.check_closed()?;
        self.state()?.tick_end.push(hook);
        Ok(())
    }

    /// Queue a ready handle. The loop's own thread pushes directly (after
    /// anything other threads queued earlier); other threads, and re-entrant
    /// calls from destructors, go through the injector.
    #[inline(always)]
    fn schedule(&self, handle: AnyHandle) -> PyResult<()> {
        match self.state.try_borrow_mut() {
            Ok(mut st) => {
                self.absorb_injected(&mut st);
                st.ready.push(handle);
                Ok(())
            }
            Err(_) => self.injector.push(handle).map_err(to_pyerr),
        }
    }

    fn schedule_timer(&self, handle: Py<TimerHandle>) -> PyResult<()> {
        let when = handle.get().when;
        handle.get().scheduled.store(true, Ordering::Release);
        match self.state.try_borrow_mut() {
            Ok(mut st) => {
                st.timers.push(when, ScheduledTimer::new(handle));
                Ok(())
            }
            Err(_) => self
                .injector
                .push(AnyHandle::Timer(handle))
                .map_err(to_pyerr),
        }
    }

    /// asyncio's checks for `call_soon*`, then a handle to queue (recycled
    /// when the pool has one; see `handle_pool::HandlePool`).
    #[inline(always)]
    fn new_ready_handle(
        slf: &Bound<'_, Self>,
        callback: Bound<'_, PyAny>,
        args: CallArgs,
        context: Option<Bound<'_, PyAny>>,
        method: &str,
        thread_bound: bool,
    ) -> PyResult<Py<Handle>> {
        let this = slf.get();
        this.check_closed()?;
        let debug = this.is_debug();
        if debug {
            this.debug_checks(&callback, method, thread_bound)?;
        }
        let pooled = this.pool.with(slf.py(), HandlePool::take);
        NewHandle {
            callback,
            args,
            context,
            event_loop: slf.as_any(),
            debug,
            sharing: Some(this.sharing()),
        }
        .build_queued(pooled)
    }

    fn new_timer(
        slf: &Bound<'_, Self>,
        when: f64,
        callback: Bound<'_, PyAny>,
        args: CallArgs,
        context: Option<Bound<'_, PyAny>>,
        method: &str,
    ) -> PyResult<Py<TimerHandle>> {
        let this = slf.get();
        this.check_closed()?;
        let debug = this.is_debug();
        if debug {
            this.debug_checks(&callback, method, true)?;
        }
        let handle = NewHandle {
            callback,
            args,
            context,
            event_loop: slf.as_any(),
            debug,
            sharing: Some(this.sharing()),
        }
        .build_timer(when, Arc::clone(&this.timer_cancels))?;
        this.schedule_timer(handle.clone_ref(slf.py()))?;
        Ok(handle)
    }

    /// `call_soon` (entered from [`fastcall`]).
    fn call_soon(
        slf: &Bound<'_, Self>,
        callback: Bound<'_, PyAny>,
        args: CallArgs,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        let handle = Loop::new_ready_handle(slf, callback, args, context, "call_soon", true)?;
        slf.get()
            .schedule(AnyHandle::Plain(handle.clone_ref(slf.py())))?;
        Ok(handle)
    }

    /// `call_soon_threadsafe` (entered from [`fastcall`]).
    fn call_soon_threadsafe(
        slf: &Bound<'_, Self>,
        callback: Bound<'_, PyAny>,
        args: CallArgs,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        let this = slf.get();
        let handle =
            Loop::new_ready_handle(slf, callback, args, context, "call_soon_threadsafe", false)?;
        let queued = AnyHandle::Plain(handle.clone_ref(slf.py()));
        if this.state.owner() == current_thread() {
            this.schedule(queued)?;
        } else {
            this.injector.push(queued).map_err(to_pyerr)?;
        }
        Ok(handle)
    }
}

#[pymethods]
impl Loop {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(factory) = self.task_factory.try_lock() {
            visit.call(&*factory)?;
        }
        let Some(st) = self.state.peek_in_gc() else {
            return Ok(());
        };
        for handle in st.ready.iter().chain(st.spare.iter()) {
            handle.visit_owned(&visit)?;
        }
        for timer in st.timers.iter() {
            timer.visit(&visit)?;
        }
        for (_, fds) in st.reactor.iter() {
            visit.call(&fds.reader)?;
            visit.call(&fds.writer)?;
            if let Some((port, _)) = &fds.native {
                visit.call(port)?;
            }
        }
        for hook in &st.tick_end {
            hook.traverse(&visit)?;
        }
        // SAFETY: called from `__traverse__`.
        unsafe { self.loop_keyword.traverse(&visit)? };
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.snapshot.with_in_gc(|s| {
                shared_context::held(s)
                    .into_iter()
                    .try_for_each(|ctx| visit.call(ctx))
            })
        };
        // Free-threaded: a snapshot cell held elsewhere is not visited (as
        // a handle's fields, see `Core::traverse`); these builds never
        // share, so it is empty anyway.
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    /// Break cycles: an unreachable loop drops what it holds.
    fn __clear__(&self) {
        let taken = self.state.take_in_gc().map(|mut guard| {
            let st = &mut *guard;
            let mut timers = Vec::new();
            st.timers.clear(&mut timers);
            let ready: Vec<AnyHandle> = st.ready.drain().chain(st.spare.drain()).collect();
            let deferred = std::mem::take(&mut st.tick_end);
            (ready, timers, st.reactor.drain(), deferred)
        });
        drop(taken);
        let factory = self.task_factory.try_lock().ok().and_then(|mut f| f.take());
        self.has_task_factory.store(false, Ordering::Relaxed);
        drop(factory);
        // SAFETY: called from `__clear__`; the context is dropped after the
        // closure returns.
        let snapshot = unsafe { self.snapshot.with_in_gc(shared_context::clear) };
        drop(snapshot);
        // SAFETY: called from `__clear__`.
        unsafe { self.loop_keyword.clear_in_gc() };
    }

    /// `backend`: `"auto"`, `"io_uring"` or `"epoll"`; `None` reads
    /// `FERROLOOP_BACKEND` (`auto` when unset).
    #[new]
    #[pyo3(signature = (*, backend=None))]
    fn new(backend: Option<&str>) -> PyResult<Self> {
        let choice = match backend {
            None => BackendChoice::from_env(),
            Some(text) => BackendChoice::parse(text),
        }
        .map_err(to_pyerr)?;
        let reactor = Reactor::with_backend(choice).map_err(to_pyerr)?;
        let backend = BackendState {
            name: reactor.backend().name(),
            fallback: reactor.fallback_reason().map(str::to_string),
        };
        let injector = Arc::new(Injector::new(reactor.notifier()));
        Ok(Loop {
            state: Owned::new(State {
                ready: ReadyQueue::new(),
                spare: ReadyQueue::new(),
                timers: Timers::new(),
                reactor,
                events: Vec::with_capacity(64),
                tick_end: Vec::new(),
                stats: LoopStats::new(),
                injected: Vec::new(),
                deferred_wakes: Vec::new(),
            }),
            injector,
            closed: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            debug: AtomicBool::new(false),
            slow_callback: AtomicU64::new(0.1f64.to_bits()),
            clock_resolution: clock::resolution(),
            timer_cancels: Arc::new(AtomicUsize::new(0)),
            task_factory: Mutex::new(None),
            has_task_factory: AtomicBool::new(false),
            pool: GilCell::new(HandlePool::default()),
            snapshot: GilCell::new(Snapshot::default()),
            loop_keyword: LoopKeyword::new(),
            forked_in_run: AtomicBool::new(false),
            backend: Mutex::new(backend),
        })
    }

    fn time(&self) -> f64 {
        clock::monotonic()
    }

    #[getter]
    fn _clock_resolution(&self) -> f64 {
        self.clock_resolution
    }

    pub(crate) fn create_future<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Loop::construct_on_loop(slf, pyapi::future_type(slf.py())?, &[])
    }

    /// The task factory, as asyncio's private attribute (its own
    /// `create_task` reads it).
    #[getter]
    fn _task_factory(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.get_task_factory(py)
    }

    /// asyncio's private flag: `stop()` was called and the running loop
    /// has not finished its iteration yet.
    #[getter]
    fn _stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    fn set_task_factory(&self, factory: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let factory = factory.filter(|f| !f.is_none());
        if let Some(f) = &factory {
            if !f.is_callable() {
                return Err(PyTypeError::new_err(
                    "task factory must be a callable or None",
                ));
            }
        }
        let is_set = factory.is_some();
        let old = std::mem::replace(
            &mut *self
                .task_factory
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            factory.map(Bound::unbind),
        );
        self.has_task_factory.store(is_set, Ordering::Relaxed);
        drop(old);
        Ok(())
    }

    fn get_task_factory(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.task_factory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|f| f.clone_ref(py))
    }

    fn set_debug(&self, enabled: &Bound<'_, PyAny>) -> PyResult<()> {
        self.debug.store(enabled.is_truthy()?, Ordering::Relaxed);
        Ok(())
    }

    #[getter]
    fn get_slow_callback_duration(&self) -> f64 {
        f64::from_bits(self.slow_callback.load(Ordering::Relaxed))
    }

    #[setter]
    fn set_slow_callback_duration(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = number_arg(value, "slow_callback_duration")?;
        self.slow_callback.store(value.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    fn is_running(&self) -> bool {
        self.state.owner() != 0
    }

    /// The calling thread runs this loop: it is asyncio's running loop,
    /// known without asking asyncio (on 3.11 `_get_running_loop` makes a
    /// `getpid` system call). Not in a child forked from inside the run,
    /// where asyncio sees no running loop.
    pub(crate) fn runs_here(&self) -> bool {
        self.state.owner() == current_thread() && !self.forked_in_run.load(Ordering::Relaxed)
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn _check_closed(&self) -> PyResult<()> {
        self.check_closed()
    }

    /// Stop after the current tick; wakes the loop when called from another
    /// thread (where asyncio would need `call_soon_threadsafe(loop.stop)`).
    fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        let owner = self.state.owner();
        if owner != 0 && owner != current_thread() {
            self.injector.wake();
        }
    }

    /// The native part of `run_forever`: tick until stopped. The Python
    /// wrapper sets the running loop and asyncgen hooks around it.
    fn _run(slf: &Bound<'_, Self>) -> PyResult<()> {
        let this = slf.get();
        this.check_closed()?;
        if !this.state.claim() {
            return Err(PyRuntimeError::new_err(
                "This event loop is already running",
            ));
        }
        this.forked_in_run.store(false, Ordering::Relaxed);
        let _guard = RunGuard(this);
        this.state()?.stats.run_started(clock::monotonic());
        loop {
            // A panic in the tick itself (not in a callback) is a bug in
            // ferroloop: end run_forever with a RuntimeError, never with
            // PyO3's PanicException (a BaseException, like Ctrl-C).
            match catch_unwind(AssertUnwindSafe(|| this.run_once(slf))) {
                Ok(result) => result?,
                Err(panic) => {
                    return Err(PyRuntimeError::new_err(format!(
                        "ferroloop internal error (Rust panic in the event loop): {}",
                        panic_message(panic.as_ref())
                    )))
                }
            }
            if this.stopping.load(Ordering::Acquire) {
                return Ok(());
            }
        }
    }

    /// The native part of `close`: drop every pending callback and timer.
    /// Close the loop's native side. `finalizing`: its `__del__` closes it,
    /// so it is garbage, and so is every handle it still queues (each
    /// points back at it, or the loop would be reachable): those are
    /// emptied before they are let go of. A queued handle someone else
    /// holds goes back on the collector's lists when released, and with
    /// its references intact CPython 3.15 counts it as a reference from
    /// outside the garbage it was found in, so the whole cycle (loop,
    /// handle, the callback's owner holding the handle) came back to life
    /// until the next collection.
    #[pyo3(signature = (finalizing=false))]
    fn _close(&self, py: Python<'_>, finalizing: bool) -> PyResult<()> {
        self.close_now(py, finalizing)
    }

    /// A handle for `callback(*args)` in a copy of the current context,
    /// not scheduled (signal handlers keep one and schedule it per signal).
    fn _new_handle(
        slf: &Bound<'_, Self>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
    ) -> PyResult<Py<Handle>> {
        NewHandle {
            callback,
            args: CallArgs::from_tuple(args),
            context: None,
            event_loop: slf.as_any(),
            debug: slf.get().is_debug(),
            sharing: None,
        }
        .build()
    }

    /// Queue an existing handle as if by `call_soon`.
    fn _schedule(&self, handle: Bound<'_, Handle>) -> PyResult<()> {
        self.check_closed()?;
        // It may be queued already: only a tracked handle may be queued
        // twice (see `handle::visit_owned`).
        track(handle.as_any());
        self.schedule(AnyHandle::Plain(handle.unbind()))
    }

    /// The loop's counters and gauges (`LoopStats` in `_loop.py`). Loop
    /// thread only while it runs (like the other non-threadsafe methods).
    /// `ready` is the queue for the next tick (from inside a callback, the
    /// rest of the current tick's batch is not in it); `timers` excludes
    /// timers known to be cancelled.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (stats, ready, timers, fds) = {
            let st = self.state()?;
            let pending_cancels = self.timer_cancels.load(Ordering::Relaxed);
            let timers = st
                .timers
                .len()
                .saturating_sub(st.timers.cancelled_count() + pending_cancels);
            (st.stats.clone(), st.ready.len(), timers, st.reactor.len())
        };
        let now = clock::monotonic();
        let d = PyDict::new(py);
        d.set_item(intern!(py, "ticks"), stats.ticks)?;
        d.set_item(intern!(py, "polls"), stats.polls)?;
        d.set_item(intern!(py, "blocking_polls"), stats.blocking_polls)?;
        d.set_item(intern!(py, "poll_seconds"), stats.poll_seconds)?;
        d.set_item(intern!(py, "busy_seconds"), stats.busy_seconds(now))?;
        d.set_item(intern!(py, "utilization"), stats.utilization(now))?;
        d.set_item(intern!(py, "callbacks"), stats.callbacks)?;
        d.set_item(intern!(py, "timers_fired"), stats.timers_fired)?;
        d.set_item(intern!(py, "timers_cancelled"), stats.timers_cancelled)?;
        d.set_item(intern!(py, "threadsafe_calls"), stats.threadsafe_calls)?;
        d.set_item(intern!(py, "ready"), ready)?;
        d.set_item(intern!(py, "timers"), timers)?;
        d.set_item(intern!(py, "fds"), fds)?;
        d.set_item(intern!(py, "backend"), self.backend_state().name)?;
        Ok(d)
    }

    fn _ready_count(&self) -> PyResult<usize> {
        Ok(self.state()?.ready.len())
    }

    fn _timer_count(&self) -> PyResult<usize> {
        Ok(self.state()?.timers.len())
    }

    /// In a forked child: rebuild the poller and wake-up fd shared with the
    /// parent, keeping registrations.
    fn _after_fork(&self) -> PyResult<()> {
        self.injector.acknowledge_wake();
        if self.state.owner() != 0 {
            self.forked_in_run.store(true, Ordering::Relaxed);
        }
        match self.state.try_borrow_mut() {
            Ok(mut st) => st.reactor.reinit_after_fork().map_err(to_pyerr),
            // Forked from inside this loop's own tick: it is borrowed on the
            // stack we fork from, which the child never returns through.
            Err(_) => Ok(()),
        }
    }

    #[pyo3(signature = (fd, callback, *args))]
    fn add_reader(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        Loop::add_fd_callback(slf, fd, callback, args, false).map(drop)
    }

    #[pyo3(signature = (fd, callback, *args))]
    fn add_writer(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        Loop::add_fd_callback(slf, fd, callback, args, true).map(drop)
    }

    /// `add_reader` returning the registered handle (asyncio's private
    /// `_add_reader`), so a waiter can tell whether it was replaced.
    /// `context`: what the callback runs in (3.15's transports pass their
    /// connection's); by default a copy of the current one.
    #[pyo3(signature = (fd, callback, *args, context=None))]
    fn _add_reader(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        Loop::add_fd_callback_in(slf, fd, callback, args, false, context)
    }

    /// `add_writer` returning the registered handle (and `context=`, as
    /// `_add_reader`).
    #[pyo3(signature = (fd, callback, *args, context=None))]
    fn _add_writer(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        Loop::add_fd_callback_in(slf, fd, callback, args, true, context)
    }

    fn remove_reader(slf: &Bound<'_, Self>, fd: &Bound<'_, PyAny>) -> PyResult<bool> {
        Loop::remove_fd_callback(slf, fd, false)
    }

    fn remove_writer(slf: &Bound<'_, Self>, fd: &Bound<'_, PyAny>) -> PyResult<bool> {
        Loop::remove_fd_callback(slf, fd, true)
    }

    /// The poller backend this loop runs on: `"io_uring"`, `"epoll"` or
    /// (a build with only it) `"polling"`.
    #[getter]
    fn _poller_backend(&self, py: Python<'_>) -> Py<PyString> {
        PyString::intern(py, self.backend_state().name).unbind()
    }

    /// Why this loop runs on epoll although io_uring was preferred (`auto`
    /// found it unusable, or the ring failed mid-run); None otherwise.
    #[getter]
    fn _backend_fallback(&self) -> Option<String> {
        self.backend_state().fallback
    }
}
