//! A WebSocket session after the `101`: the state machine.
//!
//! ```text
//!  socket bytes ─► receive(bytes) ─► next_message() ─► Message (text is UTF-8)
//!  app sends    ─► send(kind, data, out) / close(code, reason, now, out)
//!  the clock    ─► next_deadline(), on_timer(now) ─► TimerAction
//!  own output   ─► take_output(out)  (pongs, the close echo, pings, failures)
//! ```
//!
//! Input is decoded straight from the caller's slice; only a partial header
//! or control frame, or input that waits for room in the receive queue, is
//! copied into `held`. A data frame's payload is unmasked into the
//! message's own `Vec` as it arrives, so a message is copied once.
//!
//! Protocol errors fail fast: decoding stops at the first offending byte,
//! the session sends its close frame and is [`State::Closed`] without
//! waiting for the peer's answer (RFC 6455 §7.1.7: once failing, an
//! endpoint processes no more data). Messages decoded *before* the error
//! (or before the peer's close frame) are still delivered and may still be
//! answered: the close goes out when [`Connection::next_message`] finds
//! the queue empty, so an echo of them precedes it.

mod deflate;
mod frame;
mod receive;
mod utf8;

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::close::CloseCode;
use crate::config::Config;
use crate::handshake::DeflateParams;
use deflate::Deflate;
use frame::{MAX_CONTROL_PAYLOAD, OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT};
use receive::{Partial, Payload, Pending};

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

/// Why the session fails: the close code and reason it sends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fail {
    pub code: CloseCode,
    pub reason: &'static str,
}

const fn fail(code: CloseCode, reason: &'static str) -> Fail {
    Fail { code, reason }
}

const BAD_UTF8: Fail = fail(CloseCode::INVALID_DATA, "invalid UTF-8 in a text message");
const PING_TIMEOUT: Fail = fail(CloseCode::INTERNAL_ERROR, "keepalive ping timeout");

/// Held input larger than this is freed, not kept for reuse, once empty.
const KEEP_HELD: usize = 16 * 1024;
/// A message buffer larger than this is freed, not reused
/// ([`Connection::recycle`]).
pub const RECYCLE_MAX: usize = 512 * 1024;

/// The limits a session reads on its hot path, copied from [`Config`].
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_message: usize,
    max_frame: usize,
    max_queue: usize,
    max_queue_bytes: usize,
    ping_interval: Option<f64>,
    ping_timeout: Option<f64>,
    close_timeout: f64,
}

/// One server-side session.
pub struct Connection {
    limits: Limits,
    state: State,
    /// Input not yet decoded, from `held_pos` on.
    held: Vec<u8>,
    held_pos: usize,
    /// The data frame in progress, if its header has been read.
    payload: Option<Payload>,
    partial: Option<Partial>,
    /// A close or failure found in the input, waiting for the messages
    /// before it to be taken.
    pending: Option<Pending>,
    /// The message being assembled (decompressed).
    msg: Vec<u8>,
    /// `msg[..utf8_valid]` is known valid UTF-8 (text messages).
    utf8_valid: usize,
    queue: VecDeque<Message>,
    queued_bytes: usize,
    output: Vec<u8>,
    deflate: Option<Deflate>,
    eof: bool,
    status: Option<(CloseCode, Cow<'static, str>)>,
    next_ping: Option<f64>,
    /// The payload of our unanswered ping and when it times out.
    ping: Option<([u8; 4], Option<f64>)>,
    pings_sent: u32,
    close_deadline: Option<f64>,
}

impl Connection {
    /// A session with `config`'s limits; `deflate` as [`crate::Accept`]
    /// negotiated. Deflate state is allocated at the first compressed
    /// message, not here.
    pub fn new(config: &Config, deflate: Option<DeflateParams>, now: f64) -> Self {
        let limits = Limits {
            max_message: config.max_message_size,
            max_frame: config.max_frame_size,
            max_queue: config.max_queue.max(1),
            max_queue_bytes: config.max_queue_bytes.max(1),
            ping_interval: config.ping_interval.filter(|i| *i > 0.0),
            ping_timeout: config.ping_timeout,
            close_timeout: config.close_timeout,
        };
        Connection {
            limits,
            state: State::Open,
            held: Vec::new(),
            held_pos: 0,
            payload: None,
            partial: None,
            pending: None,
            msg: Vec::new(),
            utf8_valid: 0,
            queue: VecDeque::new(),
            queued_bytes: 0,
            output: Vec::new(),
            deflate: deflate.map(Deflate::new),
            eof: false,
            status: None,
            next_ping: limits.ping_interval.map(|i| now + i),
            ping: None,
            pings_sent: 0,
            close_deadline: None,
        }
    }

    /// Wire bytes from the peer (the handshake's leftovers first). Decodes
    /// as far as the receive queue allows and keeps the rest; answers pings
    /// and close frames and fails on protocol errors, queuing output.
    pub fn receive(&mut self, bytes: &[u8], now: f64) {
        let _ = now;
        if self.state == State::Closed || self.pending.is_some() || bytes.is_empty() {
            return;
        }
        if self.held_pos == self.held.len() {
            // Nothing held: decode from the caller's slice, keep the rest.
            let n = self.decode(bytes);
            if n < bytes.len() && self.state != State::Closed {
                self.held.clear();
                self.held_pos = 0;
                self.held.extend_from_slice(&bytes[n..]);
            }
        } else {
            self.held.extend_from_slice(bytes);
            self.decode_held();
        }
        self.check_eof();
    }

    /// The peer's EOF (FIN, or a reset). Input already received is still
    /// decoded (once the queue has room); then the session is closed, with
    /// 1006 unless a close frame came first.
    pub fn receive_eof(&mut self) {
        self.eof = true;
        self.check_eof();
    }

    /// The next complete message, oldest first. Taking one makes room in
    /// the queue, so held input is decoded; and once the queue is empty, a
    /// close or failure found in the input takes effect (`None` returned,
    /// close frame queued). Check [`Connection::state`] and
    /// [`Connection::take_output`] afterwards.
    pub fn next_message(&mut self) -> Option<Message> {
        let Some(message) = self.queue.pop_front() else {
            if let Some(p) = self.pending.take() {
                self.apply(p);
            }
            return None;
        };
        self.queued_bytes -= message.data.len();
        if self.held_pos < self.held.len() && self.state != State::Closed {
            self.decode_held();
        }
        self.check_eof();
        Some(message)
    }

    /// A message waits for [`Connection::next_message`].
    pub fn has_message(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Should the caller read from the transport (the queue has room and
    /// the peer may still send)?
    pub fn wants_read(&self) -> bool {
        self.state != State::Closed && self.pending.is_none() && !self.eof && !self.queue_full()
    }

    /// Encode a data message (compressed if negotiated) into `out`.
    pub fn send(
        &mut self,
        kind: MessageKind,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        if self.state != State::Open {
            return Err(SendError::Closed);
        }
        self.take_output(out);
        let opcode = match kind {
            MessageKind::Text => OP_TEXT,
            MessageKind::Binary => OP_BINARY,
        };
        if let Some(deflate) = self.deflate.as_mut().filter(|d| d.compresses()) {
            // Compress behind room for the longest header, then move the
            // payload up to the header's real length.
            let start = out.len();
            out.resize(start + frame::MAX_SERVER_HEADER, 0);
            if deflate.compress(data, out) {
                let len = out.len() - start - frame::MAX_SERVER_HEADER;
                let mut header = [0u8; frame::MAX_SERVER_HEADER];
                let n = frame::encode_header(&mut header, true, true, opcode, len);
                out[start..start + n].copy_from_slice(&header[..n]);
                out.copy_within(start + frame::MAX_SERVER_HEADER.., start + n);
                out.truncate(start + n + len);
                return Ok(());
            }
            out.truncate(start);
        }
        frame::put_frame(out, opcode, data);
        Ok(())
    }

    /// [`Connection::send`] without the payload copy: for a message sent
    /// uncompressed, only its frame header goes into `out` (behind the
    /// session's own output) and the caller writes the `len` payload bytes
    /// right after `out` (a vectored write). `Ok(false)` when the session
    /// compresses the message: use [`Connection::send`].
    pub fn send_header(
        &mut self,
        kind: MessageKind,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool, SendError> {
        if self.state != State::Open {
            return Err(SendError::Closed);
        }
        if self.deflate.as_ref().is_some_and(|d| d.compresses()) {
            return Ok(false);
        }
        self.take_output(out);
        let opcode = match kind {
            MessageKind::Text => OP_TEXT,
            MessageKind::Binary => OP_BINARY,
        };
        frame::put_header(out, true, false, opcode, len);
        Ok(true)
    }

    /// Hand back a taken message's buffer once its bytes are copied out:
    /// the next message is assembled in it instead of a fresh allocation
    /// (a large one costs page faults each time). Kept only up to
    /// [`RECYCLE_MAX`] and only while no message is being assembled.
    pub fn recycle(&mut self, mut data: Vec<u8>) {
        if self.msg.capacity() == 0
            && self.partial.is_none()
            && data.capacity() <= RECYCLE_MAX
            && self.state != State::Closed
        {
            data.clear();
            self.msg = data;
        }
    }

    /// Start the closing handshake with `code` and `reason` (a close frame
    /// into `out`); the session is then [`State::Closing`].
    pub fn close(
        &mut self,
        code: CloseCode,
        reason: &str,
        now: f64,
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        if self.state != State::Open {
            return Err(SendError::Closed);
        }
        if !code.is_sendable() {
            return Err(SendError::InvalidCloseCode(code.0));
        }
        if reason.len() > MAX_CONTROL_PAYLOAD - 2 {
            return Err(SendError::ReasonTooLong);
        }
        self.take_output(out);
        put_close(out, Some(code), reason);
        self.state = State::Closing;
        self.close_deadline = Some(now + self.limits.close_timeout);
        self.ping = None;
        if let Some(p) = self.pending.take() {
            // The peer's close (or its error) already came: done.
            self.apply(p);
        }
        // Messages after our close are dropped, and a full queue must not
        // keep the peer's close unread: the queue no longer gates decoding
        // (`queue_full`), so decode what it held back.
        if self.state == State::Closing && self.held_pos < self.held.len() {
            self.decode_held();
            self.check_eof();
        }
        // A message still arriving is decoded (its frames must be read
        // through to find the peer's close) and then dropped.
        Ok(())
    }

    /// Output the session produced on its own (pongs, a close echo, a
    /// failure's close frame, pings).
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        if self.output.is_empty() {
            return;
        }
        if out.is_empty() {
            std::mem::swap(out, &mut self.output);
        } else {
            out.extend_from_slice(&self.output);
            self.output.clear();
        }
    }

    /// Is there output for [`Connection::take_output`]?
    pub fn has_output(&self) -> bool {
        !self.output.is_empty()
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// How the session ended, for the application (`websocket.disconnect`):
    /// the peer's code and reason (1005 when its close had none), the code
    /// we failed with, or 1006 after an EOF without a close. `None` while
    /// open.
    pub fn close_status(&self) -> Option<(CloseCode, &str)> {
        self.status
            .as_ref()
            .map(|(code, reason)| (*code, reason.as_ref()))
    }

    /// Whether permessage-deflate state has been allocated (inflater,
    /// compressor): for tests and memory accounting.
    pub fn deflate_allocated(&self) -> (bool, bool) {
        self.deflate
            .as_ref()
            .map_or((false, false), Deflate::allocated)
    }

    /// When [`Connection::on_timer`] next has something to do.
    pub fn next_deadline(&self) -> Option<f64> {
        match self.state {
            // The session ends once the application takes its messages.
            State::Open if self.pending.is_some() => None,
            State::Open => {
                let pong = self.ping.and_then(|(_, deadline)| deadline);
                match (self.next_ping, pong) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            State::Closing => self.close_deadline,
            State::Closed => None,
        }
    }

    /// Pings, pong timeouts and the close timeout due by `now`.
    pub fn on_timer(&mut self, now: f64) -> TimerAction {
        match self.state {
            State::Closed => TimerAction::Nothing,
            State::Closing => {
                if self.close_deadline.is_some_and(|d| now >= d) {
                    self.finish(CloseCode::ABNORMAL, Cow::Borrowed(""));
                    TimerAction::Abort
                } else {
                    TimerAction::Nothing
                }
            }
            State::Open if self.pending.is_some() => TimerAction::Nothing,
            State::Open => {
                if self.ping.and_then(|(_, d)| d).is_some_and(|d| now >= d) {
                    self.fail(PING_TIMEOUT);
                    return TimerAction::Output;
                }
                match (self.next_ping, self.limits.ping_interval) {
                    (Some(due), Some(interval)) if now >= due => {
                        self.next_ping = Some(now + interval);
                        if self.ping.is_some() {
                            // The last one is still unanswered (no timeout).
                            return TimerAction::Nothing;
                        }
                        self.pings_sent = self.pings_sent.wrapping_add(1);
                        let payload = self.pings_sent.to_be_bytes();
                        frame::put_frame(&mut self.output, OP_PING, &payload);
                        self.ping = Some((payload, self.limits.ping_timeout.map(|t| now + t)));
                        TimerAction::Output
                    }
                    _ => TimerAction::Nothing,
                }
            }
        }
    }

    fn queue_full(&self) -> bool {
        // Once we sent our close, nothing more is queued: read on to the
        // peer's close.
        self.state == State::Open
            && (self.queue.len() >= self.limits.max_queue
                || self.queued_bytes >= self.limits.max_queue_bytes)
    }

    /// Decode what is held, then drop what was consumed (compacting only
    /// when most of the buffer is dead).
    fn decode_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        let n = self.decode(&held[self.held_pos..]);
        self.held = held;
        self.held_pos += n;
        if self.state == State::Closed {
            self.held = Vec::new();
            self.held_pos = 0;
        } else if self.held_pos == self.held.len() {
            if self.held.capacity() > KEEP_HELD {
                self.held = Vec::new();
            } else {
                self.held.clear();
            }
            self.held_pos = 0;
        } else if self.held_pos > KEEP_HELD && self.held_pos * 2 > self.held.len() {
            self.held.drain(..self.held_pos);
            self.held_pos = 0;
        }
    }

    /// After EOF, once nothing more can be decoded, the session is over.
    fn check_eof(&mut self) {
        if !self.eof || self.state == State::Closed || self.pending.is_some() {
            return;
        }
        let blocked = self.held_pos < self.held.len() && self.queue_full();
        if !blocked {
            self.finish(CloseCode::ABNORMAL, Cow::Borrowed(""));
        }
    }

    /// Fail the session: our close frame (unless one went out already),
    /// then closed.
    fn fail(&mut self, f: Fail) {
        if self.state == State::Open {
            put_close(&mut self.output, Some(f.code), f.reason);
        }
        self.finish(f.code, Cow::Borrowed(f.reason));
    }

    /// The session is over: record why and free what input held.
    fn finish(&mut self, code: CloseCode, reason: Cow<'static, str>) {
        self.state = State::Closed;
        if self.status.is_none() {
            self.status = Some((code, reason));
        }
        self.held = Vec::new();
        self.held_pos = 0;
        self.drop_partial();
        self.ping = None;
        self.next_ping = None;
        self.close_deadline = None;
    }

    fn drop_partial(&mut self) {
        self.payload = None;
        self.partial = None;
        self.msg = Vec::new();
        self.utf8_valid = 0;
    }
}

/// A close frame: the code (if any) and the reason.
fn put_close(out: &mut Vec<u8>, code: Option<CloseCode>, reason: &str) {
    let mut payload = [0u8; MAX_CONTROL_PAYLOAD];
    let len = match code {
        None => 0,
        Some(code) => {
            let reason = &reason.as_bytes()[..reason.len().min(MAX_CONTROL_PAYLOAD - 2)];
            payload[..2].copy_from_slice(&code.0.to_be_bytes());
            payload[2..2 + reason.len()].copy_from_slice(reason);
            2 + reason.len()
        }
    };
    frame::put_frame(out, OP_CLOSE, &payload[..len]);
}
