//! What the HTTP/1.1 kind offers the application: a request starts an
//! exchange ([`Driver::begin`]) whose body the application reads
//! ([`Driver::read_body`], [`Event::Body`]) and whose response it sends
//! ([`Driver::send`], [`Driver::send_file`]); the server's own answers
//! (400, 408, 413, …, 503); the end of a response (the access line, the
//! cork, the next pipelined request). What HTTP means is
//! `loop_http::ServerConnection`'s to decide; this is where its steps meet
//! the connection and the application.

use super::{live_in, Driver};
use crate::access;
use crate::event::{App, Event};
use crate::exchange::{Exchange, FileBody};
use crate::id::{ConnId, ExchangeId};
use crate::logs::Log;
use crate::protocol::Kind;
use loop_http::{
    BodyRead, Phase, RequestHead, ResponseError, ResponsePart, SendError, Step, Version,
};
use loop_transports::{FileProgress, FileSend};
use std::fs::File;
use std::io::{Seek, SeekFrom};

/// Why a response message was refused. Nothing of it was written.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendRefused {
    #[error(transparent)]
    Http(#[from] SendError),
    /// A file of the response is still being sent.
    #[error("a file of the response is still being sent")]
    FileInFlight,
}

/// How far an exchange got, for the application's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The connection is gone.
    Gone,
    /// A later exchange runs on the connection (the client is there).
    Replaced,
    /// The current exchange; `open`: the client is there and the exchange
    /// was not given up.
    Current {
        open: bool,
        started: bool,
        complete: bool,
    },
}

type NoHeaders = std::iter::Empty<(&'static [u8], &'static [u8])>;

impl<A: App> Driver<A> {
    /// Parse what is pending and act on it, until nothing more can happen
    /// or the application must act first.
    pub(crate) fn process(&mut self, id: ConnId) {
        // One step: each one but `Wait` hands over to the application (or
        // ends the connection), which calls back in to go on.
        if let Some(conn) = live_in(&mut self.slots, id).filter(|c| !c.awaiting_begin) {
            if let Kind::Http(http) = &mut conn.kind {
                match http.conn.poll() {
                    Step::Wait => {}
                    Step::Request(head) => self.request(id, head),
                    Step::Deliver => {
                        // The reader takes it (`take_body`), which goes on.
                        if let Some(ex) = http.conn.exchange().map(|ex| ex.id()) {
                            self.events.push_back(Event::Body { conn: id, ex });
                        }
                    }
                    Step::Fail(status) => self.fail(id, status, None),
                    Step::Close => self.close_gracefully(id),
                }
            }
        }
        self.settle(id);
    }

    /// A complete head: the application is told ([`Event::Request`]); a
    /// WebSocket handshake is checked first, and an invalid one answered
    /// here (400/426) without the application.
    fn request(&mut self, id: ConnId, head: RequestHead) {
        self.counters.request(head.method());
        let access = self.logs.access;
        let root_path = &self.settings.root_path;
        let ws_wanted =
            self.settings.ws.is_some() && loop_ws::handshake::is_websocket_upgrade(head.headers());
        let Some(conn) = live_in(&mut self.slots, id) else {
            return;
        };
        let ws = if ws_wanted {
            let checked = loop_ws::handshake::check_request(
                head.method(),
                head.version == Version::Http11,
                head.headers(),
            );
            match checked {
                Ok(offer) => {
                    conn.ws_log =
                        access.then(|| access::ws_prefix(&conn.peer_text, root_path, &head));
                    let subprotocols = offer.subprotocols().to_vec();
                    conn.offer = Some(offer);
                    Some(subprotocols)
                }
                Err(refusal) => return self.refuse_ws(id, head, &refusal),
            }
        } else {
            None
        };
        conn.awaiting_begin = true;
        self.events.push_back(Event::Request { conn: id, head, ws });
    }

    /// Start the exchange of the request [`Event::Request`] announced,
    /// with the host's state for it. Returns its id and the state of the
    /// exchange it replaces; `Err(app)` when the connection is gone.
    pub fn begin(
        &mut self,
        id: ConnId,
        head: RequestHead,
        app: A::Exchange,
    ) -> Result<(ExchangeId, Option<A::Exchange>), A::Exchange> {
        let started = if self.settings.access_timed {
            self.now()
        } else {
            0.0
        };
        let Some(conn) = live_in(&mut self.slots, id).filter(|c| c.awaiting_begin) else {
            return Err(app);
        };
        let Kind::Http(http) = &mut conn.kind else {
            return Err(app);
        };
        conn.awaiting_begin = false;
        let ex_id = http.conn.begin_request(head);
        let previous = conn.exchanges.pop().map(|ex| ex.app);
        let mut ex = Exchange::new(ex_id, app, started);
        ex.offer = conn.offer.take();
        ex.ws_log = conn.ws_log.take();
        conn.exchanges.push(ex);
        // Body bytes that came with the head are parsed now.
        self.process(id);
        Ok((ex_id, previous))
    }

    /// Answer the request [`Event::Request`] announced with `status` (503
    /// over `limit_concurrency`, 500 when its scope could not be made),
    /// without the application, and close.
    pub fn reject(&mut self, id: ConnId, head: RequestHead, status: u16) {
        if let Some(conn) = self.live_mut(id) {
            conn.awaiting_begin = false;
            conn.offer = None;
            conn.ws_log = None;
        }
        self.fail(id, status, Some(&head));
    }

    /// The server answers `status` itself (no application involved, or
    /// before its response started) and closes; too late once the
    /// response started, then the connection is lost. `head`: a request
    /// that did not become an exchange (for the access line).
    pub fn fail(&mut self, id: ConnId, status: u16, head: Option<&RequestHead>) {
        let date = self.settings.date_header.then(|| self.date.get());
        let server = self.settings.server_header.as_deref();
        let Some(conn) = live_in(&mut self.slots, id) else {
            return;
        };
        let Kind::Http(http) = &mut conn.kind else {
            return;
        };
        let active = http.conn.phase() == Phase::Active;
        http.hold = false;
        match http.conn.fail(status, &mut http.out, date, server) {
            loop_http::FailOutcome::Ignored => {}
            loop_http::FailOutcome::Lose => self.lose(id, "closed"),
            loop_http::FailOutcome::Answered => {
                let warning = match status {
                    500 => None,
                    408 => Some(
                        "Request timeout: no complete request head within timeout_request_head (408)"
                            .to_owned(),
                    ),
                    503 => Some("Exceeded concurrency limit (503)".to_owned()),
                    _ => Some(match http.conn.parse_error() {
                        Some(err) => format!("Invalid HTTP request received: {err} ({status})"),
                        None => format!("Invalid HTTP request received ({status})"),
                    }),
                };
                conn.closing_because(format!("answered {status} by the server"));
                self.counters.rejected(status);
                let line = self.access_line(id, head, status, active);
                if let Some(line) = line {
                    self.log(Log::Access(line));
                }
                if let Some(warning) = warning {
                    self.answer_warning(&warning);
                }
                self.end_for_app(id);
                self.settle(id);
            }
        }
    }

    /// An access line for `status` (the request `head`, or the current
    /// exchange's when `active`), when the access log is on.
    pub(super) fn access_line(
        &mut self,
        id: ConnId,
        head: Option<&RequestHead>,
        status: u16,
        active: bool,
    ) -> Option<String> {
        if !self.logs.access {
            return None;
        }
        let now = self.now();
        let timed = self.settings.access_timed;
        let conn = self.conn(id)?;
        let Kind::Http(http) = &conn.kind else {
            return None;
        };
        let current = http.conn.exchange().filter(|_| active);
        let head = head.or_else(|| current.map(|ex| ex.head()));
        let started = current
            .and_then(|ex| conn.exchange(ex.id()))
            .map_or(now, |ex| ex.started);
        Some(access::render(
            &self.settings.access_format,
            &access::Entry {
                client: &conn.peer_text,
                head,
                root_path: &self.settings.root_path,
                status,
                duration: (timed && head.is_some()).then_some(now - started),
            },
        ))
    }

    /// No more requests on the connection (the state machine said so).
    fn close_gracefully(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let Kind::Http(http) = &mut conn.kind else {
            return;
        };
        if !http.conn.close() {
            return;
        }
        conn.closing_because("no more requests on the connection");
        self.end_for_app(id);
        self.settle(id);
    }

    /// The current exchange is over for the application (its response is
    /// complete, or the connection closed): [`Event::Ended`], once.
    pub(crate) fn end_for_app(&mut self, id: ConnId) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        let Kind::Http(http) = &conn.kind else {
            return;
        };
        let closed = http.conn.is_closed();
        let Some(current) = http.conn.exchange() else {
            return;
        };
        if !(closed || current.is_over()) {
            return;
        }
        let disconnected = closed || current.is_abandoned();
        let ex_id = current.id();
        let Some(ex) = conn.exchange_mut(ex_id).filter(|ex| !ex.ended) else {
            return;
        };
        ex.ended = true;
        self.events.push_back(Event::Ended {
            conn: id,
            ex: ex_id,
            disconnected,
        });
    }

    /// The application asks for request body of exchange `ex`. A `100
    /// Continue` it makes due is written.
    pub fn read_body(&mut self, id: ConnId, ex: ExchangeId) -> BodyRead {
        let Some(conn) = self.live_mut(id) else {
            return BodyRead::Disconnect;
        };
        let Kind::Http(http) = &mut conn.kind else {
            return BodyRead::Disconnect;
        };
        if http.conn.has_unparsed_body(ex) {
            self.process(id);
        }
        let Some(Kind::Http(http)) = self.live_mut(id).map(|c| &mut c.kind) else {
            return BodyRead::Disconnect;
        };
        let read = http.conn.read_body(ex, &mut http.out);
        if !matches!(read, BodyRead::Disconnect) {
            // Room in the body buffer again (or a reader now waits):
            // parse what is pending; a `100 Continue` goes out.
            self.process(id);
        }
        read
    }

    /// The body [`Event::Body`] announced: `None` when there is no exchange
    /// to take it from (the application gets a disconnect).
    pub fn take_body(&mut self, id: ConnId) -> Option<(Vec<u8>, bool)> {
        let Some(Kind::Http(http)) = self.live_mut(id).map(|c| &mut c.kind) else {
            return None;
        };
        let body = http.conn.take_delivery();
        self.process(id);
        body
    }

    /// The waiting reader went away (its wait was cancelled): the body
    /// stays for its next read.
    pub fn reader_left(&mut self, id: ConnId) {
        if let Some(Kind::Http(http)) = self.live_mut(id).map(|c| &mut c.kind) {
            http.conn.reader_left();
        }
    }

    /// The application sends a part of exchange `ex`'s response. A head
    /// waits for the first body part (a small response leaves in one
    /// write); a completed response is written at the end of the tick.
    /// `Ok(true)`: the write buffer is above its high water mark, the
    /// application's `send` should wait for [`Event::Writable`].
    pub fn send<'h, H>(
        &mut self,
        id: ConnId,
        ex: ExchangeId,
        part: ResponsePart<'_, H>,
    ) -> Result<bool, SendRefused>
    where
        H: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let now = self.now();
        let date = self.settings.date_header.then(|| self.date.get());
        let server = self.settings.server_header.as_deref();
        let access = self.logs.access;
        let conn = live_in(&mut self.slots, id).ok_or(SendError::Disconnected)?;
        let handshake = match conn.exchange(ex) {
            Some(x) if x.file.is_some() => return Err(SendRefused::FileInFlight),
            Some(x) => x.offer.is_some(),
            None => false,
        };
        let Kind::Http(http) = &mut conn.kind else {
            return Err(SendError::Disconnected.into());
        };
        let start = match &part {
            ResponsePart::Start { status, .. } => Some(*status),
            _ => None,
        };
        let completed = http.conn.send(ex, &mut http.out, part, date, server, now)?;
        http.hold = start.is_some() && completed.is_none();
        if let (Some(status), true, true) = (start, handshake, access) {
            // A WebSocket handshake denied with a response: the session's
            // access line ("WebSocket /path" 403).
            if let Some(prefix) = conn.exchange(ex).and_then(|x| x.ws_log.clone()) {
                self.log(Log::Access(format!("{prefix} {status}")));
            }
        }
        match completed {
            Some(_) => self.response_complete(id),
            None if start.is_none() => self.settle(id),
            None => {}
        }
        Ok(completed.is_none() && self.must_wait(id, ex))
    }

    /// The connection's write buffer is above its high water mark: the
    /// application's `send` of `ex` waits ([`Event::Writable`] ends it).
    fn must_wait(&mut self, id: ConnId, ex: ExchangeId) -> bool {
        let Some(conn) = self.live_mut(id) else {
            return false;
        };
        let paused = conn.stream.as_ref().is_some_and(|s| s.is_writing_paused());
        match conn.exchange_mut(ex) {
            Some(x) if paused => {
                x.send_waits = true;
                true
            }
            _ => false,
        }
    }

    /// The current exchange's response completed: the access line, the
    /// application's end, the bytes (at the end of the tick on a kept
    /// connection), and the next pipelined request.
    pub(super) fn response_complete(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let Kind::Http(http) = &conn.kind else {
            return;
        };
        let Some(current) = http.conn.exchange() else {
            return;
        };
        let (status, ex_id) = (current.status(), current.id());
        let upgraded = http.conn.phase() == Phase::Upgraded;
        // A denied WebSocket handshake is logged as the session's.
        let handshake = conn
            .exchange(ex_id)
            .is_some_and(|x| x.offer.is_some() || x.ws_log.is_some());
        self.counters.response(status);
        if !handshake {
            if let Some(line) = self.access_line(id, None, status, true) {
                self.log(Log::Access(line));
            }
        }
        if upgraded {
            // A 101 that no protocol took the stream over for: it goes out
            // and the connection closes.
            if let Some(conn) = self.live_mut(id) {
                conn.closing_because("switched protocols, and no session took the stream");
            }
            self.settle(id);
            return self.lose(id, "switched protocols, and no session took the stream");
        }
        self.end_for_app(id);
        let kept = matches!(
            self.live_mut(id).map(|c| &c.kind),
            Some(Kind::Http(h)) if h.conn.is_between_requests()
        );
        if kept {
            self.cork(id);
        }
        self.settle(id);
        // A pipelined request may be waiting already: it starts from a
        // fresh stack (this may run inside the application's step).
        if let Some(Kind::Http(http)) = self.live_mut(id).map(|c| &c.kind) {
            if http.conn.has_pipelined_input() {
                self.events.push_back(Event::Pipelined { conn: id });
            }
        }
    }

    /// The application waits (its task yields): what it sent so far goes
    /// out now, a held response head too.
    pub fn app_waits(&mut self, id: ConnId) {
        let Some(Kind::Http(http)) = self.live_mut(id).map(|c| &mut c.kind) else {
            return;
        };
        if http.hold && !http.conn.is_closed() {
            http.hold = false;
            self.settle(id);
        }
    }

    /// A response that started and will not complete (the connection is
    /// lost): its access line, as the status went out. `None` otherwise.
    pub(super) fn cut_short_line(&mut self, id: ConnId) -> Option<String> {
        let conn = self.conn(id)?;
        let Kind::Http(http) = &conn.kind else {
            return None;
        };
        let current = http.conn.exchange()?;
        let handshake = conn
            .exchange(current.id())
            .is_some_and(|x| x.offer.is_some() || x.ws_log.is_some());
        if !current.response_started() || current.response_complete() || handshake {
            return None;
        }
        let status = current.status();
        self.access_line(id, None, status, true)
    }

    /// How far exchange `ex` got (when its application returned).
    pub fn progress(&self, id: ConnId, ex: ExchangeId) -> Progress {
        let Some(conn) = self.conn(id) else {
            return Progress::Gone;
        };
        let Kind::Http(http) = &conn.kind else {
            // Upgraded: the session's end is the application's own.
            return Progress::Gone;
        };
        let open = !http.conn.is_closed() && conn.stream.is_some();
        match http.conn.current(ex) {
            None if open => Progress::Replaced,
            None => Progress::Gone,
            Some(current) => Progress::Current {
                open: open && !current.is_abandoned(),
                started: current.response_started(),
                complete: current.response_complete(),
            },
        }
    }

    /// A response body from a file: `count` bytes of `file` from `offset`
    /// (at most what the response's length has left), sent with
    /// `sendfile(2)` as the client reads (through a TLS layer, a bounded
    /// chunk at a time). `more`: the body goes on after it. `Ok(true)`:
    /// the application's `send` waits until the file is out
    /// ([`Event::Writable`], or [`Event::Ended`] when it ended the
    /// response).
    #[allow(clippy::too_many_arguments)]
    pub fn send_file(
        &mut self,
        id: ConnId,
        ex: ExchangeId,
        file: File,
        offset: u64,
        count: u64,
        more: bool,
        reposition: bool,
    ) -> Result<bool, SendRefused> {
        let now = self.now();
        let conn = live_in(&mut self.slots, id).ok_or(SendError::Disconnected)?;
        if conn.exchange(ex).is_some_and(|x| x.file.is_some()) {
            return Err(SendRefused::FileInFlight);
        }
        let Kind::Http(http) = &mut conn.kind else {
            return Err(SendError::Disconnected.into());
        };
        let len = http.conn.file_len(ex, count);
        let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len };
        http.conn.send(ex, &mut http.out, part, None, None, now)?;
        http.hold = false;
        if len == 0 {
            // HEAD, 304, an empty file: nothing to send; the body ends (or
            // goes on) as an empty body message would.
            self.file_sent(id, ex, more)?;
            return Ok(false);
        }
        let Some(x) = conn.exchange_mut(ex) else {
            return Err(SendError::Disconnected.into());
        };
        x.file = Some(FileBody {
            send: FileSend::new(file, offset, len),
            more,
            reposition,
        });
        // The head (and a chunk header) first, then the file as it fits.
        self.settle(id);
        Ok(true)
    }

    /// Send what the socket takes of the file in flight; at its end,
    /// complete the response or let the application go on.
    pub(crate) fn pump_file(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        let Some(x) = conn.exchanges.iter_mut().find(|x| x.file.is_some()) else {
            return;
        };
        let ex = x.id;
        let Some(file) = x.file.as_mut() else {
            return;
        };
        let progress = file.send.advance(stream);
        match progress {
            FileProgress::Pending => {}
            FileProgress::Done => {
                let Some(file) = x.file.take() else {
                    return;
                };
                if file.reposition {
                    // The app's fd shares this position; failing to move it
                    // leaves the region to be sent again, not a broken
                    // response.
                    let _ = file.send.file().seek(SeekFrom::Start(file.send.offset()));
                }
                // A refused end closes the connection, which ends the
                // waiting `send` with a disconnect.
                let _ = self.file_sent(id, ex, file.more);
            }
            FileProgress::Short => {
                self.lose(id, "the response file ended early");
                self.log(Log::Warning(
                    "the file ended before its response body did: connection closed".into(),
                ));
            }
            FileProgress::Failed(err) => {
                self.lose(id, "the response file could not be read");
                self.log(Log::Warning(format!(
                    "reading the response file failed ({err}): connection closed"
                )));
            }
            FileProgress::Lost => self.lose(id, "the client went away during a write"),
        }
    }

    /// The file's bytes are all sent: end the body (`more` false) or let
    /// the application go on.
    fn file_sent(&mut self, id: ConnId, ex: ExchangeId, more: bool) -> Result<(), SendRefused> {
        if more {
            self.events.push_back(Event::Writable { conn: id, ex });
            self.settle(id);
            return Ok(());
        }
        let end: ResponsePart<'_, NoHeaders> = ResponsePart::Body {
            data: b"",
            more: false,
        };
        match self.send(id, ex, end) {
            // `response_complete` ended the exchange (the waiting `send`
            // returns).
            Ok(_) => {
                if !matches!(
                    self.progress(id, ex),
                    Progress::Current { complete: true, .. }
                ) {
                    // Declared trailers come next.
                    self.events.push_back(Event::Writable { conn: id, ex });
                }
                Ok(())
            }
            Err(SendRefused::Http(SendError::Invalid(ResponseError::TooShort))) => {
                self.lose(id, "the response file is shorter than its content-length");
                self.log(Log::Warning(
                    "the response file is shorter than its content-length: connection closed"
                        .into(),
                ));
                Err(SendError::Disconnected.into())
            }
            Err(e) => {
                self.lose(id, "the response could not end");
                Err(e)
            }
        }
    }
}
