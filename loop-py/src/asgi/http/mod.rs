//! The HTTP/1.1 connection kind: glue between a socket, the sans-IO
//! `loop_http::ServerConnection` and the ASGI app.
//!
//! - [`access`]: the access-log line.
//! - [`connection`]: the socket, its loop registrations and how the
//!   connection ends (the state machine decides when).
//! - [`dispatch`]: a request's scope, the app's call, what its end means.
//! - [`exchange`]: the app's `receive`/`send` callables and their futures.
//! - [`file_body`]: a response body sent from a file (pathsend,
//!   zerocopysend) with `sendfile(2)`.
//! - [`upgrade`]: a request asking for a WebSocket: refused, or a session
//!   (`asgi::ws`) that HTTP serves until the `101`.
//!
//! The server reaches it only through [`HttpHandle`] and an `AppTask`
//! through [`HttpOwner`] (the traits of `asgi::kind`).

mod access;
mod connection;
mod dispatch;
mod exchange;
mod file_body;
mod upgrade;

pub(super) use connection::{connection_config, HttpConnection};
pub(super) use dispatch::Addr;
pub(super) use exchange::{Receive, Send};

use super::kind::{ConnHandle, TaskOwner};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// An HTTP connection in the server's registry.
pub(super) struct HttpHandle(pub Py<HttpConnection>);

impl ConnHandle for HttpHandle {
    fn drain(&self, py: Python<'_>, keep_idle: bool) -> PyResult<()> {
        HttpConnection::drain(self.0.bind(py), keep_idle)
    }

    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        HttpConnection::abort(self.0.bind(py))
    }

    fn check_timers(&self, py: Python<'_>, now: f64) -> PyResult<()> {
        HttpConnection::check_timers(self.0.bind(py), now)
    }

    fn flush_corked(&self, py: Python<'_>) -> PyResult<()> {
        let conn = self.0.bind(py);
        conn.borrow_mut().corked = false;
        HttpConnection::flush(conn)
    }

    fn running_task(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        dispatch::running_task(&self.0.borrow(py), py)
    }

    fn wire_bytes(&self, py: Python<'_>) -> (u64, u64) {
        // Not borrowed elsewhere when the server reports; (0, 0) if it were.
        self.0.try_borrow(py).map_or((0, 0), |c| c.wire_bytes())
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}

/// One exchange of an HTTP connection, as the `AppTask` running it sees it.
pub(super) struct HttpOwner {
    pub conn: Py<HttpConnection>,
    pub exchange: u64,
}

impl TaskOwner for HttpOwner {
    fn app_waits(&self, py: Python<'_>) -> PyResult<()> {
        HttpConnection::flush_if_buffered(self.conn.bind(py))
    }

    fn app_finished(
        &self,
        py: Python<'_>,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()> {
        dispatch::app_finished(self.conn.bind(py), self.exchange, error, cancelled)
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.conn)
    }
}
