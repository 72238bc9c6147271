//! `Receiving`: what a session's `receive()` returns, a native awaitable.
//!
//! A `Future` per `receive()` costs its creation, `add_done_callback`,
//! `set_result`, a scheduled `__wakeup` and `result()` — about a third of a
//! small echo's Python work. So `receive()` returns this object instead:
//!
//! - an event already queued: the first `__next__` returns it at once
//!   (`StopIteration(event)`), as a done future would;
//! - awaited directly by the session's own `AppTask` (the common
//!   `await receive()`): it registers with the session and yields itself;
//!   the `AppTask` knows the type, waits on it, and the session resumes the
//!   task itself when the event arrives — no future, no `call_soon` when
//!   the event comes from the read callback;
//! - driven by anything else (`asyncio.create_task(receive())`,
//!   `ensure_future`, `wait_for` on 3.11, `gather`): a loop future, exactly
//!   as before.
//!
//! It has `send`/`throw`/`close`/`__await__`, so `asyncio.iscoroutine` (the
//! `collections.abc.Coroutine` check) accepts it in `create_task`, as it
//! accepts uvicorn's `async def receive`.

use super::events::{self, WsRef};
use crate::asgi::app_task::AppTask;
use crate::asgi::bridge::with_driver;
use crate::awaitable::{self, NativeAwaitable, Step};
use crate::event_loop::Loop;
use crate::future_ops;
use crate::pyapi;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

enum State {
    /// The event, taken from the session when `receive()` was called (or
    /// handed over by the session while the task waited).
    Ready(Py<PyAny>),
    /// Nothing queued yet, not awaited yet.
    Idle,
    /// Registered with the session; the session's `AppTask` waits on us.
    Waiting,
    /// Driven by another task: it waits on this loop future.
    Future(Py<PyAny>),
    /// Cancelled while waiting (the message of `cancel(msg)`).
    Cancelled(Option<Py<PyAny>>),
    Done,
}

#[pyclass(module = "ferroloop._native")]
pub struct Receiving {
    session: WsRef,
    state: State,
}

impl Receiving {
    pub(super) fn ready(session: WsRef, event: Py<PyAny>) -> Self {
        Receiving {
            session,
            state: State::Ready(event),
        }
    }

    pub(super) fn idle(session: WsRef) -> Self {
        Receiving {
            session,
            state: State::Idle,
        }
    }

    /// The session hands over the event the task waits for.
    pub(super) fn deliver(&mut self, event: Py<PyAny>) {
        self.state = State::Ready(event);
    }

    /// One step: return the event, or yield what the driver waits on.
    fn step(slf: &Bound<'_, Self>) -> PyResult<Step> {
        let py = slf.py();
        let state = std::mem::replace(&mut slf.borrow_mut().state, State::Done);
        match state {
            State::Ready(event) => Ok(Step::Return(event)),
            State::Idle => Self::first_wait(slf),
            State::Waiting => {
                // Resumed before the event came (a spurious send): wait on.
                slf.borrow_mut().state = State::Waiting;
                Ok(Step::Yield(slf.clone().into_any().unbind()))
            }
            State::Future(future) => {
                let fut = future.bind(py);
                if !future_ops::is_done(fut)? {
                    future_ops::set_blocking(fut)?;
                    slf.borrow_mut().state = State::Future(future.clone_ref(py));
                    return Ok(Step::Yield(future));
                }
                Ok(Step::Return(future_ops::result(fut)?.unbind()))
            }
            State::Cancelled(msg) => {
                let err = match msg {
                    Some(m) => pyapi::cancelled_error(py)?.call1((m,))?,
                    None => pyapi::cancelled_error(py)?.call0()?,
                };
                Err(PyErr::from_value(err))
            }
            State::Done => Err(PyRuntimeError::new_err(
                "cannot reuse already awaited receive()",
            )),
        }
    }

    /// Awaited with nothing taken yet: take what arrived since, or wait.
    fn first_wait(slf: &Bound<'_, Self>) -> PyResult<Step> {
        let py = slf.py();
        let r = slf.borrow().session.clone_ref(py);
        let server = r.server.bind(py);
        if let Some(event) = events::poll(server, &r)? {
            return Ok(Step::Return(event.into_any().unbind()));
        }
        let (task, event_loop) = {
            let mut me = server.borrow_mut();
            let task = me
                .driver
                .exchange_app(r.conn, r.ex)
                .and_then(|x| x.task.as_ref().map(|t| t.clone_ref(py)));
            (task, me.event_loop.clone_ref(py))
        };
        let current = pyapi::current_task(py)?.call1((event_loop.bind(py),))?;
        let direct = task.is_some_and(|t| t.bind(py).is(&current));
        if direct {
            events::wait_with(server, &r, slf.clone().into_any().unbind())?;
            slf.borrow_mut().state = State::Waiting;
            return Ok(Step::Yield(slf.clone().into_any().unbind()));
        }
        let future = Loop::create_future(event_loop.bind(py))?;
        events::wait_with(server, &r, future.clone().unbind())?;
        future_ops::set_blocking(&future)?;
        slf.borrow_mut().state = State::Future(future.clone().unbind());
        Ok(Step::Yield(future.unbind()))
    }

    /// Leave the session's waiter slot if we hold it (thrown into, closed).
    fn withdraw(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let state = std::mem::replace(&mut slf.borrow_mut().state, State::Done);
        match state {
            State::Waiting => {
                let r = slf.borrow().session.clone_ref(py);
                events::stop_waiting(r.server.bind(py), &r, slf.as_any());
            }
            State::Future(future) => {
                future.bind(py).call_method0(intern!(py, "cancel"))?;
            }
            _ => {}
        }
        Ok(())
    }
}

impl NativeAwaitable for Receiving {
    const WHAT: &'static str = "receive()'s awaitable";

    fn advance(slf: &Bound<'_, Self>) -> PyResult<Step> {
        Self::step(slf)
    }

    fn withdraw(slf: &Bound<'_, Self>) -> PyResult<()> {
        Receiving::withdraw(slf)
    }
}

#[pymethods]
impl Receiving {
    fn __await__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// `next()`; the interpreter's `await` and task steps use the
    /// `am_send` slot instead ([`install_send_slot`]).
    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::step(slf)?.into_next()
    }

    /// Drivers send None; a value is ignored (the event is the session's).
    fn send(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _ = value;
        Self::__next__(slf)
    }

    #[pyo3(signature = (typ, val=None, tb=None))]
    fn throw(
        slf: &Bound<'_, Self>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        Self::withdraw(slf)?;
        Err(awaitable::thrown(typ, val, tb)?)
    }

    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::withdraw(slf)
    }

    /// The waiting `AppTask` is cancelled: it is stepped again soon and the
    /// `await` raises `CancelledError` (as a cancelled future's wakeup).
    #[pyo3(signature = (msg=None))]
    fn cancel(slf: &Bound<'_, Self>, msg: Option<Py<PyAny>>) -> PyResult<bool> {
        let py = slf.py();
        if !matches!(slf.borrow().state, State::Waiting) {
            return Ok(false);
        }
        slf.borrow_mut().state = State::Cancelled(msg);
        let r = slf.borrow().session.clone_ref(py);
        let server = r.server.bind(py);
        events::stop_waiting(server, &r, slf.as_any());
        // The task goes on at the loop's next turn.
        let task = with_driver(server, |d| {
            d.exchange_app(r.conn, r.ex)
                .and_then(|x| x.task.as_ref().map(|t| t.clone_ref(py)))
        });
        if let Some(task) = task {
            resume_task(task.bind(py), false)?;
        }
        Ok(true)
    }

    fn done(&self) -> bool {
        !matches!(self.state, State::Waiting | State::Idle | State::Future(_))
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.session.server)?;
        match &self.state {
            State::Ready(v) | State::Future(v) | State::Cancelled(Some(v)) => visit.call(v),
            _ => Ok(()),
        }
    }

    fn __clear__(&mut self) {
        self.state = State::Done;
    }
}

/// The session's task, resumed now (from the read callback: no task runs)
/// or soon (from anywhere else: another task may be running).
pub(super) fn resume_task(task: &Bound<'_, PyAny>, now: bool) -> PyResult<()> {
    let py = task.py();
    match task.cast::<AppTask>() {
        Ok(app_task) if now => AppTask::resume(app_task),
        _ => {
            let event_loop = task.getattr(intern!(py, "_loop"))?;
            let step = task.getattr(intern!(py, "_step"))?;
            event_loop.call_method1(intern!(py, "call_soon"), (step,))?;
            Ok(())
        }
    }
}

/// Give the type its `am_send` slot (once): PyO3 has no method for it;
/// and tell `AppTask` that its instances resume the task themselves.
pub(super) fn install_send_slot(py: Python<'_>) {
    static DONE: PyOnceLock<()> = PyOnceLock::new();
    DONE.get_or_init(py, || {
        super::super::app_task::register_self_resuming(&py.get_type::<Receiving>());
        awaitable::install_am_send::<Receiving>(py);
    });
}
