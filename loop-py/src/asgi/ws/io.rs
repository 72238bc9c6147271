//! A session's socket after the `101`: the loop registrations, reading
//! into the sans-IO `loop_ws::Connection` (which pauses reading while the
//! app's queue is full), writing (corked to the end of the tick, `send()`
//! waiting above the high-water mark), the timers the server's sweep
//! drives (pings, pong and close timeouts), drain and how it ends.

use super::session::{self, Stage, WsSession};
use super::WsHandle;
use crate::asgi::counters::Timeout;
use crate::asgi::settings::{WRITE_HIGH, WRITE_LOW};
use crate::asgi::shared::{sync_fd_interest, Interest, ServerShared};
use crate::asgi::tls::is_reset;
use crate::event_loop::Loop;
use crate::future_ops;
use loop_core::clock;
use loop_transports::{LayerRead, LayeredStream, Write};
use loop_ws::{CloseCode, DeflateParams, MessageKind, SendError, State, TimerAction};
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyInt;
use std::sync::Arc;

/// Take the stream over from HTTP: a session of the server's registry in
/// the HTTP connection's place, reading from the bytes after the request.
pub(super) fn attach(
    slf: &Bound<'_, WsSession>,
    stream: LayeredStream,
    rest: Vec<u8>,
    deflate: Option<DeflateParams>,
) -> PyResult<()> {
    let py = slf.py();
    let now = clock::monotonic();
    let shared = slf.borrow().shared.clone_ref(py);
    let slot = shared.borrow_mut(py).reserve();
    {
        let mut me = slf.borrow_mut();
        me.fd = stream.core().fd();
        me.stream = Some(stream);
        // The `101` went out: a response, and a session.
        me.counters.response(101);
        me.counters.ws_sessions.bump();
        let mut ws = loop_ws::Connection::new(&me.config, deflate, now);
        if !rest.is_empty() {
            ws.receive(&rest, now);
        }
        me.ws = Some(ws);
        me.stage = Stage::Open;
        me.slot = Some(slot);
    }
    shared
        .borrow_mut(py)
        .register(slot, Arc::new(WsHandle(slf.clone().unbind())));
    let callbacks = (
        slf.getattr(intern!(py, "_on_readable"))?.unbind(),
        slf.getattr(intern!(py, "_on_writable"))?.unbind(),
    );
    slf.borrow_mut().callbacks = Some(callbacks);
    after_input(slf, false)?;
    // Accepted while the server drains (HTTP waited for this response).
    if shared.borrow(py).draining {
        drain(slf)?;
    }
    Ok(())
}

/// After input or a timer: write what the session produced (pongs, a
/// close), hand the app what arrived, end a closed session.
fn after_input(slf: &Bound<'_, WsSession>, from_read: bool) -> PyResult<()> {
    {
        let mut guard = slf.borrow_mut();
        let me = &mut *guard;
        if let Some(ws) = me.ws.as_mut() {
            ws.take_output(&mut me.out);
            if ws.state() == State::Closed {
                let (code, reason) = match ws.close_status() {
                    Some((code, reason)) => (code.0, reason.to_owned()),
                    None => (CloseCode::ABNORMAL.0, String::new()),
                };
                me.end(code, &reason);
            }
        }
    }
    let woken = session::wake_receiver(slf, from_read);
    // Pongs and frames already queued go out whatever the app did.
    flush(slf)?;
    woken
}

/// The app took a message from a full queue: decode input kept back, and
/// read again.
pub(super) fn resume_input(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    {
        let mut me = slf.borrow_mut();
        if let Some(ws) = me.ws.as_mut() {
            ws.receive(&[], clock::monotonic());
        }
    }
    after_input(slf, false)
}

/// The app's frames are in `out`: leave them to the end of the tick (every
/// connection's output of the tick goes out together), or write now.
pub(super) fn written(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let (shared, slot) = {
        let me = slf.borrow();
        if me.corked {
            return Ok(());
        }
        match me.slot {
            Some(slot) if !me.writing => (me.shared.clone_ref(py), slot),
            // A connection waiting for writability flushes from there.
            Some(_) => return Ok(()),
            None => return flush(slf),
        }
    };
    let corked = ServerShared::cork(shared.bind(py), slot);
    slf.borrow_mut().corked = corked;
    if corked {
        Ok(())
    } else {
        flush(slf)
    }
}

/// Payloads at least this long are written behind their frame header
/// straight from the app's object (one vectored write), not copied into
/// `out` first; smaller ones wait in `out` for the end of the tick.
const DIRECT_WRITE_MIN: usize = 16 * 1024;

/// Send a large data message without copying its payload: the frames in
/// `out` and this one's header, then the payload, in one vectored write
/// (the stream copies only what the kernel does not take). `Ok(false)`
/// when it does not apply (small, compressed, a TLS layer): the caller
/// uses `Connection::send`.
pub(super) fn send_direct(
    slf: &Bound<'_, WsSession>,
    kind: MessageKind,
    payload: &[u8],
) -> PyResult<bool> {
    if payload.len() < DIRECT_WRITE_MIN {
        return Ok(false);
    }
    let lost = {
        let mut guard = slf.borrow_mut();
        let me = &mut *guard;
        let (Some(ws), Some(stream)) = (me.ws.as_mut(), me.stream.as_mut()) else {
            return Err(session::client_disconnected());
        };
        if stream.has_layer() {
            return Ok(false);
        }
        match ws.send_header(kind, payload.len(), &mut me.out) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(_) => return Err(session::client_disconnected()),
        }
        let written = stream.core_mut().write_vectored(&[&me.out, payload]);
        me.out.clear();
        let lost = !matches!(written, Ok(Write::Accepted));
        if lost {
            me.counters.reset.bump();
        }
        lost
    };
    if lost {
        lose(slf)?;
    }
    Ok(true)
}

/// Hand `out` to the stream; end the connection once a closed session's
/// output is out (the server closes TCP first, RFC 6455 §7.1.1).
pub(super) fn flush(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let (lost, done) = {
        let mut guard = slf.borrow_mut();
        let me = &mut *guard;
        let Some(stream) = me.stream.as_mut() else {
            return Ok(());
        };
        // The session's own output (a close echo queued by `next_message`)
        // goes out with the app's frames, before the end below.
        if let Some(ws) = me.ws.as_mut() {
            ws.take_output(&mut me.out);
        }
        let mut lost = false;
        if !me.out.is_empty() && !me.corked {
            lost = !matches!(stream.write(&me.out), Ok(Write::Accepted));
            me.out.clear();
            if me.out.capacity() > 256 * 1024 {
                me.out = Vec::new();
            }
        }
        lost |= stream.take_closed().is_some();
        let closed = me.ws.as_ref().is_some_and(|ws| ws.state() == State::Closed);
        let mut done = false;
        if closed && me.buffered_out() == 0 && me.linger_until.is_none() {
            // Our close is out: FIN, then linger (read and drop) before
            // closing the fd, so unread input does not make it an RST; a
            // peer that is gone already says so there.
            let linger = me.shared.borrow(slf.py()).conn_config.linger;
            me.linger_until = Some(clock::monotonic() + linger);
            let half_closed = me.stream.as_mut().is_some_and(|s| s.shutdown().is_ok());
            done = linger <= 0.0 || !half_closed;
        }
        if lost {
            me.counters.reset.bump();
        }
        (lost, done)
    };
    if lost || done {
        return lose(slf);
    }
    release_writer(slf)?;
    sync_interest(slf)
}

/// After the app took an event: a session that produced output or ended
/// inside `next_message` (a close read behind queued messages) writes it
/// and ends; otherwise nothing.
pub(super) fn settle(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let due = {
        let me = slf.borrow();
        me.stream.is_some()
            && me
                .ws
                .as_ref()
                .is_some_and(|ws| ws.has_output() || ws.state() == State::Closed)
    };
    if due {
        flush(slf)?;
    }
    Ok(())
}

/// Wake a `send()` waiting for the write buffer to drain.
fn release_writer(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let waiter = {
        let mut me = slf.borrow_mut();
        if me.send_waiter.is_none() || me.buffered_out() > WRITE_LOW {
            return Ok(());
        }
        me.send_waiter.take()
    };
    if let Some(waiter) = waiter {
        future_ops::resolve_if_pending(waiter.bind(py), &py.None().into_bound(py))?;
    }
    Ok(())
}

/// Bring the loop's reader/writer registrations in line with the state.
fn sync_interest(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let (fd, want_read, want_write, reading, writing, cbs, event_loop, ctx) = {
        let me = slf.borrow();
        let (Some(cbs), Some(stream), Some(ws)) =
            (me.callbacks.as_ref(), me.stream.as_ref(), me.ws.as_ref())
        else {
            return Ok(());
        };
        let open = ws.state() != State::Closed;
        // Our output (pongs to a ping flood) bounds reading: paused above
        // the high-water mark, resumed at the low one.
        let room = if me.reading {
            me.buffered_out() <= WRITE_HIGH
        } else {
            me.buffered_out() <= WRITE_LOW
        };
        let want_read =
            me.linger_until.is_some() || (open && room && stream.wants_read(ws.wants_read()));
        let want_write = stream.wants_write() || (!me.out.is_empty() && !me.corked);
        if want_read == me.reading && want_write == me.writing {
            return Ok(());
        }
        (
            me.fd,
            want_read,
            want_write,
            me.reading,
            me.writing,
            (cbs.0.clone_ref(py), cbs.1.clone_ref(py)),
            me.event_loop.clone_ref(py),
            me.base_context.clone_ref(py),
        )
    };
    if fd < 0 {
        return Ok(());
    }
    let (readable, writable) = cbs;
    sync_fd_interest(
        event_loop.bind(py),
        fd,
        &ctx,
        Interest {
            want: want_read,
            have: reading,
            callback: readable,
        },
        Interest {
            want: want_write,
            have: writing,
            callback: writable,
        },
        |write, now| {
            let mut me = slf.borrow_mut();
            if write {
                me.writing = now;
            } else {
                me.reading = now;
            }
        },
    )
}

/// Start the closing handshake with `code` (the app's close, its end, or
/// the server's drain).
pub(super) fn close(slf: &Bound<'_, WsSession>, code: u16, reason: &str) -> PyResult<()> {
    let result = {
        let mut guard = slf.borrow_mut();
        let me = &mut *guard;
        match me.ws.as_mut() {
            Some(ws) => ws.close(CloseCode(code), reason, clock::monotonic(), &mut me.out),
            None => Err(SendError::Closed),
        }
    };
    match result {
        Ok(()) => {}
        Err(SendError::Closed) => return Err(session::client_disconnected()),
        Err(e @ (SendError::InvalidCloseCode(_) | SendError::ReasonTooLong)) => {
            return Err(PyValueError::new_err(format!("'websocket.close': {e}")))
        }
    }
    // The peer's answer must be read even when the app's queue is full.
    flush(slf)
}

/// Server shutdown: close with 1012 (service restart) and wait for the
/// peer's close, bounded by the close timeout and the grace period.
pub(super) fn drain(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let open = {
        let me = slf.borrow();
        me.ws.as_ref().is_some_and(|ws| ws.state() == State::Open)
    };
    if !open {
        return Ok(());
    }
    // A session closing already (or gone) needs no 1012.
    let _ = close(slf, CloseCode::SERVICE_RESTART.0, "");
    slf.borrow_mut().end(CloseCode::SERVICE_RESTART.0, "");
    session::wake_receiver(slf, false)?;
    session::fail_sender(slf)
}

/// Close now with an RST (past the grace period).
pub(super) fn abort(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    {
        let mut me = slf.borrow_mut();
        if let Some(stream) = me.stream.as_mut() {
            stream.reset();
        }
    }
    lose(slf)
}

/// The sweep: pings, pong and close timeouts due by `now`.
pub(super) fn check_timers(slf: &Bound<'_, WsSession>, now: f64) -> PyResult<()> {
    let action = {
        let mut guard = slf.borrow_mut();
        let me = &mut *guard;
        if me.linger_until.is_some_and(|until| now >= until) {
            drop(guard);
            return lose(slf);
        }
        let Some(ws) = me.ws.as_mut() else {
            return Ok(());
        };
        let action = match ws.next_deadline() {
            Some(due) if due <= now => ws.on_timer(now),
            _ => TimerAction::Nothing,
        };
        // An open session that a timer starts closing missed its pong
        // (closed with 1011); an abort is the close timeout.
        match action {
            TimerAction::Output if ws.state() != State::Open => {
                me.counters.timed_out(Timeout::WsPing)
            }
            TimerAction::Abort => me.counters.timed_out(Timeout::WsClose),
            _ => {}
        }
        action
    };
    match action {
        TimerAction::Nothing => Ok(()),
        TimerAction::Output => after_input(slf, false),
        TimerAction::Abort => lose(slf),
    }
}

/// The connection is gone (closed, reset, timed out): close the socket,
/// leave the registry, and tell the app (`websocket.disconnect` once).
pub(super) fn lose(slf: &Bound<'_, WsSession>) -> PyResult<()> {
    let py = slf.py();
    let (stream, fd, reading, writing, event_loop, shared, slot, code) = {
        let mut me = slf.borrow_mut();
        let Some(stream) = me.stream.take() else {
            return Ok(());
        };
        let status = me.ws.as_ref().and_then(|ws| {
            ws.close_status()
                .map(|(code, reason)| (code.0, reason.to_owned()))
        });
        let (code, reason) = status.unwrap_or((CloseCode::ABNORMAL.0, String::new()));
        me.end(code, &reason);
        me.stage = Stage::Done;
        me.out = Vec::new();
        let code = me.ended.as_ref().map_or(code, |(c, _)| *c);
        (
            stream,
            std::mem::replace(&mut me.fd, -1),
            std::mem::take(&mut me.reading),
            std::mem::take(&mut me.writing),
            me.event_loop.clone_ref(py),
            me.shared.clone_ref(py),
            me.slot.take(),
            code,
        )
    };
    if fd >= 0 {
        let fd_obj = PyInt::new(py, fd);
        let lp = event_loop.bind(py);
        // Deregistered before the fd closes: the reactor keys on the number.
        if reading {
            let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), false);
        }
        if writing {
            let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), true);
        }
    }
    {
        let me = slf.borrow();
        me.counters.stream_closed(&stream.core().stats());
        me.counters.ws_ended.bump();
        me.counters.ws_close_codes.bump(code);
    }
    let mut stream = stream;
    stream.close_fd();
    drop(stream);
    if let Some(slot) = slot {
        ServerShared::forget(shared.bind(py), slot);
    }
    let callbacks = slf.borrow_mut().callbacks.take();
    drop(callbacks);
    session::wake_receiver(slf, false)?;
    session::fail_sender(slf)?;
    if shared.borrow(py).debug_on() {
        let line = format!(
            "{} - WebSocket connection closed ({code})",
            slf.borrow().client_text
        );
        ServerShared::log_debug(shared.bind(py), &line)?;
    }
    session::log_access(slf, &format!("closed {code}"))
}

#[pymethods]
impl WsSession {
    fn _on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let now = clock::monotonic();
        let lost = {
            let mut guard = slf.borrow_mut();
            let me = &mut *guard;
            let lingering = me.linger_until.is_some();
            let (Some(stream), Some(ws)) = (me.stream.as_mut(), me.ws.as_mut()) else {
                return Ok(());
            };
            let server = me.shared.clone_ref(py);
            let mut srv = server.bind(py).borrow_mut();
            match stream.read_into(srv.read_buffer()) {
                // Lingering: input is dropped until the peer's EOF.
                Ok(LayerRead::Data(_)) if lingering => stream.peer_ended(),
                Ok(LayerRead::Eof(_)) if lingering => true,
                Ok(LayerRead::Data(data)) => {
                    ws.receive(data, now);
                    // `close_notify` came with the data: an EOF after it.
                    if stream.peer_ended() {
                        ws.receive_eof();
                    }
                    false
                }
                Ok(LayerRead::Done) => {
                    let closed = stream.take_closed();
                    if let Some(err) = &closed {
                        if is_reset(err.as_ref()) {
                            me.counters.reset.bump();
                        }
                        ws.receive_eof();
                    }
                    closed.is_some()
                }
                Ok(LayerRead::Eof(_)) => {
                    ws.receive_eof();
                    false
                }
                Err(err) => {
                    if is_reset(Some(&err)) {
                        me.counters.reset.bump();
                    }
                    ws.receive_eof();
                    true
                }
            }
        };
        if lost {
            return lose(slf);
        }
        // The read callback: no task runs, a waiting app resumes at once.
        after_input(slf, true)
    }

    fn _on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
        if let Some(stream) = slf.borrow_mut().stream.as_mut() {
            stream.on_writable();
        }
        flush(slf)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.shared)?;
        visit.call(&self.event_loop)?;
        visit.call(&self.base_context)?;
        for w in [&self.receive_waiter, &self.send_waiter, &self.task]
            .into_iter()
            .flatten()
        {
            visit.call(w)?;
        }
        if let Some(side) = &self.side {
            side.traverse(&visit)?;
        }
        if let Some((r, w)) = &self.callbacks {
            visit.call(r)?;
            visit.call(w)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.receive_waiter = None;
        self.send_waiter = None;
        self.task = None;
        self.side = None;
        self.callbacks = None;
    }

    fn __repr__(&self) -> String {
        format!("<WsSession fd={} {:?}>", self.fd, self.stage)
    }
}
