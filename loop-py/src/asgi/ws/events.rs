//! What a session's `receive()` gets, in ASGI's order: `websocket.connect`
//! first, then the messages (from the driver's session after the `101`),
//! then `websocket.disconnect` exactly once; and the waiter a `receive()`
//! that found nothing leaves with the session.

use crate::asgi::app_task;
use crate::asgi::bridge::{with_driver, HttpServer, Stage, WsCell, WsState};
use crate::asgi::ClientDisconnected;
use crate::future_ops;
use loop_server::{ConnId, ExchangeId, WsNext};
use loop_ws::{Message, MessageKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// One session: its server, connection and exchange, and its ASGI state.
pub(in crate::asgi) struct WsRef {
    pub server: Py<HttpServer>,
    pub conn: ConnId,
    pub ex: ExchangeId,
    pub state: Py<WsCell>,
}

impl WsRef {
    pub fn clone_ref(&self, py: Python<'_>) -> WsRef {
        WsRef {
            server: self.server.clone_ref(py),
            conn: self.conn,
            ex: self.ex,
            state: self.state.clone_ref(py),
        }
    }

    /// The session of exchange `ex` of `conn`, if it is one.
    pub fn of(server: &Bound<'_, HttpServer>, conn: ConnId, ex: ExchangeId) -> Option<WsRef> {
        let py = server.py();
        let state = with_driver(server, |d| {
            d.exchange_app(conn, ex)
                .and_then(|x| x.ws.as_ref().map(|c| c.clone_ref(py)))
        })?;
        Some(WsRef {
            server: server.clone().unbind(),
            conn,
            ex,
            state,
        })
    }

    /// The state, changed by `f` (which runs no Python).
    pub fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut WsState) -> R) -> R {
        self.state.get().with(py, f)
    }
}

/// What a `receive()` finds.
enum Event {
    Connect,
    Message(Message),
    Disconnect(u16, String),
    AfterDisconnect,
    Wait,
}

/// The next event, taken.
fn next_event(server: &Bound<'_, HttpServer>, r: &WsRef) -> Event {
    let py = server.py();
    let first = r.with(py, |s| {
        if !s.connect_delivered {
            s.connect_delivered = true;
            return Some(Event::Connect);
        }
        s.disconnect_delivered.then_some(Event::AfterDisconnect)
    });
    if let Some(event) = first {
        return event;
    }
    // After its own close the app gets no more messages (as uvicorn).
    let (stage, ended, messages) = r.with(py, |s| (s.stage, s.ended, s.finished_by.is_none()));
    let next = match stage {
        Stage::Open => with_driver(server, |d| d.ws_next(r.conn, r.ex, messages)),
        _ if ended => WsNext::Ended(1006, String::new()),
        _ => WsNext::Wait,
    };
    match next {
        WsNext::Message(message) => Event::Message(message),
        WsNext::Ended(code, reason) => {
            r.with(py, |s| s.disconnect_delivered = true);
            Event::Disconnect(code, reason)
        }
        WsNext::Wait => Event::Wait,
    }
}

/// An event's dict (None: nothing to give) and a message's spent buffer.
type Delivered<'py> = (Option<Bound<'py, PyDict>>, Option<Vec<u8>>);

fn event_dict(py: Python<'_>, event: Event) -> PyResult<Delivered<'_>> {
    let msg = PyDict::new(py);
    let mut spare = None;
    match event {
        Event::AfterDisconnect | Event::Wait => return Ok((None, None)),
        Event::Connect => msg.set_item(intern!(py, "type"), intern!(py, "websocket.connect"))?,
        Event::Message(m) => {
            msg.set_item(intern!(py, "type"), intern!(py, "websocket.receive"))?;
            match m.kind {
                MessageKind::Binary => {
                    msg.set_item(intern!(py, "bytes"), PyBytes::new(py, &m.data))?
                }
                MessageKind::Text => {
                    // loop-ws validated it; lossy only guards a bug there.
                    let text = match std::str::from_utf8(&m.data) {
                        Ok(s) => PyString::new(py, s),
                        Err(_) => PyString::new(py, &String::from_utf8_lossy(&m.data)),
                    };
                    msg.set_item(intern!(py, "text"), text)?
                }
            }
            spare = Some(m.data);
        }
        Event::Disconnect(code, reason) => {
            msg.set_item(intern!(py, "type"), intern!(py, "websocket.disconnect"))?;
            msg.set_item(intern!(py, "code"), code)?;
            msg.set_item(intern!(py, "reason"), reason)?;
        }
    }
    Ok((Some(msg), spare))
}

/// The event a `receive()` gets now, if one is there (a message's buffer
/// goes back to the session for the next one); after the
/// `websocket.disconnect`, `ClientDisconnected`.
pub(in crate::asgi) fn poll<'py>(
    server: &Bound<'py, HttpServer>,
    r: &WsRef,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let event = next_event(server, r);
    let after = matches!(event, Event::AfterDisconnect);
    let (msg, spare) = event_dict(server.py(), event)?;
    if let Some(data) = spare {
        with_driver(server, |d| d.ws_recycle(r.conn, data));
    }
    if msg.is_none() && after {
        return Err(ClientDisconnected::new_err(
            "receive() after 'websocket.disconnect' was received",
        ));
    }
    Ok(msg)
}

/// Whether a `receive()` waits on `waiter`: a future not done yet, or a
/// native awaitable (registered only while it waits).
pub(in crate::asgi) fn is_pending(waiter: &Bound<'_, PyAny>) -> PyResult<bool> {
    if app_task::is_self_resuming(waiter) {
        return Ok(true);
    }
    Ok(!future_ops::is_done(waiter)?)
}

/// A `receive()` waits on `waiter` (a future, or a native awaitable its
/// task waits on) for the next event.
pub(in crate::asgi) fn wait_with(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    waiter: Py<PyAny>,
) -> PyResult<()> {
    let py = server.py();
    let pending = with_driver(server, |d| {
        d.exchange_app(r.conn, r.ex)
            .and_then(|x| x.receive.as_ref().map(|w| w.clone_ref(py)))
    });
    if let Some(pending) = pending {
        if is_pending(pending.bind(py))? {
            return Err(PyRuntimeError::new_err(
                "receive() awaited while another receive() is pending",
            ));
        }
    }
    let old = with_driver(server, |d| {
        d.ws_wait(r.conn, r.ex, true);
        d.exchange_app(r.conn, r.ex)
            .and_then(|x| x.receive.replace(waiter))
    });
    drop(old);
    Ok(())
}

/// A waiting `receive()` gives up its place (cancelled, thrown into).
pub(in crate::asgi) fn stop_waiting(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    waiter: &Bound<'_, PyAny>,
) {
    let py = server.py();
    let old = with_driver(server, |d| {
        let x = d.exchange_app(r.conn, r.ex)?;
        match &x.receive {
            Some(w) if w.bind(py).is(waiter) => x.receive.take(),
            _ => None,
        }
    });
    if old.is_some() {
        with_driver(server, |d| d.ws_wait(r.conn, r.ex, false));
    }
    drop(old);
}
