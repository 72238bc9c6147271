//! The receive path: frames decoded from the peer's bytes, data frames
//! assembled into messages (unmasked once, inflated in bounded slices,
//! UTF-8 checked as they grow), control frames answered.

use std::borrow::Cow;

use super::deflate::InflateError;
use super::frame::{self, Header, MAX_CONTROL_PAYLOAD, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT};
use super::{fail, put_close, utf8, Connection, Fail, Message, MessageKind, State, BAD_UTF8};
use crate::close::CloseCode;

const TOO_BIG_FRAME: Fail = fail(CloseCode::TOO_BIG, "frame too big");
const TOO_BIG_MESSAGE: Fail = fail(CloseCode::TOO_BIG, "message too big");

/// Space reserved ahead for a data frame's payload before it has arrived
/// (more is reserved only as bytes come): a declared length costs no
/// memory the peer has not sent.
const RESERVE_AHEAD: usize = 64 * 1024;
/// Compressed payload is unmasked in pieces of this size on the stack.
const UNMASK_CHUNK: usize = 4096;

/// Where the peer's input ended, waiting for the queue to be taken.
#[derive(Clone, Debug)]
pub(super) enum Pending {
    Fail(Fail),
    PeerClose(Option<CloseCode>, String),
}

/// The data frame whose payload is arriving.
#[derive(Clone, Copy, Debug)]
pub(super) struct Payload {
    remaining: u64,
    mask: [u8; 4],
    /// Payload bytes of this frame already seen (the mask phase).
    offset: usize,
    fin: bool,
}

/// The message being assembled.
#[derive(Clone, Copy, Debug)]
pub(super) struct Partial {
    kind: MessageKind,
    compressed: bool,
}

impl Connection {
    /// Decode frames from `input`; returns the bytes consumed. Stops at an
    /// incomplete header or control frame, when the queue is full (at a
    /// frame boundary), or when the session closes (all input consumed).
    pub(super) fn decode(&mut self, input: &[u8]) -> usize {
        let mut pos = 0;
        loop {
            if self.state == State::Closed || self.pending.is_some() {
                return input.len();
            }
            if let Some(p) = self.payload {
                let avail = input.len() - pos;
                if avail == 0 {
                    return pos;
                }
                let n = usize::try_from(p.remaining).map_or(avail, |r| r.min(avail));
                if let Err(f) = self.data(&input[pos..pos + n], p) {
                    self.stop(Pending::Fail(f));
                    return input.len();
                }
                pos += n;
                continue;
            }
            if self.queue_full() {
                return pos;
            }
            let rest = &input[pos..];
            let header = match frame::parse_header(rest) {
                Ok(Some(h)) => h,
                Ok(None) => return pos,
                Err(f) => {
                    self.stop(Pending::Fail(f));
                    return input.len();
                }
            };
            if header.is_control() {
                // At most 125 bytes: wait for the whole frame.
                let len = header.len as usize;
                let Some(wire) = rest.get(header.size..header.size + len) else {
                    return pos;
                };
                let mut payload = [0u8; MAX_CONTROL_PAYLOAD];
                payload[..len].copy_from_slice(wire);
                frame::apply_mask(&mut payload[..len], header.mask, 0);
                pos += header.size + len;
                if let Err(f) = self.control(&header, &payload[..len]) {
                    self.stop(Pending::Fail(f));
                    return input.len();
                }
                continue;
            }
            let avail = (rest.len() - header.size) as u64;
            if let Err(f) = self.start_data(&header, avail) {
                self.stop(Pending::Fail(f));
                return input.len();
            }
            pos += header.size;
            let p = Payload {
                remaining: header.len,
                mask: header.mask,
                offset: 0,
                fin: header.fin,
            };
            if header.len == 0 {
                if let Err(f) = self.data(&[], p) {
                    self.stop(Pending::Fail(f));
                    return input.len();
                }
            } else {
                self.payload = Some(p);
            }
        }
    }

    /// The rules a data frame header must meet in this session.
    fn start_data(&mut self, h: &Header, avail: u64) -> Result<(), Fail> {
        let protocol = |reason| fail(CloseCode::PROTOCOL_ERROR, reason);
        if h.opcode == OP_CONTINUATION {
            if self.partial.is_none() {
                return Err(protocol("continuation frame without a message"));
            }
            if h.rsv1 {
                return Err(protocol("RSV1 set on a continuation frame"));
            }
        } else {
            if self.partial.is_some() {
                return Err(protocol("new data frame inside a fragmented message"));
            }
            if h.rsv1 && self.deflate.is_none() {
                return Err(protocol("RSV1 set without permessage-deflate"));
            }
            let kind = if h.opcode == OP_TEXT {
                MessageKind::Text
            } else {
                MessageKind::Binary
            };
            self.partial = Some(Partial {
                kind,
                compressed: h.rsv1,
            });
        }
        if h.len > self.limits.max_frame as u64 {
            return Err(TOO_BIG_FRAME);
        }
        let compressed = self.partial.is_some_and(|p| p.compressed);
        if !compressed {
            if h.len > self.limits.max_message.saturating_sub(self.msg.len()) as u64 {
                return Err(TOO_BIG_MESSAGE);
            }
            // Never much more than has arrived. A first frame gets exactly
            // its size when it is all here (one allocation for a
            // single-frame message); continuations grow the message
            // amortized, or many small fragments would copy it each time.
            let ahead = h.len.min(avail.max(RESERVE_AHEAD as u64)) as usize;
            if self.msg.is_empty() {
                self.msg.reserve_exact(ahead);
            } else {
                self.msg.reserve(ahead);
            }
        }
        Ok(())
    }

    /// Payload bytes of the current data frame (`chunk` is at most what
    /// remains of it); completes the frame and the message.
    fn data(&mut self, chunk: &[u8], mut p: Payload) -> Result<(), Fail> {
        let Some(partial) = self.partial else {
            return Ok(());
        };
        let start = self.msg.len();
        if partial.compressed {
            let Some(deflate) = self.deflate.as_mut() else {
                return Ok(());
            };
            // Text is validated inside, slice by slice, so the first bad
            // byte is found before a later size or stream error.
            let mut text = (partial.kind == MessageKind::Text).then_some(&mut self.utf8_valid);
            let mut scratch = [0u8; UNMASK_CHUNK];
            let mut offset = p.offset;
            for piece in chunk.chunks(UNMASK_CHUNK) {
                let buf = &mut scratch[..piece.len()];
                buf.copy_from_slice(piece);
                frame::apply_mask(buf, p.mask, offset);
                offset += piece.len();
                deflate
                    .inflate(
                        buf,
                        &mut self.msg,
                        self.limits.max_message,
                        text.as_deref_mut(),
                    )
                    .map_err(inflate_fail)?;
            }
            if p.fin && p.remaining == chunk.len() as u64 {
                deflate
                    .finish_inflate(&mut self.msg, self.limits.max_message, text)
                    .map_err(inflate_fail)?;
            }
        } else {
            self.msg.extend_from_slice(chunk);
            frame::apply_mask(&mut self.msg[start..], p.mask, p.offset);
        }
        p.offset += chunk.len();
        p.remaining -= chunk.len() as u64;
        let frame_done = p.remaining == 0;
        let message_done = frame_done && p.fin;
        if partial.kind == MessageKind::Text {
            if partial.compressed {
                // Validated while inflating.
            } else if message_done && self.utf8_valid == 0 {
                if !utf8::whole(&self.msg) {
                    return Err(BAD_UTF8);
                }
                self.utf8_valid = self.msg.len();
            } else if !utf8::advance(&self.msg, &mut self.utf8_valid) {
                return Err(BAD_UTF8);
            }
            if message_done && self.utf8_valid != self.msg.len() {
                return Err(BAD_UTF8);
            }
        }
        self.payload = if frame_done { None } else { Some(p) };
        if message_done {
            self.partial = None;
            self.utf8_valid = 0;
            let data = std::mem::take(&mut self.msg);
            if self.state == State::Open {
                self.queued_bytes += data.len();
                self.queue.push_back(Message {
                    kind: partial.kind,
                    data,
                });
            }
            // Closing: we said goodbye; nobody will read it.
        }
        Ok(())
    }

    fn control(&mut self, h: &Header, payload: &[u8]) -> Result<(), Fail> {
        if h.rsv1 {
            return Err(fail(
                CloseCode::PROTOCOL_ERROR,
                "RSV1 set on a control frame",
            ));
        }
        match h.opcode {
            OP_PING => {
                if self.state == State::Open {
                    frame::put_frame(&mut self.output, OP_PONG, payload);
                }
            }
            OP_PONG => {
                // Unsolicited pongs are allowed (a heartbeat) and ignored.
                if self.ping.is_some_and(|(sent, _)| sent[..] == *payload) {
                    self.ping = None;
                }
            }
            _ => self.peer_close(payload)?,
        }
        Ok(())
    }

    /// The peer's close frame (RFC 6455 §5.5.1, §7.4).
    fn peer_close(&mut self, payload: &[u8]) -> Result<(), Fail> {
        let (code, reason) = match payload {
            [] => (None, ""),
            [_] => {
                return Err(fail(
                    CloseCode::PROTOCOL_ERROR,
                    "close frame with a 1-byte payload",
                ))
            }
            [hi, lo, reason @ ..] => {
                let code = CloseCode(u16::from_be_bytes([*hi, *lo]));
                if !code.is_sendable() {
                    return Err(fail(CloseCode::PROTOCOL_ERROR, "invalid close code"));
                }
                let reason = simdutf8::basic::from_utf8(reason)
                    .map_err(|_| fail(CloseCode::INVALID_DATA, "close reason is not UTF-8"))?;
                (Some(code), reason)
            }
        };
        self.stop(Pending::PeerClose(code, reason.to_string()));
        Ok(())
    }

    /// Input ends here: a close or a failure. Messages decoded before it
    /// are still the application's to take and answer, so it takes effect
    /// (our close frame goes out) only once they have been taken, when
    /// `next_message` finds the queue empty; at once if it is empty now,
    /// or if we are closing (nothing more will be sent anyway).
    pub(super) fn stop(&mut self, p: Pending) {
        self.held = Vec::new();
        self.held_pos = 0;
        self.drop_partial();
        if self.queue.is_empty() || self.state != State::Open {
            self.apply(p);
        } else {
            self.pending = Some(p);
        }
    }

    pub(super) fn apply(&mut self, p: Pending) {
        match p {
            Pending::Fail(f) => self.fail(f),
            Pending::PeerClose(code, reason) => {
                if self.state == State::Open {
                    // Echo the code (not the reason), then we are done.
                    put_close(&mut self.output, code, "");
                }
                self.finish(code.unwrap_or(CloseCode::NO_STATUS), Cow::Owned(reason));
            }
        }
    }
}

fn inflate_fail(e: InflateError) -> Fail {
    match e {
        InflateError::TooBig => TOO_BIG_MESSAGE,
        InflateError::BadUtf8 => BAD_UTF8,
        InflateError::Corrupt => fail(CloseCode::PROTOCOL_ERROR, "invalid compressed data"),
    }
}
