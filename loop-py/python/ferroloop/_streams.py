"""Stream connections and servers: ``create_connection``, ``create_server``,
their Unix-socket twins, ``connect_accepted_socket`` and ``start_tls``.

Sockets are set up here in Python (name resolution, happy eyeballs, binding
and options), then handed to ``SocketTransport``. Servers are asyncio's own
``Server`` objects, which drive the loop through ``_start_serving`` /
``_stop_serving``; TLS is the stdlib's memory-BIO ``SSLProtocol`` stacked on
the plain transport (docs/architecture.md, "The loop"), as on asyncio's own
loops.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import errno
import functools
import inspect
import itertools
import logging
import os
import socket
import stat
from asyncio import base_events, constants, exceptions, protocols, selector_events, sslproto, staggered
from typing import Any, Callable, Iterable

from . import _native
from ._sockets import SENDFILE_ALWAYS_SEEKS
from ._transports import SocketTransport

try:
    import ssl as _ssl
except ImportError:  # pragma: no cover - CPython built without ssl
    _ssl = None  # type: ignore[assignment]

logger = logging.getLogger("asyncio")

#: Bytes per read of the sendfile fallback.
_SENDFILE_BLOCK = 256 * 1024
_HAS_IPV6 = hasattr(socket, "AF_INET6")
# The running version's create_unix_server parameters (3.13 added cleanup_socket).
_UNIX_SERVER_PARAMETERS = inspect.signature(asyncio.SelectorEventLoop.create_unix_server).parameters
# 3.15: each connection's protocol runs in a context of its own, a copy of
# the server's (taken when the Server was made, passed to _start_serving)
# or, for create_connection and the like, of the caller's.
_CONNECTION_CONTEXTS = "context" in inspect.signature(selector_events.BaseSelectorEventLoop._start_serving).parameters


def _check_ssl_arguments(ssl: Any, handshake_timeout: Any, shutdown_timeout: Any) -> None:
    if isinstance(ssl, bool):
        raise TypeError("ssl argument must be an SSLContext or None")
    _check_ssl_timeouts(ssl, handshake_timeout, shutdown_timeout)


def _check_ssl_timeouts(ssl: Any, handshake_timeout: Any, shutdown_timeout: Any) -> None:
    if handshake_timeout is not None and not ssl:
        raise ValueError("ssl_handshake_timeout is only meaningful with ssl")
    if shutdown_timeout is not None and not ssl:
        raise ValueError("ssl_shutdown_timeout is only meaningful with ssl")


def _check_not_ssl_socket(sock: Any) -> None:
    if _ssl is not None and isinstance(sock, _ssl.SSLSocket):
        raise TypeError("Socket cannot be of type SSLSocket")


def _numeric_addrinfo(host: Any, port: Any, family: int, type_: int, proto: int, *extra: Any) -> Any:
    """The getaddrinfo() entry for an address that is already numeric, or
    None if it needs resolving (saves a thread-pool round trip)."""
    if host is None or proto not in (0, socket.IPPROTO_TCP, socket.IPPROTO_UDP):
        return None
    if type_ == socket.SOCK_STREAM:
        proto = socket.IPPROTO_TCP
    elif type_ == socket.SOCK_DGRAM:
        proto = socket.IPPROTO_UDP
    else:
        return None
    if port is None or port in (b"", ""):
        port = 0
    else:
        try:
            port = int(port)
        except (TypeError, ValueError):
            return None  # a service name such as "http"
    if isinstance(host, bytes):
        host = host.decode("idna")
    if "%" in host:
        return None
    families = [family] if family != socket.AF_UNSPEC else ([socket.AF_INET, socket.AF_INET6] if _HAS_IPV6 else [socket.AF_INET])
    for af in families:
        try:
            socket.inet_pton(af, host)
        except (OSError, ValueError):
            continue
        if af == socket.AF_INET6:
            flowinfo, scopeid = (list(extra) + [0, 0])[:2]
            return af, type_, proto, "", (host, port, flowinfo, scopeid)
        return af, type_, proto, "", (host, port)
    return None


def remove_stale_unix_socket(path: Any) -> None:
    """Remove a socket file left by an earlier server at ``path`` (never a
    regular file: that would be the user's data; abstract names have none)."""
    if path[0] in (0, "\x00"):
        return
    try:
        if stat.S_ISSOCK(os.stat(path).st_mode):
            os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        logger.error("Unable to check or remove stale UNIX socket %r: %r", path, err)


def _interleave(infos: list[Any], first_family_count: int = 1) -> list[Any]:
    """Alternate address families (RFC 8305), starting with
    ``first_family_count`` addresses of the first family."""
    by_family: dict[int, list[Any]] = collections.OrderedDict()
    for info in infos:
        by_family.setdefault(info[0], []).append(info)
    lists = list(by_family.values())
    result: list[Any] = []
    if first_family_count > 1:
        result.extend(lists[0][: first_family_count - 1])
        lists[0] = lists[0][first_family_count - 1 :]
    result.extend(a for a in itertools.chain.from_iterable(itertools.zip_longest(*lists)) if a is not None)
    return result


class _SendfileFlow(protocols.Protocol):
    """Stands in for a transport's protocol while the sendfile fallback
    writes through it: tracks flow control, refuses incoming data."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._proto = transport.get_protocol()
        self._resume_reading = transport.is_reading()
        self._resume_writing = bool(getattr(transport, "_protocol_paused", False))
        transport.pause_reading()
        transport.set_protocol(self)
        self._writable: Any = transport._loop.create_future() if self._resume_writing else None

    async def drain(self) -> None:
        if self._transport.is_closing():
            raise ConnectionError("Connection closed by peer")
        if self._writable is not None:
            await self._writable

    def connection_made(self, transport: Any) -> None:
        raise RuntimeError("Invalid state: connection should have been established already.")

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._writable is not None:
            self._writable.set_exception(exc if exc is not None else ConnectionError("Connection is closed by peer"))
        self._proto.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = self._transport._loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None:
            self._writable.set_result(False)
            self._writable = None

    def data_received(self, data: bytes) -> None:
        raise RuntimeError("Invalid state: reading should be paused")

    def eof_received(self) -> bool:
        raise RuntimeError("Invalid state: reading should be paused")

    async def restore(self) -> None:
        self._transport.set_protocol(self._proto)
        if self._resume_reading:
            self._transport.resume_reading()
        if self._writable is not None:
            self._writable.cancel()
        if self._resume_writing:
            self._proto.resume_writing()


class StreamOps:
    """Connection and server methods of ``Loop`` (a mixin)."""

    # -- bookkeeping shared with the transports ------------------------------------

    def _ensure_fd_no_transport(self, fd: Any) -> None:
        fileno = fd
        if not isinstance(fileno, int):
            try:
                fileno = int(fileno.fileno())
            except (AttributeError, TypeError, ValueError):
                raise ValueError(f"Invalid file object: {fd!r}") from None
        transport = self._transports.get(fileno)  # type: ignore[attr-defined]
        if transport is not None and not transport.is_closing():
            raise RuntimeError(f"File descriptor {fd!r} is used by transport {transport!r}")

    def _make_socket_transport(self, sock: socket.socket, protocol: Any, waiter: Any = None, *,
                               extra: Any = None, server: Any = None,
                               context: contextvars.Context | None = None) -> SocketTransport:
        return SocketTransport(self, sock, protocol, waiter, extra, server, context)

    def _make_ssl_transport(self, rawsock: socket.socket, protocol: Any, sslcontext: Any, waiter: Any = None, *,
                            server_side: bool = False, server_hostname: Any = None, extra: Any = None,
                            server: Any = None, ssl_handshake_timeout: Any = None,
                            ssl_shutdown_timeout: Any = None, call_connection_made: bool = True,
                            context: contextvars.Context | None = None) -> Any:
        ssl_protocol = sslproto.SSLProtocol(
            self, protocol, sslcontext, waiter, server_side, server_hostname,
            ssl_handshake_timeout=ssl_handshake_timeout,
            ssl_shutdown_timeout=ssl_shutdown_timeout,
            call_connection_made=call_connection_made,
        )
        SocketTransport(self, rawsock, ssl_protocol, extra=extra, server=server, context=context)
        return ssl_protocol._app_transport

    async def _ensure_resolved(self, address: Any, *, family: int = 0, type: int = socket.SOCK_STREAM,
                               proto: int = 0, flags: int = 0) -> list[Any]:
        host, port = address[:2]
        info = _numeric_addrinfo(host, port, family, type, proto, *address[2:])
        if info is not None:
            return [info]
        loop: Any = self
        return await loop.getaddrinfo(host, port, family=family, type=type, proto=proto, flags=flags)

    # -- connecting ------------------------------------------------------------------

    async def _create_connection(self, protocol_factory: Callable[[], Any], host: Any = None, port: Any = None, *,
                                 ssl: Any = None, family: int = 0, proto: int = 0, flags: int = 0,
                                 sock: Any = None, local_addr: Any = None, server_hostname: Any = None,
                                 ssl_handshake_timeout: Any = None, ssl_shutdown_timeout: Any = None,
                                 happy_eyeballs_delay: float | None = None, interleave: int | None = None,
                                 all_errors: bool = False) -> tuple[Any, Any]:
        """``create_connection`` (exposed with the running version's signature, see _signatures)."""
        if server_hostname is not None and not ssl:
            raise ValueError("server_hostname is only meaningful with ssl")
        if server_hostname is None and ssl:
            if not host:
                raise ValueError("You must set server_hostname when using ssl without a host")
            server_hostname = host
        # ssl=True is allowed here (a default context), unlike for servers.
        _check_ssl_timeouts(ssl, ssl_handshake_timeout, ssl_shutdown_timeout)
        if sock is not None:
            _check_not_ssl_socket(sock)
        if happy_eyeballs_delay is not None and interleave is None:
            interleave = 1

        if host is not None or port is not None:
            if sock is not None:
                raise ValueError("host/port and sock can not be specified at the same time")
            infos = await self._ensure_resolved((host, port), family=family, type=socket.SOCK_STREAM, proto=proto, flags=flags)
            if not infos:
                raise OSError("getaddrinfo() returned empty list")
            local_infos = None
            if local_addr is not None:
                local_infos = await self._ensure_resolved(local_addr, family=family, type=socket.SOCK_STREAM, proto=proto, flags=flags)
                if not local_infos:
                    raise OSError("getaddrinfo() returned empty list")
            if interleave:
                infos = _interleave(infos, interleave)
            errors: list[list[OSError]] = []
            if happy_eyeballs_delay is None:
                for info in infos:
                    try:
                        sock = await self._connect_one(errors, info, local_infos)
                        break
                    except OSError:
                        continue
            else:
                # The winner only, as asyncio takes it: the rest of the
                # race's result (its index, the attempts' errors) is not used.
                sock = (await staggered.staggered_race(
                    (functools.partial(self._connect_one, errors, info, local_infos) for info in infos),
                    happy_eyeballs_delay,
                    loop=self,
                ))[0]
            if sock is None:
                flat = [exc for attempt in errors for exc in attempt]
                if all_errors:
                    raise ExceptionGroup("create_connection failed", flat)  # noqa: F821 (3.11+)
                if not flat:
                    # Every attempt was cancelled before failing (asyncio's
                    # answer since gh-135836).
                    raise TimeoutError("create_connection failed")
                if len(flat) == 1:
                    raise flat[0]
                first = str(flat[0])
                if all(str(exc) == first for exc in flat):
                    raise flat[0]
                raise OSError("Multiple exceptions: {}".format(", ".join(str(exc) for exc in flat)))
        else:
            if sock is None:
                raise ValueError("host and port was not specified and no sock specified")
            if sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A Stream Socket was expected, got {sock!r}")

        return await self._connection_transport(sock, protocol_factory, ssl, server_hostname,
                                                ssl_handshake_timeout=ssl_handshake_timeout,
                                                ssl_shutdown_timeout=ssl_shutdown_timeout)

    async def _connect_one(self, errors: list[list[OSError]], info: Any, local_infos: Any) -> socket.socket:
        """Create, bind and connect one socket; its errors go to ``errors``."""
        mine: list[OSError] = []
        errors.append(mine)
        family, type_, proto, _, address = info
        sock = None
        try:
            sock = socket.socket(family=family, type=type_, proto=proto)
            sock.setblocking(False)
            if local_infos is not None:
                for lfamily, _, _, _, laddr in local_infos:
                    if lfamily != family:
                        continue
                    try:
                        sock.bind(laddr)
                        break
                    except OSError as exc:
                        mine.append(OSError(exc.errno, f"error while attempting to bind on address {laddr!r}: {exc.strerror.lower()}"))
                else:
                    if mine:
                        raise mine.pop()
                    raise OSError(f"no matching local address with family={family!r} found")
            loop: Any = self
            await loop.sock_connect(sock, address)
            return sock
        except OSError as exc:
            mine.append(exc)
            if sock is not None:
                sock.close()
            raise
        except BaseException:
            if sock is not None:
                sock.close()
            raise

    async def _connection_transport(self, sock: socket.socket, protocol_factory: Callable[[], Any], ssl: Any,
                                    server_hostname: Any, server_side: bool = False,
                                    ssl_handshake_timeout: Any = None,
                                    ssl_shutdown_timeout: Any = None) -> tuple[Any, Any]:
        loop: Any = self
        try:
            sock.setblocking(False)
            # Passed only where asyncio passes it (tests mock these makers).
            in_context = {"context": contextvars.copy_context()} if _CONNECTION_CONTEXTS else {}
            protocol = protocol_factory()
            waiter = loop.create_future()
            if ssl:
                sslcontext = None if isinstance(ssl, bool) else ssl
                if sslcontext is None:
                    sslcontext = _ssl.create_default_context()
                transport = self._make_ssl_transport(
                    sock, protocol, sslcontext, waiter, server_side=server_side,
                    server_hostname=server_hostname, ssl_handshake_timeout=ssl_handshake_timeout,
                    ssl_shutdown_timeout=ssl_shutdown_timeout, **in_context)
            else:
                transport = self._make_socket_transport(sock, protocol, waiter, **in_context)
        except BaseException:
            # No transport took the socket (the protocol factory failed, say):
            # close it, the caller's own included (asyncio's gh-153133).
            sock.close()
            raise
        try:
            await waiter
        except BaseException:
            transport.close()
            # The error's traceback holds this frame: without the waiter
            # (which holds the error) that is no cycle, and a failed
            # connection's transport goes at once (asyncio's gh-159049).
            waiter = None
            raise
        return transport, protocol

    async def create_unix_connection(self, protocol_factory: Callable[[], Any], path: Any = None, *,
                                     ssl: Any = None, sock: Any = None, server_hostname: Any = None,
                                     ssl_handshake_timeout: Any = None,
                                     ssl_shutdown_timeout: Any = None) -> tuple[Any, Any]:
        if ssl:
            if server_hostname is None:
                raise ValueError("you have to pass server_hostname when using ssl")
        else:
            if server_hostname is not None:
                raise ValueError("server_hostname is only meaningful with ssl")
        _check_ssl_timeouts(ssl, ssl_handshake_timeout, ssl_shutdown_timeout)
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            path = os.fspath(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)
            try:
                sock.setblocking(False)
                loop: Any = self
                await loop.sock_connect(sock, path)
            except BaseException:
                sock.close()
                raise
        else:
            if sock is None:
                raise ValueError("no path and sock were specified")
            if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
            sock.setblocking(False)
        return await self._connection_transport(sock, protocol_factory, ssl, server_hostname,
                                                ssl_handshake_timeout=ssl_handshake_timeout,
                                                ssl_shutdown_timeout=ssl_shutdown_timeout)

    async def connect_accepted_socket(self, protocol_factory: Callable[[], Any], sock: socket.socket, *,
                                      ssl: Any = None, ssl_handshake_timeout: Any = None,
                                      ssl_shutdown_timeout: Any = None) -> tuple[Any, Any]:
        _check_not_ssl_socket(sock)
        if sock.type != socket.SOCK_STREAM:
            raise ValueError(f"A Stream Socket was expected, got {sock!r}")
        _check_ssl_arguments(ssl, ssl_handshake_timeout, ssl_shutdown_timeout)
        transport, protocol = await self._connection_transport(
            sock, protocol_factory, ssl, "", server_side=True,
            ssl_handshake_timeout=ssl_handshake_timeout, ssl_shutdown_timeout=ssl_shutdown_timeout)
        return transport, protocol

    # -- serving ---------------------------------------------------------------------

    async def _create_server(self, protocol_factory: Callable[[], Any], host: Any = None, port: Any = None, *,
                             family: int = socket.AF_UNSPEC, flags: int = socket.AI_PASSIVE, sock: Any = None,
                             backlog: int = 100, ssl: Any = None, reuse_address: bool | None = None,
                             reuse_port: bool | None = None, keep_alive: bool | None = None,
                             ssl_handshake_timeout: Any = None, ssl_shutdown_timeout: Any = None,
                             start_serving: bool = True) -> Any:
        """``create_server`` (exposed with the running version's signature, see _signatures)."""
        _check_ssl_arguments(ssl, ssl_handshake_timeout, ssl_shutdown_timeout)
        if sock is not None:
            _check_not_ssl_socket(sock)
        if host is not None or port is not None:
            if sock is not None:
                raise ValueError("host/port and sock can not be specified at the same time")
            if reuse_address is None:
                reuse_address = True
            hosts: Iterable[Any]
            if host == "":
                hosts = [None]
            elif isinstance(host, str) or not isinstance(host, Iterable):
                hosts = [host]
            else:
                hosts = host
            resolved = await asyncio.gather(*[self._server_addrinfo(h, port, family, flags) for h in hosts])
            infos = set(itertools.chain.from_iterable(resolved))
            sockets = []
            completed = False
            try:
                for af, socktype, proto, _canonname, address in infos:
                    try:
                        sock = socket.socket(af, socktype, proto)
                    except OSError:
                        loop: Any = self
                        if loop.get_debug():
                            logger.warning("create_server() failed to create socket.socket(%r, %r, %r)", af, socktype, proto, exc_info=True)
                        continue
                    sockets.append(sock)
                    if reuse_address:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, True)
                    if reuse_port:
                        if not hasattr(socket, "SO_REUSEPORT"):
                            raise ValueError("reuse_port not supported by socket module")
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                    if keep_alive:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, True)
                    if _HAS_IPV6 and af == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, True)
                    try:
                        sock.bind(address)
                    except OSError as err:
                        message = f"error while attempting to bind on address {address!r}: {(err.strerror or '').lower()}"
                        if err.errno == errno.EADDRNOTAVAIL:
                            message += " (address not available)"
                        raise OSError(err.errno, message) from None
                completed = True
            finally:
                if not completed:
                    for s in sockets:
                        s.close()
        else:
            if sock is None:
                raise ValueError("Neither host/port nor sock were specified")
            if sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A Stream Socket was expected, got {sock!r}")
            sockets = [sock]
        for s in sockets:
            s.setblocking(False)
        return await self._serve(sockets, protocol_factory, ssl, backlog, ssl_handshake_timeout, ssl_shutdown_timeout, start_serving)

    async def _server_addrinfo(self, host: Any, port: Any, family: int, flags: int) -> list[Any]:
        infos = await self._ensure_resolved((host, port), family=family, type=socket.SOCK_STREAM, flags=flags)
        if not infos:
            raise OSError(f"getaddrinfo({host!r}) returned empty list")
        return infos

    async def _serve(self, sockets: list[socket.socket], protocol_factory: Callable[[], Any], ssl: Any, backlog: int,
                     ssl_handshake_timeout: Any, ssl_shutdown_timeout: Any, start_serving: bool) -> Any:
        server = base_events.Server(self, sockets, protocol_factory, ssl, backlog, ssl_handshake_timeout, ssl_shutdown_timeout)
        if start_serving:
            server._start_serving()
            # One iteration, so the listening sockets' readers are in place.
            await asyncio.sleep(0)
        return server

    async def _create_unix_server(self, protocol_factory: Callable[[], Any], path: Any = None, *, sock: Any = None,
                                  backlog: int = 100, ssl: Any = None, ssl_handshake_timeout: Any = None,
                                  ssl_shutdown_timeout: Any = None, start_serving: bool = True,
                                  cleanup_socket: bool = True) -> Any:
        """``create_unix_server`` (exposed with the running version's signature,
        see _signatures). ``cleanup_socket`` (3.13+) removes the socket file
        when the server closes, if it is still the one bound."""
        if isinstance(ssl, bool):
            raise TypeError("ssl argument must be an SSLContext or None")
        _check_ssl_arguments(ssl, ssl_handshake_timeout, ssl_shutdown_timeout)
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            path = os.fspath(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            remove_stale_unix_socket(path)
            try:
                sock.bind(path)
            except OSError as exc:
                sock.close()
                if exc.errno == errno.EADDRINUSE:
                    raise OSError(errno.EADDRINUSE, f"Address {path!r} is already in use") from None
                raise
            except BaseException:
                sock.close()
                raise
        else:
            if sock is None:
                raise ValueError("path was not specified, and no sock specified")
            if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
        if cleanup_socket and "cleanup_socket" in _UNIX_SERVER_PARAMETERS:
            self._remember_unix_server_socket(sock)
        sock.setblocking(False)
        return await self._serve([sock], protocol_factory, ssl, backlog, ssl_handshake_timeout, ssl_shutdown_timeout, start_serving)

    def _start_serving(self, protocol_factory: Callable[[], Any], sock: socket.socket, sslcontext: Any = None,
                       server: Any = None, backlog: int = 100, ssl_handshake_timeout: Any = None,
                       ssl_shutdown_timeout: Any = None, context: Any = None) -> None:
        """Accept on ``sock`` for ``server`` (asyncio's ``Server`` calls this;
        3.15 passes the ``context`` connections are set up in). The accept
        loop is native (``_native.Listener``); each connection comes back to
        ``_accept_connection``."""
        loop: Any = self
        serve_args = (protocol_factory, sslcontext, server, ssl_handshake_timeout, ssl_shutdown_timeout)
        listener = _native.Listener(loop, sock, backlog, serve_args, context)
        old = loop._listeners.pop(sock, None)
        if old is not None:
            old._stop()
        loop._listeners[sock] = listener
        listener._start()

    def _stop_serving(self, sock: socket.socket) -> None:
        loop: Any = self
        inode = loop._unix_server_sockets.pop(sock, None)
        path = sock.getsockname() if inode is not None else None
        listener = loop._listeners.pop(sock, None)
        if listener is not None:
            listener._stop()
        sock.close()
        if path is not None:
            # Remove the file only if it is still ours (not replaced since).
            try:
                if os.stat(path).st_ino == inode:
                    os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                logger.error("Unable to clean up listening UNIX socket %r: %r", path, exc)

    def _remember_unix_server_socket(self, sock: socket.socket) -> None:
        loop: Any = self
        path = sock.getsockname()
        # Abstract sockets have no file (str and bytes paths both count).
        if path and path[0] not in (0, "\x00"):
            try:
                loop._unix_server_sockets[sock] = os.stat(path).st_ino
            except FileNotFoundError:
                pass

    def _accept_connection(self, conn: socket.socket, serve_args: tuple[Any, ...],
                           context: contextvars.Context | None) -> None:
        """One connection the native accept loop took: a protocol from the
        server's factory and a transport for it (with TLS, in a task that
        waits for the handshake). ``context`` (3.15): the connection's own,
        which this runs in and its protocol's callbacks will."""
        protocol_factory, sslcontext, server, ssl_handshake_timeout, ssl_shutdown_timeout = serve_args
        loop: Any = self
        if sslcontext:
            loop.create_task(self._accept_one(protocol_factory, conn, {}, sslcontext, server,
                                              ssl_handshake_timeout, ssl_shutdown_timeout, context),
                             context=context)
            return
        protocol = None
        try:
            protocol = protocol_factory()
            SocketTransport(loop, conn, protocol, server=server, context=context)
        except (SystemExit, KeyboardInterrupt):
            conn.close()
            raise
        except BaseException as exc:
            # No transport took the socket (the protocol factory failed, or
            # the server was closed meanwhile): close it now, so the client
            # is not left hanging.
            conn.close()
            if loop.get_debug():
                context: dict[str, Any] = {"message": "Error on transport creation for incoming connection",
                                           "exception": exc}
                if protocol is not None:
                    context["protocol"] = protocol
                loop.call_exception_handler(context)

    async def _accept_one(self, protocol_factory: Callable[[], Any], conn: socket.socket, extra: dict[str, Any],
                          sslcontext: Any, server: Any, ssl_handshake_timeout: Any, ssl_shutdown_timeout: Any,
                          context: contextvars.Context | None) -> None:
        loop: Any = self
        protocol = None
        transport = None
        try:
            protocol = protocol_factory()
            waiter = loop.create_future()
            # Passed only where asyncio passes it (tests mock these makers).
            in_context = {"context": context} if _CONNECTION_CONTEXTS else {}
            if sslcontext:
                transport = self._make_ssl_transport(conn, protocol, sslcontext, waiter, server_side=True, extra=extra,
                                                     server=server, ssl_handshake_timeout=ssl_handshake_timeout,
                                                     ssl_shutdown_timeout=ssl_shutdown_timeout, **in_context)
            else:
                transport = self._make_socket_transport(conn, protocol, waiter, extra=extra, server=server,
                                                        **in_context)
            try:
                await waiter
            except BaseException:
                transport.close()
                waiter = None  # no cycle through the error (see _connection_transport)
                raise
        except (SystemExit, KeyboardInterrupt):
            if transport is None:
                conn.close()
            raise
        except BaseException as exc:
            if transport is None:
                # No transport took the socket (the protocol factory failed,
                # or the server was closed before the connection was set up):
                # close it now, not at garbage collection, so the client is
                # not left hanging (asyncio leaves it to the collector).
                conn.close()
            if loop.get_debug():
                context: dict[str, Any] = {"message": "Error on transport creation for incoming connection", "exception": exc}
                if protocol is not None:
                    context["protocol"] = protocol
                if transport is not None:
                    context["transport"] = transport
                loop.call_exception_handler(context)

    # -- sendfile over a transport ---------------------------------------------------------

    async def sendfile(self, transport: Any, file: Any, offset: int = 0, count: int | None = None, *,
                       fallback: bool = True) -> int:
        if transport.is_closing():
            raise RuntimeError("Transport is closing")
        mode = getattr(transport, "_sendfile_compatible", constants._SendfileMode.UNSUPPORTED)
        if mode is constants._SendfileMode.UNSUPPORTED:
            raise RuntimeError(f"sendfile is not supported for transport {transport!r}")
        if mode is constants._SendfileMode.TRY_NATIVE:
            try:
                return await self._sendfile_native(transport, file, offset, count)
            except exceptions.SendfileNotAvailableError:
                if not fallback:
                    raise
        if not fallback:
            raise RuntimeError(f"fallback is disabled and native sendfile is not supported for transport {transport!r}")
        return await self._sendfile_fallback(transport, file, offset, count)

    async def _sendfile_native(self, transport: Any, file: Any, offset: int, count: int | None) -> int:
        # The socket is lent to sock_sendfile: the transport neither reads
        # nor writes meanwhile (write() refuses while the waiter is set).
        loop: Any = self
        fd = transport._sock_fd
        loop._transports.pop(fd, None)
        resume_reading = transport.is_reading()
        transport.pause_reading()
        await transport._make_empty_waiter()
        try:
            return await loop.sock_sendfile(transport._sock, file, offset, count, fallback=False)
        finally:
            transport._reset_empty_waiter()
            if resume_reading:
                transport.resume_reading()
            loop._transports[fd] = transport

    async def _sendfile_fallback(self, transport: Any, file: Any, offset: int, count: int | None) -> int:
        loop: Any = self
        if offset or (SENDFILE_ALWAYS_SEEKS and hasattr(file, "seek")):
            file.seek(offset)
        block = min(count, _SENDFILE_BLOCK) if count else _SENDFILE_BLOCK
        buf = bytearray(block)
        sent = 0
        flow = _SendfileFlow(transport)
        try:
            while True:
                if count:
                    block = min(count - sent, block)
                    if block <= 0:
                        return sent
                view = memoryview(buf)[:block]
                read = await loop.run_in_executor(None, file.readinto, view)
                if not read:
                    return sent
                await flow.drain()
                transport.write(view[:read])
                sent += read
        finally:
            if sent > 0 and hasattr(file, "seek"):
                file.seek(offset + sent)
            await flow.restore()

    # -- TLS upgrade -------------------------------------------------------------------

    async def start_tls(self, transport: Any, protocol: Any, sslcontext: Any, *, server_side: bool = False,
                        server_hostname: Any = None, ssl_handshake_timeout: Any = None,
                        ssl_shutdown_timeout: Any = None) -> Any:
        if _ssl is None:
            raise RuntimeError("Python ssl module is not available")
        if not isinstance(sslcontext, _ssl.SSLContext):
            raise TypeError(f"sslcontext is expected to be an instance of ssl.SSLContext, got {sslcontext!r}")
        if not getattr(transport, "_start_tls_compatible", False):
            raise TypeError(f"transport {transport!r} is not supported by start_tls()")
        loop: Any = self
        waiter = loop.create_future()
        ssl_protocol = sslproto.SSLProtocol(
            self, protocol, sslcontext, waiter, server_side, server_hostname,
            ssl_handshake_timeout=ssl_handshake_timeout, ssl_shutdown_timeout=ssl_shutdown_timeout,
            call_connection_made=False,
        )
        # Pause while the protocol is swapped, so no data reaches the old one.
        transport.pause_reading()
        if server_side and isinstance(protocol, asyncio.StreamReaderProtocol):
            # What the stream buffered already (the ClientHello, when the
            # client was quick) belongs to the TLS layer now (asyncio's
            # gh-142352; lost before it, and the handshake then waits forever).
            reader = getattr(protocol, "_stream_reader", None)
            if reader is not None and reader._buffer:
                ssl_protocol._incoming.write(reader._buffer)
                reader._buffer.clear()
        transport.set_protocol(ssl_protocol)
        connection_made = loop.call_soon(ssl_protocol.connection_made, transport)
        resume = loop.call_soon(transport.resume_reading)
        try:
            await waiter
        except BaseException:
            transport.close()
            connection_made.cancel()
            resume.cancel()
            waiter = None  # no cycle through the error (see _connection_transport)
            raise
        return ssl_protocol._app_transport
