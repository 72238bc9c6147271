"""The stream transport for sockets: asyncio's ``Transport`` contract over
the loop's fd callbacks.

``connection_made`` → ``data_received``* (or ``get_buffer``/``buffer_updated``
for a ``BufferedProtocol``) → ``eof_received`` → ``connection_lost``, with
writes attempted at once and only the remainder buffered, flow control at
the high/low water marks, half-close and orderly close after the buffer
drains. The state and every decision are here, in Python, for
asyncio-exact behaviour (TLS runs through the stdlib's ``SSLProtocol`` on
top of it); the per-message path is native (``sockio.rs``): the reader the
loop calls for a plain ``Protocol`` (``ReadPump``) and ``write`` while it can
go straight to the socket (``WritePump``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import inspect
import socket
import sys
import warnings
from asyncio import base_events, constants, trsock
from typing import Any

from ._flow import FlowControl
from ._native import ReadPump, WritePump, sock_recv_into, sock_send

logger = logging.getLogger("asyncio")

#: Bytes read per readiness event (asyncio's max_size).
READ_SIZE = 256 * 1024


class ReadBuffer:
    """One reusable read buffer per thread's loop: transports read into it
    and copy out only what arrived.

    ``sock.recv(256 KiB)`` allocates 256 KiB per call and shrinks it; glibc
    serves that from mmap/mremap/munmap unless its mmap threshold happens to
    have adapted, which cost echo servers ~3.5× their CPU per message in
    measurement (three extra syscalls per read)."""

    __slots__ = ("buffer", "view")

    def __init__(self, size: int = READ_SIZE) -> None:
        self.buffer = bytearray(size)
        self.view = memoryview(self.buffer)
#: After this many writes to a lost connection, warn (asyncio's threshold).
LOG_THRESHOLD_FOR_CONNLOST_WRITES = 5
_WOULD_BLOCK = (BlockingIOError, InterruptedError)
#: What write() takes, as asyncio's socket transport words it on this version.
_WRITABLE = "a bytes, bytearray, or memoryview object" if sys.version_info >= (3, 14) else "a bytes-like object"


def set_nodelay(sock: socket.socket) -> None:
    """TCP_NODELAY on TCP stream sockets, as asyncio does."""
    if (
        hasattr(socket, "TCP_NODELAY")
        and sock.family in (socket.AF_INET, socket.AF_INET6)
        and sock.type == socket.SOCK_STREAM
        and sock.proto == socket.IPPROTO_TCP
    ):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# asyncio's Server tracks its transports from 3.13 on (for close_clients()
# and abort_clients()): _attach(transport) / _detach(transport).
_SERVER_TRACKS_TRANSPORTS = len(inspect.signature(base_events.Server._attach).parameters) == 2


def _attach(server: Any, transport: Any) -> None:
    if _SERVER_TRACKS_TRANSPORTS:
        server._attach(transport)
    else:
        server._attach()


def _detach(server: Any, transport: Any) -> None:
    if _SERVER_TRACKS_TRANSPORTS:
        server._detach(transport)
    else:
        server._detach()


class SocketTransportBase(FlowControl):
    """What the stream and datagram socket transports share (asyncio's
    ``_SelectorTransport``): the socket and its extra info, the loop's
    transport registry, closing, and losing the connection. Subclasses say
    how their write buffer empties (``_drop_write_buffer``) and what else
    goes when the connection is lost (``_after_connection_lost``)."""

    _extra: dict[str, Any]
    _buffer: Any

    def _init_socket(self, loop: Any, sock: socket.socket, context: contextvars.Context | None = None) -> None:
        self._extra["socket"] = trsock.TransportSocket(sock)
        try:
            self._extra["sockname"] = sock.getsockname()
        except OSError:
            self._extra["sockname"] = None
        if "peername" not in self._extra:
            try:
                self._extra["peername"] = sock.getpeername()
            except OSError:
                self._extra["peername"] = None
        self._loop = loop
        #: What the protocol's callbacks run in: on 3.15 the connection's
        #: own context (a copy of the server's, or of the connecting
        #: caller's); None elsewhere: a copy of the current one per callback,
        #: as before 3.15.
        self._context = context
        self._sock: socket.socket | None = sock
        self._sock_fd = sock.fileno()
        self._protocol: Any = None
        self._protocol_connected = False
        self._conn_lost = 0
        self._closing = False
        self._paused = False
        self._init_flow_control()

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_sock", None) is not None:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._sock.close()  # type: ignore[union-attr]

    def get_protocol(self) -> Any:
        return self._protocol

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._loop._remove_reader(self._sock_fd)
        if not self._buffer:
            self._conn_lost += 1
            self._loop._remove_writer(self._sock_fd)
            self._call_soon(self._call_connection_lost, None)

    def abort(self) -> None:
        self._force_close(None)

    def _drop_write_buffer(self) -> None:
        raise NotImplementedError

    def _after_connection_lost(self) -> None:
        """Subclass clean-up once the protocol heard of the loss."""

    def _fatal_error(self, exc: BaseException, message: str = "Fatal error on transport") -> None:
        if isinstance(exc, OSError):
            # Resets and broken pipes are the peer's doing: not the loop's news.
            if self._loop.get_debug():
                logger.debug("%r: %s", self, message, exc_info=True)
        else:
            self._loop.call_exception_handler({
                "message": message,
                "exception": exc,
                "transport": self,
                "protocol": self._protocol,
            })
        self._force_close(exc)

    def _force_close(self, exc: BaseException | None) -> None:
        if self._conn_lost:
            return
        if self._buffer:
            self._drop_write_buffer()
            self._loop._remove_writer(self._sock_fd)
        if not self._closing:
            self._closing = True
            self._loop._remove_reader(self._sock_fd)
        self._conn_lost += 1
        self._call_soon(self._call_connection_lost, exc)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        try:
            if self._protocol_connected:
                self._protocol.connection_lost(exc)
        finally:
            if self._sock is not None:
                self._loop._transports.pop(self._sock_fd, None)
                self._sock.close()
                self._sock = None
            self._protocol = None
            self._after_connection_lost()

    # -- reading (asyncio's _SelectorTransport: streams and datagrams) -------------

    def _call_soon(self, callback: Any, *args: Any) -> None:
        self._loop.call_soon(callback, *args, context=self._context)

    def _add_reader(self) -> None:
        if self.is_reading():
            self._loop._add_reader(self._sock_fd, self._read_ready, context=self._context)

    def is_reading(self) -> bool:
        return not self._paused and not self._closing

    def pause_reading(self) -> None:
        if not self.is_reading():
            return
        self._paused = True
        self._loop._remove_reader(self._sock_fd)
        if self._loop.get_debug():
            logger.debug("%r pauses reading", self)

    def resume_reading(self) -> None:
        if self._closing or not self._paused:
            return
        self._paused = False
        self._add_reader()
        if self._loop.get_debug():
            logger.debug("%r resumes reading", self)


class SocketTransport(SocketTransportBase, asyncio.Transport):
    """A connected stream socket (TCP or Unix) as an asyncio transport."""

    _start_tls_compatible = True
    _sendfile_compatible = constants._SendfileMode.TRY_NATIVE

    def __init__(self, loop: Any, sock: socket.socket, protocol: asyncio.BaseProtocol,
                 waiter: asyncio.Future[Any] | None = None, extra: dict[str, Any] | None = None,
                 server: Any = None, context: contextvars.Context | None = None) -> None:
        super().__init__(extra)
        self._init_socket(loop, sock, context)
        self._read_buffer: ReadBuffer = loop._read_buffer
        self._read_eof = False
        self._read_ready: Any = None
        self.set_protocol(protocol)
        self._server = server
        self._buffer = bytearray()
        self._eof = False
        self._empty_waiter: asyncio.Future[None] | None = None
        # write() while nothing is buffered runs in Rust (sockio.rs): an
        # instance attribute shadowing the method below, which stays the
        # general path. A subclass's own write() is left alone.
        self._write_pump: WritePump | None = None
        if type(self).write is SocketTransport.write:
            self._write_pump = WritePump(self._sock_fd, self, SocketTransport.write)
            self.write = self._write_pump  # type: ignore[method-assign]
        if server is not None:
            try:
                _attach(server, self)
            except BaseException:
                # The server closed meanwhile (asyncio's Server asserts):
                # the socket stays the caller's to close.
                self._sock = None
                raise
        loop._transports[self._sock_fd] = self
        set_nodelay(sock)
        self._call_soon(self._protocol.connection_made, self)
        self._call_soon(self._add_reader)
        if waiter is not None:
            self._call_soon(_set_result_unless_cancelled, waiter, None)

    def __repr__(self) -> str:
        info = [type(self).__name__]
        if self._sock is None:
            info.append("closed")
        elif self._closing:
            info.append("closing")
        info.append(f"fd={self._sock_fd}")
        if self._sock is not None and not self._closing:
            info.append("read=" + ("polling" if self.is_reading() else "idle"))
            info.append(f"write=<{'polling' if self._buffer else 'idle'}, bufsize={len(self._buffer)}>")
        return "<{}>".format(" ".join(info))

    # -- protocol ------------------------------------------------------------------

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        read_ready: Any
        if isinstance(protocol, asyncio.BufferedProtocol):
            read_ready = self._read_ready_into_buffer
        else:
            # Reads and calls data_received natively (sockio.rs). Like
            # uvloop, the bound method is looked up once per protocol.
            read_ready = ReadPump(self._sock_fd, self, self._read_buffer.buffer, _data_received_of(protocol))
        switched = getattr(self, "_read_ready", None) not in (None, read_ready)
        self._read_ready = read_ready
        self._protocol = protocol
        self._protocol_connected = True
        # The reader is registered as the callback itself (no dispatch frame
        # per read), so a new protocol re-registers it.
        if switched and self.is_reading() and not self._read_eof:
            self._loop._add_reader(self._sock_fd, self._read_ready, context=self._context)

    # -- reading -------------------------------------------------------------------

    def _read_ready_into_buffer(self) -> None:
        if self._conn_lost:
            return
        try:
            buf = self._protocol.get_buffer(-1)
            if not len(buf):
                raise RuntimeError("get_buffer() returned an empty buffer")
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal error: protocol.get_buffer() call failed.")
            return
        try:
            nbytes = sock_recv_into(self._sock_fd, buf)
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal read error on socket transport")
            return
        if not nbytes:
            self._on_eof()
            return
        try:
            self._protocol.buffer_updated(nbytes)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal error: protocol.buffer_updated() call failed.")

    def _on_eof(self) -> None:
        if self._loop.get_debug():
            logger.debug("%r received EOF", self)
        try:
            keep_open = self._protocol.eof_received()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal error: protocol.eof_received() call failed.")
            return
        if keep_open:
            # Half-closed: nothing more to read, writing goes on.
            self._read_eof = True
            self._loop._remove_reader(self._sock_fd)
        else:
            self.close()

    # -- writing -------------------------------------------------------------------

    def write(self, data: Any) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be {_WRITABLE}, not {type(data).__name__!r}")
        if self._eof:
            raise RuntimeError("Cannot call write() after write_eof()")
        if self._empty_waiter is not None:
            raise RuntimeError("unable to write; sendfile is in progress")
        if not data:
            return
        if self._conn_lost:
            if self._conn_lost >= LOG_THRESHOLD_FOR_CONNLOST_WRITES:
                logger.warning("socket.send() raised exception.")
            self._conn_lost += 1
            return
        if not self._buffer:
            try:
                sent = sock_send(self._sock_fd, data)
            except _WOULD_BLOCK:
                sent = 0
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on socket transport")
                return
            if sent == len(data) and type(data) is not memoryview:
                return
            data = memoryview(data).cast("B")
            if sent < len(data):
                self._write_rest(data, sent)
            return
        # Bytes are buffered already, so the WritePump shortcut is off.
        self._buffer += data
        self._maybe_pause_protocol()

    def _write_rest(self, data: bytes | bytearray | memoryview, sent: int) -> None:
        """What a write could not send at once (here or in WritePump):
        buffer it, wait for writability."""
        self._buffer += memoryview(data)[sent:]
        self._loop._add_writer(self._sock_fd, self._write_ready, context=self._context)
        self._sync_direct()
        self._maybe_pause_protocol()

    def _sync_direct(self) -> None:
        """Keep WritePump's shortcut on exactly while a write could go
        straight to the socket (a closing transport's writes take the
        general path, which knows what asyncio does with them)."""
        if self._write_pump is not None:
            self._write_pump.set_direct(
                not (self._buffer or self._eof or self._closing or self._conn_lost
                     or self._empty_waiter is not None)
            )

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def _write_ready(self) -> None:
        if self._conn_lost or not self._buffer:
            return
        try:
            sent = sock_send(self._sock_fd, self._buffer)
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._loop._remove_writer(self._sock_fd)
            self._buffer.clear()
            self._fatal_error(exc, "Fatal write error on socket transport")
            if self._empty_waiter is not None and not self._empty_waiter.done():
                self._empty_waiter.set_exception(exc)
            return
        if sent:
            del self._buffer[:sent]
        was_eof = self._eof
        self._maybe_resume_protocol()  # may write more, close or abort
        if self._buffer:
            return
        self._loop._remove_writer(self._sock_fd)
        self._sync_direct()
        if self._empty_waiter is not None and not self._empty_waiter.done():
            self._empty_waiter.set_result(None)
        if self._conn_lost:
            # close() or abort() from resume_writing() found the buffer
            # empty and scheduled connection_lost itself (asyncio calls it a
            # second time here, which fails in the exception handler).
            return
        if self._closing:
            self._conn_lost += 1
            self._call_connection_lost(None)
        elif was_eof:
            # (A write_eof() from resume_writing() has shut down already.)
            self._sock.shutdown(socket.SHUT_WR)  # type: ignore[union-attr]

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self._closing or self._eof:
            return
        self._eof = True
        self._sync_direct()
        if not self._buffer:
            self._sock.shutdown(socket.SHUT_WR)  # type: ignore[union-attr]

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def _make_empty_waiter(self) -> asyncio.Future[None]:
        """For sendfile: a future done when the write buffer has drained."""
        if self._empty_waiter is not None:
            raise RuntimeError("Empty waiter is already set")
        self._empty_waiter = self._loop.create_future()
        self._sync_direct()
        if not self._buffer:
            self._empty_waiter.set_result(None)
        return self._empty_waiter

    def _reset_empty_waiter(self) -> None:
        self._empty_waiter = None
        self._sync_direct()

    # -- closing -------------------------------------------------------------------

    @property
    def _read_ready_cb(self) -> Any:
        """asyncio's name for the reader callback: None once the transport
        closes (tests of asyncio's transports read it)."""
        return self._read_ready

    def close(self) -> None:
        if not self._closing:
            # Nothing is read after close(), and the reader holds the transport.
            self._read_ready = None
        super().close()
        self._sync_direct()

    def _force_close(self, exc: BaseException | None) -> None:
        super()._force_close(exc)
        self._sync_direct()

    def _drop_write_buffer(self) -> None:
        self._buffer.clear()

    def _after_connection_lost(self) -> None:
        # The reader and the write pump hold the transport: without them it
        # is in no reference cycle and goes as soon as its last user lets go
        # (asyncio drops its read callback the same way, gh-159049).
        self._read_ready = None
        if self._write_pump is not None:
            self._write_pump = None
            del self.write
        server = self._server
        if server is not None:
            _detach(server, self)
            self._server = None
        # A sendfile() waiting for the buffer to drain learns of the loss.
        if self._empty_waiter is not None and not self._empty_waiter.done():
            self._empty_waiter.set_exception(ConnectionError("Connection is closed by peer"))


def _data_received_of(protocol: Any) -> Any:
    """``protocol.data_received``; for an object without one, a stand-in
    that fails as asyncio does: at the first read, with AttributeError."""
    try:
        return protocol.data_received
    except AttributeError:
        return lambda data: protocol.data_received(data)


def _set_result_unless_cancelled(fut: asyncio.Future[Any], result: Any) -> None:
    if not fut.cancelled():
        fut.set_result(result)
