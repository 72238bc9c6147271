//! What the WebSocket kind offers the application. A request that opens a
//! WebSocket is an HTTP exchange until the application answers its
//! handshake: [`Driver::ws_accept`] writes the `101` and the connection
//! becomes a WebSocket session on the same stream (the bytes after the
//! request go with it), continuing the same exchange; a denial is an HTTP
//! response ([`Driver::send`]). After the `101`: messages both ways
//! ([`Driver::ws_next`], [`Driver::ws_send`]) and the closing handshake
//! ([`Driver::ws_close`]).

use super::{live_in, Driver};
use crate::event::{App, Event};
use crate::id::{ConnId, ExchangeId};
use crate::logs::Log;
use crate::protocol::Kind;
use crate::ws::WsKind;
use loop_http::{RequestHead, ResponsePart, SendError};
use loop_transports::Write;
use loop_ws::{CloseCode, Message, MessageKind, Refusal};

/// Payloads at least this long are written behind their frame header
/// straight from the application's buffer (one vectored write), not copied
/// into the connection's output first.
const DIRECT_WRITE_MIN: usize = 16 * 1024;

/// What a WebSocket `receive` finds.
#[derive(Debug, PartialEq, Eq)]
pub enum WsNext {
    Message(Message),
    /// The session is over for the application: its close code and reason.
    Ended(u16, String),
    /// Nothing yet: [`Driver::ws_wait`], then [`Event::WsInput`].
    Wait,
}

/// Why a WebSocket call was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WsRefused {
    /// The session (or its handshake) is over.
    #[error("the client disconnected")]
    Gone,
    #[error("subprotocol '{chosen}' was not offered by the client (offered: {offered:?})")]
    NotOffered {
        chosen: String,
        offered: Vec<String>,
    },
    /// A `101` header that is the handshake's (the server sets it).
    #[error("header '{0}' is the handshake's: the server sets it")]
    HandshakeField(String),
    #[error("close code {0} may not be sent")]
    InvalidCloseCode(u16),
    #[error("close reason is longer than 123 bytes")]
    ReasonTooLong,
    /// The `101` could not be written.
    #[error(transparent)]
    Http(#[from] SendError),
}

/// Header fields of the `101` that are the handshake's, not the
/// application's.
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

type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

impl<A: App> Driver<A> {
    /// An invalid handshake: the refusal's status, headers and reason,
    /// through the HTTP encoder, logged as the server's other answers.
    pub(super) fn refuse_ws(&mut self, id: ConnId, head: RequestHead, refusal: &Refusal) {
        let now = self.now();
        let date = self.settings.date_header.then(|| self.date.get());
        let server = self.settings.server_header.as_deref();
        let Some(conn) = live_in(&mut self.slots, id) else {
            return;
        };
        let Kind::Http(http) = &mut conn.kind else {
            return;
        };
        let ex = http.conn.begin_request(head);
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
        let sent = http
            .conn
            .send(ex, &mut http.out, start, date, server, now)
            .and_then(|_| http.conn.send(ex, &mut http.out, body, date, server, now));
        let warning = format!(
            "Invalid WebSocket upgrade request: {} ({})",
            refusal.reason, refusal.status
        );
        match sent {
            Ok(Some(_)) => self.response_complete(id),
            // Cannot happen with these fields; the connection still ends.
            _ => self.fail(id, refusal.status, None),
        }
        self.answer_warning(&warning);
    }

    /// Accept exchange `ex`'s WebSocket handshake: the `101` (the
    /// handshake's headers and `headers`), then the connection is a
    /// session.
    pub fn ws_accept(
        &mut self,
        id: ConnId,
        ex: ExchangeId,
        subprotocol: Option<&str>,
        headers: &[(&[u8], &[u8])],
    ) -> Result<(), WsRefused> {
        if let Some((name, _)) = headers.iter().find(|(n, _)| is_handshake_field(n)) {
            return Err(WsRefused::HandshakeField(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
        let now = self.now();
        let settings = self.settings.clone();
        let date = settings.date_header.then(|| self.date.get());
        let server = settings.server_header.as_deref();
        let Some(config) = settings.ws.as_ref() else {
            return Err(WsRefused::Gone);
        };
        let conn = live_in(&mut self.slots, id).ok_or(WsRefused::Gone)?;
        let x = conn.exchange_mut(ex).ok_or(WsRefused::Gone)?;
        let offer = x.offer.as_ref().ok_or(WsRefused::Gone)?;
        if let Some(chosen) = subprotocol {
            if !offer.subprotocols().iter().any(|p| p == chosen) {
                return Err(WsRefused::NotOffered {
                    chosen: chosen.to_owned(),
                    offered: offer.subprotocols().to_vec(),
                });
            }
        }
        let accepted = offer.accept(config, subprotocol);
        let log_prefix = x.ws_log.clone();
        let Kind::Http(http) = &mut conn.kind else {
            return Err(WsRefused::Gone);
        };
        let mut all: Fields<'_> = accepted
            .headers
            .iter()
            .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
            .collect();
        all.extend(headers.iter().copied());
        let start = ResponsePart::Start {
            status: 101,
            headers: all,
            trailers: false,
        };
        http.conn
            .send(ex, &mut http.out, start, date, server, now)?;
        let end: ResponsePart<'_, Fields<'_>> = ResponsePart::Body {
            data: b"",
            more: false,
        };
        if http
            .conn
            .send(ex, &mut http.out, end, date, server, now)?
            .is_none()
        {
            return Err(SendError::NotStarted.into());
        }
        http.hold = false;
        // The 101 goes to the stream (what the kernel refuses stays
        // buffered there, ahead of the session's frames).
        if !conn.write_output() {
            self.lose(id, "the client went away during a write");
            return Err(WsRefused::Gone);
        }
        let Some(conn) = self.live_mut(id) else {
            return Err(WsRefused::Gone);
        };
        let Kind::Http(http) = &mut conn.kind else {
            return Err(WsRefused::Gone);
        };
        let rest = http.conn.take_unparsed();
        let mut ws = loop_ws::Connection::new(config, accepted.deflate, now);
        if !rest.is_empty() {
            ws.receive(&rest, now);
        }
        if let Some(x) = conn.exchange_mut(ex) {
            x.offer = None;
        }
        conn.kind = Kind::Ws(Box::new(WsKind {
            ws,
            out: Vec::new(),
            ex,
            ended: None,
            log_prefix: log_prefix.clone(),
        }));
        self.counters.response(101);
        self.counters.ws_sessions.bump();
        if let Some(prefix) = log_prefix.filter(|_| self.logs.access) {
            self.log(Log::Access(format!("{prefix} [accepted]")));
        }
        self.ws_after_input(id);
        if self.draining {
            // Accepted while the server drains (HTTP waited for this).
            let now = self.now();
            if let Some(conn) = self.live_mut(id) {
                let _ = crate::protocol::Protocol::drain(conn.kind.protocol(), false, false, now);
            }
            self.end_exchanges(id, true);
        }
        self.settle(id);
        Ok(())
    }

    /// Input reached a session (or a timer closed it): its end, as the
    /// application's, and a waiting receiver woken when there is
    /// something to take.
    pub(crate) fn ws_after_input(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let Kind::Ws(w) = &mut conn.kind else {
            return;
        };
        w.end_from_state();
        let ready = w.ws.has_message() || w.ended.is_some();
        let ex = w.ex;
        if !ready {
            return;
        }
        if let Some(x) = conn.exchange_mut(ex).filter(|x| x.recv_waits) {
            x.recv_waits = false;
            self.events.push_back(Event::WsInput { conn: id, ex });
        }
    }

    /// What a `receive` of session `ex` gets now. `messages`: false once
    /// the application closed (it gets no more messages after its own
    /// close).
    pub fn ws_next(&mut self, id: ConnId, ex: ExchangeId, messages: bool) -> WsNext {
        let Some(conn) = self.conn_mut(id) else {
            return WsNext::Ended(CloseCode::ABNORMAL.0, String::new());
        };
        let Kind::Ws(w) = &mut conn.kind else {
            return WsNext::Wait;
        };
        if w.ex != ex {
            return WsNext::Ended(CloseCode::ABNORMAL.0, String::new());
        }
        if messages {
            if let Some(message) = w.ws.next_message() {
                self.counters.ws_messages_in.bump();
                // Taking it made room in the queue (reading resumes), and a
                // close read behind it may have queued our echo.
                self.settle(id);
                return WsNext::Message(message);
            }
        }
        // A close or failure read behind queued messages takes effect once
        // they are taken (inside `next_message`).
        w.end_from_state();
        let next = match &w.ended {
            Some((code, reason)) => WsNext::Ended(*code, reason.clone()),
            None => WsNext::Wait,
        };
        self.settle(id);
        next
    }

    /// A `receive` of session `ex` waits: [`Event::WsInput`] when there is
    /// something for it (or `stop` the wait).
    pub fn ws_wait(&mut self, id: ConnId, ex: ExchangeId, wait: bool) {
        if let Some(x) = self.conn_mut(id).and_then(|c| c.exchange_mut(ex)) {
            x.recv_waits = wait;
        }
    }

    /// A delivered message's buffer, back to the session for the next one.
    pub fn ws_recycle(&mut self, id: ConnId, data: Vec<u8>) {
        if let Some(Kind::Ws(w)) = self.live_mut(id).map(|c| &mut c.kind) {
            w.ws.recycle(data);
        }
    }

    /// Send a data message. Small ones wait for the end of the tick (every
    /// connection's output of the tick leaves together); a large
    /// uncompressed one goes out at once behind its header without being
    /// copied. `Ok(true)`: the application's `send` should wait for
    /// [`Event::Writable`] (the peer is not reading).
    pub fn ws_send(
        &mut self,
        id: ConnId,
        ex: ExchangeId,
        kind: MessageKind,
        data: &[u8],
    ) -> Result<bool, WsRefused> {
        let conn = live_in(&mut self.slots, id).ok_or(WsRefused::Gone)?;
        let Some(stream) = conn.stream.as_mut() else {
            return Err(WsRefused::Gone);
        };
        let Kind::Ws(w) = &mut conn.kind else {
            return Err(WsRefused::Gone);
        };
        let mut direct = false;
        if data.len() >= DIRECT_WRITE_MIN && !stream.has_layer() {
            direct =
                w.ws.send_header(kind, data.len(), &mut w.out)
                    .map_err(|_| WsRefused::Gone)?;
        }
        if direct {
            // What the cork held goes first, then this frame in one
            // vectored write (the core copies only what the kernel refuses).
            stream.uncork();
            let written = stream.core_mut().write_vectored(&[&w.out, data]);
            w.out.clear();
            self.counters.ws_messages_out.bump();
            if !matches!(written, Ok(Write::Accepted)) {
                self.counters.reset.bump();
                self.lose(id, "the client went away during a write");
                return Ok(false);
            }
        } else {
            w.ws.send(kind, data, &mut w.out)
                .map_err(|_| WsRefused::Gone)?;
            self.counters.ws_messages_out.bump();
            self.cork(id);
        }
        self.settle(id);
        Ok(self.must_wait_ws(id, ex))
    }

    fn must_wait_ws(&mut self, id: ConnId, ex: ExchangeId) -> bool {
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

    /// Start the closing handshake with `code` and `reason` (the
    /// application's close, or its end). The peer's answer is read even
    /// when the application's queue is full.
    pub fn ws_close(
        &mut self,
        id: ConnId,
        ex: ExchangeId,
        code: u16,
        reason: &str,
    ) -> Result<(), WsRefused> {
        let now = self.now();
        let conn = live_in(&mut self.slots, id).ok_or(WsRefused::Gone)?;
        let Kind::Ws(w) = &mut conn.kind else {
            return Err(WsRefused::Gone);
        };
        if w.ex != ex {
            return Err(WsRefused::Gone);
        }
        match w.ws.close(CloseCode(code), reason, now, &mut w.out) {
            Ok(()) => {}
            Err(loop_ws::SendError::Closed) => return Err(WsRefused::Gone),
            Err(loop_ws::SendError::InvalidCloseCode(c)) => {
                return Err(WsRefused::InvalidCloseCode(c))
            }
            Err(loop_ws::SendError::ReasonTooLong) => return Err(WsRefused::ReasonTooLong),
        }
        w.end(code, reason);
        self.settle(id);
        Ok(())
    }

    /// How session `id` ended for the application (its close code and
    /// reason), once known; `None` while it is open (or not a session).
    pub fn ws_end(&self, id: ConnId) -> Option<(u16, String)> {
        match self.conn(id).map(|c| &c.kind) {
            Some(Kind::Ws(w)) => w.ended.clone(),
            _ => None,
        }
    }

    /// Whether `id` is a WebSocket session now.
    pub fn is_ws(&self, id: ConnId) -> bool {
        matches!(self.conn(id).map(|c| &c.kind), Some(Kind::Ws(_)))
    }
}
