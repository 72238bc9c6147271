//! The HTTP/1.1 server connection as a sans-IO state machine.
//!
//! ```text
//!  socket bytes ─► receive() ─► poll() ─► Step: Request(head) │ Deliver │ Fail │ Close
//!  app reads   ─► read_body(id)          ─► BodyRead (and maybe `100 Continue` to write)
//!  app writes  ─► send(id, ResponsePart) ─► bytes appended to the caller's output
//!  the clock   ─► on_timer(now)          ─► TimerAction (408, or drop the connection)
//! ```
//!
//! It holds request framing and the queue of pipelined input (one request
//! is served at a time, so responses stay in order), keep-alive for 1.0 and
//! 1.1, `100 Continue`, the discard-or-close policy for body the app left
//! unread, and every HTTP deadline. It performs no I/O and reads no clock:
//! the caller moves bytes, registers interest as
//! [`ServerConnection::wants_read`] says, and passes `now`.
//!
//! # How a connection ends
//! - **fail** ([`ServerConnection::fail`]): answer an error status, then
//!   close gracefully; too late once the response started, so it loses.
//! - **close** ([`ServerConnection::close`]), graceful: take no more
//!   requests ([`Phase::Closing`]). What follows is the caller's, the same
//!   for every protocol (ferroloop's connection driver, loop-server): let
//!   the output drain, half-close, linger reading, then lose.
//! - **drain** ([`ServerConnection::drain`]): server shutdown; idle
//!   connections close now, busy ones after their response.
//! - **lose** ([`ServerConnection::lose`]): the connection is gone (EOF,
//!   reset, a deadline, the end of a close); the exchange is over for the
//!   app. The caller closes the socket.
//! - **abort**: the caller's lose with an RST (shutdown past its grace).
//! - **upgrade**: a `101` answer to a request that asked for an upgrade
//!   ends HTTP on the connection ([`Phase::Upgraded`]); the caller hands
//!   the stream and [`ServerConnection::take_unparsed`] to the next
//!   protocol without a copy.

mod config;
mod exchange;

pub use config::ConnectionConfig;
pub use exchange::{BodyRead, Exchange, ResponsePart, SendError};

use crate::{
    error_response, BodyFraming, Event, ParseError, RequestHead, RequestParser, CONTINUE_RESPONSE,
};
use std::sync::Arc;

/// Where the connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for (the rest of) a request head.
    Idle,
    /// A request is in flight: the app runs.
    Active,
    /// The response is complete but the app left body unread: skipping up
    /// to `discard_limit` of it before the next request.
    Discard,
    /// No more requests: input is dropped; the caller writes what is
    /// buffered and ends the connection.
    Closing,
    /// A `101 Switching Protocols` response completed: the stream and the
    /// bytes after the request ([`ServerConnection::take_unparsed`]) belong
    /// to the next protocol's handler now. Nothing here reads or times out.
    Upgraded,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deadline {
    None,
    /// Request head not complete in time (from connect or the previous
    /// response).
    Head,
    /// Nothing received on an idle kept connection.
    KeepAlive,
}

/// What [`ServerConnection::poll`] found to do.
#[derive(Debug)]
// The head by value: boxing it would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// Nothing until more input (or the app) arrives.
    Wait,
    /// A complete request head: start the app with
    /// [`ServerConnection::begin_request`], or [`ServerConnection::fail`].
    Request(RequestHead),
    /// Body for the waiting reader: [`ServerConnection::take_delivery`].
    Deliver,
    /// Invalid input: answer this status with [`ServerConnection::fail`].
    Fail(u16),
    /// Stop taking requests: [`ServerConnection::close`].
    Close,
}

/// Which rule a timer check dropped the connection for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// No request head began within `timeout_request_head`.
    Head,
    /// An idle kept connection reached `timeout_keep_alive`.
    KeepAlive,
    /// The request body arrived slower than `min_body_rate`.
    BodyRate,
}

impl Expired {
    /// A short description, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Expired::Head => "request head timeout",
            Expired::KeepAlive => "keep-alive timeout",
            Expired::BodyRate => "request body too slow",
        }
    }
}

/// What a timer check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerAction {
    Nothing,
    /// Drop the connection ([`ServerConnection::lose`]), for this reason.
    Lose(Expired),
    /// A request head is late: answer 408 ([`ServerConnection::fail`]).
    Fail(u16),
}

/// What [`ServerConnection::fail`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOutcome {
    /// Already closing or closed: nothing to answer.
    Ignored,
    /// The error response is in the output; the connection is closing.
    Answered,
    /// The app's response had started: too late for an error response, so
    /// the client sees it cut short. Lose the connection.
    Lose,
}

/// What [`ServerConnection::drain`] asks the caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainAction {
    /// A request is in flight: the connection closes after its response.
    AfterResponse,
    /// Idle with output buffered: it is closing gracefully; flush it.
    Flush,
    /// Idle: lose it now.
    Lose,
}

/// One HTTP/1.1 server connection (see the module docs).
pub struct ServerConnection {
    config: Arc<ConnectionConfig>,
    parser: RequestParser,
    /// Received bytes the parser has not consumed.
    pending: Vec<u8>,
    phase: Phase,
    deadline: f64,
    deadline_kind: Deadline,
    /// When the current head timeout started (connect or previous response).
    head_clock: f64,
    exchange: Option<Exchange>,
    next_id: u64,
    discard_left: u64,
    peer_eof: bool,
    /// Server shutdown: the current response is the last.
    draining: bool,
    /// Why the last [`Step::Fail`] failed (for the server's log).
    error: Option<ParseError>,
}

impl ServerConnection {
    /// A new connection, accepted at `now`.
    pub fn new(config: Arc<ConnectionConfig>, now: f64) -> Self {
        ServerConnection {
            parser: RequestParser::new(config.limits.clone()),
            deadline: now + config.timeout_request_head,
            config,
            pending: Vec::new(),
            phase: Phase::Idle,
            deadline_kind: Deadline::Head,
            head_clock: now,
            exchange: None,
            next_id: 1,
            discard_left: 0,
            peer_eof: false,
            draining: false,
            error: None,
        }
    }

    /// The rule the input broke, after a [`Step::Fail`].
    pub fn parse_error(&self) -> Option<&ParseError> {
        self.error.as_ref()
    }

    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Between requests: a finished response may wait to be written.
    pub fn is_between_requests(&self) -> bool {
        matches!(self.phase, Phase::Idle | Phase::Discard)
    }

    /// The current (or last) exchange.
    pub fn exchange(&self) -> Option<&Exchange> {
        self.exchange.as_ref()
    }

    /// The exchange `id`, if it is still the current one.
    pub fn current(&self, id: u64) -> Option<&Exchange> {
        self.exchange.as_ref().filter(|ex| ex.id() == id)
    }

    /// Bytes received from the peer. A closing connection drops them.
    #[inline]
    pub fn receive(&mut self, data: &[u8]) {
        if !matches!(self.phase, Phase::Closing | Phase::Closed) {
            self.pending.extend_from_slice(data);
        }
    }

    /// The peer's EOF. A half-closing client cannot rely on reading a
    /// response, so, as uvicorn, EOF is a disconnect: lose the connection.
    pub fn receive_eof(&mut self) {
        self.peer_eof = true;
    }

    /// Input not parsed yet is waiting for the next request to start.
    pub fn has_pipelined_input(&self) -> bool {
        self.is_between_requests() && !self.pending.is_empty()
    }

    /// Whether the caller should read from the socket now.
    #[inline]
    pub fn wants_read(&self) -> bool {
        if self.peer_eof {
            return false;
        }
        match self.phase {
            Phase::Idle | Phase::Discard | Phase::Closing => true,
            Phase::Active => match &self.exchange {
                Some(ex) if self.parser.in_body() && !ex.body_done => {
                    ex.may_read_body(self.config.body_buffer)
                }
                _ => self.pending.len() < self.config.pipeline_buffer,
            },
            Phase::Upgraded | Phase::Closed => false,
        }
    }

    /// Parse what is pending as far as the state allows.
    pub fn poll(&mut self) -> Step {
        // Nothing to parse (outside a body, whose end the parser reports
        // one call after its last byte): the common case after a response.
        if self.pending.is_empty() && !self.parser.in_body() {
            return Step::Wait;
        }
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
                        self.deadline = self.head_clock + self.config.timeout_request_head;
                    }
                    match self.parser.parse(input) {
                        Ok((n, Some(Event::Head(head)))) => {
                            // Returned from here: the head is not moved
                            // through the loop's result.
                            self.consume(pos + n);
                            return Step::Request(head);
                        }
                        Ok((n, None)) if n > 0 => pos += n,
                        Ok((_, None)) => break Step::Wait,
                        Ok((n, Some(_))) => pos += n,
                        Err(e) => {
                            let status = e.status();
                            self.error = Some(e);
                            break Step::Fail(status);
                        }
                    }
                }
                Phase::Active => {
                    let Some(ex) = self.exchange.as_mut() else {
                        break Step::Wait;
                    };
                    // Parse as much body as is here (and its `End`, which
                    // comes one call later) before waking the app, so a
                    // complete body is one delivery.
                    let stop =
                        if !self.parser.in_body() || !ex.may_read_body(self.config.body_buffer) {
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
                                Err(e) => {
                                    let status = e.status();
                                    self.error = Some(e);
                                    break Step::Fail(status);
                                }
                            }
                        };
                    if stop {
                        break if progressed && ex.reader_waiting {
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
                    pos = self.pending.len();
                    break Step::Wait;
                }
                Phase::Upgraded | Phase::Closed => break Step::Wait,
            }
        };
        self.consume(pos);
        step
    }

    /// Drop `n` parsed bytes from the front of the pending input.
    #[inline]
    fn consume(&mut self, n: usize) {
        if n == self.pending.len() {
            if self.pending.capacity() > 16 * 1024 {
                self.pending = Vec::new();
            } else {
                self.pending.clear();
            }
        } else if n > 0 {
            self.pending.drain(..n);
        }
    }

    /// Start serving the request [`Step::Request`] returned; its id names
    /// the exchange in the app's later calls.
    #[inline]
    pub fn begin_request(&mut self, head: RequestHead) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.phase = Phase::Active;
        self.deadline_kind = Deadline::None;
        let mut ex = Exchange::new(id, head);
        if self.draining {
            ex.last_on_connection();
        }
        self.exchange = Some(ex);
        id
    }

    /// Exchange `id` will ask for body bytes that are received but not
    /// parsed yet (they came with the head): [`poll`](Self::poll) first.
    pub fn has_unparsed_body(&self, id: u64) -> bool {
        self.phase == Phase::Active
            && !self.pending.is_empty()
            && self.parser.in_body()
            && self
                .current(id)
                .is_some_and(|ex| ex.body.is_empty() && !ex.body_done && !ex.expect_continue)
    }

    /// The app of exchange `id` asks for body. A `100 Continue` it makes
    /// due is appended to `out`.
    #[inline]
    pub fn read_body(&mut self, id: u64, out: &mut Vec<u8>) -> BodyRead {
        let closed = self.phase == Phase::Closed;
        match self.exchange.as_mut().filter(|ex| ex.id() == id) {
            None => BodyRead::Disconnect,
            Some(ex) if closed || ex.is_over() => BodyRead::Disconnect,
            Some(ex) if ex.has_body_for_app() => {
                ex.reader_waiting = false;
                let (body, more) = ex.take_body();
                BodyRead::Data(body, more)
            }
            Some(ex) => {
                let continue_written = ex.want_body();
                if continue_written {
                    out.extend_from_slice(CONTINUE_RESPONSE);
                }
                BodyRead::Wait { continue_written }
            }
        }
    }

    /// The body [`Step::Deliver`] announced: `None` when there is no
    /// exchange to take it from (deliver a disconnect).
    pub fn take_delivery(&mut self) -> Option<(Vec<u8>, bool)> {
        let ex = self.exchange.as_mut()?;
        ex.reader_waiting = false;
        Some(ex.take_body())
    }

    /// The waiting reader went away (its wait was cancelled): the body
    /// stays for its next read.
    pub fn reader_left(&mut self) {
        if let Some(ex) = self.exchange.as_mut() {
            ex.reader_waiting = false;
        }
    }

    /// The app of exchange `id` sends a response message; bytes go to
    /// `out`. `Ok(Some(kept))` when it completed the response: the
    /// connection then waits for the next request (`kept`) or is closing.
    #[inline]
    pub fn send<'h, H>(
        &mut self,
        id: u64,
        out: &mut Vec<u8>,
        part: ResponsePart<'_, H>,
        date: Option<&[u8]>,
        server: Option<&[u8]>,
        now: f64,
    ) -> Result<Option<bool>, SendError>
    where
        H: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let closed = self.phase == Phase::Closed;
        let ex = match self.exchange.as_mut() {
            Some(ex) if ex.id() == id && !ex.response_complete() => ex,
            other => {
                let current = other.as_ref().is_some_and(|ex| ex.id() == id);
                let abandoned = other.as_ref().is_some_and(|ex| ex.is_abandoned());
                // Answered by the server (a 413 mid-body, a 408) or gone:
                // to the app, the client is gone.
                return Err(if (current && abandoned) || (closed && !current) {
                    SendError::Disconnected
                } else {
                    SendError::Completed
                });
            }
        };
        if closed || ex.is_abandoned() {
            return Err(SendError::Disconnected);
        }
        if matches!(part, ResponsePart::Start { status: 101, .. }) && !ex.head().upgrade {
            return Err(SendError::NoUpgrade);
        }
        match ex.send(out, part, date, server, &self.config.default_headers)? {
            None => Ok(None),
            Some(keep_alive) => Ok(Some(self.response_complete(keep_alive, now))),
        }
    }

    /// How many of a file's `available` bytes exchange `id`'s response
    /// takes as a [`ResponsePart::File`]: none without a body (HEAD, 304),
    /// at most what its content-length has left.
    pub fn file_len(&self, id: u64, available: u64) -> u64 {
        self.current(id)
            .map_or(available, |ex| ex.file_len(available))
    }

    /// After a complete response: keep the connection for the next request
    /// (skipping what body the app left, up to `discard_limit`) or close.
    #[inline]
    fn response_complete(&mut self, keep_alive: bool, now: f64) -> bool {
        if self.phase != Phase::Active {
            return false;
        }
        let Some(ex) = self.exchange.as_mut() else {
            return false;
        };
        let body_left = self.parser.in_body() && !ex.body_done;
        // A declared length we would never finish discarding: close now
        // rather than wait for it.
        let too_much_left = match ex.head().body {
            BodyFraming::Length(n) => {
                body_left
                    && n.saturating_sub(self.parser.body_received()) > self.config.discard_limit
            }
            _ => false,
        };
        // The client waits for a 100 that never came: it may send the body
        // or not, so the connection's framing is unknown.
        let unread_expect = body_left && ex.expect_continue && !ex.continue_sent;
        // Body the app did not take is not needed any more.
        ex.body = Vec::new();
        if ex.status() == 101 {
            // `send` refuses 101 unless the request asked for an upgrade.
            self.phase = Phase::Upgraded;
            self.deadline_kind = Deadline::None;
            return false;
        }
        let keep =
            keep_alive && !self.draining && !self.peer_eof && !unread_expect && !too_much_left;
        self.head_clock = now;
        if !keep {
            self.enter_closing();
        } else {
            if body_left {
                self.phase = Phase::Discard;
                self.discard_left = self.config.discard_limit;
            } else {
                self.phase = Phase::Idle;
                if self.parser.in_body() {
                    // A bodiless request's `End` (no input needed): the
                    // parser is between requests again.
                    let _ = self.parser.parse(&[]);
                }
            }
            self.deadline_kind = Deadline::KeepAlive;
            self.deadline = now + self.config.timeout_keep_alive;
        }
        keep
    }

    /// After [`Phase::Upgraded`]: the bytes received after the upgraded
    /// request, moved out for the next protocol. Empty in any other phase.
    pub fn take_unparsed(&mut self) -> Vec<u8> {
        if self.phase != Phase::Upgraded {
            return Vec::new();
        }
        std::mem::take(&mut self.pending)
    }

    /// Answer `status` (no app involved, or before its response started)
    /// and close gracefully.
    pub fn fail(
        &mut self,
        status: u16,
        out: &mut Vec<u8>,
        date: Option<&[u8]>,
        server: Option<&[u8]>,
    ) -> FailOutcome {
        if matches!(self.phase, Phase::Closed | Phase::Closing | Phase::Upgraded) {
            return FailOutcome::Ignored;
        }
        let active = self.phase == Phase::Active;
        if active
            && self
                .exchange
                .as_ref()
                .is_some_and(Exchange::response_started)
        {
            return FailOutcome::Lose;
        }
        error_response(out, status, date, server, &self.config.default_headers);
        if let Some(ex) = self.exchange.as_mut().filter(|_| active) {
            ex.answered_by_server(status);
        }
        self.enter_closing();
        FailOutcome::Answered
    }

    /// Graceful close: no more requests; what the caller buffered still
    /// goes out. False when already closing or closed.
    pub fn close(&mut self) -> bool {
        if matches!(self.phase, Phase::Closed | Phase::Closing | Phase::Upgraded) {
            return false;
        }
        self.enter_closing();
        true
    }

    fn enter_closing(&mut self) {
        self.phase = Phase::Closing;
        self.deadline_kind = Deadline::None;
    }

    /// The connection is gone; the exchange is over for the app. False
    /// when it was closed already.
    pub fn lose(&mut self) -> bool {
        if self.phase == Phase::Closed {
            return false;
        }
        self.phase = Phase::Closed;
        self.deadline_kind = Deadline::None;
        self.pending = Vec::new();
        if let Some(ex) = self.exchange.as_mut() {
            ex.abandoned = true;
            ex.body = Vec::new();
        }
        true
    }

    /// Server shutdown (see [`DrainAction`]); a partial head is not a
    /// request in flight. A response not started yet, and every later one,
    /// carries `connection: close`. With `keep_idle` (a worker handing over
    /// to its replacement) an idle kept connection is not closed under a
    /// client that may be sending its next request: that request is
    /// answered, with `connection: close`, or the keep-alive timeout ends
    /// the connection as usual.
    pub fn drain(&mut self, output_buffered: bool, keep_idle: bool) -> DrainAction {
        self.draining = true;
        let idle = matches!(self.phase, Phase::Idle | Phase::Discard | Phase::Closing);
        if !idle {
            if let Some(ex) = self.exchange.as_mut() {
                ex.last_on_connection();
            }
            DrainAction::AfterResponse
        } else if keep_idle && self.phase == Phase::Idle {
            DrainAction::AfterResponse
        } else if output_buffered {
            self.close();
            DrainAction::Flush
        } else {
            DrainAction::Lose
        }
    }

    /// The next deadline, if any: call [`on_timer`](Self::on_timer) at or
    /// after it. The body-rate rule also wants periodic checks while a body
    /// is awaited.
    pub fn deadline(&self) -> Option<f64> {
        (self.deadline_kind != Deadline::None).then_some(self.deadline)
    }

    /// Check deadlines and the request-body rate at `now`.
    pub fn on_timer(&mut self, now: f64) -> TimerAction {
        let reading_body =
            self.phase == Phase::Active && self.parser.in_body() && self.wants_read();
        let received = self.parser.body_received() as f64;
        let rate = self.config.min_body_rate;
        let grace = self.config.body_rate_grace;
        if let Some(ex) = self.exchange.as_mut() {
            if !reading_body {
                ex.body_checked_at = None;
            } else if let Some(rate) = rate.filter(|_| !ex.body_done) {
                if let Some(checked) = ex.body_checked_at.replace(now) {
                    ex.body_wait += now - checked;
                }
                if ex.body_wait > grace && received < rate * ex.body_wait {
                    return TimerAction::Lose(Expired::BodyRate);
                }
            }
        }
        if self.deadline_kind == Deadline::None || now < self.deadline {
            return TimerAction::Nothing;
        }
        match self.deadline_kind {
            Deadline::Head
                if self.phase == Phase::Idle
                    && (!self.pending.is_empty() || !self.parser.is_idle()) =>
            {
                TimerAction::Fail(408)
            }
            Deadline::Head => TimerAction::Lose(Expired::Head),
            Deadline::KeepAlive => TimerAction::Lose(Expired::KeepAlive),
            Deadline::None => TimerAction::Nothing,
        }
    }
}
