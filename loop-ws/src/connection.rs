//! A WebSocket session after the `101`: the state machine.

use crate::close::CloseCode;
use crate::config::Config;
use crate::handshake::DeflateParams;

/// Text or binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    Text,
    Binary,
}

/// A complete data message from the peer (reassembled, decompressed; text
/// is valid UTF-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub kind: MessageKind,
    pub data: Vec<u8>,
}

/// Where the session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Messages flow both ways.
    Open,
    /// We sent a close frame and wait for the peer's (bounded by
    /// `close_timeout`).
    Closing,
    /// The closing handshake completed or the session failed: once
    /// [`Connection::take_output`] is written, close the transport.
    Closed,
}

/// What a timer check asks of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerAction {
    Nothing,
    /// Output was queued (a ping, or a 1011 close after a pong timed out):
    /// take and write it.
    Output,
    /// The peer did not finish the closing handshake in time: drop the
    /// transport now.
    Abort,
}

/// Why a send was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the WebSocket is closing or closed")]
    Closed,
    #[error("close code {0} may not be sent")]
    InvalidCloseCode(u16),
    #[error("close reason is longer than 123 bytes")]
    ReasonTooLong,
}

/// One server-side session.
pub struct Connection {
    _private: (),
}

impl Connection {
    /// A session with `config`'s limits; `deflate` as [`crate::Accept`]
    /// negotiated. Deflate state is allocated at the first compressed
    /// message, not here.
    pub fn new(config: &Config, deflate: Option<DeflateParams>, now: f64) -> Self {
        let _ = (config, deflate, now);
        todo!("loop-ws: connection")
    }

    /// Wire bytes from the peer (the handshake's leftovers first). Decodes
    /// as far as the receive queue allows and keeps the rest; answers pings
    /// and close frames and fails on protocol errors, queuing output.
    pub fn receive(&mut self, bytes: &[u8], now: f64) {
        let _ = (bytes, now);
        todo!("loop-ws: connection")
    }

    /// The peer's EOF (FIN, or a reset).
    pub fn receive_eof(&mut self) {
        todo!("loop-ws: connection")
    }

    /// The next complete message, oldest first.
    pub fn next_message(&mut self) -> Option<Message> {
        todo!("loop-ws: connection")
    }

    /// Should the caller read from the transport (the queue has room and
    /// the peer may still send)?
    pub fn wants_read(&self) -> bool {
        todo!("loop-ws: connection")
    }

    /// Encode a data message (compressed if negotiated) into `out`.
    pub fn send(&mut self, kind: MessageKind, data: &[u8], out: &mut Vec<u8>) -> Result<(), SendError> {
        let _ = (kind, data, out);
        todo!("loop-ws: connection")
    }

    /// Start the closing handshake with `code` and `reason` (a close frame
    /// into `out`); the session is then [`State::Closing`].
    pub fn close(&mut self, code: CloseCode, reason: &str, now: f64, out: &mut Vec<u8>) -> Result<(), SendError> {
        let _ = (code, reason, now, out);
        todo!("loop-ws: connection")
    }

    /// Output the session produced on its own (pongs, a close echo, a
    /// failure's close frame, pings).
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        let _ = out;
        todo!("loop-ws: connection")
    }

    pub fn state(&self) -> State {
        todo!("loop-ws: connection")
    }

    /// How the session ended, for the application (`websocket.disconnect`):
    /// the peer's code and reason (1005 when its close had none), the code
    /// we failed with, or 1006 after an EOF without a close. `None` while
    /// open.
    pub fn close_status(&self) -> Option<(CloseCode, &str)> {
        todo!("loop-ws: connection")
    }

    /// When [`Connection::on_timer`] next has something to do.
    pub fn next_deadline(&self) -> Option<f64> {
        todo!("loop-ws: connection")
    }

    /// Pings, pong timeouts and the close timeout due by `now`.
    pub fn on_timer(&mut self, now: f64) -> TimerAction {
        let _ = now;
        todo!("loop-ws: connection")
    }
}
