//! The seam between a stream's socket and its protocol: an optional
//! byte-stream layer that turns wire bytes into application bytes and back.
//!
//! Plain TCP has no layer, and [`LayeredStream`] then costs nothing over a
//! bare [`StreamCore`]: reads land in the caller's buffer and writes go
//! straight to the core. A session such as TLS implements [`ByteLayer`]; it
//! says what it wants (input during a handshake even when the protocol
//! wants none, output of its own with no application data buffered) and how
//! the stream ends (`close_notify` before the FIN, or the FIN alone). The
//! stream's interest follows from both.
//!
//! The trait lives here so the session crate need not depend on this one
//! (docs/architecture.md, "Layers"): the adapter that puts a session behind
//! it is glue where the stack is assembled.

use crate::error::Error;
use crate::stream::{ReadInto, StreamCore, StreamEvent, Write};
use std::fmt;

/// What went wrong inside a layer (a TLS alert, a bad record), as its own
/// error type.
pub type LayerError = Box<dyn std::error::Error + Send + Sync>;

/// How the peer's EOF ended the layer's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eof {
    /// The stream ended as the layer's protocol says it should.
    Clean,
    /// EOF without the layer's own end (TLS: no `close_notify`): the
    /// application data may have been cut short.
    Truncated,
}

/// A byte-stream layer between a socket and a protocol. `Send + Sync`, as
/// a stream may live in a Python object (a TLS session is both).
pub trait ByteLayer: Send + Sync {
    /// Wire bytes arrived; the application bytes they complete are
    /// appended to `app`.
    fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), LayerError>;
    /// Application bytes to send; their wire form is appended to `wire`.
    fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), LayerError>;
    /// Wire bytes the layer must send on its own (handshake, alerts,
    /// session tickets), appended to `wire`.
    fn take_output(&mut self, wire: &mut Vec<u8>);
    /// The layer needs input whatever the protocol wants (a handshake).
    fn wants_read(&self) -> bool;
    /// Begin an orderly close: what must precede the FIN (`close_notify`)
    /// is appended to `wire`.
    fn close(&mut self, wire: &mut Vec<u8>);
    /// The peer sent EOF.
    fn eof(&mut self) -> Eof;
    /// The peer ended the layer's stream within it (TLS: `close_notify`)
    /// and will send no more application bytes, FIN or not: a client may
    /// wait for ours before closing the socket.
    fn peer_closed(&self) -> bool {
        false
    }
}

/// One step of [`LayeredStream::read_into`].
#[derive(Debug, PartialEq, Eq)]
pub enum LayerRead<'a> {
    /// Application bytes (none, when only layer traffic arrived).
    Data(&'a [u8]),
    /// The last application bytes: the peer ended the layer's stream after
    /// them (TLS `close_notify`); an EOF follows them.
    Last(&'a [u8]),
    Eof(Eof),
    /// Nothing more for this readiness event (or the stream closed: see
    /// [`LayeredStream::take_closed`]).
    Done,
}

/// A [`StreamCore`] with an optional [`ByteLayer`] on top.
pub struct LayeredStream {
    core: StreamCore,
    layer: Option<Box<dyn ByteLayer>>,
    /// Decoded application bytes handed out by the last read.
    app_in: Vec<u8>,
    /// Wire bytes a layer produced, on their way to the core.
    wire_out: Vec<u8>,
}

impl fmt::Debug for LayeredStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayeredStream")
            .field("core", &self.core)
            .field("layered", &self.layer.is_some())
            .finish()
    }
}

impl LayeredStream {
    /// The stream as plain bytes.
    pub fn plain(core: StreamCore) -> Self {
        Self::with_layer(core, None)
    }

    pub fn with_layer(core: StreamCore, layer: Option<Box<dyn ByteLayer>>) -> Self {
        LayeredStream {
            core,
            layer,
            app_in: Vec::new(),
            wire_out: Vec::new(),
        }
    }

    pub fn core(&self) -> &StreamCore {
        &self.core
    }

    pub fn core_mut(&mut self) -> &mut StreamCore {
        &mut self.core
    }

    /// Whether a byte-stream layer transforms what is written (then a
    /// file cannot go to the socket with `sendfile`).
    pub fn has_layer(&self) -> bool {
        self.layer.is_some()
    }

    /// The layer's stream ended inside it (TLS `close_notify`): after the
    /// data of the read that brought it, treat it as EOF (no readiness
    /// event need follow: the peer may keep the socket open).
    pub fn peer_ended(&self) -> bool {
        self.layer.as_ref().is_some_and(|l| l.peer_closed())
    }

    /// Whether to read now: the protocol's wish, or the layer's need.
    pub fn wants_read(&self, protocol_wants: bool) -> bool {
        protocol_wants || self.layer.as_ref().is_some_and(|l| l.wants_read())
    }

    /// Whether writability is needed: wire bytes are buffered and no cork
    /// holds them.
    pub fn wants_write(&self) -> bool {
        self.core.interest().writable
    }

    /// Hold what is written until [`uncork`](Self::uncork) (see
    /// [`StreamCore::cork`]); through a layer, each write is encoded at once
    /// and its wire bytes are held.
    pub fn cork(&mut self) {
        self.core.cork();
    }

    pub fn uncork(&mut self) {
        self.core.uncork();
    }

    pub fn is_corked(&self) -> bool {
        self.core.is_corked()
    }

    /// The core's flow control: buffered bytes went above the high water
    /// mark and have not drained to the low one since.
    pub fn is_writing_paused(&self) -> bool {
        self.core.is_writing_paused()
    }

    /// Wire bytes buffered in the core.
    pub fn buffered(&self) -> usize {
        self.core.get_write_buffer_size()
    }

    /// One read into `buf` (the caller's, shared by many streams): plain
    /// data is returned in place.
    pub fn read_into<'a>(&'a mut self, buf: &'a mut [u8]) -> Result<LayerRead<'a>, Error> {
        if self.peer_ended() {
            return Ok(LayerRead::Eof(Eof::Clean));
        }
        self.core.begin_read_event();
        let n = match self.core.read_into(buf)? {
            ReadInto::Data(n) => n,
            ReadInto::Eof => {
                let eof = self.layer.as_mut().map_or(Eof::Clean, |l| l.eof());
                return Ok(LayerRead::Eof(eof));
            }
            ReadInto::Done => return Ok(LayerRead::Done),
        };
        let Some(layer) = self.layer.as_mut() else {
            return Ok(LayerRead::Data(&buf[..n]));
        };
        self.app_in.clear();
        if let Err(e) = layer.decode(&buf[..n], &mut self.app_in) {
            // The layer's last word (a TLS alert) goes out before the close.
            self.send_layer_output();
            self.core.fail(Error::Layer(e));
            return Ok(LayerRead::Done);
        }
        // A handshake answers with output of its own.
        self.send_layer_output();
        if self.peer_ended() {
            return Ok(if self.app_in.is_empty() {
                LayerRead::Eof(Eof::Clean)
            } else {
                LayerRead::Last(&self.app_in)
            });
        }
        Ok(LayerRead::Data(&self.app_in))
    }

    /// Send application bytes (now, or buffered by the core).
    pub fn write(&mut self, app: &[u8]) -> Result<Write, Error> {
        let Some(layer) = self.layer.as_mut() else {
            return self.core.write(app);
        };
        self.wire_out.clear();
        if let Err(e) = layer.encode(app, &mut self.wire_out) {
            self.core.fail(Error::Layer(e));
            return Ok(Write::Accepted);
        }
        let result = self.core.write(&self.wire_out);
        self.shrink_scratch();
        result
    }

    fn send_layer_output(&mut self) {
        let Some(layer) = self.layer.as_mut() else {
            return;
        };
        self.wire_out.clear();
        layer.take_output(&mut self.wire_out);
        if !self.wire_out.is_empty() {
            // A lost connection shows up as the core's Closed event.
            let _ = self.core.write(&self.wire_out);
        }
        self.shrink_scratch();
    }

    fn shrink_scratch(&mut self) {
        if self.wire_out.capacity() > 64 * 1024 {
            self.wire_out = Vec::new();
        }
    }

    /// The fd is writable: flush the core's buffer.
    pub fn on_writable(&mut self) {
        self.core.on_writable();
    }

    /// Orderly end of our direction: the layer's close (`close_notify`),
    /// then a FIN once everything buffered is written. Reading goes on.
    pub fn shutdown(&mut self) -> Result<(), Error> {
        if let Some(layer) = self.layer.as_mut() {
            self.wire_out.clear();
            layer.close(&mut self.wire_out);
            if !self.wire_out.is_empty() {
                let _ = self.core.write(&self.wire_out);
            }
        }
        self.core.write_eof()
    }

    /// Close with an RST (see [`StreamCore::reset`]).
    pub fn reset(&mut self) {
        self.core.reset();
    }

    /// Whether the connection was lost (a read, a write or the layer
    /// failed), with its error; the core's other events (flow control is
    /// the caller's, by [`buffered`](Self::buffered)) are dropped.
    pub fn take_closed(&mut self) -> Option<Option<Error>> {
        let mut closed = None;
        while let Some(event) = self.core.next_event() {
            match event {
                StreamEvent::Closed(err) => closed = Some(err),
                StreamEvent::ConnectFailed(err) => closed = Some(Some(err)),
                StreamEvent::Connected | StreamEvent::PauseWriting | StreamEvent::ResumeWriting => {
                }
            }
        }
        closed
    }

    /// Close the fd (deregister it first).
    pub fn close_fd(&mut self) {
        self.core.close_fd();
    }
}
