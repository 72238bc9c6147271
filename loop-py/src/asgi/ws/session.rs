//! One ASGI `websocket` session: its stages and what the app's `receive()`
//! and `send()` mean in each, per the ASGI WebSocket spec (uvicorn's
//! wording for the errors where it has one).
//!
//! - **Connecting** (HTTP owns the connection): `receive()` gives
//!   `websocket.connect`; `send()` takes `websocket.accept` (the `101`),
//!   `websocket.close` (a `403`) or `websocket.http.response.start`.
//! - **Denying**: the app's denial response is being sent.
//! - **Open** (after the `101`): messages both ways, `websocket.close`.
//! - **Done**: over; `receive()` gives `websocket.disconnect` exactly once.
//!
//! Borrow rule (as the HTTP kind's): no `PyRefMut` of the session is held
//! across a call into Python.

use super::decode::{self, Data, Decoded, WsMessage};
use super::receiving::{self, Receiving};
use super::{io, Denial, Handshake};
use crate::asgi::counters::ServerCounters;
use crate::asgi::settings::WRITE_HIGH;
use crate::asgi::shared::ServerShared;
use crate::asgi::ClientDisconnected;
use crate::event_loop::Loop;
use crate::future_ops;
use loop_transports::LayeredStream;
use loop_ws::{CloseCode, Message, MessageKind, Offer, State};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pycell::PyBorrowMutError;
use pyo3::types::{PyBytes, PyDict, PyString};
use std::os::fd::RawFd;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::asgi) enum Stage {
    Connecting,
    Denying,
    Open,
    Done,
}

#[pyclass(module = "ferroloop._native")]
pub struct WsSession {
    /// The server's counters (`Server.stats()`).
    pub(super) counters: Arc<ServerCounters>,
    pub(super) shared: Py<ServerShared>,
    pub(super) event_loop: Py<Loop>,
    /// The server's context, for the loop callbacks (as HTTP's).
    pub(super) base_context: Py<PyAny>,
    pub(super) config: loop_ws::Config,
    pub(super) stage: Stage,
    /// The client's handshake, until the app answered it.
    offer: Option<Offer>,
    /// The HTTP connection, while it owns the stream.
    pub(super) side: Option<Arc<dyn Handshake>>,
    connect_delivered: bool,
    /// The session after the `101`.
    pub(super) ws: Option<loop_ws::Connection>,
    pub(super) stream: Option<LayeredStream>,
    /// Frames not handed to the stream yet (corked to the end of the tick).
    pub(super) out: Vec<u8>,
    pub(super) fd: RawFd,
    /// The server registry's slot, while registered.
    pub(super) slot: Option<usize>,
    pub(super) callbacks: Option<(Py<PyAny>, Py<PyAny>)>,
    pub(super) reading: bool,
    pub(super) writing: bool,
    pub(super) corked: bool,
    /// Half-closed after the close went out: input is read and dropped
    /// until EOF or this deadline, so unread input does not turn our close
    /// into an RST (as HTTP's linger).
    pub(super) linger_until: Option<f64>,
    pub(super) receive_waiter: Option<Py<PyAny>>,
    pub(super) send_waiter: Option<Py<PyAny>>,
    pub(super) task: Option<Py<PyAny>>,
    /// The message that ended the app's side (`websocket.close`, a denial's
    /// last body): a `send()` after it is an error.
    finished_by: Option<&'static str>,
    /// The `websocket.disconnect` the app gets (code, reason), once known.
    pub(super) ended: Option<(u16, String)>,
    disconnect_delivered: bool,
    sending: bool,
    /// `client - "WebSocket /path"`: the access log's lines start so (None
    /// when the access log is off).
    pub(super) log_prefix: Option<String>,
    pub(super) client_text: String,
}

impl WsSession {
    #[allow(clippy::too_many_arguments)]
    pub(in crate::asgi) fn new(
        counters: Arc<ServerCounters>,
        shared: Py<ServerShared>,
        event_loop: Py<Loop>,
        base_context: Py<PyAny>,
        config: loop_ws::Config,
        offer: Offer,
        side: Arc<dyn Handshake>,
        log_prefix: Option<String>,
        client_text: String,
    ) -> Self {
        WsSession {
            counters,
            shared,
            event_loop,
            base_context,
            config,
            stage: Stage::Connecting,
            offer: Some(offer),
            side: Some(side),
            connect_delivered: false,
            ws: None,
            stream: None,
            out: Vec::new(),
            fd: -1,
            slot: None,
            callbacks: None,
            reading: false,
            writing: false,
            corked: false,
            linger_until: None,
            receive_waiter: None,
            send_waiter: None,
            task: None,
            finished_by: None,
            ended: None,
            disconnect_delivered: false,
            sending: false,
            log_prefix,
            client_text,
        }
    }

    pub(in crate::asgi) fn set_task(&mut self, task: Py<PyAny>) {
        self.task = Some(task);
    }

    /// The session ends for the app with `code` (a first reason stays).
    pub(super) fn end(&mut self, code: u16, reason: &str) {
        if self.ended.is_none() {
            self.ended = Some((code, reason.to_owned()));
        }
    }

    /// A delivered message's buffer, back to the session for the next one.
    fn recycle(&mut self, spare: Option<Vec<u8>>) {
        if let (Some(data), Some(ws)) = (spare, self.ws.as_mut()) {
            ws.recycle(data);
        }
    }

    pub(super) fn buffered_out(&self) -> usize {
        self.out.len() + self.stream.as_ref().map_or(0, LayeredStream::buffered)
    }

    /// What `receive()` gives now, if anything.
    fn next_event(&mut self) -> Event {
        if !self.connect_delivered {
            self.connect_delivered = true;
            return Event::Connect;
        }
        if self.disconnect_delivered {
            return Event::AfterDisconnect;
        }
        // After its own close the app gets no more messages (as uvicorn).
        if self.finished_by.is_none() {
            if let Some(message) = self.ws.as_mut().and_then(loop_ws::Connection::next_message) {
                self.counters.ws_messages_in.bump();
                return Event::Message(message);
            }
        }
        // A close or failure read behind queued messages takes effect once
        // they are taken (inside `next_message`): the session ends here.
        if let Some(ws) = self.ws.as_ref().filter(|ws| ws.state() == State::Closed) {
            let (code, reason) = match ws.close_status() {
                Some((code, reason)) => (code.0, reason.to_owned()),
                None => (CloseCode::ABNORMAL.0, String::new()),
            };
            self.end(code, &reason);
        }
        match &self.ended {
            Some((code, reason)) => {
                self.disconnect_delivered = true;
                Event::Disconnect(*code, reason.clone())
            }
            None => Event::Wait,
        }
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

fn reentered(_: PyBorrowMutError) -> PyErr {
    PyRuntimeError::new_err("ASGI receive()/send() called re-entrantly, from inside the server")
}

pub(super) fn client_disconnected() -> PyErr {
    ClientDisconnected::new_err("the client disconnected")
}

/// The event as the app gets it; a message's buffer comes back for reuse
/// ([`WsSession::recycle`]).
/// An event's dict (None: nothing to give) and a message's spent buffer.
type Delivered<'py> = (Option<Bound<'py, PyDict>>, Option<Vec<u8>>);

fn event_dict<'py>(py: Python<'py>, event: Event) -> PyResult<Delivered<'py>> {
    if matches!(event, Event::AfterDisconnect | Event::Wait) {
        return Ok((None, None));
    }
    let msg = PyDict::new(py);
    let mut spare = None;
    match event {
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
        Event::AfterDisconnect | Event::Wait => return Ok((None, None)),
    }
    Ok((Some(msg), spare))
}

/// Whether a `receive()` waits: a future not done yet, or a registered
/// [`Receiving`] (registered only while it waits).
fn is_pending(waiter: &Option<Py<PyAny>>, py: Python<'_>) -> PyResult<bool> {
    match waiter {
        Some(w) if w.bind(py).is_instance_of::<Receiving>() => Ok(true),
        Some(w) => Ok(!future_ops::is_done(w.bind(py))?),
        None => Ok(false),
    }
}

pub(super) fn receive<'py>(slf: &Bound<'py, WsSession>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let pending = {
        let me = slf.try_borrow_mut().map_err(reentered)?;
        me.receive_waiter.as_ref().map(|w| w.clone_ref(py))
    };
    if is_pending(&pending, py)? {
        return Err(PyRuntimeError::new_err(
            "receive() called while another receive() is pending",
        ));
    }
    drop(pending);
    receiving::install_send_slot(py);
    let session = slf.clone().unbind();
    let receiving = match poll(slf)? {
        Some(event) => Receiving::ready(session, event.into_any().unbind()),
        None => Receiving::idle(session),
    };
    Ok(Bound::new(py, receiving)?.into_any())
}

/// The event a `receive()` gets now, if one is there; after the
/// `websocket.disconnect`, `ClientDisconnected`.
pub(super) fn poll<'py>(slf: &Bound<'py, WsSession>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let (msg, resume) = take_event(slf)?;
    io::settle(slf)?;
    match msg {
        Some(msg) => {
            if resume {
                // Room in the queue again: decode what waits, read on.
                io::resume_input(slf)?;
            }
            Ok(Some(msg))
        }
        None if slf.borrow().disconnect_delivered => Err(ClientDisconnected::new_err(
            "receive() after 'websocket.disconnect' was received",
        )),
        None => Ok(None),
    }
}

/// A `receive()` waits on `waiter` (a future, or a [`Receiving`] its
/// task waits on) for the next event.
pub(super) fn wait_with(slf: &Bound<'_, WsSession>, waiter: Py<PyAny>) -> PyResult<()> {
    let py = slf.py();
    let pending = slf
        .borrow()
        .receive_waiter
        .as_ref()
        .map(|w| w.clone_ref(py));
    if is_pending(&pending, py)? {
        return Err(PyRuntimeError::new_err(
            "receive() awaited while another receive() is pending",
        ));
    }
    let old = slf.borrow_mut().receive_waiter.replace(waiter);
    drop(old);
    Ok(())
}

/// A waiting [`Receiving`] gives up its place (cancelled, thrown into).
pub(super) fn stop_waiting(slf: &Bound<'_, WsSession>, receiving: &Bound<'_, PyAny>) {
    let old = {
        let mut me = slf.borrow_mut();
        match &me.receive_waiter {
            Some(w) if w.bind(slf.py()).is(receiving) => me.receive_waiter.take(),
            _ => None,
        }
    };
    drop(old);
}

/// The session's task goes on at the loop's next turn.
pub(super) fn step_soon(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let task = slf.borrow().task.as_ref().map(|t| t.clone_ref(slf.py()));
    match task {
        Some(task) => receiving::resume_task(task.bind(slf.py()), false),
        None => Ok(()),
    }
}

/// The next event as `receive()` delivers it, and whether taking it made
/// room in a full queue (reading then resumes).
fn take_event<'py>(slf: &Bound<'py, WsSession>) -> PyResult<(Option<Bound<'py, PyDict>>, bool)> {
    let (event, paused) = {
        let mut me = slf.borrow_mut();
        let paused = me.ws.as_ref().is_some_and(|ws| !ws.wants_read());
        (me.next_event(), paused)
    };
    let took = matches!(event, Event::Message(_));
    let (msg, spare) = event_dict(slf.py(), event)?;
    slf.borrow_mut().recycle(spare);
    Ok((msg, took && paused))
}

/// A waiting `receive()` gets what arrived (a message, the disconnect).
/// `now`: called from the read callback, where no task runs, so a task
/// waiting on a [`Receiving`] is resumed at once.
pub(super) fn wake_receiver(slf: &Bound<'_, WsSession>, now: bool) -> PyResult<()> {
    let py = slf.py();
    let waiter = slf
        .borrow()
        .receive_waiter
        .as_ref()
        .map(|w| w.clone_ref(py));
    let Some(waiter) = waiter else {
        return Ok(());
    };
    if !is_pending(&Some(waiter.clone_ref(py)), py)? {
        // Cancelled by the app: what arrived stays for its next receive().
        let old = slf.borrow_mut().receive_waiter.take();
        drop(old);
        return Ok(());
    }
    let (msg, resume) = take_event(slf)?;
    let Some(msg) = msg else {
        return io::settle(slf);
    };
    let old = slf.borrow_mut().receive_waiter.take();
    drop(old);
    match waiter.bind(py).cast::<Receiving>() {
        Ok(receiving) => {
            receiving.borrow_mut().deliver(msg.into_any().unbind());
            if resume {
                io::resume_input(slf)?;
            }
            let task = slf.borrow().task.as_ref().map(|t| t.clone_ref(py));
            if let Some(task) = task {
                // Settle (and the caller's flush) even when the resumed
                // task raised out (KeyboardInterrupt): then report it.
                let resumed = receiving::resume_task(task.bind(py), now);
                if resumed.is_err() {
                    io::settle(slf)?;
                }
                resumed?;
            }
        }
        Err(_) => {
            future_ops::set_result(waiter.bind(py), msg.as_any())?;
            if resume {
                io::resume_input(slf)?;
            }
        }
    }
    io::settle(slf)
}

/// The session is over for a waiting `send()`: it raises.
pub(super) fn fail_sender(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let waiter = slf.borrow_mut().send_waiter.take();
    if let Some(waiter) = waiter {
        if is_pending(&Some(waiter.clone_ref(py)), py)? {
            waiter.call_method1(
                py,
                intern!(py, "set_exception"),
                (client_disconnected().into_value(py),),
            )?;
        }
    }
    Ok(())
}

fn protocol_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

pub(super) fn send<'py>(
    slf: &Bound<'py, WsSession>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    {
        let mut me = slf.try_borrow_mut().map_err(reentered)?;
        if me.sending {
            return Err(protocol_error(
                "send() called from inside another send() (a buffer export?)".into(),
            ));
        }
        me.sending = true;
    }
    let decoded = decode::decode(message);
    slf.borrow_mut().sending = false;
    let Decoded { kind, message } = decoded?;
    let kind = kind.to_str()?;
    let (stage, finished_by, gone) = {
        let me = slf.borrow();
        (me.stage, me.finished_by, me.ended.is_some())
    };
    if let Some(last) = finished_by {
        return Err(protocol_error(format!(
            "Unexpected ASGI message '{kind}', after sending '{last}'."
        )));
    }
    if gone {
        return Err(client_disconnected());
    }
    match (stage, message) {
        (
            Stage::Connecting,
            WsMessage::Accept {
                subprotocol,
                headers,
            },
        ) => accept(slf, subprotocol, &headers)?,
        (Stage::Connecting, WsMessage::Close { .. }) => forbid(slf)?,
        (Stage::Connecting, WsMessage::ResponseStart { status, headers }) => {
            let side = side(slf)?;
            let headers: Vec<_> = headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect();
            side.respond(py, Denial::Start { status, headers })?;
            slf.borrow_mut().stage = Stage::Denying;
            log_access(slf, &status.to_string())?;
        }
        (Stage::Connecting, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.accept', 'websocket.close' or \
                 'websocket.http.response.start' but got '{kind}'."
            )))
        }
        (Stage::Denying, WsMessage::ResponseBody { body, more }) => {
            let side = side(slf)?;
            let data = body.as_slice();
            if side.respond(py, Denial::Body { data, more })? {
                finish_handshake(slf, "websocket.http.response.body");
                // A pending receive() gets its `websocket.disconnect`.
                wake_receiver(slf, false)?;
            }
        }
        (Stage::Denying, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.http.response.body' but got '{kind}'."
            )))
        }
        (Stage::Open, WsMessage::Send(data)) => return send_data(slf, data),
        (Stage::Open, WsMessage::Close { code, reason }) => {
            let (code, reason) = (code?, reason?);
            io::close(slf, code, &reason)?;
            {
                let mut me = slf.borrow_mut();
                me.finished_by = Some("websocket.close");
                me.end(code, &reason);
            }
            wake_receiver(slf, false)?;
        }
        (Stage::Open, _) => {
            return Err(protocol_error(format!(
                "Expected ASGI message 'websocket.send' or 'websocket.close', but got '{kind}'."
            )))
        }
        (Stage::Done, _) => return Err(client_disconnected()),
    }
    Ok(slf.borrow().shared.borrow(py).done_future.bind(py).clone())
}

fn side(slf: &Bound<'_, WsSession>) -> PyResult<Arc<dyn Handshake>> {
    slf.borrow().side.clone().ok_or_else(client_disconnected)
}

/// The app's answer ended the handshake without a session (`403`, a
/// denial): the app gets `websocket.disconnect` 1006 (as uvicorn).
fn finish_handshake(slf: &Bound<'_, WsSession>, by: &'static str) {
    let side = {
        let mut me = slf.borrow_mut();
        me.stage = Stage::Done;
        me.finished_by = Some(by);
        me.offer = None;
        me.end(1006, "");
        me.side.take()
    };
    drop(side);
}

/// Header fields of the `101` that are the handshake's, not the app's.
fn is_handshake_field(name: &[u8]) -> bool {
    const OWN: [&[u8]; 7] = [
        b"upgrade",
        b"connection",
        b"sec-websocket-accept",
        b"sec-websocket-protocol",
        b"sec-websocket-extensions",
        b"content-length",
        b"transfer-encoding",
    ];
    OWN.iter().any(|own| own.eq_ignore_ascii_case(name))
}

fn accept(
    slf: &Bound<'_, WsSession>,
    subprotocol: Option<String>,
    headers: &[(Bound<'_, PyBytes>, Bound<'_, PyBytes>)],
) -> PyResult<()> {
    let py = slf.py();
    if let Some((name, _)) = headers
        .iter()
        .find(|(n, _)| is_handshake_field(n.as_bytes()))
    {
        return Err(protocol_error(format!(
            "'websocket.accept' header '{}' is the handshake's: the server sets it",
            String::from_utf8_lossy(name.as_bytes())
        )));
    }
    let (accepted, side) = {
        let me = slf.borrow();
        let offer = me.offer.as_ref().ok_or_else(client_disconnected)?;
        if let Some(chosen) = &subprotocol {
            if !offer.subprotocols().iter().any(|p| p == chosen) {
                return Err(protocol_error(format!(
                    "'websocket.accept' subprotocol '{chosen}' was not offered by the client \
                     (offered: {:?})",
                    offer.subprotocols()
                )));
            }
        }
        (
            offer.accept(&me.config, subprotocol.as_deref()),
            me.side.clone(),
        )
    };
    let side = side.ok_or_else(client_disconnected)?;
    let mut all: Vec<(&[u8], &[u8])> = accepted
        .headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    all.extend(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
    let handed = side.upgrade(py, &all)?;
    let side = {
        let mut me = slf.borrow_mut();
        me.offer = None;
        me.side.take()
    };
    drop(side);
    let Some((stream, rest)) = handed else {
        {
            let mut me = slf.borrow_mut();
            me.stage = Stage::Done;
            me.end(1006, "");
        }
        return Err(client_disconnected());
    };
    log_access(slf, "[accepted]")?;
    io::attach(slf, stream, rest, accepted.deflate)
}

/// `websocket.close` before accept: `403` (as uvicorn).
fn forbid(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let side = side(slf)?;
    let headers: Vec<(&[u8], &[u8])> = vec![
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"0"),
        (b"connection", b"close"),
    ];
    side.respond(
        py,
        Denial::Start {
            status: 403,
            headers,
        },
    )?;
    side.respond(
        py,
        Denial::Body {
            data: b"",
            more: false,
        },
    )?;
    finish_handshake(slf, "websocket.close");
    log_access(slf, "403")?;
    wake_receiver(slf, false)
}

fn send_data<'py>(slf: &Bound<'py, WsSession>, data: Data<'py>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let (kind, bytes): (MessageKind, &[u8]) = match &data {
        Data::Bytes(b) => (MessageKind::Binary, b.as_bytes()),
        Data::Copied(v) => (MessageKind::Binary, v),
        Data::Text(s) => (MessageKind::Text, s.to_str()?.as_bytes()),
    };
    if !io::send_direct(slf, kind, bytes)? {
        let sent = {
            let mut guard = slf.borrow_mut();
            let me = &mut *guard;
            match me.ws.as_mut() {
                Some(ws) => ws.send(kind, bytes, &mut me.out),
                None => Err(loop_ws::SendError::Closed),
            }
        };
        if sent.is_err() {
            return Err(client_disconnected());
        }
    }
    slf.borrow().counters.ws_messages_out.bump();
    io::written(slf)?;
    let wait = slf.borrow().buffered_out() > WRITE_HIGH && slf.borrow().stream.is_some();
    if wait {
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        let future = Loop::create_future(event_loop.bind(py))?;
        let old = slf
            .borrow_mut()
            .send_waiter
            .replace(future.clone().unbind());
        drop(old);
        return Ok(future);
    }
    Ok(slf.borrow().shared.borrow(py).done_future.bind(py).clone())
}

/// An access-log line of the session: `client - "WebSocket /path" what`.
pub(super) fn log_access(slf: &Bound<'_, WsSession>, what: &str) -> PyResult<()> {
    let py = slf.py();
    let (shared, line) = {
        let me = slf.borrow();
        let Some(prefix) = me.log_prefix.as_ref() else {
            return Ok(());
        };
        (me.shared.clone_ref(py), format!("{prefix} {what}"))
    };
    if !shared.borrow(py).logs.access_on {
        return Ok(());
    }
    ServerShared::log_access(shared.bind(py), line)
}

/// The HTTP connection went away before the app accepted.
pub(in crate::asgi) fn http_lost(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let side = {
        let mut me = slf.borrow_mut();
        if matches!(me.stage, Stage::Connecting | Stage::Denying) {
            me.stage = Stage::Done;
        }
        me.offer = None;
        me.end(1006, "");
        me.side.take()
    };
    drop(side);
    wake_receiver(slf, false)?;
    fail_sender(slf)
}

pub(super) fn app_waits(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let side = slf.borrow().side.clone();
    if let Some(side) = side {
        return side.flush(py);
    }
    let flush = {
        let me = slf.borrow();
        !me.corked && !me.writing && me.stream.is_some() && !me.out.is_empty()
    };
    if flush {
        io::flush(slf)?;
    }
    Ok(())
}

pub(super) fn app_finished(
    slf: &Bound<'_, WsSession>,
    error: Option<Bound<'_, PyAny>>,
    cancelled: bool,
) -> PyResult<()> {
    let py = slf.py();
    let shared = slf.borrow().shared.clone_ref(py);
    let server = shared.bind(py);
    {
        let mut srv = server.borrow_mut();
        srv.tasks = srv.tasks.saturating_sub(1);
    }
    let (task, side, stage, gone) = {
        let mut me = slf.borrow_mut();
        (
            me.task.take(),
            me.side.clone(),
            me.stage,
            me.ended.is_some(),
        )
    };
    drop(task);
    if let Some(side) = &side {
        side.task_ended(py);
    }
    if let Some(exc) = &error {
        ServerShared::app_stopped(server, exc, gone)?;
    }
    let quiet = error.is_some() || cancelled || gone;
    match stage {
        Stage::Connecting => {
            if !quiet {
                ServerShared::log_error(
                    server,
                    "ASGI callable returned without completing handshake.",
                )?;
            }
            let side = slf.borrow_mut().side.take();
            slf.borrow_mut().stage = Stage::Done;
            if let Some(side) = side {
                side.fail(py, 500)?;
            }
            Ok(())
        }
        Stage::Denying => {
            if !quiet {
                ServerShared::log_error(
                    server,
                    "ASGI callable returned without completing response.",
                )?;
            }
            let side = slf.borrow_mut().side.take();
            slf.borrow_mut().stage = Stage::Done;
            match side {
                Some(side) => side.lose(py),
                None => Ok(()),
            }
        }
        Stage::Open => {
            let open = {
                let me = slf.borrow();
                me.finished_by.is_none() && me.ended.is_none()
            };
            if open {
                // The app is done with a session it did not close: close it
                // (1011 after an error), as websockets' own server does.
                let code = if error.is_some() { 1011 } else { 1000 };
                slf.borrow_mut().finished_by = Some("websocket.close");
                // Closing already (the peer's close crossed) is fine.
                let _ = io::close(slf, code, "");
            }
            Ok(())
        }
        Stage::Done => Ok(()),
    }
}
