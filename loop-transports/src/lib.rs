//! ferroloop's transports: sockets, listeners, datagrams and pipes over
//! non-blocking fds, with no Python in them.
//!
//! # Sans-callback cores
//!
//! [`StreamCore`], [`ListenerCore`] and [`DatagramCore`] are state machines
//! around one fd. Each method performs the syscalls it needs and *returns*
//! what happened, never calling user code:
//!
//! ```text
//!  reactor readiness ──► core.on_writable() / core.read()…  ──► data, EOF
//!  transport.write() ──► core.write()                        ──► queued events
//!                                                              (pause/resume
//!                                                               writing, lost)
//!  caller: deliver data and events to the protocol (core not borrowed),
//!          then register core.interest() with the reactor
//! ```
//!
//! So a protocol may call `write`/`close`/`pause_reading` re-entrantly from
//! inside `data_received` (as asyncio protocols do): the caller is not
//! holding the core when the protocol runs.
//!
//! # In ferroloop
//!
//! The same cores run under everything: every asyncio transport `loop-py`
//! hands a Python protocol is a native class over one of them
//! (`loop-py/src/transport/`: sockets and pipes on [`StreamCore`], datagrams
//! on [`DatagramCore`], asyncio's `Server` accepting on [`ListenerCore`]),
//! and the server's connection driver (`loop-server`) accepts with a
//! [`ListenerCore`] and runs each connection on a [`LayeredStream`]: a
//! [`StreamCore`] with the byte-stream layer seam ([`ByteLayer`], where a
//! TLS session goes) between the socket and the protocol. Flow control
//! ([`WaterMarks`]), the write buffer and the accept back-off are the
//! cores', for both; reads go into the thread's one read buffer
//! ([`read_buf`]). [`sys`] is the one copy of the raw syscalls in the
//! workspace.
//!
//! # Who closes an fd
//!
//! Cores hold an [`IoFd`]. [`IoFd::owned`] (sockets made by [`socket`],
//! accepted connections, [`pipe::pipe`]) closes the fd when the core's
//! `close_fd` is called or the core is dropped. [`IoFd::borrow_raw`]
//! (`unsafe`) adopts an fd someone else owns, such as the Python `socket`
//! passed as `sock=`: the core never closes it, and its owner must keep it
//! open for the core's lifetime. In both cases losing the connection does
//! **not** close the fd: the caller deregisters it from the reactor first,
//! so a reused fd number can never inherit the old registration, then
//! closes it (`close_fd`, drop, or the owner's own `close()`).

#![cfg(unix)]

pub mod datagram;
pub mod error;
pub mod fd;
pub mod file_send;
pub mod flow;
pub mod layer;
pub mod listener;
pub mod pipe;
pub mod read_buf;
pub mod socket;
pub mod stream;
pub mod sys;
pub mod write_buf;

pub use datagram::{DatagramConfig, DatagramCore, DatagramEvent, Recv, Send};
pub use error::{Error, Op, RESOURCE_LIMIT_ERRNOS};
pub use fd::IoFd;
pub use file_send::{FileProgress, FileSend};
pub use flow::WaterMarks;
pub use layer::{ByteLayer, Eof, LayerError, LayerRead, LayeredStream};
pub use listener::{AcceptStop, Accepted, ListenerCore, ACCEPT_RETRY_DELAY};
pub use stream::{
    Read, ReadInto, StreamConfig, StreamCore, StreamEvent, StreamKind, StreamStats, Write,
};
pub use write_buf::Chunk;
