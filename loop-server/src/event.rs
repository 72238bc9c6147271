//! What the driver hands its host: [`Event`]s for the application (taken
//! one at a time with nothing of the driver borrowed while the host acts on
//! one, so the host may call back into the driver from there), and
//! [`IoUpdate`]s for the host's reactor.
//!
//! The driver never calls the host. Every call into it records what
//! happened and returns; the host then takes the events and the updates.
//! So the application may answer a request from inside the call that
//! delivered it (an ASGI app's first step runs there) without re-entering
//! a borrowed driver.

use crate::id::{ConnId, ExchangeId, Token};
use crate::logs::Log;
use loop_core::Interest;
use loop_http::RequestHead;
use loop_transports::LayeredStream;
use std::os::fd::RawFd;

/// The host's per-connection and per-exchange state (the ASGI bridge's
/// Python objects; a Rust handler's own), which the driver keeps with the
/// connection and hands back when it closes, so the host drops it with
/// nothing borrowed.
pub trait App {
    /// Made with `Default` when a connection is accepted.
    type Conn: Default + Send + Sync;
    /// Given to [`Driver::begin`](crate::Driver::begin) with each request.
    type Exchange: Send + Sync;
}

/// Something for the application.
pub enum Event<A: App> {
    /// A request head arrived. Build what the application needs, then
    /// [`begin`](crate::Driver::begin) its exchange, or
    /// [`reject`](crate::Driver::reject) it. `ws`: the request opens a
    /// WebSocket (its handshake checked), with the subprotocols offered.
    Request {
        conn: ConnId,
        head: RequestHead,
        ws: Option<Vec<String>>,
    },
    /// Body arrived for the exchange's waiting reader:
    /// [`take_body`](crate::Driver::take_body).
    Body {
        conn: ConnId,
        ex: ExchangeId,
    },
    /// The exchange is over for the application: its response is complete
    /// (`disconnected` false), or the client is gone (or the server
    /// answered instead). A waiting `receive` gets the disconnect, a
    /// waiting `send` returns (raising when `disconnected`).
    Ended {
        conn: ConnId,
        ex: ExchangeId,
        disconnected: bool,
    },
    /// A `send` that waited may return: the write buffer drained to its
    /// low water mark, or the file it sent is out.
    Writable {
        conn: ConnId,
        ex: ExchangeId,
    },
    /// Input waits behind the exchange that just ended (pipelining): call
    /// [`resume`](crate::Driver::resume) from a fresh stack (an ASGI app's
    /// task must not start inside another's step).
    Pipelined {
        conn: ConnId,
    },
    /// WebSocket input (messages, or the session's end) for the exchange's
    /// waiting receiver: [`ws_next`](crate::Driver::ws_next).
    WsInput {
        conn: ConnId,
        ex: ExchangeId,
    },
    /// Call [`resume_listeners`](crate::Driver::resume_listeners) at this
    /// time (a listener backed off).
    Wakeup {
        at: f64,
    },
    /// The connection is closed and out of the registry; the host's state
    /// comes back to be dropped.
    Closed {
        conn: ConnId,
        app: A::Conn,
        exchanges: Vec<A::Exchange>,
    },
    Log(Log),
}

/// A change for the host's reactor, in order.
pub enum IoUpdate {
    /// Watch `fd` for `interest`, reporting `token`.
    Register {
        fd: RawFd,
        token: Token,
        interest: loop_core::Interest,
    },
    /// Watch it for this now (nothing: keep the registration, quiet).
    Interest { fd: RawFd, interest: Interest },
    /// Stop watching `fd` (a listener that stopped).
    Deregister { fd: RawFd },
    /// Stop watching `fd`, then drop the stream, which closes it: the fd
    /// number may be reused only after the reactor forgot it.
    Close {
        fd: RawFd,
        stream: Box<LayeredStream>,
    },
}
