//! ferroloop's HTTP/1.1 server codec, sans-IO.
//!
//! ```text
//!        bytes read from a socket                  bytes to write to it
//!                  │                                         ▲
//!                  ▼                                         │
//!  ┌───────────────────────────────────┐   ┌───────────────────────────────────┐
//!  │ RequestParser::parse(&held)       │   │ ResponseEncoder::start/body/finish│
//!  │  → (consumed, Head | Body | End)  │   │  → appends to your Vec<u8>        │
//!  └───────────────────────────────────┘   └───────────────────────────────────┘
//!                  │                                         ▲
//!                  └──────────▶  your server and app  ───────┘
//! ```
//!
//! This crate does no I/O and owns no buffer of input: the caller reads
//! bytes however it likes (std, tokio, ferroloop's reactor, a fuzzer), keeps
//! the bytes the parser has not consumed, and calls again with those plus
//! whatever arrived. Responses are appended to a `Vec<u8>` the caller
//! writes out. So the codec can be tested, fuzzed and reused with any I/O.
//!
//! Parsing is strict (RFC 9110/9112), with no leniency switches: every
//! ambiguity that could let two parsers disagree on where a request ends —
//! Content-Length with Transfer-Encoding, bare CR or LF, obs-fold, odd chunk
//! sizes — is an error with its own [`ParseError`] variant and a status code
//! ([`ParseError::status`]). Every buffer the client controls is bounded by
//! [`Limits`].
//!
//! # Example
//!
//! ```
//! use loop_http::{Event, Limits, RequestInfo, RequestParser, ResponseEncoder};
//!
//! let mut parser = RequestParser::new(Limits::default());
//! // Two pipelined requests, arriving in awkward pieces.
//! let pieces: [&[u8]; 3] = [
//!     b"POST /echo?x=1 HTTP/1.1\r\nHost: a\r\nContent-Le",
//!     b"ngth: 5\r\n\r\nhel",
//!     b"loGET / HTTP/1.1\r\nHost: a\r\n\r\n",
//! ];
//! let mut held = Vec::new(); // bytes not yet consumed
//! let mut out = Vec::new(); // bytes to write
//! let mut body = Vec::new();
//! let mut info = None;
//! for piece in pieces {
//!     held.extend_from_slice(piece);
//!     loop {
//!         let (consumed, event) = parser.parse(&held).expect("valid requests");
//!         let Some(event) = event else {
//!             held.drain(..consumed);
//!             break; // wait for more bytes
//!         };
//!         match event {
//!             Event::Head(head) => {
//!                 info = Some(RequestInfo::of(&head));
//!                 body.clear();
//!             }
//!             Event::Body(range) => body.extend_from_slice(&held[range]),
//!             Event::End => {
//!                 let req = info.take().expect("a head came first");
//!                 let headers = [(&b"content-type"[..], &b"text/plain"[..])];
//!                 let mut enc =
//!                     ResponseEncoder::start(&mut out, req, 200, headers, false, None, None, &Default::default())
//!                         .expect("valid response");
//!                 enc.body(&mut out, &body).unwrap();
//!                 enc.finish(&mut out, []).unwrap();
//!             }
//!         }
//!         held.drain(..consumed);
//!     }
//! }
//! assert!(held.is_empty() && parser.is_idle());
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n\
//!      5\r\nhello\r\n0\r\n\r\n\
//!      HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n\
//!      0\r\n\r\n"
//! );
//! ```
//!
//! Above the codec, [`ServerConnection`] is the whole server connection as
//! a sans-IO state machine (pipelining, keep-alive, `100 Continue`, unread
//! bodies, deadlines, graceful close, the upgrade handoff): `loop-server`
//! runs it as its HTTP/1.1 protocol kind, under ferroloop's ASGI server
//! and the pure-Rust example server alike.

mod chunked;
pub mod connection;
mod date;
mod error;
mod fields;
mod head;
mod host;
mod limits;
mod parser;
mod request_line;
mod response;
mod semantics;
mod status;
mod syntax;

pub use connection::{
    BodyRead, ConnectionConfig, DrainAction, Exchange, Expired, FailOutcome, Phase, ResponsePart,
    SendError, ServerConnection, Step, TimerAction,
};
pub use date::DateCache;
pub use error::{ParseError, ResponseError};
pub use head::{BodyFraming, RequestHead, Version};
pub use limits::{Limits, MAX_LEADING_EMPTY_LINES};
pub use parser::{Event, RequestParser};
pub use response::{
    error_response, DefaultHeaders, RequestInfo, ResponseEncoder, CONTINUE_RESPONSE,
};
pub use status::reason_phrase;
