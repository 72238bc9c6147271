//! Pipes: creating non-blocking pairs, and checking adopted fds.
//!
//! A pipe transport is a [`StreamCore`](crate::StreamCore) in
//! [`ReadPipe`](crate::StreamKind::ReadPipe) or
//! [`WritePipe`](crate::StreamKind::WritePipe) mode, made with
//! `StreamCore::read_pipe` / `StreamCore::write_pipe`. The writer closing is
//! EOF on the read end; the reader closing is `EPIPE` on the next write, or a
//! hang-up reported as readability of the write end, which the write-pipe
//! core watches for just as asyncio does.

use crate::error::{Error, Op};
use crate::sys;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// A new pipe, both ends non-blocking and close-on-exec: `(read, write)`.
pub fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two fds pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if rc < 0 {
        return Err(Error::os(Op::Pipe, io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded, so both fds are open and now owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// asyncio accepts only pipes, sockets and character devices as pipe
/// transports (regular files are always "ready" and never block); the fd is
/// then made non-blocking.
pub(crate) fn prepare_pipe_fd(fd: impl AsFd) -> Result<(), Error> {
    let raw = fd.as_fd().as_raw_fd();
    let kind = sys::file_type(raw).map_err(|e| Error::os(Op::Stat, e))?;
    if kind != libc::S_IFIFO && kind != libc::S_IFSOCK && kind != libc::S_IFCHR {
        return Err(Error::UnsupportedFd { fd: raw });
    }
    sys::set_nonblocking(raw).map_err(|e| Error::os(Op::SetOption, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_refused() {
        let file = std::fs::File::open("/proc/self/status")
            .or_else(|_| std::fs::File::open("/etc/hostname"))
            .unwrap();
        let err = prepare_pipe_fd(&file).unwrap_err();
        assert!(matches!(err, Error::UnsupportedFd { .. }));
    }

    #[test]
    fn pipe_ends_are_nonblocking() {
        let (r, w) = pipe().unwrap();
        for fd in [&r, &w] {
            // SAFETY: F_GETFL on an fd we own.
            let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
            assert!(fl & libc::O_NONBLOCK != 0);
        }
        prepare_pipe_fd(&r).unwrap();
    }
}
