//! A request asking for a WebSocket: `loop_ws` decides the handshake; an
//! invalid one is answered here (400/426, through the HTTP encoder); a
//! valid one becomes a `websocket` session (`asgi::ws`), which reaches this
//! connection through [`HttpSide`] until the app accepts, and then takes
//! the stream over ([`HttpConnection::detach`]).

use super::connection::HttpConnection;
use super::exchange::send_error;
use crate::asgi::app_task::AppTask;
use crate::asgi::scope;
use crate::asgi::shared::ServerShared;
use crate::asgi::ws::{Denial, Handshake, WsOwner, WsReceive, WsSend, WsSession};
use loop_core::clock;
use loop_http::{RequestHead, ResponsePart, SendError, Version};
use loop_transports::LayeredStream;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::Arc;

type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

/// Is `head` a WebSocket session's (sessions are on, its `Upgrade` asks)?
pub(super) fn is_session(conn: &HttpConnection, head: &RequestHead) -> bool {
    conn.settings.ws.is_some() && loop_ws::handshake::is_websocket_upgrade(head.headers())
}

/// Start the session of `head` (or refuse its handshake).
pub(super) fn start(
    conn: &Bound<'_, HttpConnection>,
    server: &Bound<'_, ServerShared>,
    head: RequestHead,
) -> PyResult<()> {
    let py = conn.py();
    let Some(config) = conn.borrow().settings.ws.clone() else {
        return Ok(());
    };
    let checked = loop_ws::handshake::check_request(
        head.method(),
        head.version == Version::Http11,
        head.headers(),
    );
    let offer = match checked {
        Ok(offer) => offer,
        Err(refusal) => return refuse(conn, server, head, &refusal),
    };
    let scope = super::dispatch::request_scope(conn, server, &head)
        .and_then(|s| scope::to_websocket(py, &s, offer.subprotocols()).map(|()| s));
    let scope = match scope {
        Ok(scope) => scope,
        Err(err) => {
            ServerShared::log_app_error(server, &err)?;
            return HttpConnection::fail_for(conn, 500, Some(&head));
        }
    };
    let (log_prefix, client_text, base_context, event_loop, shared) = {
        let me = conn.borrow();
        let prefix = server
            .borrow()
            .logs
            .access_on
            .then(|| super::access::ws_prefix(&me.client_text, &me.settings.root_path, &head));
        (
            prefix,
            me.peer_text().to_owned(),
            me.base_context.clone_ref(py),
            me.event_loop.clone_ref(py),
            me.shared.clone_ref(py),
        )
    };
    let (id, previous) = {
        let mut me = conn.borrow_mut();
        let previous = std::mem::take(&mut me.waiters);
        (me.http.begin_request(head), previous)
    };
    drop(previous);
    let side = Arc::new(HttpSide {
        conn: conn.clone().unbind(),
        id,
    });
    let session = Bound::new(
        py,
        WsSession::new(
            conn.borrow().counters.clone(),
            shared,
            event_loop.clone_ref(py),
            base_context,
            config,
            offer,
            side,
            log_prefix,
            client_text,
        ),
    )?;
    let old = conn.borrow_mut().ws.replace(session.clone().unbind());
    drop(old);
    let receive = Bound::new(py, WsReceive::new(session.clone().unbind()))?;
    let send = Bound::new(py, WsSend::new(session.clone().unbind()))?;
    let app = server.borrow().app.clone_ref(py);
    let coro = match app.bind(py).call1((scope, receive, send)) {
        Ok(coro) => coro,
        Err(err) => {
            ServerShared::log_app_error(server, &err)?;
            let ws = conn.borrow_mut().ws.take();
            drop(ws);
            return HttpConnection::fail(conn, 500);
        }
    };
    let owner = Arc::new(WsOwner(session.clone().unbind()));
    let fresh_context = conn.borrow().settings.reset_contextvars;
    let task = AppTask::new(py, coro, event_loop, owner, fresh_context)?;
    server.borrow_mut().tasks += 1;
    // Both hold the task: HTTP until the 101 (shutdown cancels it from
    // there), the session for its whole life. The app's end clears both.
    session.borrow_mut().set_task(task.clone_ref(py).into_any());
    let old = conn
        .borrow_mut()
        .waiters
        .task
        .replace(task.clone_ref(py).into_any());
    drop(old);
    AppTask::first_step(task.bind(py))
}

/// An invalid handshake: the refusal's status, headers and reason, through
/// the HTTP encoder, logged as the server's other answers are.
fn refuse(
    conn: &Bound<'_, HttpConnection>,
    server: &Bound<'_, ServerShared>,
    head: RequestHead,
    refusal: &loop_ws::Refusal,
) -> PyResult<()> {
    let py = conn.py();
    let id = conn.borrow_mut().http.begin_request(head);
    let mut headers: Fields<'_> = refusal
        .headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    headers.push((b"content-type", b"text/plain; charset=utf-8"));
    headers.push((b"connection", b"close"));
    let start = ResponsePart::Start {
        status: refusal.status,
        headers,
        trailers: false,
    };
    let body: ResponsePart<'_, Fields<'_>> = ResponsePart::Body {
        data: refusal.reason.as_bytes(),
        more: false,
    };
    let sent = send_part(conn, id, start).and_then(|_| send_part(conn, id, body));
    let warning = format!(
        "Invalid WebSocket upgrade request: {} ({})",
        refusal.reason, refusal.status
    );
    match sent {
        Ok(Some(_)) => HttpConnection::response_complete(conn)?,
        // Cannot happen with these fields; the connection still ends.
        _ => HttpConnection::fail(conn, refusal.status)?,
    }
    let _ = py;
    ServerShared::log_server_answer(server, &warning)
}

/// One response part of exchange `id` into the connection's output.
fn send_part<'h>(
    conn: &Bound<'_, HttpConnection>,
    id: u64,
    part: ResponsePart<'_, Fields<'h>>,
) -> Result<Option<bool>, SendError> {
    let py = conn.py();
    let server = conn.borrow().shared.clone_ref(py);
    let mut me = conn.borrow_mut();
    let mut srv = server.bind(py).borrow_mut();
    let settings = me.settings.clone();
    let date = if settings.date_header {
        Some(srv.date())
    } else {
        None
    };
    let server_header = settings.server_header.as_deref();
    me.with_output(|http, out| http.send(id, out, part, date, server_header, clock::monotonic()))
}

/// The HTTP connection a session started on, as the session reaches it.
struct HttpSide {
    conn: Py<HttpConnection>,
    id: u64,
}

impl HttpSide {
    /// The session no longer needs the connection told of its loss.
    fn forget_session(&self, py: Python<'_>) {
        let ws = self.conn.bind(py).borrow_mut().ws.take();
        drop(ws);
    }
}

impl Handshake for HttpSide {
    fn upgrade(
        &self,
        py: Python<'_>,
        headers: &[(&[u8], &[u8])],
    ) -> PyResult<Option<(LayeredStream, Vec<u8>)>> {
        let conn = self.conn.bind(py);
        let start = ResponsePart::Start {
            status: 101,
            headers: headers.to_vec(),
            trailers: false,
        };
        send_part(conn, self.id, start).map_err(|e| send_error(e, "websocket.accept"))?;
        let end: ResponsePart<'_, Fields<'_>> = ResponsePart::Body {
            data: b"",
            more: false,
        };
        let done = send_part(conn, self.id, end).map_err(|e| send_error(e, "websocket.accept"))?;
        if done.is_none() {
            return Err(send_error(SendError::NotStarted, "websocket.accept"));
        }
        self.forget_session(py);
        let task = {
            let mut me = conn.borrow_mut();
            me.closing_because("upgraded to WebSocket");
            me.waiters.task.take()
        };
        drop(task);
        // The 101 goes to the stream (what the kernel refuses stays
        // buffered there and moves with it).
        HttpConnection::flush(conn)?;
        HttpConnection::detach(conn)
    }

    fn respond(&self, py: Python<'_>, part: Denial<'_>) -> PyResult<bool> {
        let conn = self.conn.bind(py);
        let (part, kind, is_start) = match part {
            Denial::Start { status, headers } => (
                ResponsePart::Start {
                    status,
                    headers,
                    trailers: false,
                },
                "websocket.http.response.start",
                true,
            ),
            Denial::Body { data, more } => (
                ResponsePart::Body { data, more },
                "websocket.http.response.body",
                false,
            ),
        };
        let done = send_part(conn, self.id, part).map_err(|e| send_error(e, kind))?;
        if done.is_some() {
            // Logged by the session ("WebSocket /path" 403), not as HTTP.
            HttpConnection::response_complete(conn)?;
            self.forget_session(py);
            return Ok(true);
        }
        if !is_start {
            HttpConnection::flush(conn)?;
        }
        Ok(false)
    }

    fn fail(&self, py: Python<'_>, status: u16) -> PyResult<()> {
        self.forget_session(py);
        HttpConnection::fail(self.conn.bind(py), status)
    }

    fn lose(&self, py: Python<'_>) -> PyResult<()> {
        self.forget_session(py);
        let conn = self.conn.bind(py);
        conn.borrow_mut()
            .closing_because("the app's response ended before it was complete");
        HttpConnection::lose(conn)
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        HttpConnection::flush_if_buffered(self.conn.bind(py))
    }

    fn task_ended(&self, py: Python<'_>) {
        let task = self.conn.bind(py).borrow_mut().waiters.task.take();
        drop(task);
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.conn)
    }
}
