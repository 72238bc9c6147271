//! A connection's bytes, the same for every kind: a read into the thread's
//! buffer handed to the protocol (choosing it first, on a new
//! connection), the protocol's output handed to the stream, the cork, and
//! `settle`: after anything happened to a connection, write what it
//! produced, move its end along (drain, half-close, linger), wake a
//! waiting writer and bring its reactor interest up to date.

use super::{live_in, Driver};
use crate::conn::Ending;
use crate::event::{App, Event};
use crate::http::Http1;
use crate::id::ConnId;
use crate::logs::Log;
use crate::protocol::{sniff, Kind, Protocol, Sniffed, H2_REFUSED};
use crate::tls::{describe, is_reset, session_error};
use loop_transports::read_buf::with_read_buffer;
use loop_transports::{Eof, LayerRead};
use std::borrow::Cow;

/// What a read did.
enum Read {
    /// Nothing arrived (or only TLS records).
    Nothing,
    /// Bytes reached the protocol.
    Input,
    /// The first bytes were HTTP/2's preface: refused, closing.
    Refused,
    /// The peer ended the stream (EOF); the protocol was told.
    Eof(Cow<'static, str>),
    /// The connection is lost (an error, or EOF where that ends it).
    Lost(Cow<'static, str>),
}

/// Why a read found the connection lost, for the debug line (a TLS
/// failure names its kind and rustls' reason).
fn lost_because(err: Option<&loop_transports::Error>) -> Cow<'static, str> {
    match err.and_then(session_error) {
        Some(tls) => describe(tls).into(),
        None => "connection error".into(),
    }
}

impl<A: App> Driver<A> {
    pub(super) fn on_readable(&mut self, id: ConnId) {
        let read = with_read_buffer(|buf| self.read(id, buf));
        match read {
            Read::Nothing => self.settle(id),
            Read::Input => self.after_input(id),
            Read::Refused => {
                self.answer_warning(H2_REFUSED);
                self.settle(id);
            }
            Read::Eof(why) => {
                if let Some(conn) = self.live_mut(id) {
                    conn.peer_eof = true;
                    conn.closing_because(why.clone());
                    // HTTP takes EOF as a disconnect (a half-closing client
                    // cannot rely on reading the response), as does a
                    // connection whose kind is not known yet or that is
                    // ending; a WebSocket session ends its own way (1006).
                    if matches!(conn.kind, Kind::Ws(_)) && conn.ending == Ending::Open {
                        return self.after_input(id);
                    }
                }
                self.lose(id, why);
            }
            Read::Lost(why) => self.lose(id, why),
        }
    }

    pub(super) fn on_writable(&mut self, id: ConnId) {
        if let Some(stream) = self.live_mut(id).and_then(|c| c.stream.as_mut()) {
            stream.on_writable();
        }
        self.settle(id);
    }

    fn read(&mut self, id: ConnId, buf: &mut [u8]) -> Read {
        let now = self.now();
        let config = self.settings.http.clone();
        let draining = self.draining;
        let Some(conn) = live_in(&mut self.slots, id) else {
            return Read::Nothing;
        };
        let Some(stream) = conn.stream.as_mut() else {
            return Read::Nothing;
        };
        let ending = conn.ending != Ending::Open;
        let step = match stream.read_into(buf) {
            Ok(step) => step,
            Err(err) => {
                if is_reset(Some(&err)) {
                    self.counters.reset.bump();
                }
                return Read::Lost(lost_because(Some(&err)));
            }
        };
        match step {
            // Ending: input is read and dropped until the peer's EOF.
            LayerRead::Data(_) if ending => Read::Nothing,
            LayerRead::Last(_) if ending => Read::Eof("closed by the client".into()),
            // Empty when only TLS records (a handshake's) arrived.
            LayerRead::Data([]) => Read::Nothing,
            LayerRead::Data(data) | LayerRead::Last(data) => {
                let peer_ended = matches!(step, LayerRead::Last(_));
                if let Kind::Pending(pending) = &mut conn.kind {
                    let alpn = conn
                        .tls
                        .as_ref()
                        .and_then(|t| t.info())
                        .and_then(|i| i.alpn.clone());
                    match alpn
                        .as_deref()
                        .map_or_else(|| sniff(&pending.held, data), |_| Sniffed::Http1)
                    {
                        Sniffed::Undecided => {
                            pending.held.extend_from_slice(data);
                            return Read::Nothing;
                        }
                        Sniffed::H2 => {
                            // Closing at once, with no response: its client
                            // could not read an HTTP/1.1 one.
                            let mut http = Http1::new(config, conn.accepted_at);
                            http.conn.close();
                            conn.kind = Kind::Http(Box::new(http));
                            conn.closing_because("refused without a response");
                            return Read::Refused;
                        }
                        Sniffed::Http1 => {
                            let mut http = Http1::new(config, conn.accepted_at);
                            if draining {
                                // Shutting down with idle connections kept:
                                // this one answers one request, then closes.
                                http.conn.drain(false, true);
                            }
                            http.receive(&pending.held, now);
                            conn.kind = Kind::Http(Box::new(http));
                        }
                    }
                }
                conn.kind.protocol().receive(data, now);
                if peer_ended {
                    // `close_notify` came with the data: an EOF after it.
                    conn.kind.protocol().receive_eof();
                    return Read::Eof("closed by the client".into());
                }
                Read::Input
            }
            LayerRead::Done => match stream.take_closed() {
                None => Read::Nothing,
                Some(err) => {
                    if is_reset(err.as_ref()) {
                        self.counters.reset.bump();
                    }
                    conn.kind.protocol().receive_eof();
                    Read::Lost(lost_because(err.as_ref()))
                }
            },
            LayerRead::Eof(eof) => {
                conn.kind.protocol().receive_eof();
                Read::Eof(match eof {
                    Eof::Clean => "closed by the client".into(),
                    // A client that closes without `close_notify` is common
                    // (and harmless between requests): an EOF, logged so.
                    Eof::Truncated => "closed by the client without TLS close_notify".into(),
                })
            }
        }
    }

    /// Input reached the protocol: act on it.
    fn after_input(&mut self, id: ConnId) {
        match self.live_mut(id).map(|c| &c.kind) {
            Some(Kind::Http(_)) => self.process(id),
            Some(Kind::Ws(_)) => {
                self.ws_after_input(id);
                self.settle(id);
            }
            _ => self.settle(id),
        }
    }

    /// A warning about input the server answered (or refused) itself,
    /// through the rate limit.
    pub(crate) fn answer_warning(&mut self, text: &str) {
        let now = self.now();
        if let Some(line) = self.logs.answer_warning(now, text) {
            self.log(Log::Warning(line));
        }
    }

    /// Leave `id`'s output to the end of the tick; false when it must be
    /// written now (it waits for writability: it flushes from there).
    pub(crate) fn cork(&mut self, id: ConnId) -> bool {
        let Some(conn) = self.live_mut(id) else {
            return false;
        };
        if conn.corked {
            return true;
        }
        let Some(stream) = conn.stream.as_mut() else {
            return false;
        };
        if stream.buffered() > 0 && !stream.is_corked() {
            return false;
        }
        stream.cork();
        conn.corked = true;
        self.corked.push(id);
        if !self.flush_pending {
            self.flush_pending = true;
            self.flush_wanted = true;
        }
        true
    }

    /// After anything happened to `id`: write what its protocol produced,
    /// move its end along, wake a waiting writer, and note a change of the
    /// reactor interest it needs.
    pub(crate) fn settle(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let written = conn.write_output();
        let lost = !written
            || conn
                .stream
                .as_mut()
                .is_some_and(|s| s.take_closed().is_some());
        if lost {
            self.counters.reset.bump();
            return self.lose(id, "the client went away during a write");
        }
        if conn.exchanges.iter().any(|ex| ex.file.is_some()) {
            self.pump_file(id);
        }
        self.advance_ending(id);
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        let paused = conn.stream.as_ref().is_some_and(|s| s.is_writing_paused());
        if !paused {
            let mut released = Vec::new();
            for ex in &mut conn.exchanges {
                // A file's `send` waits for the file, not for the buffer.
                if ex.send_waits && ex.file.is_none() {
                    ex.send_waits = false;
                    released.push(ex.id);
                }
            }
            for ex in released {
                self.events.push_back(Event::Writable { conn: id, ex });
            }
        }
        self.note_interest(id);
    }

    /// Queue `id` for an interest update if what it needs changed.
    pub(crate) fn note_interest(&mut self, id: ConnId) {
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        if !conn.io_queued && conn.wanted() != conn.registered {
            conn.io_queued = true;
            self.dirty.push(id);
        }
    }

    /// A finished protocol's connection ends: its output drains (bounded
    /// by `closing_drain`), then it half-closes (a FIN; TLS: `close_notify`
    /// first) and lingers, reading and dropping input (up to `linger`), so
    /// unread input does not turn the close into an RST that destroys what
    /// was written last. A peer that ended its side already is closed at
    /// once.
    fn advance_ending(&mut self, id: ConnId) {
        let now = self.now();
        let (drain, linger) = (self.settings.closing_drain, self.settings.linger);
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        if conn.ending == Ending::Open && conn.kind.protocol_ref().finished() {
            conn.ending = Ending::Draining {
                deadline: now + drain,
            };
        }
        if !matches!(conn.ending, Ending::Draining { .. }) || conn.buffered() > 0 {
            return;
        }
        if conn.peer_eof {
            return self.lose(id, "closed by the client");
        }
        let half_closed = conn.stream.as_mut().is_some_and(|s| s.shutdown().is_ok());
        if linger <= 0.0 || !half_closed {
            // The peer may be gone already: then there is nothing to wait for.
            return self.lose(id, "closed");
        }
        conn.ending = Ending::Lingering {
            deadline: now + linger,
        };
    }
}
