//! The request parser: a state machine over the caller's bytes that yields a
//! head, body pieces and an end for each request, one event per call.
//!
//! ```text
//!   ┌──────┐   Head(h)    ┌──────────────────┐   Body(range)…, then End
//!   │ Head │ ───────────▶ │ EmptyBody        │ ─────────────────────────┐
//!   └──────┘              │ Length(left)     │                          │
//!      ▲                  │ Chunked(decoder) │                          │
//!      │                  └──────────────────┘                          │
//!      └───────────── next request (pipelined bytes may follow) ────────┘
//!
//!   any state ── Err ──▶ Failed: poisoned, every later call returns the error
//! ```

use std::ops::Range;

use crate::chunked::{ChunkedDecoder, Step};
use crate::error::ParseError;
use crate::fields::{self, FieldScan, SectionLimits};
use crate::head::{BodyFraming, RequestHead};
use crate::limits::{Limits, MAX_LEADING_EMPTY_LINES};
use crate::request_line::{self, RequestLine};
use crate::semantics;

/// Heads are stored with u32 offsets; a configured limit above this is
/// capped to it.
const MAX_HEAD_LEN: usize = u32::MAX as usize;

/// What a call to [`RequestParser::parse`] produced.
#[derive(Debug)]
pub enum Event {
    /// A complete, validated request head.
    Head(RequestHead),
    /// De-chunked body bytes, at `input[range]` of the call that returned it.
    Body(Range<usize>),
    /// The request (body, trailers and final CRLF included) is complete.
    End,
}

#[derive(Debug)]
enum State {
    Head(HeadScan),
    /// A head with an empty body was returned; End is next.
    EmptyBody,
    /// Content-Length body with this many bytes left.
    Length(u64),
    Chunked(ChunkedDecoder),
    /// Poisoned: after an error the next request's start is unknowable.
    Failed(ParseError),
}

/// A sans-IO HTTP/1.x request parser. See the crate docs for the calling
/// convention.
#[derive(Debug)]
pub struct RequestParser {
    limits: Limits,
    state: State,
    body_received: u64,
}

impl Default for RequestParser {
    fn default() -> Self {
        RequestParser::new(Limits::default())
    }
}

impl RequestParser {
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            state: State::Head(HeadScan::default()),
            body_received: 0,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parse from `input`: all unconsumed bytes the caller holds, starting
    /// where the last call's `consumed` ended (keep unconsumed bytes, append
    /// new ones, call again).
    ///
    /// Returns `(consumed, event)`; drop `consumed` bytes from the front of
    /// your buffer after handling the event.
    /// * `None`: more input is needed (`consumed` may still be > 0, e.g.
    ///   after a chunk-size line or leading empty lines). Calling again with
    ///   the same input returns `(0, None)`.
    /// * `Head`: `consumed` covers the head. For [`BodyFraming::Empty`] the
    ///   `End` comes from the **next** call, which needs no new input.
    /// * `Body(range)`: de-chunked body bytes at `input[range]`; `consumed`
    ///   is at least `range.end`. After the last body bytes of a
    ///   Content-Length body, `End` comes from the next call (no input needed).
    /// * `End`: the request is complete; the parser is ready for the next
    ///   request head (pipelined bytes may already follow in `input`).
    ///
    /// After an `Err` the parser is poisoned: every later call returns the
    /// same error. Respond with [`ParseError::status`] and close.
    pub fn parse(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ParseError> {
        let result = match &mut self.state {
            State::Failed(err) => return Err(err.clone()),
            State::Head(scan) => match scan.advance(input, &self.limits) {
                Ok((n, Some(head))) => {
                    self.body_received = 0;
                    self.state = match head.body {
                        BodyFraming::Empty => State::EmptyBody,
                        BodyFraming::Length(len) => State::Length(len),
                        BodyFraming::Chunked => State::Chunked(ChunkedDecoder::new()),
                    };
                    Ok((n, Some(Event::Head(head))))
                }
                Ok((n, None)) => Ok((n, None)),
                Err(err) => Err(err),
            },
            State::EmptyBody => {
                self.state = State::Head(HeadScan::default());
                Ok((0, Some(Event::End)))
            }
            State::Length(0) => {
                self.state = State::Head(HeadScan::default());
                Ok((0, Some(Event::End)))
            }
            State::Length(left) => {
                if input.is_empty() {
                    Ok((0, None))
                } else {
                    let n = usize::try_from(*left).map_or(input.len(), |l| l.min(input.len()));
                    *left -= n as u64;
                    self.body_received += n as u64;
                    Ok((n, Some(Event::Body(0..n))))
                }
            }
            State::Chunked(decoder) => {
                match decoder.decode(input, &mut self.body_received, &self.limits) {
                    Ok((n, Step::Data(range))) => Ok((n, Some(Event::Body(range)))),
                    Ok((n, Step::NeedMore)) => Ok((n, None)),
                    Ok((n, Step::End)) => {
                        self.state = State::Head(HeadScan::default());
                        Ok((n, Some(Event::End)))
                    }
                    Err(err) => Err(err),
                }
            }
        };
        if let Err(err) = &result {
            self.state = State::Failed(err.clone());
        }
        result
    }

    /// A head was returned and its `End` not yet.
    pub fn in_body(&self) -> bool {
        matches!(
            self.state,
            State::EmptyBody | State::Length(_) | State::Chunked(_)
        )
    }

    /// Between requests, and the last call saw no byte of a next one (not
    /// even a leading empty line). A connection that is idle can be closed
    /// without cutting a request short.
    pub fn is_idle(&self) -> bool {
        matches!(&self.state, State::Head(scan) if scan.is_pristine())
    }

    /// De-chunked body bytes of the current (or just ended) request so far.
    pub fn body_received(&self) -> u64 {
        self.body_received
    }

    /// The error the parser is poisoned with, if any.
    pub fn error(&self) -> Option<&ParseError> {
        match &self.state {
            State::Failed(err) => Some(err),
            _ => None,
        }
    }
}

/// Progress on a head across calls. Offsets are from the head's first byte
/// (after skipped empty lines), which stays at the start of the input.
#[derive(Debug, Default)]
struct HeadScan {
    /// Whether any byte of this head (or a leading empty line) was seen.
    seen: bool,
    empty_lines: usize,
    /// Bytes of the request line known to hold no LF.
    searched: usize,
    /// Whether the method prefix was already fully validated.
    method_done: bool,
    /// The parsed request line and where the field lines start.
    line: Option<(RequestLine, usize)>,
    fields: FieldScan,
}

impl HeadScan {
    fn is_pristine(&self) -> bool {
        !self.seen
    }

    fn advance(
        &mut self,
        input: &[u8],
        limits: &Limits,
    ) -> Result<(usize, Option<RequestHead>), ParseError> {
        self.seen |= !input.is_empty();
        let mut start = 0;
        if self.line.is_none() && self.searched == 0 {
            // RFC 9112 §2.2: ignore (a bounded number of) empty lines before
            // the request line.
            loop {
                match &input[start..] {
                    [b'\r', b'\n', ..] => {
                        self.empty_lines += 1;
                        if self.empty_lines > MAX_LEADING_EMPTY_LINES {
                            return Err(ParseError::TooManyEmptyLines);
                        }
                        start += 2;
                    }
                    [b'\r'] => return Ok((start, None)),
                    _ => break,
                }
            }
        }
        let head = &input[start..];
        let fields_start = match self.line {
            Some((_, fields_start)) => fields_start,
            None => match self.request_line(head, limits)? {
                Some(fields_start) => fields_start,
                None => return Ok((start, None)),
            },
        };
        let section = SectionLimits {
            max_bytes: limits.max_header_bytes.min(MAX_HEAD_LEN),
            max_lines: limits.max_headers,
            too_large: ParseError::HeadTooLarge,
        };
        let Some(end) = self.fields.advance(head, &section)? else {
            return Ok((start, None));
        };
        let Some((line, _)) = self.line else {
            return Ok((start, None));
        };
        let head = build_head(
            &head[..end],
            line,
            fields_start,
            self.fields.lines(),
            limits,
        )?;
        *self = HeadScan::default();
        Ok((start + end, Some(head)))
    }

    /// Find and parse the request line; `Some(offset of the field lines)`.
    fn request_line(&mut self, head: &[u8], limits: &Limits) -> Result<Option<usize>, ParseError> {
        let max_line = limits.max_request_line;
        let window = head.len().min(max_line.saturating_add(2));
        if self.searched > window {
            self.searched = 0; // caller broke the contract; rescan
        }
        let Some(lf) = head[self.searched..window].iter().position(|&b| b == b'\n') else {
            if !self.method_done {
                // Only the new bytes (plus a CR that was last before, and
                // may now turn out bare): the older ones passed already.
                let from = self.searched.saturating_sub(1);
                self.method_done = request_line::check_partial(&head[from..window])?;
            }
            // RFC 9112 §3: a server that receives a request-target longer
            // than it wishes to parse MUST respond 414; decided as soon as
            // max+2 bytes hold no line end, so a client cannot make us wait.
            if window >= max_line.saturating_add(2) {
                return Err(ParseError::RequestLineTooLong);
            }
            if head.len() > limits.max_header_bytes {
                return Err(ParseError::HeadTooLarge);
            }
            self.searched = window;
            return Ok(None);
        };
        let lf = self.searched + lf;
        // Method first, as on an incomplete line, so the error does not
        // depend on how the bytes were split.
        request_line::check_partial(&head[..lf])?;
        // RFC 9112 §2.2: CRLF only (see fields::FieldScan).
        if lf == 0 || head[lf - 1] != b'\r' {
            return Err(ParseError::BareLf);
        }
        let line = &head[..lf - 1];
        if line.len() > max_line {
            return Err(ParseError::RequestLineTooLong);
        }
        let parsed = request_line::parse(line)?;
        self.line = Some((parsed, lf + 1));
        self.fields = FieldScan::starting_at(lf + 1);
        Ok(Some(lf + 1))
    }
}

/// Copy a complete head, parse its fields, lower-case the names and decide.
fn build_head(
    head: &[u8],
    line: RequestLine,
    fields_start: usize,
    lines: usize,
    limits: &Limits,
) -> Result<RequestHead, ParseError> {
    let mut buf: Box<[u8]> = head.into();
    let section = buf.get(fields_start..).unwrap_or_default();
    let fields = fields::parse(section, lines, fields_start)?;
    for field in &fields {
        if let Some(name) = buf.get_mut(field.name.range()) {
            name.make_ascii_lowercase();
        }
    }
    let decisions = semantics::decide(line.version, &buf, &fields, limits)?;
    Ok(RequestHead {
        version: line.version,
        body: decisions.body,
        keep_alive: decisions.keep_alive,
        expect_continue: decisions.expect_continue,
        upgrade: decisions.upgrade,
        buf,
        method: line.method,
        target: line.target,
        path: line.path,
        query: line.query,
        fields,
    })
}
