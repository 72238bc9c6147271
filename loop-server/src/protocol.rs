//! The protocol kinds a connection can speak, behind one small trait.
//!
//! The driver's registry, timeout sweep, drain, end-of-tick flush and the
//! way a connection ends reach a connection's protocol only through
//! [`Protocol`]: bytes in, bytes out, what it wants, its deadline, how it
//! finishes. HTTP/1.1 ([`crate::http`]) and WebSocket ([`crate::ws`]) are
//! its implementations; HTTP/2 would be one more (and one more name in
//! [`ALPN`]). What each kind offers the application (requests and
//! responses; messages) is the driver's per-kind API.
//!
//! The kind is chosen once the bytes can say which (a connection starts
//! [`Kind::Pending`]): over TLS from what ALPN negotiated, otherwise from
//! the first bytes, where HTTP/2 with prior knowledge shows itself by its
//! preface. HTTP/2 is not served: its preface is refused without a
//! response (its client could not read an HTTP/1.1 one) and logged.

use crate::counters::Timeout;
use crate::http::Http1;
use crate::ws::WsKind;

/// The application protocols offered in ALPN, most preferred first.
pub const ALPN: &[&[u8]] = &[b"http/1.1"];

/// The first bytes of an HTTP/2 connection with prior knowledge (RFC 9113
/// §3.4).
pub const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Why the preface was refused, in the server's log.
pub const H2_REFUSED: &str =
    "HTTP/2 is not supported; use HTTP/1.1 or put an HTTP/2 proxy in front";

/// What a timer check asks of the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    Nothing,
    /// Output was queued (a ping).
    Output,
    /// A deadline passed and the kind ends itself over the wire (a close
    /// after a pong timed out): count it, write the output.
    Expired(Timeout),
    /// Answer this status (408) and close.
    Answer(u16),
    /// Drop the connection: the deadline that passed, and why in words.
    Lose(Timeout, &'static str),
}

/// What a server shutdown asks of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// In the middle of something: it finishes, then closes.
    AfterCurrent,
    /// It is closing gracefully now (its output drains first).
    Close,
    /// Idle: drop it now.
    Lose,
}

/// A protocol spoken on a connection's byte stream (after the byte layer).
pub trait Protocol {
    /// Bytes from the peer.
    fn receive(&mut self, data: &[u8], now: f64);
    /// The peer's EOF.
    fn receive_eof(&mut self);
    /// Bytes ready to write (the driver writes and clears them); `None`
    /// while the kind holds its output back.
    fn output(&mut self) -> Option<&mut Vec<u8>>;
    /// Whether to read now. `output_paused`: the peer is not reading what
    /// we write (the stream's flow control).
    fn wants_read(&self, output_paused: bool) -> bool;
    /// No more input is wanted and no more output will come beyond what
    /// [`output`](Self::output) holds: the driver drains the stream,
    /// half-closes, lingers and closes.
    fn finished(&self) -> bool;
    /// When [`on_timer`](Self::on_timer) next has something to do.
    fn deadline(&self) -> Option<f64>;
    /// Deadlines due by `now` (the sweep calls it on every pass: a rate
    /// rule needs periodic checks).
    fn on_timer(&mut self, now: f64) -> Due;
    /// Server shutdown; `buffered`: output is waiting in the stream.
    fn drain(&mut self, keep_idle: bool, buffered: bool, now: f64) -> Drained;
    /// The connection is gone.
    fn lose(&mut self);
}

/// A connection's kind.
pub(crate) enum Kind {
    /// Accepted; waiting for the bytes (or the TLS handshake) that choose.
    Pending(Pending),
    Http(Box<Http1>),
    Ws(Box<WsKind>),
}

impl Kind {
    pub fn protocol(&mut self) -> &mut dyn Protocol {
        match self {
            Kind::Pending(p) => p,
            Kind::Http(h) => h.as_mut(),
            Kind::Ws(w) => w.as_mut(),
        }
    }

    pub fn protocol_ref(&self) -> &dyn Protocol {
        match self {
            Kind::Pending(p) => p,
            Kind::Http(h) => h.as_ref(),
            Kind::Ws(w) => w.as_ref(),
        }
    }
}

/// Before the kind is chosen: the start of an HTTP/2 preface held back,
/// and the request-head deadline that runs from accept (so it bounds a TLS
/// handshake and the request after it together).
pub(crate) struct Pending {
    pub held: Vec<u8>,
    pub deadline: f64,
}

/// What the first bytes say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// Not HTTP/2's preface: HTTP/1.1.
    Http1,
    /// The HTTP/2 preface.
    H2,
    /// A prefix of the preface so far: wait for more.
    Undecided,
}

/// Choose by the first bytes (`held` then `data`).
pub(crate) fn sniff(held: &[u8], data: &[u8]) -> Sniffed {
    let have = held.len() + data.len();
    let n = have.min(H2_PREFACE.len());
    let matches = held
        .iter()
        .chain(data)
        .take(n)
        .zip(H2_PREFACE)
        .all(|(a, b)| a == b);
    match (matches, have >= H2_PREFACE.len()) {
        (false, _) => Sniffed::Http1,
        (true, true) => Sniffed::H2,
        (true, false) => Sniffed::Undecided,
    }
}

impl Protocol for Pending {
    fn receive(&mut self, data: &[u8], _now: f64) {
        self.held.extend_from_slice(data);
    }

    fn receive_eof(&mut self) {}

    fn output(&mut self) -> Option<&mut Vec<u8>> {
        None
    }

    fn wants_read(&self, _output_paused: bool) -> bool {
        true
    }

    fn finished(&self) -> bool {
        false
    }

    fn deadline(&self) -> Option<f64> {
        Some(self.deadline)
    }

    fn on_timer(&mut self, now: f64) -> Due {
        if now >= self.deadline {
            Due::Lose(Timeout::RequestHead, "request head timeout")
        } else {
            Due::Nothing
        }
    }

    fn drain(&mut self, keep_idle: bool, _buffered: bool, _now: f64) -> Drained {
        if keep_idle {
            Drained::AfterCurrent
        } else {
            Drained::Lose
        }
    }

    fn lose(&mut self) {
        self.held = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preface_is_told_from_http1_by_its_bytes() {
        assert_eq!(sniff(b"", b"GET / HTTP/1.1\r\n"), Sniffed::Http1);
        assert_eq!(sniff(b"", b"P"), Sniffed::Undecided);
        assert_eq!(sniff(b"PRI * HT", b"TP/2.0\r\n"), Sniffed::Undecided);
        assert_eq!(sniff(b"PRI", b"NT / HTTP/1.1"), Sniffed::Http1);
        assert_eq!(sniff(b"", H2_PREFACE), Sniffed::H2);
        assert_eq!(sniff(&H2_PREFACE[..5], &H2_PREFACE[5..]), Sniffed::H2);
        assert_eq!(sniff(b"", b"PUT / HTTP/1.1\r\n"), Sniffed::Http1);
    }
}
