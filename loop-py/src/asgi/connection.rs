//! One HTTP/1.1 connection: the socket, the `loop-http` codec, and the
//! request/response exchange the ASGI app sees.
//!
//! Reads land in the server's shared buffer and only unconsumed bytes are
//! kept per connection, so an idle keep-alive connection costs a few hundred
//! bytes. One request is served at a time (pipelined requests wait in
//! `pending`, responses stay in order); reading pauses when the app is not
//! consuming the body or too much pipelined input is queued.
//!
//! Borrow rule: a `PyRefMut` of the connection is never held across a call
//! into Python (app, futures, logging, the loop's registration methods).
//! Methods compute what to do under the borrow and act after dropping it.

use super::app_task::AppTask;
use super::exchange::{Exchange, ResponseState};
use super::server::HttpServer;
use super::settings::{
    Settings, BODY_BUFFER, CLOSING_DRAIN, DISCARD_LIMIT, LINGER, PIPELINE_BUFFER, WRITE_HIGH,
    WRITE_LOW,
};
use super::{scope, ClientDisconnected};
use crate::event_loop::Loop;
use crate::net::{self, Addr};
use loop_core::clock;
use loop_http::{error_response, Event, RequestHead, RequestParser};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};
use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for (the rest of) a request head.
    Idle,
    /// A request is in flight: the app runs.
    Active,
    /// The response is complete but the app left body unread: skipping up
    /// to `DISCARD_LIMIT` of it before the next request.
    Discard,
    /// Flushing, then half-closed and draining input until EOF or linger.
    Closing,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Deadline {
    None,
    /// Request head not complete in time (from connect or previous response).
    Head,
    /// Nothing received on an idle keep-alive connection.
    KeepAlive,
    /// A closing connection's output did not drain in time.
    Closing,
    /// Closing connection stops lingering.
    Linger,
}

#[pyclass(module = "ferroloop._native")]
pub struct HttpConnection {
    pub(super) server: Py<HttpServer>,
    pub(super) event_loop: Py<Loop>,
    pub(super) settings: Arc<Settings>,
    pub(super) fd: RawFd,
    pub(super) slot: usize,
    client: Py<PyAny>,
    local: Py<PyAny>,
    /// The template every request's scope is copied from.
    scope_base: Option<Py<pyo3::types::PyDict>>,
    peer_ip: Option<IpAddr>,
    pub(super) client_text: String,
    callbacks: Option<Callbacks>,
    /// The context the connection's loop callbacks run in (the server's,
    /// captured at accept). Without it a reader re-registered inside an
    /// app step would carry that request's context vars into the next.
    base_context: Py<PyAny>,
    reading: bool,
    writing: bool,
    /// Output waits for the server's end-of-tick flush.
    pub(super) corked: bool,
    parser: RequestParser,
    /// Received bytes not consumed by the parser yet.
    pending: Vec<u8>,
    wbuf: Vec<u8>,
    woff: usize,
    pub(super) phase: Phase,
    pub(super) deadline: f64,
    pub(super) deadline_kind: Deadline,
    /// When the current head timeout started (connect or previous response).
    head_clock: f64,
    pub(super) exchange: Option<Exchange>,
    next_id: u64,
    discard_left: u64,
    peer_eof: bool,
}

/// Bound methods registered with the loop, made once per connection.
struct Callbacks {
    readable: Py<PyAny>,
    writable: Py<PyAny>,
}

fn addr_tuple(py: Python<'_>, addr: &Option<Addr>, is_local: bool) -> PyResult<Py<PyAny>> {
    Ok(match addr {
        Some(Addr::Inet(ip, port)) => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
                v4 => *v4,
            };
            (ip.to_string(), *port)
                .into_pyobject(py)?
                .into_any()
                .unbind()
        }
        // ASGI: a Unix socket server is `(path, None)`; its clients have no
        // address.
        Some(Addr::Unix(path)) if is_local => (path.as_str(), py.None())
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        _ => py.None(),
    })
}

impl HttpConnection {
    pub(super) fn new(
        py: Python<'_>,
        server: Py<HttpServer>,
        event_loop: Py<Loop>,
        settings: Arc<Settings>,
        fd: RawFd,
        peer: Option<Addr>,
        slot: usize,
    ) -> PyResult<Self> {
        let local = net::local_addr(fd);
        let client_text = match &peer {
            Some(Addr::Inet(ip, port)) => format!("{ip}:{port}"),
            _ => String::new(),
        };
        let peer_ip = match &peer {
            Some(Addr::Inet(ip, _)) => Some(*ip),
            _ => None,
        };
        let now = clock::monotonic();
        let parser = RequestParser::new(settings.limits.clone());
        let base_context = crate::pyapi::copy_current_context(py)?.unbind();
        Ok(HttpConnection {
            base_context,
            client: addr_tuple(py, &peer, false)?,
            local: addr_tuple(py, &local, true)?,
            scope_base: None,
            server,
            event_loop,
            deadline: now + settings.timeout_request_head,
            settings,
            fd,
            slot,
            peer_ip,
            client_text,
            callbacks: None,
            reading: false,
            writing: false,
            corked: false,
            parser,
            pending: Vec::new(),
            wbuf: Vec::new(),
            woff: 0,
            phase: Phase::Idle,
            deadline_kind: Deadline::Head,
            head_clock: now,
            exchange: None,
            next_id: 1,
            discard_left: 0,
            peer_eof: false,
        })
    }

    /// Register with the loop and start reading.
    pub(super) fn start(slf: &Bound<'_, Self>) -> PyResult<()> {
        let callbacks = Callbacks {
            readable: slf.getattr(intern!(slf.py(), "_on_readable"))?.unbind(),
            writable: slf.getattr(intern!(slf.py(), "_on_writable"))?.unbind(),
        };
        slf.borrow_mut().callbacks = Some(callbacks);
        Self::sync_interest(slf)
    }

    fn buffered_out(&self) -> usize {
        self.wbuf.len() - self.woff
    }

    /// Whether the loop should watch for input now.
    fn wants_read(&self) -> bool {
        match self.phase {
            Phase::Idle | Phase::Discard | Phase::Closing => !self.peer_eof,
            Phase::Active => {
                if self.peer_eof {
                    return false;
                }
                match &self.exchange {
                    Some(ex) if self.parser.in_body() && !ex.body_done => {
                        ex.body.len() < BODY_BUFFER && (!ex.expect_continue || ex.body_wanted)
                    }
                    _ => self.pending.len() < PIPELINE_BUFFER,
                }
            }
            Phase::Closed => false,
        }
    }

    /// Bring the loop's reader/writer registrations in line with the state.
    pub(super) fn sync_interest(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (fd, want_read, want_write, reading, writing, cbs, event_loop, ctx) = {
            let me = slf.borrow();
            let Some(cbs) = me.callbacks.as_ref() else {
                return Ok(());
            };
            let want_read = me.phase != Phase::Closed && me.wants_read();
            let want_write = me.phase != Phase::Closed && me.buffered_out() > 0 && !me.corked;
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
        let lp = event_loop.bind(py);
        let fd_obj = PyInt::new(py, fd);
        let (readable, writable) = cbs;
        for (want, have, callback, write) in [
            (want_read, reading, readable, false),
            (want_write, writing, writable, true),
        ] {
            if want == have {
                continue;
            }
            if want {
                let args = PyTuple::empty(py);
                let context = Some(ctx.bind(py).clone());
                Loop::add_fd_callback_in(
                    lp,
                    fd_obj.as_any(),
                    callback.into_bound(py),
                    args,
                    write,
                    context,
                )?;
            } else {
                Loop::remove_fd_callback(lp, fd_obj.as_any(), write)?;
            }
            let mut me = slf.borrow_mut();
            if write {
                me.writing = want;
            } else {
                me.reading = want;
            }
        }
        Ok(())
    }

    /// Parse what is pending and act on it, until nothing more can happen.
    pub(super) fn process(slf: &Bound<'_, Self>) -> PyResult<()> {
        loop {
            let step = slf.borrow_mut().advance();
            match step {
                Step::Wait => break,
                Step::Start(head) => Self::start_request(slf, *head)?,
                Step::Deliver => Exchange::deliver(slf)?,
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

    /// The codec step: pure Rust, no Python.
    fn advance(&mut self) -> Step {
        let mut pos = 0;
        let mut progressed = false;
        let step = loop {
            let input = &self.pending[pos..];
            match self.phase {
                Phase::Idle => {
                    if input.is_empty() {
                        break Step::Wait;
                    }
                    if self.deadline_kind == Deadline::KeepAlive {
                        // The first byte of a new head: the head timeout
                        // runs from the end of the previous response.
                        self.deadline_kind = Deadline::Head;
                        self.deadline = self.head_clock + self.settings.timeout_request_head;
                    }
                    match self.parser.parse(input) {
                        Ok((n, Some(Event::Head(head)))) => {
                            pos += n;
                            break Step::Start(Box::new(head));
                        }
                        Ok((n, None)) if n > 0 => pos += n,
                        Ok((_, None)) => break Step::Wait,
                        Ok((n, Some(_))) => pos += n,
                        Err(e) => break Step::Fail(e.status()),
                    }
                }
                Phase::Active => {
                    let Some(ex) = self.exchange.as_mut() else {
                        break Step::Wait;
                    };
                    // Parse as much body as is here (and its `End`, which
                    // comes one call later) before waking the app, so a
                    // complete body is one `http.request` message.
                    let waiting = ex.receive_waiter.is_some();
                    let stop = if !self.parser.in_body()
                        || ex.body_done
                        || ex.body.len() >= BODY_BUFFER
                        || (ex.expect_continue && !ex.body_wanted)
                    {
                        true
                    } else {
                        match self.parser.parse(input) {
                            Ok((n, Some(Event::Body(range)))) => {
                                ex.body.extend_from_slice(&input[range]);
                                pos += n;
                                progressed = true;
                                false
                            }
                            Ok((n, Some(Event::End))) => {
                                ex.body_done = true;
                                pos += n;
                                progressed = true;
                                false
                            }
                            Ok((n, Some(Event::Head(_)))) => {
                                pos += n;
                                false
                            }
                            Ok((0, None)) => true,
                            Ok((n, None)) => {
                                pos += n;
                                false
                            }
                            Err(e) => break Step::Fail(e.status()),
                        }
                    };
                    if stop {
                        break if progressed && waiting {
                            Step::Deliver
                        } else {
                            Step::Wait
                        };
                    }
                }
                Phase::Discard => match self.parser.parse(input) {
                    Ok((n, Some(Event::Body(range)))) => {
                        let len = (range.end - range.start) as u64;
                        pos += n;
                        if len > self.discard_left {
                            break Step::Close;
                        }
                        self.discard_left -= len;
                    }
                    Ok((n, Some(Event::End))) => {
                        pos += n;
                        self.phase = Phase::Idle;
                    }
                    Ok((n, Some(Event::Head(_)))) => pos += n,
                    Ok((n, None)) if n > 0 => pos += n,
                    Ok((_, None)) => break Step::Wait,
                    Err(_) => break Step::Close,
                },
                Phase::Closing => {
                    // Lingering: input is read and dropped.
                    pos = self.pending.len();
                    break Step::Wait;
                }
                Phase::Closed => break Step::Wait,
            }
        };
        if pos > 0 {
            self.pending.drain(..pos);
        }
        if self.pending.is_empty() && self.pending.capacity() > 16 * 1024 {
            self.pending = Vec::new();
        }
        step
    }

    /// A complete head: run the app for it (or answer 503 over the limit).
    fn start_request(slf: &Bound<'_, Self>, head: RequestHead) -> PyResult<()> {
        let py = slf.py();
        let server = slf.borrow().server.clone_ref(py);
        let server = server.bind(py);
        let over_limit = {
            let srv = server.borrow();
            srv.settings
                .limit_concurrency
                .is_some_and(|limit| srv.live_connections() > limit || srv.tasks >= limit)
        };
        if over_limit {
            return Self::fail(slf, 503);
        }
        let built = Self::scope(slf, server, &head);
        let scope = match built {
            Ok(scope) => scope,
            Err(err) => {
                HttpServer::log_app_error(server, &err)?;
                return Self::fail(slf, 500);
            }
        };
        let id = {
            let mut me = slf.borrow_mut();
            let id = me.next_id;
            me.next_id += 1;
            me.phase = Phase::Active;
            me.deadline_kind = Deadline::None;
            me.exchange = Some(Exchange::new(id, head));
            id
        };
        let app = server.borrow().app.clone_ref(py);
        let receive = Bound::new(py, super::exchange::Receive::new(slf.clone().unbind(), id))?;
        let send = Bound::new(py, super::exchange::Send::new(slf.clone().unbind(), id))?;
        let coro = match app.bind(py).call1((scope, receive, send)) {
            Ok(coro) => coro,
            Err(err) => {
                HttpServer::log_app_error(server, &err)?;
                return Self::fail(slf, 500);
            }
        };
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        let task = AppTask::new(py, coro, event_loop, slf.clone().unbind(), id)?;
        server.borrow_mut().tasks += 1;
        // The first step runs now; the app may well finish inside it.
        AppTask::first_step(task.bind(py))?;
        if let Some(ex) = slf.borrow_mut().exchange.as_mut().filter(|ex| ex.id == id) {
            if !task.borrow(py).is_done() {
                ex.task = Some(task.into_any());
            }
        }
        Ok(())
    }

    /// The request's scope, from the connection's base (made at its first
    /// request, when the lifespan state is known).
    fn scope<'py>(
        slf: &Bound<'py, Self>,
        server: &Bound<'py, HttpServer>,
        head: &RequestHead,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let py = slf.py();
        let state = server.borrow().state.as_ref().map(|s| s.bind(py).clone());
        let (base, made, client, scheme, settings) = {
            let me = slf.borrow();
            let (base, made) = match me.scope_base.as_ref() {
                Some(base) => (base.bind(py).clone(), false),
                None => (
                    scope::connection_base(
                        py,
                        me.local.bind(py),
                        me.client.bind(py),
                        &me.settings.root_path,
                        state.is_some(),
                    )?,
                    true,
                ),
            };
            let (client, scheme) = me.client_and_scheme(py, head)?;
            (base, made, client, scheme, me.settings.clone())
        };
        let scope = scope::build(
            py,
            &base,
            &scope::ScopeParts {
                head,
                client: client.as_ref(),
                scheme,
                root_path: &settings.root_path,
                state: state.as_ref(),
            },
        )?;
        if made {
            slf.borrow_mut().scope_base = Some(base.unbind());
        }
        Ok(scope)
    }

    /// What a trusted proxy says of the client (None: the peer) and the
    /// scheme.
    fn client_and_scheme<'py>(
        &self,
        py: Python<'py>,
        head: &RequestHead,
    ) -> PyResult<(Option<Bound<'py, PyAny>>, &'static str)> {
        let Some(trust) = self.settings.proxy.as_ref() else {
            return Ok((None, "http"));
        };
        let trusted = match self.peer_ip {
            Some(ip) => trust.trusts(ip),
            // A Unix-socket peer is the local proxy itself.
            None => true,
        };
        if !trusted {
            return Ok((None, "http"));
        }
        let fwd = super::proxy::resolve(trust, head.headers());
        let scheme = fwd.scheme.unwrap_or("http");
        match fwd.client {
            Some(host) => Ok((Some((host, 0u16).into_pyobject(py)?.into_any()), scheme)),
            None => Ok((None, scheme)),
        }
    }

    /// Answer `status` (no app involved, or before the response started)
    /// and close.
    pub(super) fn fail(slf: &Bound<'_, Self>, status: u16) -> PyResult<()> {
        let py = slf.py();
        let server = slf.borrow().server.clone_ref(py);
        {
            let mut me = slf.borrow_mut();
            if matches!(me.phase, Phase::Closed | Phase::Closing) {
                return Ok(());
            }
            let active = me.phase == Phase::Active;
            let started = active
                && me
                    .exchange
                    .as_ref()
                    .is_some_and(|ex| !matches!(ex.response, ResponseState::NotStarted));
            if started {
                // Too late for an error response: the client sees the
                // response cut short.
                drop(me);
                return Self::lose(slf);
            }
            {
                let mut srv = server.bind(py).borrow_mut();
                let date = srv.date_value();
                let settings = me.settings.clone();
                error_response(
                    &mut me.wbuf,
                    status,
                    date,
                    settings.server_header.as_deref(),
                );
                drop(srv);
                if let Some(ex) = me.exchange.as_mut().filter(|_| active) {
                    ex.status = status;
                    ex.response = ResponseState::Done;
                    // The app's exchange is over: its send() raises
                    // ClientDisconnected, receive() says http.disconnect.
                    ex.disconnected = true;
                }
            }
            me.enter_closing();
        }
        Exchange::end_for_app(slf)?;
        Self::flush(slf)
    }

    /// Write what is buffered; half-close when a closing connection drained.
    pub(super) fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let result = {
            let mut me = slf.borrow_mut();
            me.write_buffered()
        };
        match result {
            Ok(()) => {}
            Err(_) => return Self::lose(slf),
        }
        let closing_done = {
            let mut me = slf.borrow_mut();
            if me.phase == Phase::Closing
                && me.buffered_out() == 0
                && me.deadline_kind != Deadline::Linger
            {
                net::shutdown_write(me.fd);
                me.deadline_kind = Deadline::Linger;
                me.deadline = clock::monotonic() + LINGER;
                me.peer_eof
            } else {
                false
            }
        };
        if closing_done {
            return Self::lose(slf);
        }
        Exchange::release_writer(slf)?;
        Self::sync_interest(slf)
    }

    fn write_buffered(&mut self) -> io::Result<()> {
        while self.woff < self.wbuf.len() {
            match net::send(self.fd, &self.wbuf[self.woff..]) {
                Ok(n) => self.woff += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if self.woff == self.wbuf.len() {
            self.wbuf.clear();
            self.woff = 0;
            if self.wbuf.capacity() > 256 * 1024 {
                self.wbuf = Vec::new();
            }
        } else if self.woff > 64 * 1024 && self.woff * 2 > self.wbuf.len() {
            self.wbuf.drain(..self.woff);
            self.woff = 0;
        }
        Ok(())
    }

    /// Stop taking requests; what is buffered still goes out (bounded by
    /// the closing deadline), then half-close and linger.
    fn enter_closing(&mut self) {
        self.phase = Phase::Closing;
        self.deadline_kind = Deadline::Closing;
        self.deadline = clock::monotonic() + CLOSING_DRAIN;
    }

    fn close_gracefully(slf: &Bound<'_, Self>) -> PyResult<()> {
        {
            let mut me = slf.borrow_mut();
            if matches!(me.phase, Phase::Closed | Phase::Closing) {
                return Ok(());
            }
            me.enter_closing();
        }
        Exchange::end_for_app(slf)?;
        Self::flush(slf)
    }

    /// Leave a finished response on a kept connection to the server's
    /// end-of-tick flush; false when it must be written now.
    fn cork(slf: &Bound<'_, Self>) -> bool {
        let server = {
            let me = slf.borrow();
            if me.corked {
                return true;
            }
            let kept = matches!(me.phase, Phase::Idle | Phase::Discard);
            // A connection waiting for writability flushes from there.
            if !kept || me.writing || me.buffered_out() == 0 {
                return false;
            }
            me.server.clone_ref(slf.py())
        };
        let corked = HttpServer::cork(server.bind(slf.py()), slf);
        slf.borrow_mut().corked = corked;
        corked
    }

    /// Flush if anything is buffered (called when the app waits).
    pub(super) fn flush_if_buffered(slf: &Bound<'_, Self>) -> PyResult<()> {
        let buffered = {
            let me = slf.borrow();
            me.phase != Phase::Closed && me.buffered_out() > 0 && !me.writing
        };
        if buffered {
            Self::flush(slf)?;
        }
        Ok(())
    }

    /// Exchange `id` waits for body bytes that are already received.
    pub(super) fn has_unparsed_body(&self, id: u64) -> bool {
        self.phase == Phase::Active
            && !self.pending.is_empty()
            && self.parser.in_body()
            && self.exchange.as_ref().is_some_and(|ex| {
                ex.id == id && ex.body.is_empty() && !ex.body_done && !ex.expect_continue
            })
    }

    pub(super) fn out_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.wbuf
    }

    pub(super) fn over_high_water(&self) -> bool {
        self.buffered_out() > WRITE_HIGH
    }

    pub(super) fn under_low_water(&self) -> bool {
        self.buffered_out() <= WRITE_LOW
    }

    pub(super) fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// The response of the current exchange is complete: log it, then keep
    /// the connection for the next request or close it.
    pub(super) fn response_complete(slf: &Bound<'_, Self>, keep_alive: bool) -> PyResult<()> {
        let py = slf.py();
        let server = slf.borrow().server.clone_ref(py);
        HttpServer::log_access(server.bind(py), slf)?;
        let draining = server.bind(py).borrow().draining;
        {
            let mut me = slf.borrow_mut();
            if me.phase != Phase::Active {
                drop(me);
                return Self::flush(slf);
            }
            let (body_left, unread_expect, too_much_left) = match &me.exchange {
                Some(ex) => {
                    let left = me.parser.in_body() && !ex.body_done;
                    // A declared length we would never finish discarding:
                    // close now rather than wait for it.
                    let too_much = match ex.head.body {
                        loop_http::BodyFraming::Length(n) => {
                            left && n.saturating_sub(me.parser.body_received()) > DISCARD_LIMIT
                        }
                        _ => false,
                    };
                    (
                        left,
                        left && ex.expect_continue && !ex.continue_sent,
                        too_much,
                    )
                }
                None => (false, false, false),
            };
            let keep = keep_alive && !draining && !me.peer_eof && !unread_expect && !too_much_left;
            let now = clock::monotonic();
            if !keep {
                me.enter_closing();
            } else if body_left {
                me.phase = Phase::Discard;
                me.discard_left = DISCARD_LIMIT;
            } else {
                me.phase = Phase::Idle;
            }
            if let Some(ex) = me.exchange.as_mut() {
                // Body the app did not take is not needed any more.
                ex.body = Vec::new();
            }
            me.head_clock = now;
            if me.phase != Phase::Closing {
                me.deadline_kind = Deadline::KeepAlive;
                me.deadline = now + me.settings.timeout_keep_alive;
            }
        }
        Exchange::end_for_app(slf)?;
        if !Self::cork(slf) {
            Self::flush(slf)?;
        }
        // A pipelined request may be waiting already. It starts from the
        // loop, not from here: this runs inside the app's step, and a
        // task cannot start inside another.
        let resume = {
            let me = slf.borrow();
            matches!(me.phase, Phase::Idle | Phase::Discard) && !me.pending.is_empty()
        };
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
    pub(super) fn lose(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (fd, reading, writing, event_loop, server, slot) = {
            let mut me = slf.borrow_mut();
            if me.phase == Phase::Closed {
                return Ok(());
            }
            me.phase = Phase::Closed;
            me.deadline_kind = Deadline::None;
            me.pending = Vec::new();
            me.wbuf = Vec::new();
            me.woff = 0;
            if let Some(ex) = me.exchange.as_mut() {
                ex.disconnected = true;
                ex.body = Vec::new();
            }
            let fd = me.fd;
            me.fd = -1;
            (
                fd,
                std::mem::take(&mut me.reading),
                std::mem::take(&mut me.writing),
                me.event_loop.clone_ref(py),
                me.server.clone_ref(py),
                me.slot,
            )
        };
        if fd >= 0 {
            let fd_obj = PyInt::new(py, fd);
            let lp = event_loop.bind(py);
            // Deregister before closing: the reactor keys on the fd number.
            if reading {
                let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), false);
            }
            if writing {
                let _ = Loop::remove_fd_callback(lp, fd_obj.as_any(), true);
            }
            net::close(fd);
        }
        HttpServer::forget(server.bind(py), slot);
        Exchange::end_for_app(slf)?;
        // The bound methods refer to this object: drop the cycle.
        let callbacks = slf.borrow_mut().callbacks.take();
        drop(callbacks);
        Ok(())
    }

    /// Close now with an RST (server shutting down past its grace period).
    pub(super) fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        let fd = slf.borrow().fd;
        if fd >= 0 {
            net::set_linger_zero(fd);
        }
        Self::lose(slf)
    }

    /// Server shutdown: idle connections close now, busy ones after their
    /// response.
    pub(super) fn drain(slf: &Bound<'_, Self>) -> PyResult<()> {
        // No request in flight (a partial head is not one): close now,
        // after what is already written goes out.
        let (idle, buffered) = {
            let me = slf.borrow();
            (
                matches!(me.phase, Phase::Idle | Phase::Discard | Phase::Closing),
                me.buffered_out() > 0,
            )
        };
        if idle && buffered {
            Self::close_gracefully(slf)?;
        } else if idle {
            Self::lose(slf)?;
        }
        Ok(())
    }

    /// The periodic check: deadlines and the request-body rate.
    pub(super) fn check_timers(slf: &Bound<'_, Self>, now: f64) -> PyResult<()> {
        enum Act {
            Nothing,
            Close,
            Timeout,
        }
        let act = {
            let mut guard = slf.borrow_mut();
            let me = &mut *guard;
            let settings = me.settings.clone();
            let reading_body = me.phase == Phase::Active && me.parser.in_body() && me.reading;
            let mut act = Act::Nothing;
            if !reading_body {
                if let Some(ex) = me.exchange.as_mut() {
                    ex.body_checked_at = None;
                }
            } else if let (Some(rate), Some(ex)) = (settings.min_body_rate, me.exchange.as_mut()) {
                if !ex.body_done {
                    if let Some(checked) = ex.body_checked_at.replace(now) {
                        ex.body_wait += now - checked;
                    }
                    let received = me.parser.body_received() as f64;
                    if ex.body_wait > settings.body_rate_grace && received < rate * ex.body_wait {
                        act = Act::Close;
                    }
                }
            }
            if matches!(act, Act::Nothing)
                && me.deadline_kind != Deadline::None
                && now >= me.deadline
            {
                act = match me.deadline_kind {
                    Deadline::Head
                        if me.phase == Phase::Idle
                            && (!me.pending.is_empty() || !me.parser.is_idle()) =>
                    {
                        Act::Timeout
                    }
                    _ => Act::Close,
                };
            }
            act
        };
        match act {
            Act::Nothing => Ok(()),
            Act::Close => Self::lose(slf),
            Act::Timeout => Self::fail(slf, 408),
        }
    }
}

impl HttpConnection {
    /// The app's coroutine finished: turn a missing or broken response into
    /// a 500 or a closed connection, and log app errors.
    pub(super) fn app_finished(
        slf: &Bound<'_, Self>,
        id: u64,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let server = slf.borrow().server.clone_ref(py);
        let server = server.bind(py);
        {
            let mut srv = server.borrow_mut();
            srv.tasks = srv.tasks.saturating_sub(1);
        }
        if let Some(exc) = &error {
            HttpServer::log_app_exception(server, exc)?;
        }
        let progress = {
            let mut me = slf.borrow_mut();
            let open = me.phase != Phase::Closed;
            match me.exchange.as_mut().filter(|ex| ex.id == id) {
                Some(ex) => {
                    ex.task = None;
                    Some((open && !ex.disconnected, ex.response_progress()))
                }
                None => None,
            }
        };
        let Some((open, progress)) = progress else {
            return Ok(());
        };
        // As uvicorn: an app that stops because its client went away is
        // not an error.
        let quiet = error.is_some() || cancelled || !open;
        match progress {
            Progress::Complete => Ok(()),
            Progress::NotStarted => {
                if !quiet {
                    HttpServer::log_error(
                        server,
                        "ASGI callable returned without starting response.",
                    )?;
                }
                if open {
                    Self::fail(slf, 500)
                } else {
                    Ok(())
                }
            }
            Progress::Started => {
                if !quiet {
                    HttpServer::log_error(
                        server,
                        "ASGI callable returned without completing response.",
                    )?;
                }
                Self::lose(slf)
            }
        }
    }

    /// The app's task of the current exchange, if it still runs.
    pub(super) fn running_task(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.exchange
            .as_ref()
            .and_then(|ex| ex.task.as_ref().map(|t| t.clone_ref(py)))
    }
}

/// What the codec step decided.
enum Step {
    Wait,
    Start(Box<RequestHead>),
    Deliver,
    Fail(u16),
    /// Stop reading requests: finish writing, then close.
    Close,
}

#[pymethods]
impl HttpConnection {
    fn _on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let outcome = {
            let mut me = slf.borrow_mut();
            if me.fd < 0 {
                return Ok(());
            }
            let server = me.server.clone_ref(py);
            let mut srv = server.bind(py).borrow_mut();
            let buf = srv.read_buffer();
            match net::recv(me.fd, buf) {
                Ok(0) => Err(None),
                Ok(n) => {
                    if me.phase != Phase::Closing {
                        me.pending.extend_from_slice(&buf[..n]);
                    }
                    Ok(())
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => Err(Some(e)),
            }
        };
        match outcome {
            Ok(()) => Self::process(slf),
            Err(_) => {
                // EOF or reset. A half-closing client that already sent its
                // whole request still gets its response... only if it can
                // read it, which HTTP clients that half-close cannot rely
                // on; like uvicorn, treat EOF as a disconnect.
                slf.borrow_mut().peer_eof = true;
                Self::lose(slf)
            }
        }
    }

    fn _on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::flush(slf)
    }

    /// Continue with pipelined input once the previous exchange is over.
    fn _resume(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::process(slf)
    }

    fn __repr__(&self) -> String {
        format!("<HttpConnection fd={} {:?}>", self.fd, self.phase)
    }
}

/// How far the app got with its response.
pub(super) enum Progress {
    NotStarted,
    Started,
    Complete,
}

pub(super) fn client_disconnected() -> PyErr {
    ClientDisconnected::new_err("the client disconnected")
}

pub(super) fn protocol_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}
