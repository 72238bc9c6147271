//! The WebSocket connection kind: one ASGI `websocket` session, glue
//! around the sans-IO `loop_ws::Connection`.
//!
//! A session starts while HTTP still owns the connection: the app receives
//! `websocket.connect` and answers with `websocket.accept` (the `101`), a
//! `websocket.close` (a `403`) or a denial response. Until then everything
//! on the wire is the HTTP connection kind's, reached through
//! [`Handshake`] (which `asgi::http` implements: this module does not know
//! HTTP). After the `101` the session takes the stream and the bytes after
//! the request and is a connection of the server's registry itself.
//!
//! - [`decode`]: the app's `send()` messages as Rust values.
//! - [`session`]: the session's stages, what `receive()`/`send()` mean in
//!   each, and how the app's end is taken.
//! - [`io`]: the socket after the `101`: reading, writing, backpressure,
//!   timers, drain and how the connection ends.
//! - [`calls`]: the `receive`/`send` callables the app gets.
//! - [`receiving`]: the native awaitable `receive()` returns.

mod calls;
mod decode;
mod io;
mod receiving;
mod session;

pub(super) use calls::{WsReceive, WsSend};
pub(super) use session::{http_lost, WsSession};

use super::kind::{ConnHandle, TaskOwner};
use loop_transports::LayeredStream;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// A response of the HTTP exchange before a session is accepted: the
/// app's denial (`websocket.http.response.*`) or the server's `403`.
pub(in crate::asgi) enum Denial<'a> {
    Start {
        status: u16,
        headers: Vec<(&'a [u8], &'a [u8])>,
    },
    Body {
        data: &'a [u8],
        more: bool,
    },
}

/// What a session needs of the HTTP connection it started on, while HTTP
/// owns it (before the `101`).
pub(in crate::asgi) trait Handshake: Send + Sync {
    /// Answer `101` with `headers` (the handshake's and the app's), end
    /// HTTP and hand over the stream and the bytes after the request.
    /// `Ok(None)`: the connection is gone.
    fn upgrade(
        &self,
        py: Python<'_>,
        headers: &[(&[u8], &[u8])],
    ) -> PyResult<Option<(LayeredStream, Vec<u8>)>>;
    /// A part of a denial response; true once it completed (the HTTP
    /// connection then closes).
    fn respond(&self, py: Python<'_>, part: Denial<'_>) -> PyResult<bool>;
    /// The server answers `status` itself (the app failed before accepting).
    fn fail(&self, py: Python<'_>, status: u16) -> PyResult<()>;
    /// Drop the connection (a denial response the app left unfinished).
    fn lose(&self, py: Python<'_>) -> PyResult<()>;
    /// The app waits: what it sent so far goes out.
    fn flush(&self, py: Python<'_>) -> PyResult<()>;
    /// The app's task ended: the HTTP connection forgets it.
    fn task_ended(&self, py: Python<'_>);
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;
}

/// An accepted session in the server's registry.
pub(super) struct WsHandle(pub Py<WsSession>);

impl ConnHandle for WsHandle {
    fn drain(&self, py: Python<'_>, _keep_idle: bool) -> PyResult<()> {
        io::drain(self.0.bind(py))
    }

    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        io::abort(self.0.bind(py))
    }

    fn check_timers(&self, py: Python<'_>, now: f64) -> PyResult<()> {
        io::check_timers(self.0.bind(py), now)
    }

    fn flush_corked(&self, py: Python<'_>) -> PyResult<()> {
        let session = self.0.bind(py);
        session.borrow_mut().corked = false;
        io::flush(session)
    }

    fn running_task(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.0.borrow(py).task.as_ref().map(|t| t.clone_ref(py))
    }

    fn wire_bytes(&self, py: Python<'_>) -> (u64, u64) {
        let Ok(session) = self.0.try_borrow(py) else {
            return (0, 0);
        };
        session.stream.as_ref().map_or((0, 0), |s| {
            let stats = s.core().stats();
            (stats.bytes_read, stats.bytes_written)
        })
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}

/// A session as the `AppTask` running its app sees it.
pub(super) struct WsOwner(pub Py<WsSession>);

impl TaskOwner for WsOwner {
    fn app_waits(&self, py: Python<'_>) -> PyResult<()> {
        session::app_waits(self.0.bind(py))
    }

    fn app_finished(
        &self,
        py: Python<'_>,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()> {
        session::app_finished(self.0.bind(py), error, cancelled)
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}
