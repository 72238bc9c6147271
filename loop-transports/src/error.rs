//! Errors of the transport layer.
//!
//! OS failures keep their `io::Error` (and so their errno) together with the
//! operation that failed, so `loop-py` can raise the `OSError` subclass
//! asyncio would (`ConnectionResetError`, `BrokenPipeError`, …) by errno,
//! and log "Fatal read error" vs "Fatal write error" by [`Op`]. Nobody needs
//! to parse `Display` text.

use std::fmt;
use std::io;

/// The operation an OS error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    Socket,
    SetOption,
    Bind,
    Listen,
    Connect,
    Accept,
    Read,
    Write,
    Shutdown,
    Pipe,
    Stat,
    Poll,
    Address,
    /// `sendfile(2)` from a file to the stream.
    SendFile,
    /// Reading a file to send it (`pread`).
    ReadFile,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Op::Socket => "socket",
            Op::SetOption => "setsockopt",
            Op::Bind => "bind",
            Op::Listen => "listen",
            Op::Connect => "connect",
            Op::Accept => "accept",
            Op::Read => "read",
            Op::Write => "write",
            Op::Shutdown => "shutdown",
            Op::Pipe => "pipe",
            Op::Stat => "fstat",
            Op::Poll => "poll",
            Op::Address => "socket address",
            Op::SendFile => "sendfile",
            Op::ReadFile => "pread",
        };
        f.write_str(name)
    }
}

/// The errnos after which accepting must pause and retry later: the
/// process or the system ran out of fds or memory. The one list of them
/// (the listeners pause on them).
pub const RESOURCE_LIMIT_ERRNOS: [i32; 4] =
    [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM];

/// What can go wrong in `loop-transports`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed; `source` carries the errno.
    #[error("{op} failed: {source}")]
    Os {
        op: Op,
        #[source]
        source: io::Error,
    },
    /// `set_write_buffer_limits` with limits that are not `high >= low >= 0`
    /// (asyncio raises `ValueError` with this message).
    #[error("high ({high}) must be >= low ({low}) must be >= 0")]
    InvalidWaterMarks { high: i64, low: i64 },
    /// `write()` after `write_eof()` (asyncio raises `RuntimeError`).
    #[error("Cannot call write() after write_eof()")]
    WriteAfterEof,
    /// Writing to a read-only transport (a read pipe).
    #[error("transport is not writable")]
    NotWritable,
    /// A caller-provided read buffer was empty (asyncio: `get_buffer()
    /// returned an empty buffer`).
    #[error("read buffer is empty")]
    EmptyBuffer,
    /// `sendto` with an address other than the one the socket is connected
    /// to (asyncio raises `ValueError`).
    #[error("Invalid address: must be None or {expected:?}")]
    AddressMismatch { expected: Box<socket2::SockAddr> },
    /// The fd is not a pipe, socket or character device.
    #[error("fd {fd} is not a pipe, socket or character device")]
    UnsupportedFd { fd: i32 },
    /// A transport was used from code running while its core was borrowed
    /// (only reachable from a `Drop` impl of a buffered chunk).
    #[error("transport used re-entrantly while busy")]
    Reentrant,
    /// A byte-stream layer (TLS, …) failed.
    #[error("{0}")]
    Layer(crate::layer::LayerError),
    /// The reactor refused a registration.
    #[error(transparent)]
    Reactor(#[from] loop_core::Error),
}

impl Error {
    pub(crate) fn os(op: Op, source: io::Error) -> Error {
        Error::Os { op, source }
    }

    /// The underlying OS error, if this is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Os { source, .. } => Some(source),
            Error::Reactor(loop_core::Error::Io(e)) => Some(e),
            _ => None,
        }
    }

    /// The errno of an OS error.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.io_error().and_then(io::Error::raw_os_error)
    }

    /// The operation an OS error came from.
    pub fn op(&self) -> Option<Op> {
        match self {
            Error::Os { op, .. } => Some(*op),
            _ => None,
        }
    }

    /// The `io::ErrorKind` of an OS error.
    pub fn kind(&self) -> Option<io::ErrorKind> {
        self.io_error().map(io::Error::kind)
    }

    /// The peer reset the connection (`ECONNRESET`).
    pub fn is_connection_reset(&self) -> bool {
        self.raw_os_error() == Some(libc::ECONNRESET)
    }

    /// Writing to a connection the peer closed (`EPIPE`).
    pub fn is_broken_pipe(&self) -> bool {
        self.raw_os_error() == Some(libc::EPIPE)
    }

    /// A per-process or system resource ran out (`EMFILE`, `ENFILE`,
    /// `ENOBUFS`, `ENOMEM`): back off and retry later.
    pub fn is_resource_limit(&self) -> bool {
        self.raw_os_error()
            .is_some_and(|errno| RESOURCE_LIMIT_ERRNOS.contains(&errno))
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        match err {
            Error::Os { source, .. } => source,
            Error::Reactor(loop_core::Error::Io(e)) => e,
            Error::InvalidWaterMarks { .. }
            | Error::AddressMismatch { .. }
            | Error::EmptyBuffer
            | Error::UnsupportedFd { .. } => io::Error::new(io::ErrorKind::InvalidInput, err),
            other => io::Error::other(other),
        }
    }
}
