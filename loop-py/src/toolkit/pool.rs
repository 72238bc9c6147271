//! The native half of `EventLoopThreadPool`: submissions, run on worker
//! loops, their results delivered back to the submitting loop.
//!
//! `submit` runs on the caller's loop: it makes the caller's future, copies
//! the caller's `contextvars` context (as `asyncio.to_thread` does), picks a
//! worker (the one with the fewest unfinished jobs, or the pinned one) and
//! sends the job through the worker loop's door. On the worker's thread the
//! target is called inside that context; a coroutine becomes a task on the
//! worker loop, run in the same context. When it ends, its outcome (result,
//! exception with its traceback, or cancellation) goes back through the
//! caller loop's door and settles the caller's future. Cancelling the
//! caller's future cancels the remote task (or stops a job not started). A
//! job whose worker loop closed before running it (`abort`) settles the
//! caller's future with `ThreadPoolClosedError`.
//!
//! The thread and loop lifecycle (`start`, `close`, `abort`) is Python
//! (`ferroloop/toolkit/pool.py`); workers register here from their threads.

use super::signal::{new_counter, Counter, ZeroWait};
use super::wait::WaitOp;
use super::waiter::Home;
use crate::event_loop::{Loop, LoopWork};
use crate::future_ops::{kind_of, Kind};
use crate::pyapi;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

struct Worker {
    home: Home,
    /// Shutting down: jobs it has not started end with ThreadPoolClosedError.
    retired: AtomicBool,
    /// Submitted here and not finished.
    active: AtomicUsize,
    completed: AtomicU64,
    submitted: AtomicU64,
}

enum Stage {
    Queued,
    Running(Py<PyAny>),
    /// The caller cancelled before it started.
    Cancelled,
    Done,
}

/// One submission.
struct Job {
    target: Py<PyAny>,
    args: Py<PyTuple>,
    kwargs: Option<Py<PyDict>>,
    context: Py<PyAny>,
    caller: Home,
    future: Py<PyAny>,
    worker: Arc<Worker>,
    outstanding: Arc<Counter>,
    stage: Mutex<Stage>,
}

/// How a job ended.
enum Outcome {
    Result(Py<PyAny>),
    Error(PyErr),
    Cancelled,
    PoolClosed,
}

impl Job {
    fn stage(&self) -> std::sync::MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// On the worker's thread: call the target in the caller's context;
    /// a coroutine (or future) it gives becomes a task here.
    fn run(self: Arc<Self>, py: Python<'_>) {
        if matches!(*self.stage(), Stage::Cancelled) {
            return self.end(py, Outcome::Cancelled);
        }
        if self.worker.retired.load(Ordering::Acquire) {
            return self.end(py, Outcome::PoolClosed);
        }
        match self.start(py) {
            Ok(Some(task)) => {
                let cancel = {
                    let mut stage = self.stage();
                    let cancelled = matches!(*stage, Stage::Cancelled);
                    *stage = Stage::Running(task.clone().unbind());
                    cancelled
                };
                let deliver = Deliver(Arc::clone(&self));
                if let Err(err) = Py::new(py, deliver)
                    .and_then(|d| task.call_method1(pyo3::intern!(py, "add_done_callback"), (d,)))
                {
                    return self.end(py, Outcome::Error(err));
                }
                if cancel {
                    let _ = task.call_method0(pyo3::intern!(py, "cancel"));
                }
            }
            Ok(None) => {}
            Err(err) => self.end(py, Outcome::Error(err)),
        }
    }

    /// The task running the job, or None when it ended already.
    fn start<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let target = self.target.bind(py);
        let (awaited, kind) = match kind_of(target)? {
            Kind::Coroutine => (target.clone(), Kind::Coroutine),
            _ if target.is_callable() => {
                let context = self.context.bind(py);
                let value = match &self.kwargs {
                    None => {
                        let args = self.args.bind(py);
                        let mut call = Vec::with_capacity(args.len() + 1);
                        call.push(target.clone());
                        call.extend(args.iter());
                        let call: Vec<&Bound<'_, PyAny>> = call.iter().collect();
                        pyapi::vectorcall(&context.getattr(pyo3::intern!(py, "run"))?, &call)?
                    }
                    Some(kwargs) => {
                        let mut call = vec![target.clone()];
                        call.extend(self.args.bind(py).iter());
                        context.call_method(
                            pyo3::intern!(py, "run"),
                            PyTuple::new(py, call)?,
                            Some(kwargs.bind(py)),
                        )?
                    }
                };
                match kind_of(&value)? {
                    Kind::Other => {
                        self.end(py, Outcome::Result(value.unbind()));
                        return Ok(None);
                    }
                    kind => (value, kind),
                }
            }
            _ => {
                self.end(py, Outcome::Result(target.clone().unbind()));
                return Ok(None);
            }
        };
        if kind == Kind::Future {
            return Ok(Some(awaited));
        }
        let context = self.context.bind(py);
        match &self.worker.home {
            Home::Ferro(l) => {
                Loop::create_task(l.bind(py), &awaited, None, Some(context)).map(Some)
            }
            Home::Foreign { event_loop, .. } => {
                let kw = PyDict::new(py);
                kw.set_item(pyo3::intern!(py, "context"), context)?;
                event_loop
                    .bind(py)
                    .call_method(pyo3::intern!(py, "create_task"), (awaited,), Some(&kw))
                    .map(Some)
            }
        }
    }

    /// The job is over: count it and settle the caller's future there.
    fn end(self: &Arc<Self>, py: Python<'_>, outcome: Outcome) {
        *self.stage() = Stage::Done;
        self.worker.active.fetch_sub(1, Ordering::AcqRel);
        self.worker.completed.fetch_add(1, Ordering::Relaxed);
        let job = Arc::clone(self);
        let settle = move |py: Python<'_>| job.settle(py, outcome);
        if self.caller.runs_here() {
            settle(py);
        } else if let Err(work) = self.caller.send(py, Box::new(settle)) {
            // The caller's loop is closed: nobody is left to tell.
            drop(work);
            let _ = self.outstanding.add(py, -1);
        }
    }

    /// On the caller's thread: settle its future (unless it was cancelled).
    fn settle(&self, py: Python<'_>, outcome: Outcome) {
        let future = self.future.bind(py);
        let settled = (|| -> PyResult<()> {
            if crate::future_ops::is_done(future)? {
                return Ok(());
            }
            match outcome {
                Outcome::Result(value) => crate::future_ops::set_result(future, value.bind(py)),
                Outcome::Error(err) => future
                    .call_method1(pyo3::intern!(py, "set_exception"), (err.into_value(py),))
                    .map(drop),
                // As multiloop: the caller's future is not cancelled (its
                // caller did not ask), it fails with CancelledError.
                Outcome::Cancelled => future
                    .call_method1(
                        pyo3::intern!(py, "set_exception"),
                        (pyapi::cancelled_error(py)?.call0()?,),
                    )
                    .map(drop),
                Outcome::PoolClosed => {
                    let exc = PyErr::from_type(
                        pyapi::toolkit_pool_closed(py)?.cast::<PyType>()?.clone(),
                        "Pool closed before task ran",
                    );
                    future
                        .call_method1(pyo3::intern!(py, "set_exception"), (exc.into_value(py),))
                        .map(drop)
                }
            }
        })();
        if let Err(err) = settled {
            err.write_unraisable(py, Some(future));
        }
        let _ = self.outstanding.add(py, -1);
    }

    /// The caller cancelled its future: stop the job where it is.
    fn cancel(&self, py: Python<'_>) {
        let task = {
            let mut stage = self.stage();
            match &*stage {
                Stage::Queued => {
                    *stage = Stage::Cancelled;
                    return;
                }
                Stage::Running(task) => task.clone_ref(py),
                Stage::Cancelled | Stage::Done => return,
            }
        };
        let cancel = move |py: Python<'_>| {
            let _ = task.bind(py).call_method0(pyo3::intern!(py, "cancel"));
        };
        if self.worker.home.runs_here() {
            cancel(py);
        } else {
            // A refusal: the worker loop is closed, its tasks are gone.
            let _ = self.worker.home.send(py, Box::new(cancel));
        }
    }
}

/// The job in a worker loop's queue. Dropped unrun (the loop closed before
/// running it), it tells the caller the pool closed.
struct RunJob(Option<Arc<Job>>);

impl LoopWork for RunJob {
    fn run(mut self: Box<Self>, py: Python<'_>) {
        if let Some(job) = self.0.take() {
            job.run(py);
        }
    }
}

impl Drop for RunJob {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            let _ = Python::try_attach(|py| job.end(py, Outcome::PoolClosed));
        }
    }
}

/// The worker task's done callback.
#[pyclass(module = "ferroloop._native", frozen)]
struct Deliver(Arc<Job>);

#[pymethods]
impl Deliver {
    fn __call__(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let outcome = if task
            .call_method0(pyo3::intern!(py, "cancelled"))?
            .is_truthy()?
        {
            Outcome::Cancelled
        } else {
            match task.call_method0(pyo3::intern!(py, "exception"))? {
                exc if exc.is_none() => Outcome::Result(crate::future_ops::result(task)?.unbind()),
                exc => Outcome::Error(PyErr::from_value(exc)),
            }
        };
        self.0.end(py, outcome);
        Ok(())
    }
}

/// The caller future's done callback: a cancelled future stops its job.
#[pyclass(module = "ferroloop._native", frozen)]
struct CancelRemote(Arc<Job>);

#[pymethods]
impl CancelRemote {
    fn __call__(&self, py: Python<'_>, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future
            .call_method0(pyo3::intern!(py, "cancelled"))?
            .is_truthy()?
        {
            self.0.cancel(py);
        }
        Ok(())
    }
}

/// The native half of `EventLoopThreadPool`.
#[pyclass(module = "ferroloop._native", subclass, frozen)]
pub struct PoolCore {
    /// Slot `i` is worker `i`'s, filled when its thread has its loop.
    workers: RwLock<Vec<Option<Arc<Worker>>>>,
    accepting: AtomicBool,
    /// Where the search for the least loaded worker starts (round robin
    /// among equals).
    next: AtomicUsize,
    outstanding: Arc<Counter>,
}

impl PoolCore {
    fn workers(&self) -> Vec<Arc<Worker>> {
        self.workers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    fn closed(py: Python<'_>, message: &str) -> PyResult<PyErr> {
        Ok(PyErr::from_type(
            pyapi::toolkit_pool_closed(py)?.cast::<PyType>()?.clone(),
            message.to_owned(),
        ))
    }

    /// The worker for `pin_to` (an index or one of the pool's loops), or
    /// the least loaded one.
    fn pick(&self, py: Python<'_>, pin_to: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Worker>> {
        let workers = self.workers();
        if workers.is_empty() || !self.accepting.load(Ordering::Acquire) {
            return Err(Self::closed(py, "ThreadPool is not running")?);
        }
        match pin_to.filter(|p| !p.is_none()) {
            None => {
                let start = self.next.fetch_add(1, Ordering::Relaxed);
                let n = workers.len();
                let best = (0..n)
                    .map(|i| &workers[(start + i) % n])
                    .min_by_key(|w| w.active.load(Ordering::Acquire));
                Ok(Arc::clone(best.unwrap_or(&workers[0])))
            }
            Some(pin) if pin.is_instance_of::<pyo3::types::PyInt>() => {
                let i: i64 = pin.extract()?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| workers.get(i))
                    .cloned()
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "Worker index {i} out of range (0-{})",
                            workers.len() - 1
                        ))
                    })
            }
            Some(pin) if pin.is_instance(pyapi::abstract_event_loop(py)?)? => workers
                .iter()
                .find(|w| w.home.event_loop().bind(py).is(pin))
                .cloned()
                .ok_or_else(|| {
                    PyValueError::new_err(
                        "Target AbstractEventLoop is not managed by this thread pool",
                    )
                }),
            Some(_) => Err(PyTypeError::new_err(
                "pin_to argument must be an AbstractEventLoop, int index, or None",
            )),
        }
    }
}

#[pymethods]
impl PoolCore {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PoolCore {
            workers: RwLock::new(Vec::new()),
            accepting: AtomicBool::new(false),
            next: AtomicUsize::new(0),
            outstanding: new_counter(),
        }
    }

    /// Run `target(*args, **kwargs)` on a worker loop (see the module
    /// docs); returns a future on the calling loop, scheduled at once.
    /// `cancel_scope`: the job runs inside it, and the future gets
    /// `CancelledError` if it is cancelled.
    #[pyo3(signature = (target, *args, pin_to = None, cancel_scope = None, **kwargs))]
    fn submit<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        pin_to: Option<&Bound<'py, PyAny>>,
        cancel_scope: Option<&Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kind = kind_of(target)?;
        if kind == Kind::Future {
            return Err(PyTypeError::new_err(
                "submit() target cannot be an asyncio.Future (futures are thread-bound). \
                 Pass a coroutine function, callable, or coroutine instead.",
            ));
        }
        let has_args = !args.is_empty() || kwargs.is_some_and(|k| !k.is_empty());
        if has_args && kind == Kind::Coroutine {
            return Err(PyTypeError::new_err(
                "Cannot pass positional or keyword arguments when target is already a coroutine object",
            ));
        }
        if let Some(scope) = cancel_scope.filter(|s| !s.is_none()) {
            let kwargs = match kwargs {
                Some(k) => k.clone(),
                None => PyDict::new(py),
            };
            let wrapped = (scope, target, args, kwargs).into_pyobject(py)?;
            return self.submit(
                py,
                pyapi::toolkit_in_scope(py)?,
                &wrapped,
                pin_to,
                None,
                None,
            );
        }
        let worker = self.pick(py, pin_to)?;
        let caller = crate::future_ops::running_loop(py).map_err(|_| {
            PyRuntimeError::new_err(
                "submit() must be called from a thread with a running asyncio event loop",
            )
        })?;
        let future = crate::future_ops::new_future_on(&caller)?;
        let job = Arc::new(Job {
            target: target.clone().unbind(),
            args: args.clone().unbind(),
            kwargs: kwargs.filter(|k| !k.is_empty()).map(|k| k.clone().unbind()),
            context: pyapi::copy_current_context(py)?.unbind(),
            caller: Home::of(&caller),
            future: future.clone().unbind(),
            worker: Arc::clone(&worker),
            outstanding: Arc::clone(&self.outstanding),
            stage: Mutex::new(Stage::Queued),
        });
        future.call_method1(
            pyo3::intern!(py, "add_done_callback"),
            (Py::new(py, CancelRemote(Arc::clone(&job)))?,),
        )?;
        worker.active.fetch_add(1, Ordering::AcqRel);
        worker.submitted.fetch_add(1, Ordering::Relaxed);
        let _ = self.outstanding.add(py, 1);
        // Refused (the worker loop just closed): RunJob's drop settles the
        // future with ThreadPoolClosedError.
        let _ = worker.home.send(py, Box::new(RunJob(Some(job))));
        Ok(future)
    }

    /// Make room for `n` workers (before their threads start).
    fn _prepare(&self, n: usize) {
        *self.workers.write().unwrap_or_else(PoisonError::into_inner) = vec![None; n];
    }

    /// Worker `index`'s thread registers the loop it runs.
    fn _register(&self, index: usize, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut workers = self.workers.write().unwrap_or_else(PoisonError::into_inner);
        let slot = workers
            .get_mut(index)
            .ok_or_else(|| PyValueError::new_err("no such worker"))?;
        *slot = Some(Arc::new(Worker {
            home: Home::of(event_loop),
            retired: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
        }));
        Ok(())
    }

    /// From now on, jobs not started yet end with ThreadPoolClosedError.
    fn _retire(&self) {
        for w in self.workers() {
            w.retired.store(true, Ordering::Release);
        }
    }

    /// Forget the workers (their loops are closed).
    fn _clear_workers(&self) {
        let gone =
            std::mem::take(&mut *self.workers.write().unwrap_or_else(PoisonError::into_inner));
        drop(gone);
    }

    /// The worker loops, in index order.
    fn _loops(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.workers()
            .iter()
            .map(|w| w.home.event_loop().clone_ref(py))
            .collect()
    }

    /// Accept submissions, or refuse them (`ThreadPoolClosedError`).
    fn _accept(&self, accepting: bool) {
        self.accepting.store(accepting, Ordering::Release);
    }

    /// Jobs submitted and not settled yet.
    #[getter]
    fn _outstanding(&self) -> i64 {
        self.outstanding.count()
    }

    /// Wait until every submitted job is settled.
    fn _drained(&self) -> WaitOp {
        WaitOp::new(ZeroWait::new(
            &self.outstanding,
            "EventLoopThreadPool.drain",
        ))
    }

    /// Per worker: `(active, completed, submitted)`.
    fn _worker_counts(&self) -> Vec<(usize, u64, u64)> {
        self.workers()
            .iter()
            .map(|w| {
                (
                    w.active.load(Ordering::Acquire),
                    w.completed.load(Ordering::Relaxed),
                    w.submitted.load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PoolCore>()?;
    m.add_class::<Deliver>()?;
    m.add_class::<CancelRemote>()?;
    Ok(())
}
