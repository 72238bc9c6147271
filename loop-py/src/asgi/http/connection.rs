//! One HTTP/1.1 connection's glue: the socket and its loop registrations
//! around `loop_http::ServerConnection`, the sans-IO state machine that
//! decides everything HTTP (framing, pipelining, keep-alive, `100
//! Continue`, deadlines, how the connection ends).
//!
//! The socket is a `loop_transports::LayeredStream` (plain bytes today; a
//! TLS session is a layer): it writes at once and buffers only what the
//! kernel refuses, half-closes, and closes or resets. Reads land in the
//! server's shared buffer and only unconsumed bytes are kept per
//! connection, so an idle keep-alive connection costs a few hundred bytes.
//!
//! Borrow rule: a `PyRefMut` of the connection is never held across a call
//! into Python (app, futures, logging, the loop's registration methods).
//! Methods compute what to do under the borrow and act after dropping it.

mod log;

use super::dispatch::Addr;
use super::dispatch::Waiters;
use super::exchange;
use crate::asgi::counters::{ServerCounters, Timeout};
use crate::asgi::settings::{Settings, WRITE_HIGH, WRITE_LOW};
use crate::asgi::shared::{sync_fd_interest, Interest, ServerShared};
use crate::asgi::tls::{describe, is_reset, session_error, TlsState};
use crate::event_loop::Loop;
use loop_core::clock;
use loop_http::{
    ConnectionConfig, DrainAction, Expired, FailOutcome, Phase, RequestHead, ServerConnection,
    Step, TimerAction,
};
use loop_transports::{Eof, LayerRead, LayeredStream, Write};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyInt;
use std::borrow::Cow;
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::Arc;

#[pyclass(module = "ferroloop._native")]
pub struct HttpConnection {
    pub(in crate::asgi) shared: Py<ServerShared>,
    pub(in crate::asgi) event_loop: Py<Loop>,
    pub(in crate::asgi) settings: Arc<Settings>,
    pub(in crate::asgi) fd: RawFd,
    pub(in crate::asgi) slot: usize,
    pub(in crate::asgi) client: Py<PyAny>,
    pub(in crate::asgi) local: Py<PyAny>,
    /// The template every request's scope is copied from.
    pub(in crate::asgi) scope_base: Option<Py<pyo3::types::PyDict>>,
    pub(in crate::asgi) peer_ip: Option<IpAddr>,
    pub(in crate::asgi) client_text: String,
    callbacks: Option<Callbacks>,
    /// The context the connection's loop callbacks run in (the server's,
    /// captured at accept). Without it a reader re-registered inside an
    /// app step would carry that request's context vars into the next.
    pub(in crate::asgi) base_context: Py<PyAny>,
    reading: bool,
    writing: bool,
    /// Output waits for the server's end-of-tick flush.
    pub(in crate::asgi) corked: bool,
    pub(in crate::asgi) http: ServerConnection,
    /// The socket; `None` once the connection is lost (its fd closed).
    stream: Option<LayeredStream>,
    /// Response bytes not handed to the stream yet (a corked response, a
    /// head waiting for its body).
    out: Vec<u8>,
    /// The current exchange's futures and task.
    pub(in crate::asgi) waiters: Waiters,
    /// A response body from a file, while it is being sent.
    pub(in crate::asgi) file: Option<super::file_body::InFlight>,
    /// A `send()` is decoding its message (which can run Python code, a
    /// body's buffer export): a `send()` from inside it is refused.
    pub(in crate::asgi) sending: bool,
    /// Why the connection ends, for the debug log (the first reason wins).
    closing_why: Option<Cow<'static, str>>,
    /// When the current request's head completed (only when the access
    /// log shows durations).
    pub(in crate::asgi) request_started: f64,
    /// The WebSocket session the current exchange is, until it accepts.
    pub(in crate::asgi) ws: Option<Py<crate::asgi::ws::WsSession>>,
    /// The TLS layer's state on a TLS connection (the layer is in the
    /// stream).
    pub(in crate::asgi) tls: Option<Arc<TlsState>>,
    /// `scope["extensions"]["tls"]`, made at the first request: the
    /// connection's, copied into each request's scope.
    pub(in crate::asgi) tls_extension: Option<Py<pyo3::types::PyDict>>,
    /// When a handshake still running at this time is given up.
    handshake_deadline: f64,
    /// The server's counters (`Server.stats()`).
    pub(in crate::asgi) counters: Arc<ServerCounters>,
}

/// Bound methods registered with the loop, made once per connection.
struct Callbacks {
    readable: Py<PyAny>,
    writable: Py<PyAny>,
}

/// The state machine's settings from the server's.
pub(in crate::asgi) fn connection_config(settings: &Settings) -> ConnectionConfig {
    ConnectionConfig {
        limits: settings.limits.clone(),
        timeout_request_head: settings.timeout_request_head,
        timeout_keep_alive: settings.timeout_keep_alive,
        min_body_rate: settings.min_body_rate,
        body_rate_grace: settings.body_rate_grace,
        default_headers: settings.default_headers.clone(),
        ..ConnectionConfig::default()
    }
}

impl HttpConnection {
    #[allow(clippy::too_many_arguments)]
    pub(in crate::asgi) fn new(
        py: Python<'_>,
        shared: Py<ServerShared>,
        event_loop: Py<Loop>,
        settings: Arc<Settings>,
        config: Arc<ConnectionConfig>,
        stream: LayeredStream,
        peer: Option<Addr>,
        slot: usize,
        tls: Option<Arc<TlsState>>,
    ) -> PyResult<Self> {
        let local = stream.core().local_addr().ok().and_then(|a| Addr::of(&a));
        let fd = stream.core().fd();
        let client_text = match &peer {
            Some(Addr::Inet(ip, port)) => format!("{ip}:{port}"),
            _ => String::new(),
        };
        let peer_ip = match &peer {
            Some(Addr::Inet(ip, _)) => Some(*ip),
            _ => None,
        };
        let base_context = crate::pyapi::copy_current_context(py)?.unbind();
        let now = clock::monotonic();
        let handshake_deadline = now + settings.tls_handshake_timeout;
        let counters = shared.borrow(py).counters.clone();
        Ok(HttpConnection {
            counters,
            base_context,
            client: super::dispatch::addr_tuple(py, &peer, false)?,
            local: super::dispatch::addr_tuple(py, &local, true)?,
            scope_base: None,
            shared,
            event_loop,
            settings,
            fd,
            slot,
            peer_ip,
            client_text,
            callbacks: None,
            reading: false,
            writing: false,
            corked: false,
            handshake_deadline,
            http: ServerConnection::new(config, now),
            stream: Some(stream),
            out: Vec::new(),
            waiters: Waiters::default(),
            file: None,
            sending: false,
            closing_why: None,
            request_started: 0.0,
            ws: None,
            tls,
            tls_extension: None,
        })
    }

    /// The peer as the logs name it.
    pub(in crate::asgi) fn peer_text(&self) -> &str {
        if self.client_text.is_empty() {
            "unix socket client"
        } else {
            &self.client_text
        }
    }

    /// Record why the connection ends (an earlier reason stays).
    pub(in crate::asgi) fn closing_because(&mut self, why: impl Into<Cow<'static, str>>) {
        if self.closing_why.is_none() {
            self.closing_why = Some(why.into());
        }
    }

    /// Register with the loop and start reading.
    pub(in crate::asgi) fn start(slf: &Bound<'_, Self>) -> PyResult<()> {
        let callbacks = Callbacks {
            readable: slf.getattr(intern!(slf.py(), "_on_readable"))?.unbind(),
            writable: slf.getattr(intern!(slf.py(), "_on_writable"))?.unbind(),
        };
        slf.borrow_mut().callbacks = Some(callbacks);
        Self::sync_interest(slf)
    }

    /// Bytes read and written on the socket so far.
    pub(in crate::asgi) fn wire_bytes(&self) -> (u64, u64) {
        self.stream.as_ref().map_or((0, 0), |s| {
            let stats = s.core().stats();
            (stats.bytes_read, stats.bytes_written)
        })
    }

    fn buffered_out(&self) -> usize {
        self.out.len() + self.stream.as_ref().map_or(0, LayeredStream::buffered)
    }

    /// Bring the loop's reader/writer registrations in line with the state.
    pub(in crate::asgi) fn sync_interest(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (fd, want_read, want_write, reading, writing, cbs, event_loop, ctx) = {
            let me = slf.borrow();
            let Some(cbs) = me.callbacks.as_ref() else {
                return Ok(());
            };
            let Some(stream) = me.stream.as_ref() else {
                return Ok(());
            };
            let open = !me.http.is_closed();
            let want_read = open && stream.wants_read(me.http.wants_read());
            let want_write = open
                && (stream.wants_write()
                    || (!me.out.is_empty() && !me.corked)
                    || me.file.is_some());
            if want_read == me.reading && want_write == me.writing {
                return Ok(()); // the common case: nothing to change
            }
            (
                me.fd,
                want_read,
                want_write,
                me.reading,
                me.writing,
                (cbs.readable.clone_ref(py), cbs.writable.clone_ref(py)),
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

    /// Parse what is pending and act on it, until nothing more can happen.
    pub(in crate::asgi) fn process(slf: &Bound<'_, Self>) -> PyResult<()> {
        loop {
            let step = slf.borrow_mut().http.poll();
            match step {
                Step::Wait => break,
                Step::Request(head) => super::dispatch::start_request(slf, head)?,
                Step::Deliver => exchange::deliver(slf)?,
                Step::Fail(status) => {
                    Self::fail(slf, status)?;
                    break;
                }
                Step::Close => {
                    Self::close_gracefully(slf)?;
                    break;
                }
            }
        }
        Self::sync_interest(slf)
    }

    /// Append to the output: `f` gets the state machine and the buffer.
    pub(in crate::asgi) fn with_output<R>(
        &mut self,
        f: impl FnOnce(&mut ServerConnection, &mut Vec<u8>) -> R,
    ) -> R {
        f(&mut self.http, &mut self.out)
    }

    /// Answer `status` (no app involved, or before the response started)
    /// and close.
    pub(in crate::asgi) fn fail(slf: &Bound<'_, Self>, status: u16) -> PyResult<()> {
        Self::fail_for(slf, status, None)
    }

    /// [`HttpConnection::fail`], for a request whose head did not become an
    /// exchange (`head`: what the access log shows).
    pub(in crate::asgi) fn fail_for(
        slf: &Bound<'_, Self>,
        status: u16,
        head: Option<&RequestHead>,
    ) -> PyResult<()> {
        let py = slf.py();
        let server = slf.borrow().shared.clone_ref(py);
        let (outcome, active) = {
            let mut me = slf.borrow_mut();
            let mut srv = server.bind(py).borrow_mut();
            let settings = me.settings.clone();
            let date = srv.date_value();
            let active = me.http.phase() == Phase::Active;
            let outcome = me.with_output(|http, out| {
                http.fail(
                    status,
                    out,
                    date,
                    settings.server_header.as_deref(),
                    clock::monotonic(),
                )
            });
            (outcome, active)
        };
        match outcome {
            FailOutcome::Ignored => Ok(()),
            FailOutcome::Lose => Self::lose(slf),
            FailOutcome::Refused => {
                slf.borrow_mut()
                    .closing_because("refused without a response");
                let logged = Self::log_refused(slf);
                exchange::end_for_app(slf)?;
                Self::flush(slf)?;
                logged
            }
            FailOutcome::Answered => {
                let mut me = slf.borrow_mut();
                me.counters.rejected(status);
                me.closing_because(format!("answered {status} by the server"));
                drop(me);
                // Logged, but the answer goes out and the app is told even
                // if logging fails.
                let logged = Self::log_server_answer(slf, status, head, active);
                exchange::end_for_app(slf)?;
                Self::flush(slf)?;
                logged
            }
        }
    }

    /// Write what is buffered; half-close when a closing connection drained.
    pub(in crate::asgi) fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let (lost, file) = {
            let mut me = slf.borrow_mut();
            (me.write_out(), me.file.is_some())
        };
        if lost {
            let mut me = slf.borrow_mut();
            me.counters.reset.bump();
            me.closing_because("the client went away during a write");
            drop(me);
            return Self::lose(slf);
        }
        if file {
            super::file_body::pump(slf)?;
        }
        {
            let mut guard = slf.borrow_mut();
            let me = &mut *guard;
            if me.buffered_out() == 0 && me.http.output_flushed(clock::monotonic()) {
                if let Some(stream) = me.stream.as_mut() {
                    // The peer may be gone already: then reading says so.
                    let _ = stream.shutdown();
                }
            }
        }
        exchange::release_writer(slf)?;
        Self::sync_interest(slf)
    }

    /// Send what the socket takes of the file in flight; `None` without a
    /// file or a stream.
    pub(in crate::asgi) fn advance_file(&mut self) -> Option<loop_transports::FileProgress> {
        let stream = self.stream.as_mut()?;
        Some(self.file.as_mut()?.send.advance(stream))
    }

    /// Hand `out` to the stream (sent now, the rest buffered there); true
    /// when the connection turned out lost.
    fn write_out(&mut self) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        let mut lost = false;
        if !self.out.is_empty() {
            lost = !matches!(stream.write(&self.out), Ok(Write::Accepted));
            self.out.clear();
            if self.out.capacity() > 256 * 1024 {
                self.out = Vec::new();
            }
        }
        lost || stream.take_closed().is_some()
    }

    pub(in crate::asgi) fn close_gracefully(slf: &Bound<'_, Self>) -> PyResult<()> {
        {
            let mut me = slf.borrow_mut();
            if !me.http.close(clock::monotonic()) {
                return Ok(());
            }
            me.closing_because("no more requests on the connection");
        }
        exchange::end_for_app(slf)?;
        Self::flush(slf)
    }

    /// Leave a finished response on a kept connection to the server's
    /// end-of-tick flush; false when it must be written now.
    fn cork(slf: &Bound<'_, Self>) -> bool {
        let (shared, slot) = {
            let me = slf.borrow();
            if me.corked {
                return true;
            }
            // A connection waiting for writability flushes from there.
            if !me.http.is_between_requests() || me.writing || me.buffered_out() == 0 {
                return false;
            }
            (me.shared.clone_ref(slf.py()), me.slot)
        };
        let corked = ServerShared::cork(shared.bind(slf.py()), slot);
        slf.borrow_mut().corked = corked;
        corked
    }

    /// Flush if anything is buffered (called when the app waits).
    pub(in crate::asgi) fn flush_if_buffered(slf: &Bound<'_, Self>) -> PyResult<()> {
        let buffered = {
            let me = slf.borrow();
            !me.http.is_closed() && me.buffered_out() > 0 && !me.writing
        };
        if buffered {
            Self::flush(slf)?;
        }
        Ok(())
    }

    pub(in crate::asgi) fn over_high_water(&self) -> bool {
        self.buffered_out() > WRITE_HIGH
    }

    pub(in crate::asgi) fn under_low_water(&self) -> bool {
        self.buffered_out() <= WRITE_LOW
    }

    /// The current exchange's response completed: log it, write it (now
    /// or at the end of the tick), and continue with pipelined input.
    pub(in crate::asgi) fn response_complete(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        {
            let me = slf.borrow();
            if let Some(ex) = me.http.exchange() {
                me.counters.response(ex.status());
            }
        }
        // A session's denial is logged as the session's.
        if slf.borrow().ws.is_none() {
            Self::log_access(slf)?;
        }
        if slf.borrow().http.phase() == Phase::Upgraded {
            // A 101 that no protocol took the stream over for (a WebSocket
            // session takes it in `ws::io::attach` before this): the 101
            // goes out and the connection closes.
            slf.borrow_mut()
                .closing_because("switched protocols, and no session took the stream");
            Self::flush(slf)?;
            return Self::lose(slf);
        }
        exchange::end_for_app(slf)?;
        if !Self::cork(slf) {
            Self::flush(slf)?;
        }
        // A pipelined request may be waiting already. It starts from the
        // loop, not from here: this runs inside the app's step, and a
        // task cannot start inside another.
        let resume = slf.borrow().http.has_pipelined_input();
        if resume {
            let (event_loop, ctx) = {
                let me = slf.borrow();
                (me.event_loop.clone_ref(py), me.base_context.clone_ref(py))
            };
            let again = slf.getattr(intern!(py, "_resume"))?;
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item(intern!(py, "context"), ctx)?;
            event_loop
                .bind(py)
                .call_method(intern!(py, "call_soon"), (again,), Some(&kwargs))?;
        }
        Ok(())
    }

    /// The connection is gone (EOF, reset, timeout, shutdown): close the
    /// socket and tell the app.
    pub(in crate::asgi) fn lose(slf: &Bound<'_, Self>) -> PyResult<()> {
        if let Some((mut stream, _)) = Self::detach(slf)? {
            slf.borrow().counters.stream_closed(&stream.core().stats());
            if stream.has_layer() {
                // TLS: `close_notify` first, if the socket takes it now, so
                // the client sees an orderly end (one that sent its own
                // waits for ours); a dead socket just refuses it.
                let _ = stream.shutdown();
            }
            stream.close_fd();
        }
        Ok(())
    }

    /// End HTTP on the connection and take its socket away: deregistered
    /// from the loop and the server, the app told its exchange is over.
    /// Returns the stream and, after an upgrade, the bytes received after
    /// the upgraded request (moved, not copied), for the next protocol;
    /// `None` when already detached.
    pub(in crate::asgi) fn detach(
        slf: &Bound<'_, Self>,
    ) -> PyResult<Option<(LayeredStream, Vec<u8>)>> {
        let py = slf.py();
        let (stream, rest, fd, reading, writing, event_loop, shared, slot) = {
            let mut me = slf.borrow_mut();
            let rest = me.http.take_unparsed();
            if !me.http.lose() {
                return Ok(None);
            }
            me.out = Vec::new();
            // Closes a file in flight (no Python in it).
            me.file = None;
            let fd = std::mem::replace(&mut me.fd, -1);
            (
                me.stream.take(),
                rest,
                fd,
                std::mem::take(&mut me.reading),
                std::mem::take(&mut me.writing),
                me.event_loop.clone_ref(py),
                me.shared.clone_ref(py),
                me.slot,
            )
        };
        if fd >= 0 {
            let fd_obj = PyInt::new(py, fd);
            let lp = event_loop.bind(py);
            // Deregister before the fd closes or moves on: the reactor keys
            // on the fd number.
            if reading {
                let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), false);
            }
            if writing {
                let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), true);
            }
        }
        ServerShared::forget(shared.bind(py), slot);
        let line = shared.borrow(py).debug_on().then(|| {
            let me = slf.borrow();
            let why = me.closing_why.as_deref().unwrap_or("closed");
            format!("{} - Connection closed ({why})", me.peer_text())
        });
        exchange::end_for_app(slf)?;
        let ws = slf.borrow_mut().ws.take();
        if let Some(ws) = ws {
            crate::asgi::ws::http_lost(ws.bind(py))?;
        }
        // The bound methods refer to this object: drop the cycle.
        let callbacks = slf.borrow_mut().callbacks.take();
        drop(callbacks);
        // Logged last, so a failing log call leaves nothing half closed.
        if let Some(line) = line {
            ServerShared::log_debug(shared.bind(py), &line)?;
        }
        Ok(stream.map(|s| (s, rest)))
    }

    /// Close now with an RST (server shutting down past its grace period).
    pub(in crate::asgi) fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut me = slf.borrow_mut();
        me.closing_because("reset by the server");
        if let Some(stream) = me.stream.as_mut() {
            stream.reset();
        }
        drop(me);
        Self::lose(slf)
    }

    /// Server shutdown: idle connections close now (or, with `keep_idle`,
    /// after one more response), busy ones after their response.
    pub(in crate::asgi) fn drain(slf: &Bound<'_, Self>, keep_idle: bool) -> PyResult<()> {
        let action = {
            let mut me = slf.borrow_mut();
            let buffered = me.buffered_out() > 0;
            me.closing_because("server shutting down");
            me.http.drain(buffered, clock::monotonic(), keep_idle)
        };
        match action {
            DrainAction::AfterResponse => Ok(()),
            DrainAction::Flush => {
                exchange::end_for_app(slf)?;
                Self::flush(slf)
            }
            DrainAction::Lose => Self::lose(slf),
        }
    }

    /// The periodic check: deadlines and the request-body rate.
    pub(in crate::asgi) fn check_timers(slf: &Bound<'_, Self>, now: f64) -> PyResult<()> {
        let handshake_late = {
            let me = slf.borrow();
            match &me.tls {
                Some(tls) if !tls.established() && now >= me.handshake_deadline => {
                    tls.timed_out();
                    true
                }
                _ => false,
            }
        };
        if handshake_late {
            slf.borrow_mut()
                .closing_because("TLS handshake timeout (ssl_handshake_timeout)");
            return Self::lose(slf);
        }
        // The request-head deadline runs from accept, so it bounds the
        // handshake and the request after it together.
        let action = slf.borrow_mut().http.on_timer(now);
        match action {
            TimerAction::Nothing => Ok(()),
            TimerAction::Lose(expired) => {
                let mut me = slf.borrow_mut();
                // The head deadline came first: the handshake timed out.
                if let Some(tls) = me.tls.as_ref().filter(|t| !t.established()) {
                    tls.timed_out();
                } else if let Some(kind) = timeout_kind(expired) {
                    me.counters.timed_out(kind);
                }
                me.closing_because(expired.as_str());
                drop(me);
                Self::lose(slf)
            }
            TimerAction::Fail(status) => {
                slf.borrow().counters.timed_out(Timeout::RequestHead);
                Self::fail(slf, status)
            }
        }
    }
}

/// The counter of a deadline that ended a connection (a linger's end is
/// the normal end of a close, no timeout).
fn timeout_kind(expired: Expired) -> Option<Timeout> {
    match expired {
        Expired::Head => Some(Timeout::RequestHead),
        Expired::KeepAlive => Some(Timeout::KeepAlive),
        Expired::BodyRate => Some(Timeout::Body),
        Expired::Drain => Some(Timeout::Drain),
        Expired::Linger => None,
    }
}

/// Why a read found the connection lost, for the debug line (a TLS
/// failure names its kind and rustls' reason).
fn lost_because(err: Option<&loop_transports::Error>) -> Cow<'static, str> {
    match err.and_then(session_error) {
        Some(tls) => describe(tls).into(),
        None => "connection error".into(),
    }
}

#[pymethods]
impl HttpConnection {
    fn _on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let outcome = {
            let mut guard = slf.borrow_mut();
            let me = &mut *guard;
            let Some(stream) = me.stream.as_mut() else {
                return Ok(());
            };
            let server = me.shared.clone_ref(py);
            let mut srv = server.bind(py).borrow_mut();
            let (open, why): (bool, Cow<'static, str>) = match stream.read_into(srv.read_buffer()) {
                // Empty when only TLS records (a handshake's) arrived.
                Ok(LayerRead::Data(data)) => {
                    me.http.receive(data);
                    if stream.peer_ended() {
                        // `close_notify` came with the data: an EOF now.
                        (false, "closed by the client".into())
                    } else {
                        (true, "".into())
                    }
                }
                Ok(LayerRead::Done) => match stream.take_closed() {
                    None => (true, "".into()),
                    Some(err) => {
                        if is_reset(err.as_ref()) {
                            me.counters.reset.bump();
                        }
                        (false, lost_because(err.as_ref()))
                    }
                },
                Ok(LayerRead::Eof(Eof::Clean)) => (false, "closed by the client".into()),
                // A client that closes without `close_notify` is common
                // (and harmless between requests): an EOF, logged so.
                Ok(LayerRead::Eof(Eof::Truncated)) => (
                    false,
                    "closed by the client without TLS close_notify".into(),
                ),
                Err(err) => {
                    if is_reset(Some(&err)) {
                        me.counters.reset.bump();
                    }
                    (false, lost_because(Some(&err)))
                }
            };
            if !open {
                me.closing_because(why);
            }
            open
        };
        if outcome {
            Self::process(slf)
        } else {
            // EOF or reset: the state machine takes EOF as a disconnect
            // (a half-closing HTTP client cannot rely on reading the
            // response).
            slf.borrow_mut().http.receive_eof();
            Self::lose(slf)
        }
    }

    fn _on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
        if let Some(stream) = slf.borrow_mut().stream.as_mut() {
            stream.on_writable();
        }
        Self::flush(slf)
    }

    /// Continue with pipelined input once the previous exchange is over.
    fn _resume(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::process(slf)
    }

    fn __repr__(&self) -> String {
        format!("<HttpConnection fd={} {:?}>", self.fd, self.http.phase())
    }
}
