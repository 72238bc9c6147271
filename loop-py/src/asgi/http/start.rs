//! A request's start and end as the app sees them: its scope, the app's
//! call and its `AppTask`, and what the app's return means for the
//! exchange (a 500 for a response never started, a connection closed under
//! a cut-short one).

use super::exchange::{Receive, Send};
use super::request as scope_of;
use crate::asgi::app_task::AppTask;
use crate::asgi::bridge::{self, with_driver, ExchangePy, HttpServer};
use crate::asgi::owner::TaskOwner;
use loop_http::RequestHead;
use loop_server::{ConnId, ExchangeId, Progress};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::Arc;

/// The limit of `limit_concurrency` is reached: connections above it, or
/// as many app tasks running.
pub(in crate::asgi) fn over_limit(server: &HttpServer) -> bool {
    server
        .driver
        .settings()
        .limit_concurrency
        .is_some_and(|limit| server.driver.open_connections() > limit || server.tasks >= limit)
}

/// Start the exchange of `head`, its scope made, and run the app's first
/// step now: an app that answers without waiting never touches the ready
/// queue.
pub(in crate::asgi) fn begin_with_app(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    head: RequestHead,
    scope: Bound<'_, PyAny>,
    state: ExchangePy,
    make_calls: impl FnOnce(
        Python<'_>,
        Py<HttpServer>,
        ConnId,
        ExchangeId,
    ) -> PyResult<(Py<PyAny>, Py<PyAny>)>,
    owner: impl FnOnce(Py<HttpServer>, ConnId, ExchangeId) -> Arc<dyn TaskOwner>,
) -> PyResult<()> {
    let py = server.py();
    let begun = with_driver(server, |d| d.begin(conn, head, state));
    let (ex, previous) = match begun {
        Ok(begun) => begun,
        // The connection went away meanwhile.
        Err(state) => {
            drop(state);
            return Ok(());
        }
    };
    // Dropped unborrowed: a last reference's `__del__` is Python code.
    drop(previous);
    let (receive, send) = make_calls(py, server.clone().unbind(), conn, ex)?;
    let app = server.borrow().app.clone_ref(py);
    let coro = match app.bind(py).call1((scope, receive, send)) {
        Ok(coro) => coro,
        Err(err) => {
            bridge::log_app_error(server, &err)?;
            with_driver(server, |d| d.fail(conn, 500, None));
            return Ok(());
        }
    };
    let (event_loop, fresh_context) = {
        let me = server.borrow();
        (
            me.event_loop.clone_ref(py),
            me.driver.settings().reset_contextvars,
        )
    };
    let owner = owner(server.clone().unbind(), conn, ex);
    let task = AppTask::new(py, coro, event_loop, owner, fresh_context)?;
    server.borrow_mut().tasks += 1;
    // Both hold the task: the exchange (the server cancels it at shutdown)
    // and the loop's callbacks; the app's end clears the exchange's.
    let old = with_driver(server, |d| {
        d.exchange_app(conn, ex)
            .and_then(|x| x.task.replace(task.clone_ref(py).into_any()))
    });
    drop(old);
    // The first step runs now; the app may well finish inside it.
    AppTask::first_step(task.bind(py))
}

/// [`Event::Request`](loop_server::Event::Request) of an HTTP request.
pub(in crate::asgi) fn request(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    head: RequestHead,
) -> PyResult<()> {
    // Built before the driver takes the head, with nothing borrowed:
    // making Python objects can run a collector and any `__del__`.
    let scope = match scope_of::scope(server, conn, &head) {
        Ok(scope) => scope,
        Err(err) => {
            bridge::log_app_error(server, &err)?;
            with_driver(server, |d| d.reject(conn, head, 500));
            return Ok(());
        }
    };
    begin_with_app(
        server,
        conn,
        head,
        scope.into_any(),
        ExchangePy::default(),
        |py, server, conn, ex| {
            Ok((
                Py::new(py, Receive::new(server.clone_ref(py), conn, ex))?.into_any(),
                Py::new(py, Send::new(server, conn, ex))?.into_any(),
            ))
        },
        |server, conn, ex| Arc::new(HttpOwner { server, conn, ex }),
    )
}

/// One exchange of an HTTP connection, as the `AppTask` running it sees it.
struct HttpOwner {
    server: Py<HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
}

impl TaskOwner for HttpOwner {
    fn app_waits(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.server.bind(py);
        with_driver(server, |d| d.app_waits(self.conn));
        bridge::pump(server, false)
    }

    fn app_finished(
        &self,
        py: Python<'_>,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()> {
        let server = self.server.bind(py);
        app_finished(server, self.conn, self.ex, error, cancelled)?;
        bridge::pump(server, false)
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.server)
    }
}

/// The app's coroutine of exchange `ex` finished: turn a missing or broken
/// response into a 500 or a closed connection, and log app errors.
fn app_finished(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
    error: Option<Bound<'_, PyAny>>,
    cancelled: bool,
) -> PyResult<()> {
    let (progress, task) = {
        let mut me = server.borrow_mut();
        me.tasks = me.tasks.saturating_sub(1);
        let progress = me.driver.progress(conn, ex);
        let task = match progress {
            Progress::Current { .. } => {
                me.driver.exchange_app(conn, ex).and_then(|x| x.task.take())
            }
            _ => None,
        };
        (progress, task)
    };
    // Dropped unborrowed (it may be the last reference to the task).
    drop(task);
    // Gone: the connection closed, or this exchange was given up (a later
    // exchange on an open connection means the client is there).
    let client_gone = matches!(
        progress,
        Progress::Gone | Progress::Current { open: false, .. }
    );
    if let Some(exc) = &error {
        // An app that stops because its client left (the server saw it go,
        // or the app's error comes from the server's `ClientDisconnected`)
        // is not an application error.
        bridge::app_stopped(server, exc, client_gone)?;
    }
    let Progress::Current {
        open,
        started,
        complete,
    } = progress
    else {
        return Ok(());
    };
    // As uvicorn: an app that stops because its client went away is not an
    // error.
    let quiet = error.is_some() || cancelled || !open;
    if complete {
        return Ok(());
    }
    if !started {
        if !quiet {
            bridge::log_error(server, "ASGI callable returned without starting response.")?;
        }
        if open {
            with_driver(server, |d| d.fail(conn, 500, None));
        }
        return Ok(());
    }
    if !quiet {
        bridge::log_error(
            server,
            "ASGI callable returned without completing response.",
        )?;
    }
    // Its status went out: the connection closes (its access line says so).
    with_driver(server, |d| {
        d.lose(conn, "the app's response ended before it was complete")
    });
    Ok(())
}
