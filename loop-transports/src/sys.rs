//! Thin, EINTR-retrying wrappers over the raw syscalls on fds: the ones
//! the cores make, and the ones the Python transports' GIL-kept fast paths
//! make on fds they do not hand to a core (`loop-py`'s `sockio`). The one
//! copy of them in the workspace.
//!
//! Socket writes use `send`/`sendmsg` with `MSG_NOSIGNAL` so a peer that
//! went away gives `EPIPE` rather than `SIGPIPE`, even in an embedder that
//! did not ignore the signal. Pipe writes cannot pass that flag; Python and
//! Rust programs both start with `SIGPIPE` ignored.

use std::io::{self, IoSlice};
use std::os::fd::RawFd;

fn cvt(rc: isize) -> io::Result<usize> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Retry `f` while it fails with `EINTR`.
fn retry<F: FnMut() -> isize>(mut f: F) -> io::Result<usize> {
    loop {
        match cvt(f()) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `EAGAIN`/`EWOULDBLOCK`: try again once the fd is ready.
pub fn is_would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` writable bytes.
    retry(|| unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` writable bytes.
    retry(|| unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) })
}

pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` readable bytes.
    retry(|| unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` readable bytes.
    retry(|| unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) })
}

pub fn writev(fd: RawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    let count = bufs.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: `IoSlice` is ABI-compatible with `iovec` on unix, and each
    // slice is valid for reading for the duration of the call.
    retry(|| unsafe { libc::writev(fd, bufs.as_ptr().cast(), count) })
}

pub fn sendmsg(fd: RawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len() as _;
    // SAFETY: `msg` points at `bufs` (iovec-compatible `IoSlice`s valid for
    // the call) and carries no name or control data.
    retry(|| unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) })
}

pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on an fd number; a bad fd is reported as EBADF.
    retry(|| unsafe { libc::shutdown(fd, libc::SHUT_WR) } as isize).map(drop)
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl F_GETFL/F_SETFL on an fd number; errors are checked.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) } as isize)? as libc::c_int;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } as isize)?;
    }
    Ok(())
}

/// True when `poll` reports the fd hung up or in error, without waiting.
pub fn hung_up(fd: RawFd) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    retry(|| unsafe { libc::poll(&mut pfd, 1, 0) } as isize)?;
    Ok(pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0)
}

/// The file type bits of `fd` (`S_IFIFO`, `S_IFSOCK`, …).
pub fn file_type(fd: RawFd) -> io::Result<libc::mode_t> {
    // SAFETY: all-zero is a valid `stat` to be overwritten by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer for the call.
    retry(|| unsafe { libc::fstat(fd, &mut st) } as isize)?;
    Ok(st.st_mode & libc::S_IFMT)
}

/// Make the coming `close` abortive: an RST instead of a FIN (`SO_LINGER`
/// on with a zero timeout).
pub fn set_linger_zero(fd: RawFd) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid pointer to a `linger` of the stated size.
    retry(|| unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    } as isize)
    .map(drop)
}

/// `sendfile(2)`: up to `count` bytes of `file` from `*offset` to the
/// socket `out`, advancing `*offset` by what was sent (the file's own
/// position is untouched). A peer that went away gives `EPIPE`: sendfile
/// has no `MSG_NOSIGNAL`, so this relies on `SIGPIPE` being ignored, as it
/// is in every Python (and Rust) program.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn sendfile(out: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(*offset)
        .map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
    // SAFETY: `off` is a live, exclusively borrowed off_t for the call;
    // bad fd numbers are reported as EBADF.
    let sent = retry(|| unsafe { libc::sendfile(out, file, &mut off, count) })?;
    *offset += sent as u64;
    Ok(sent)
}

/// `pread(2)`: read into `buf` from `offset`, leaving the file position.
pub fn pread(fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let off =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
    // SAFETY: `buf` is valid for `buf.len()` writable bytes.
    retry(|| unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) })
}
