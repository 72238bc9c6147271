//! One ASGI `websocket` session: its stages and what the app's `receive()`
//! and `send()` mean in each, per the ASGI WebSocket spec (uvicorn's
//! wording for the errors where it has one). The wire is the driver's: the
//! handshake's HTTP exchange until the app answers it, then the session
//! (`loop_server`'s WebSocket kind) on the same connection.
//!
//! - **Connecting**: `receive()` gives `websocket.connect`; `send()` takes
//!   `websocket.accept` (the `101`), `websocket.close` (a `403`) or
//!   `websocket.http.response.start`.
//! - **Denying**: the app's denial response is being sent.
//! - **Open** (after the `101`): messages both ways, `websocket.close`.
//! - **Done**: over; `receive()` gives `websocket.disconnect` exactly once.

use super::decode::{self, Data, Decoded, WsMessage};
use super::events::{self, WsRef};
use super::receiving::{self, Receiving};
use crate::asgi::bridge::{
    self, reentered, with_driver, ExchangePy, HttpServer, Stage, WsCell, WsState,
};
use crate::asgi::owner::TaskOwner;
use crate::asgi::{http, scope};
use crate::event_loop::Loop;
use crate::future_ops;
use loop_http::{RequestHead, ResponsePart};
use loop_server::{ConnId, ExchangeId, WsRefused};
use loop_ws::MessageKind;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::Arc;

type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

fn protocol_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

/// [`Event::Request`](loop_server::Event::Request) opening a WebSocket:
/// the `websocket` scope, the app and its task (its first step runs now).
pub(in crate::asgi) fn request(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    head: RequestHead,
    subprotocols: Vec<String>,
) -> PyResult<()> {
    let py = server.py();
    let scope = http::request_scope(server, conn, &head)
        .and_then(|s| scope::to_websocket(py, &s, &subprotocols).map(|()| s));
    let scope = match scope {
        Ok(scope) => scope,
        Err(err) => {
            bridge::log_app_error(server, &err)?;
            with_driver(server, |d| d.reject(conn, head, 500));
            return Ok(());
        }
    };
    let cell = Py::new(
        py,
        WsCell::new(WsState {
            stage: Stage::Connecting,
            connect_delivered: false,
            disconnect_delivered: false,
            finished_by: None,
            ended: false,
        }),
    )?;
    let state = ExchangePy {
        ws: Some(cell.clone_ref(py)),
        ..ExchangePy::default()
    };
    let owner_cell = cell.clone_ref(py);
    http::begin_with_app(
        server,
        conn,
        head,
        scope.into_any(),
        state,
        |py, server, conn, ex| {
            let r = WsRef {
                server,
                conn,
                ex,
                state: cell.clone_ref(py),
            };
            Ok((
                Py::new(py, WsReceive(r.clone_ref(py)))?.into_any(),
                Py::new(py, WsSend(r))?.into_any(),
            ))
        },
        |server, conn, ex| {
            Arc::new(WsOwner(WsRef {
                server,
                conn,
                ex,
                state: owner_cell,
            }))
        },
    )
}

/// The session's state, changed by `f` (no Python in it).
fn with_state<R>(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    f: impl FnOnce(&mut WsState) -> R,
) -> Option<R> {
    Some(r.with(server.py(), f))
}

/// The session is over for the app: it ends before (or without) a
/// session with 1006; a waiting `receive()` gets that, a waiting `send()`
/// raises ([`Event::Ended`](loop_server::Event::Ended)).
pub(in crate::asgi) fn ended(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
    now: bool,
) -> PyResult<()> {
    let py = server.py();
    let Some(r) = WsRef::of(server, conn, ex) else {
        return Ok(());
    };
    with_state(server, &r, |s| {
        if matches!(s.stage, Stage::Connecting | Stage::Denying) {
            s.stage = Stage::Done;
        }
        if s.stage != Stage::Open {
            s.ended = true;
        }
    });
    wake_receiver(server, &r, now)?;
    let waiter = with_driver(server, |d| {
        d.exchange_app(conn, ex).and_then(|x| x.send.take())
    });
    if let Some(waiter) = waiter {
        http::fail_or_release(waiter.bind(py), true)?;
    }
    Ok(())
}

/// A waiting `receive()` gets what arrived (a message, the disconnect).
/// `now`: called from a readiness report, where no task runs, so a task
/// waiting on a [`Receiving`] is resumed at once.
pub(in crate::asgi) fn wake_receiver(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    now: bool,
) -> PyResult<()> {
    let py = server.py();
    let waiter = with_driver(server, |d| {
        d.exchange_app(r.conn, r.ex)
            .and_then(|x| x.receive.as_ref().map(|w| w.clone_ref(py)))
    });
    let Some(waiter) = waiter else {
        return Ok(());
    };
    if !events::is_pending(waiter.bind(py))? {
        // Cancelled by the app: what arrived stays for its next receive().
        let old = with_driver(server, |d| {
            d.exchange_app(r.conn, r.ex).and_then(|x| x.receive.take())
        });
        drop(old);
        return Ok(());
    }
    let Some(msg) = events::poll(server, r)? else {
        // Nothing for it yet: it goes on waiting.
        with_driver(server, |d| d.ws_wait(r.conn, r.ex, true));
        return Ok(());
    };
    let old = with_driver(server, |d| {
        d.exchange_app(r.conn, r.ex).and_then(|x| x.receive.take())
    });
    drop(old);
    match waiter.bind(py).cast::<Receiving>() {
        Ok(receiving) => {
            receiving.borrow_mut().deliver(msg.into_any().unbind());
            let task = with_driver(server, |d| {
                d.exchange_app(r.conn, r.ex)
                    .and_then(|x| x.task.as_ref().map(|t| t.clone_ref(py)))
            });
            if let Some(task) = task {
                receiving::resume_task(task.bind(py), now)?;
            }
        }
        Err(_) => {
            future_ops::set_result(waiter.bind(py), msg.as_any())?;
        }
    }
    Ok(())
}

pub(super) fn receive<'py>(r: &WsRef, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    let server = r.server.bind(py);
    let pending = {
        let mut me = server.try_borrow_mut().map_err(reentered)?;
        me.driver
            .exchange_app(r.conn, r.ex)
            .and_then(|x| x.receive.as_ref().map(|w| w.clone_ref(py)))
    };
    if let Some(pending) = pending {
        if events::is_pending(pending.bind(py))? {
            return Err(PyRuntimeError::new_err(
                "receive() called while another receive() is pending",
            ));
        }
    }
    receiving::install_send_slot(py);
    let polled = events::poll(server, r);
    bridge::pump(server, false)?;
    let receiving = match polled? {
        Some(event) => Receiving::ready(r.clone_ref(py), event.into_any().unbind()),
        None => Receiving::idle(r.clone_ref(py)),
    };
    Ok(Bound::new(py, receiving)?.into_any())
}

pub(super) fn send<'py>(r: &WsRef, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = message.py();
    let server = r.server.bind(py);
    {
        let mut me = server.try_borrow_mut().map_err(reentered)?;
        if let Some(x) = me.driver.exchange_app(r.conn, r.ex) {
            if x.sending {
                return Err(protocol_error(
                    "send() called from inside another send() (a buffer export?)".into(),
                ));
            }
            x.sending = true;
        }
    }
    let decoded = decode::decode(message);
    with_driver(server, |d| {
        if let Some(x) = d.exchange_app(r.conn, r.ex) {
            x.sending = false;
        }
    });
    let Decoded { kind, message } = decoded?;
    let kind = kind.to_str()?;
    let result = act(server, r, kind, message);
    bridge::pump(server, false)?;
    result
}

/// What one decoded `send()` does in the session's stage.
fn act<'py>(
    server: &Bound<'py, HttpServer>,
    r: &WsRef,
    kind: &str,
    message: WsMessage<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = server.py();
    let Some((stage, finished_by, ended)) =
        with_state(server, r, |s| (s.stage, s.finished_by, s.ended))
    else {
        return Err(http::client_disconnected());
    };
    if let Some(last) = finished_by {
        return Err(protocol_error(format!(
            "Unexpected ASGI message '{kind}', after sending '{last}'."
        )));
    }
    let gone =
        ended || (stage == Stage::Open && with_driver(server, |d| d.ws_end(r.conn).is_some()));
    if gone {
        return Err(http::client_disconnected());
    }
    let done = server.borrow().done_future.clone_ref(py).into_bound(py);
    match (stage, message) {
        (
            Stage::Connecting,
            WsMessage::Accept {
                subprotocol,
                headers,
            },
        ) => {
            let headers: Fields<'_> = headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect();
            let accepted = with_driver(server, |d| {
                d.ws_accept(r.conn, r.ex, subprotocol.as_deref(), &headers)
            });
            match accepted {
                Ok(()) => {
                    with_state(server, r, |s| s.stage = Stage::Open);
                }
                Err(WsRefused::HandshakeField(name)) => {
                    return Err(protocol_error(format!(
                        "'websocket.accept' header '{name}' is the handshake's: the server sets it"
                    )))
                }
                Err(WsRefused::NotOffered { chosen, offered }) => {
                    return Err(protocol_error(format!(
                        "'websocket.accept' subprotocol '{chosen}' was not offered by the client \
                         (offered: {offered:?})"
                    )))
                }
                Err(WsRefused::Http(e)) => {
                    return Err(http::send_error(e.into(), "websocket.accept"))
                }
                Err(_) => {
                    with_state(server, r, |s| {
                        s.stage = Stage::Done;
                        s.ended = true;
                    });
                    return Err(http::client_disconnected());
                }
            }
        }
        (Stage::Connecting, WsMessage::Close { .. }) => {
            // As uvicorn: a `403`.
            let headers: Fields<'_> = vec![
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", b"0"),
                (b"connection", b"close"),
            ];
            deny(
                server,
                r,
                ResponsePart::Start {
                    status: 403,
                    headers,
                    trailers: false,
                },
                kind,
            )?;
            deny(
                server,
                r,
                ResponsePart::Body {
                    data: b"",
                    more: false,
                },
                kind,
            )?;
            finish_handshake(server, r, "websocket.close");
            wake_receiver(server, r, false)?;
        }
        (Stage::Connecting, WsMessage::ResponseStart { status, headers }) => {
            let headers: Fields<'_> = headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect();
            deny(
                server,
                r,
                ResponsePart::Start {
                    status,
                    headers,
                    trailers: false,
                },
                kind,
            )?;
            with_state(server, r, |s| s.stage = Stage::Denying);
        }
        (Stage::Connecting, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.accept', 'websocket.close' or \
                 'websocket.http.response.start' but got '{kind}'."
            )))
        }
        (Stage::Denying, WsMessage::ResponseBody { body, more }) => {
            let data = body.as_slice();
            deny(server, r, ResponsePart::Body { data, more }, kind)?;
            if !more {
                finish_handshake(server, r, "websocket.http.response.body");
                // A pending receive() gets its `websocket.disconnect`.
                wake_receiver(server, r, false)?;
            }
        }
        (Stage::Denying, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.http.response.body' but got '{kind}'."
            )))
        }
        (Stage::Open, WsMessage::Send(data)) => return send_data(server, r, data),
        (Stage::Open, WsMessage::Close { code, reason }) => {
            let (code, reason) = (code?, reason?);
            match with_driver(server, |d| d.ws_close(r.conn, r.ex, code, &reason)) {
                Ok(()) => {}
                Err(e @ (WsRefused::InvalidCloseCode(_) | WsRefused::ReasonTooLong)) => {
                    return Err(PyValueError::new_err(format!("'websocket.close': {e}")))
                }
                Err(_) => return Err(http::client_disconnected()),
            }
            with_state(server, r, |s| s.finished_by = Some("websocket.close"));
            wake_receiver(server, r, false)?;
        }
        (Stage::Open, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.send' or 'websocket.close', but got '{kind}'."
            )))
        }
        (Stage::Done, _) => return Err(http::client_disconnected()),
    }
    Ok(done)
}

/// A part of the handshake's HTTP response (a `403` or the app's denial).
fn deny(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    part: ResponsePart<'_, Fields<'_>>,
    kind: &str,
) -> PyResult<()> {
    with_driver(server, |d| d.send(r.conn, r.ex, part))
        .map(drop)
        .map_err(|e| http::send_error(e, kind))
}

/// The app's answer ended the handshake without a session (`403`, a
/// denial): the app gets `websocket.disconnect` 1006 (as uvicorn).
fn finish_handshake(server: &Bound<'_, HttpServer>, r: &WsRef, by: &'static str) {
    with_state(server, r, |s| {
        s.stage = Stage::Done;
        s.finished_by = Some(by);
        s.ended = true;
    });
}

fn send_data<'py>(
    server: &Bound<'py, HttpServer>,
    r: &WsRef,
    data: Data<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = server.py();
    let (kind, bytes): (MessageKind, &[u8]) = match &data {
        Data::Bytes(b) => (MessageKind::Binary, b.as_bytes()),
        Data::Copied(v) => (MessageKind::Binary, v),
        Data::Text(s) => (MessageKind::Text, s.to_str()?.as_bytes()),
    };
    match with_driver(server, |d| d.ws_send(r.conn, r.ex, kind, bytes)) {
        Ok(false) => Ok(server.borrow().done_future.clone_ref(py).into_bound(py)),
        Ok(true) => {
            let event_loop = server.borrow().event_loop.clone_ref(py);
            let future = Loop::create_future(event_loop.bind(py))?;
            let old = with_driver(server, |d| {
                d.exchange_app(r.conn, r.ex)
                    .and_then(|x| x.send.replace(future.clone().unbind()))
            });
            drop(old);
            Ok(future)
        }
        Err(_) => Err(http::client_disconnected()),
    }
}

/// A session as the `AppTask` running its app sees it.
struct WsOwner(WsRef);

impl TaskOwner for WsOwner {
    fn app_waits(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.0.server.bind(py);
        with_driver(server, |d| d.app_waits(self.0.conn));
        bridge::pump(server, false)
    }

    fn app_finished(
        &self,
        py: Python<'_>,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()> {
        let server = self.0.server.bind(py);
        app_finished(server, &self.0, error, cancelled)?;
        bridge::pump(server, false)
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0.server)
    }
}

fn app_finished(
    server: &Bound<'_, HttpServer>,
    r: &WsRef,
    error: Option<Bound<'_, PyAny>>,
    cancelled: bool,
) -> PyResult<()> {
    let task = {
        let mut me = server.borrow_mut();
        me.tasks = me.tasks.saturating_sub(1);
        me.driver
            .exchange_app(r.conn, r.ex)
            .and_then(|x| x.task.take())
    };
    drop(task);
    let (stage, finished_by, ended) = r.with(server.py(), |s| (s.stage, s.finished_by, s.ended));
    let gone =
        ended || (stage == Stage::Open && with_driver(server, |d| d.ws_end(r.conn).is_some()));
    if let Some(exc) = &error {
        bridge::app_stopped(server, exc, gone)?;
    }
    let quiet = error.is_some() || cancelled || gone;
    match stage {
        Stage::Connecting => {
            if !quiet {
                bridge::log_error(
                    server,
                    "ASGI callable returned without completing handshake.",
                )?;
            }
            with_state(server, r, |s| s.stage = Stage::Done);
            with_driver(server, |d| d.fail(r.conn, 500, None));
        }
        Stage::Denying => {
            if !quiet {
                bridge::log_error(
                    server,
                    "ASGI callable returned without completing response.",
                )?;
            }
            with_state(server, r, |s| s.stage = Stage::Done);
            with_driver(server, |d| {
                d.lose(r.conn, "the app's response ended before it was complete")
            });
        }
        Stage::Open => {
            if finished_by.is_none() && !gone {
                // The app is done with a session it did not close: close it
                // (1011 after an error), as websockets' own server does.
                let code = if error.is_some() { 1011 } else { 1000 };
                with_state(server, r, |s| s.finished_by = Some("websocket.close"));
                // Closing already (the peer's close crossed) is fine.
                let _ = with_driver(server, |d| d.ws_close(r.conn, r.ex, code, ""));
            }
        }
        Stage::Done => {}
    }
    Ok(())
}

/// The `receive` callable of a `websocket` session.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct WsReceive(WsRef);

#[pymethods]
impl WsReceive {
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(&self.0, py)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.0.server)
    }
}

/// The `send` callable of a `websocket` session.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct WsSend(WsRef);

#[pymethods]
impl WsSend {
    fn __call__<'py>(&self, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        send(&self.0, message)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.0.server)
    }
}
