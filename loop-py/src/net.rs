//! Raw socket syscalls on fds, shared by the transports' GIL-kept I/O
//! (`sockio`) and the HTTP server: non-blocking accept, recv, send,
//! half-close and close, and socket addresses as Python sees them.

use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::RawFd;

/// A socket address: TCP (v4/v6) or a Unix path (possibly unnamed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    Inet(IpAddr, u16),
    Unix(String),
}

fn cvt(rc: isize) -> io::Result<usize> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a live, writable slice of `buf.len()` bytes.
        let rc = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        match cvt(rc) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Bytes waiting in a socket's receive queue (`FIONREAD`).
pub fn pending_input(fd: RawFd) -> io::Result<usize> {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which is live.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut count) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(count).unwrap_or(0))
}

pub fn send(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `data` is a live slice; MSG_NOSIGNAL turns a closed peer
        // into EPIPE instead of SIGPIPE.
        let rc = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        match cvt(rc) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Accept one connection, non-blocking and close-on-exec.
pub fn accept(listener: RawFd) -> io::Result<(RawFd, Option<Addr>)> {
    let mut storage = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    loop {
        // SAFETY: `storage` has room for any address and `len` says so; the
        // kernel writes at most `len` bytes and updates it.
        let fd = unsafe {
            libc::accept4(
                listener,
                storage.as_mut_ptr().cast(),
                &mut len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: accept4 succeeded, so `len` bytes of `storage` are set.
            let addr = unsafe { decode(storage.as_ptr(), len) };
            return Ok((fd, addr));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// The local address of a socket.
pub fn local_addr(fd: RawFd) -> Option<Addr> {
    let mut storage = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as in `accept`.
    let rc = unsafe { libc::getsockname(fd, storage.as_mut_ptr().cast(), &mut len) };
    if rc < 0 {
        return None;
    }
    // SAFETY: getsockname succeeded and set `len` bytes.
    unsafe { decode(storage.as_ptr(), len) }
}

/// # Safety
/// `storage` must hold `len` initialised bytes of a socket address.
unsafe fn decode(storage: *const libc::sockaddr_storage, len: libc::socklen_t) -> Option<Addr> {
    let family = (*storage).ss_family as libc::c_int;
    match family {
        libc::AF_INET => {
            let sin = &*(storage as *const libc::sockaddr_in);
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(Addr::Inet(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            let sin6 = &*(storage as *const libc::sockaddr_in6);
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(Addr::Inet(IpAddr::V6(ip), u16::from_be(sin6.sin6_port)))
        }
        libc::AF_UNIX => {
            let sun = &*(storage as *const libc::sockaddr_un);
            let offset = std::mem::size_of::<libc::sa_family_t>();
            let path_len = (len as usize)
                .saturating_sub(offset)
                .min(sun.sun_path.len());
            let raw: Vec<u8> = sun.sun_path[..path_len].iter().map(|&c| c as u8).collect();
            // A pathname ends at its NUL; an abstract name starts with one.
            let text = match raw.first() {
                Some(0) => String::from_utf8_lossy(&raw).into_owned(),
                _ => {
                    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                    String::from_utf8_lossy(&raw[..end]).into_owned()
                }
            };
            Some(Addr::Unix(text))
        }
        _ => None,
    }
}

pub fn set_nodelay(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: a valid pointer to an int option value of the stated size.
    // Failure (e.g. a Unix socket) is harmless and ignored.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

pub fn shutdown_write(fd: RawFd) {
    // SAFETY: shutdown on an fd we own; errors (peer gone) are irrelevant.
    unsafe {
        libc::shutdown(fd, libc::SHUT_WR);
    }
}

/// Close with an RST instead of a FIN (abortive close, `SO_LINGER` 0).
pub fn set_linger_zero(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid pointer to a `linger` of the stated size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and forgets it after this call.
    unsafe {
        libc::close(fd);
    }
}

/// True for fd-exhaustion errors, after which accepting must pause.
pub fn is_fd_exhaustion(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}
