//! Creating and adopting non-blocking, close-on-exec sockets.
//!
//! Every socket made here is created with `SOCK_NONBLOCK | SOCK_CLOEXEC`
//! (no window where a fork+exec could inherit it) and returned as an
//! `OwnedFd`: wrap it in [`IoFd::owned`](crate::IoFd::owned) to hand
//! ownership to a core. A socket someone else owns (Python's `sock=`) is
//! adopted with [`prepare_stream`] / [`set_nonblocking`] and
//! [`IoFd::borrow_raw`](crate::IoFd::borrow_raw), which never closes it.

use crate::error::{Error, Op};
use crate::sys;
use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

/// asyncio's default listen backlog.
pub const DEFAULT_BACKLOG: i32 = 100;

/// Whether a non-blocking connect finished at once or is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectStatus {
    Connected,
    /// `EINPROGRESS`: wait for writability, then check
    /// [`connect_result`] (a [`StreamCore`](crate::StreamCore) made with
    /// `connecting` does both).
    InProgress,
}

/// Options for a listening TCP socket.
#[derive(Clone, Debug)]
pub struct ListenOptions {
    pub backlog: i32,
    /// `SO_REUSEADDR`, on by default as in asyncio's `create_server`.
    pub reuse_address: bool,
    /// `SO_REUSEPORT`, for several processes accepting on one port.
    pub reuse_port: bool,
    /// `IPV6_V6ONLY` on IPv6 sockets, on by default as in asyncio.
    pub ipv6_only: bool,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            backlog: DEFAULT_BACKLOG,
            reuse_address: true,
            reuse_port: false,
            ipv6_only: true,
        }
    }
}

/// A Unix-domain socket address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnixAddr {
    /// A filesystem path.
    Path(PathBuf),
    /// A Linux abstract-namespace name (no leading NUL; it is added here).
    Abstract(Vec<u8>),
}

impl UnixAddr {
    pub fn to_sockaddr(&self) -> Result<SockAddr, Error> {
        let result = match self {
            UnixAddr::Path(path) => {
                if path.as_os_str().is_empty() {
                    return Err(Error::os(
                        Op::Address,
                        io::Error::new(io::ErrorKind::InvalidInput, "empty unix socket path"),
                    ));
                }
                SockAddr::unix(path)
            }
            UnixAddr::Abstract(name) => abstract_sockaddr(name),
        };
        result.map_err(|e| Error::os(Op::Address, e))
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn abstract_sockaddr(name: &[u8]) -> io::Result<SockAddr> {
    use std::os::unix::ffi::OsStrExt;
    // socket2 reads a leading NUL as "abstract namespace".
    let mut bytes = Vec::with_capacity(name.len() + 1);
    bytes.push(0);
    bytes.extend_from_slice(name);
    SockAddr::unix(std::ffi::OsStr::from_bytes(&bytes))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn abstract_sockaddr(_name: &[u8]) -> io::Result<SockAddr> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract unix sockets are Linux-only",
    ))
}

fn new_socket(domain: Domain, ty: Type, protocol: Option<Protocol>) -> Result<Socket, Error> {
    Socket::new(domain, ty.nonblocking().cloexec(), protocol).map_err(|e| Error::os(Op::Socket, e))
}

fn opt<T>(result: io::Result<T>) -> Result<T, Error> {
    result.map_err(|e| Error::os(Op::SetOption, e))
}

fn start_connect(socket: Socket, addr: &SockAddr) -> Result<(OwnedFd, ConnectStatus), Error> {
    match socket.connect(addr) {
        Ok(()) => Ok((socket.into(), ConnectStatus::Connected)),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
            Ok((socket.into(), ConnectStatus::InProgress))
        }
        Err(e) => Err(Error::os(Op::Connect, e)),
    }
}

/// Start a TCP connection to `addr`, optionally from `local`. `TCP_NODELAY`
/// is set, as asyncio does for every TCP transport.
pub fn tcp_connect(
    addr: SocketAddr,
    local: Option<SocketAddr>,
) -> Result<(OwnedFd, ConnectStatus), Error> {
    let socket = new_socket(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    opt(socket.set_tcp_nodelay(true))?;
    if let Some(local) = local {
        socket
            .bind(&local.into())
            .map_err(|e| Error::os(Op::Bind, e))?;
    }
    start_connect(socket, &addr.into())
}

/// A listening TCP socket on `addr`.
pub fn tcp_listen(addr: SocketAddr, options: &ListenOptions) -> Result<OwnedFd, Error> {
    let socket = new_socket(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if options.reuse_address {
        opt(socket.set_reuse_address(true))?;
    }
    if options.reuse_port {
        opt(socket.set_reuse_port(true))?;
    }
    if addr.is_ipv6() {
        opt(socket.set_only_v6(options.ipv6_only))?;
    }
    socket
        .bind(&addr.into())
        .map_err(|e| Error::os(Op::Bind, e))?;
    socket
        .listen(options.backlog)
        .map_err(|e| Error::os(Op::Listen, e))?;
    Ok(socket.into())
}

/// Start a Unix stream connection. A full listen backlog fails with
/// `EAGAIN` (Linux does not report it as in progress).
pub fn unix_connect(addr: &UnixAddr) -> Result<(OwnedFd, ConnectStatus), Error> {
    let socket = new_socket(Domain::UNIX, Type::STREAM, None)?;
    start_connect(socket, &addr.to_sockaddr()?)
}

/// A listening Unix stream socket. A path must not exist yet (removing a
/// stale socket file is the caller's policy, as in asyncio).
pub fn unix_listen(addr: &UnixAddr, backlog: i32) -> Result<OwnedFd, Error> {
    let socket = new_socket(Domain::UNIX, Type::STREAM, None)?;
    socket
        .bind(&addr.to_sockaddr()?)
        .map_err(|e| Error::os(Op::Bind, e))?;
    socket
        .listen(backlog)
        .map_err(|e| Error::os(Op::Listen, e))?;
    Ok(socket.into())
}

/// Options for a UDP socket. The family comes from `local`, else `remote`.
#[derive(Clone, Debug, Default)]
pub struct UdpOptions {
    pub local: Option<SocketAddr>,
    /// Connect to this peer: `send` needs no address and ICMP errors are
    /// reported on receive (`error_received`).
    pub remote: Option<SocketAddr>,
    pub reuse_port: bool,
    pub broadcast: bool,
}

/// A UDP socket, bound and/or connected as `options` say.
pub fn udp_socket(options: &UdpOptions) -> Result<OwnedFd, Error> {
    let Some(family_addr) = options.local.or(options.remote) else {
        return Err(Error::os(
            Op::Address,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a local or remote address is needed to pick the family",
            ),
        ));
    };
    let socket = new_socket(
        Domain::for_address(family_addr),
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    if options.reuse_port {
        opt(socket.set_reuse_port(true))?;
    }
    if options.broadcast {
        opt(socket.set_broadcast(true))?;
    }
    if let Some(local) = options.local {
        socket
            .bind(&local.into())
            .map_err(|e| Error::os(Op::Bind, e))?;
    }
    if let Some(remote) = options.remote {
        socket
            .connect(&remote.into())
            .map_err(|e| Error::os(Op::Connect, e))?;
    }
    Ok(socket.into())
}

/// Make `fd` non-blocking (adopted fds may not be).
pub fn set_nonblocking(fd: impl AsFd) -> Result<(), Error> {
    sys::set_nonblocking(fd.as_fd().as_raw_fd()).map_err(|e| Error::os(Op::SetOption, e))
}

/// Ready an adopted stream socket for a transport: non-blocking, and
/// `TCP_NODELAY` when it is TCP and `nodelay` is asked (asyncio's
/// `_set_nodelay` does the same check).
pub fn prepare_stream(fd: impl AsFd, nodelay: bool) -> Result<(), Error> {
    set_nonblocking(&fd)?;
    if nodelay && is_tcp(&fd) {
        opt(SockRef::from(&fd).set_tcp_nodelay(true))?;
    }
    Ok(())
}

/// True for an `AF_INET`/`AF_INET6` stream socket.
pub fn is_tcp(fd: impl AsFd) -> bool {
    let sock = SockRef::from(&fd);
    let inet = matches!(sock.domain(), Ok(d) if d == Domain::IPV4 || d == Domain::IPV6);
    inet && matches!(sock.r#type(), Ok(t) if t == Type::STREAM)
}

/// True when `fd` is a socket (rather than a pipe or tty).
pub fn is_socket(fd: impl AsFd) -> bool {
    matches!(sys::file_type(fd.as_fd().as_raw_fd()), Ok(t) if t == libc::S_IFSOCK)
}

/// The outcome of a non-blocking connect, once the socket is writable:
/// `SO_ERROR`, as asyncio's `_sock_connect_cb` reads it.
pub fn connect_result(fd: impl AsFd) -> Result<(), Error> {
    match SockRef::from(&fd).take_error() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(Error::os(Op::Connect, e)),
        Err(e) => Err(Error::os(Op::SetOption, e)),
    }
}

/// `getsockname`.
pub fn local_addr(fd: impl AsFd) -> Result<SockAddr, Error> {
    SockRef::from(&fd)
        .local_addr()
        .map_err(|e| Error::os(Op::Address, e))
}

/// `getpeername`.
pub fn peer_addr(fd: impl AsFd) -> Result<SockAddr, Error> {
    SockRef::from(&fd)
        .peer_addr()
        .map_err(|e| Error::os(Op::Address, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_sockets_are_nonblocking_and_cloexec() {
        let fd = tcp_listen("127.0.0.1:0".parse().unwrap(), &ListenOptions::default()).unwrap();
        // SAFETY: fcntl queries on an fd we own.
        let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        // SAFETY: as above.
        let fdfl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
        assert!(fl & libc::O_NONBLOCK != 0);
        assert!(fdfl & libc::FD_CLOEXEC != 0);
        assert!(is_tcp(&fd));
        assert!(is_socket(&fd));
        let sock = SockRef::from(&fd);
        assert!(sock.reuse_address().unwrap());
    }

    #[test]
    fn reuse_port_lets_two_listeners_share_a_port() {
        let options = ListenOptions {
            reuse_port: true,
            ..ListenOptions::default()
        };
        let a = tcp_listen("127.0.0.1:0".parse().unwrap(), &options).unwrap();
        let port = local_addr(&a).unwrap().as_socket().unwrap().port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let _b = tcp_listen(addr, &options).unwrap();
        let err = tcp_listen(addr, &ListenOptions::default()).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EADDRINUSE));
        assert_eq!(err.op(), Some(Op::Bind));
    }

    #[test]
    fn tcp_connect_sets_nodelay() {
        let l = tcp_listen("127.0.0.1:0".parse().unwrap(), &ListenOptions::default()).unwrap();
        let addr = local_addr(&l).unwrap().as_socket().unwrap();
        let (fd, _status) = tcp_connect(addr, None).unwrap();
        assert!(SockRef::from(&fd).tcp_nodelay().unwrap());
    }

    #[test]
    fn udp_needs_an_address_for_its_family() {
        let err = udp_socket(&UdpOptions::default()).unwrap_err();
        assert_eq!(err.kind(), Some(io::ErrorKind::InvalidInput));
        let fd = udp_socket(&UdpOptions {
            local: Some("127.0.0.1:0".parse().unwrap()),
            broadcast: true,
            reuse_port: true,
            ..UdpOptions::default()
        })
        .unwrap();
        assert!(SockRef::from(&fd).broadcast().unwrap());
    }

    #[test]
    fn empty_unix_path_is_rejected() {
        let err = UnixAddr::Path(PathBuf::new()).to_sockaddr().unwrap_err();
        assert_eq!(err.kind(), Some(io::ErrorKind::InvalidInput));
    }
}
