//! Errors of the reactor layer.

use std::io;

/// What can go wrong in `loop-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused a poller operation.
    #[error("poller operation failed: {0}")]
    Io(#[from] io::Error),
    /// The fd is negative and cannot be registered.
    #[error("invalid file descriptor: {0}")]
    InvalidFd(i32),
    /// The loop behind an injector has been closed; the item was not queued.
    #[error("the event loop is closed")]
    Closed,
    /// An executor call was made on a thread that has no runtime running.
    #[error("no ferroloop runtime is running on this thread")]
    NoRuntime,
    /// A poller backend name that is not `auto`, `io_uring` or `epoll`.
    #[error("unknown event loop backend {0}: expected auto, io_uring or epoll")]
    UnknownBackend(String),
    /// The backend asked for cannot run here.
    #[error("the {backend} backend is unavailable: {reason}")]
    BackendUnavailable {
        backend: &'static str,
        reason: String,
    },
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        match err {
            Error::Io(e) => e,
            other => io::Error::other(other),
        }
    }
}
