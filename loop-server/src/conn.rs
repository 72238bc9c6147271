//! One connection as the driver holds it: its stream (socket core and byte
//! layer), its protocol kind, where its end stands, its exchanges and the
//! host's state. The same for every kind: what differs is behind
//! [`Protocol`](crate::protocol::Protocol).

use crate::addr::Addr;
use crate::event::App;
use crate::exchange::Exchange;
use crate::id::ExchangeId;
use crate::protocol::Kind;
use crate::tls::TlsState;
use loop_core::Interest;
use loop_transports::{LayeredStream, Write};
use std::borrow::Cow;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Where the connection's end stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ending {
    Open,
    /// The kind finished: its output drains until `deadline`, then the
    /// stream half-closes.
    Draining {
        deadline: f64,
    },
    /// Half-closed: input is read and dropped until EOF or `deadline`, so
    /// unread input does not turn the close into an RST.
    Lingering {
        deadline: f64,
    },
}

pub(crate) struct Conn<A: App> {
    pub fd: RawFd,
    /// `None` once the connection is lost (the stream went to the host to
    /// be deregistered and closed).
    pub stream: Option<LayeredStream>,
    pub kind: Kind,
    pub ending: Ending,
    /// What the host's reactor watches the fd for.
    pub registered: Interest,
    /// In the driver's list of connections whose interest may have changed.
    pub io_queued: bool,
    /// In the driver's list of corked connections.
    pub corked: bool,
    pub peer: Option<Addr>,
    /// The peer as the logs name it (`ip:port`; empty for a Unix peer).
    pub peer_text: String,
    pub local: Option<Addr>,
    pub tls: Option<Arc<TlsState>>,
    pub accepted_at: f64,
    /// Why it ends, for the debug log (the first reason wins).
    pub why: Option<Cow<'static, str>>,
    /// The peer ended its side (EOF): a finished connection then closes
    /// without lingering.
    pub peer_eof: bool,
    /// A `Request` event is out: nothing more is parsed until the host
    /// begins or rejects it.
    pub awaiting_begin: bool,
    /// The WebSocket handshake of the request the host was told of.
    pub offer: Option<loop_ws::Offer>,
    /// Its access-log prefix, made while the head was here.
    pub ws_log: Option<String>,
    pub exchanges: Vec<Exchange<A::Exchange>>,
    pub app: A::Conn,
}

impl<A: App> Conn<A> {
    pub fn closing_because(&mut self, why: impl Into<Cow<'static, str>>) {
        if self.why.is_none() {
            self.why = Some(why.into());
        }
    }

    /// The peer as the logs name it.
    pub fn peer_name(&self) -> &str {
        if self.peer_text.is_empty() {
            "unix socket client"
        } else {
            &self.peer_text
        }
    }

    pub fn exchange(&self, id: ExchangeId) -> Option<&Exchange<A::Exchange>> {
        self.exchanges.iter().find(|ex| ex.id == id)
    }

    pub fn exchange_mut(&mut self, id: ExchangeId) -> Option<&mut Exchange<A::Exchange>> {
        self.exchanges.iter_mut().find(|ex| ex.id == id)
    }

    /// Bytes waiting to be written: the stream's buffer and the kind's.
    pub fn buffered(&self) -> usize {
        self.stream.as_ref().map_or(0, LayeredStream::buffered)
    }

    /// Hand the kind's ready output to the stream; false when the
    /// connection turned out lost.
    pub fn write_output(&mut self) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return true;
        };
        let Some(out) = self.kind.protocol().output() else {
            return true;
        };
        if out.is_empty() {
            return true;
        }
        let written = stream.write(out);
        out.clear();
        if out.capacity() > 256 * 1024 {
            *out = Vec::new();
        }
        matches!(written, Ok(Write::Accepted))
    }

    /// The readiness the connection needs now.
    pub fn wanted(&self) -> Interest {
        let Some(stream) = self.stream.as_ref() else {
            return Interest::NONE;
        };
        let readable = match self.ending {
            Ending::Open => stream.wants_read(
                self.kind
                    .protocol_ref()
                    .wants_read(stream.is_writing_paused()),
            ),
            // Read and drop, to see the peer's EOF (or its reset).
            Ending::Draining { .. } | Ending::Lingering { .. } => true,
        };
        let file = self.exchanges.iter().any(|ex| ex.file.is_some());
        Interest {
            readable,
            writable: stream.wants_write() || file,
        }
    }
}
