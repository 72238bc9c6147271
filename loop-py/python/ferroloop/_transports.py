"""The asyncio transports ferroloop hands protocols: stream sockets, the two
pipe directions and datagram sockets.

Each is a thin ``asyncio.Transport`` (so ``isinstance`` checks and
``get_extra_info`` work as on asyncio's loop) over a native
``StreamTransport`` (``loop-py/src/transport``), which owns the socket's
``loop-transports`` core and decides everything: reads and the protocol's
callbacks, write-now-buffer-the-rest, the water marks, half-close, closing
after the buffer drains. The hot methods (``write``, ``writelines``,
``is_closing``, ``get_write_buffer_size``, ``sendto``) are the native
object's own, bound to the instance when first used (``_BoundOnUse``), so
calling them runs no Python frame and an idle connection holds none. What
stays here is construction (extra info, registries, what asyncio
schedules), ``repr`` and the unclosed-transport warning.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import stat
import sys
import warnings
from asyncio import base_events, constants, futures, trsock
from typing import Any

from ._native import DatagramTransport as _NativeDatagram
from ._native import StreamTransport

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


def _socket_extra(extra: dict[str, Any], sock: Any) -> None:
    """A socket transport's extra info, as asyncio fills it: the socket (as
    a ``TransportSocket``), its address and, unless given, the peer's
    (``None`` where the socket has none)."""
    extra["socket"] = trsock.TransportSocket(sock)
    try:
        extra["sockname"] = sock.getsockname()
    except OSError:
        extra["sockname"] = None
    if "peername" not in extra:
        try:
            extra["peername"] = sock.getpeername()
        except OSError:
            extra["peername"] = None


class _BoundOnUse:
    """A method of the native object, bound to the transport the first time
    it is looked up there: the instance's ``__dict__`` then holds the native
    bound method, so later calls run no Python frame, and a transport that
    never calls it (an idle connection) holds no bound method. A subclass's
    own method wins as usual (and its ``super()`` call reaches the native
    one without caching it)."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        method = getattr(instance._core, self.name)
        if getattr(type(instance), self.name, None) is self:
            instance.__dict__[self.name] = method
        return method

    def __call__(self, instance: Any, *args: Any) -> Any:
        """Called on the class (``SocketTransport.write(transport, data)``)."""
        return getattr(instance._core, self.name)(*args)


class _NativeTransport:
    """What every native-backed transport shares: the native object and the
    methods that only forward to it (cold paths; the hot ones are
    ``_BoundOnUse``)."""

    _core: StreamTransport
    _loop: Any

    def _bind_native(self, core: StreamTransport) -> None:
        self._core = core

    is_closing = _BoundOnUse()

    def close(self) -> None:
        self._core.close()

    def is_reading(self) -> bool:
        return self._core.is_reading()

    def pause_reading(self) -> None:
        self._core.pause_reading()

    @property
    def _paused(self) -> bool:
        """asyncio's name for "reading paused" (its tests read it)."""
        return not self._closing and not self._core.is_reading()

    def resume_reading(self) -> None:
        self._core.resume_reading()

    def set_protocol(self, protocol: Any) -> None:
        self._core.set_protocol(protocol)

    def get_protocol(self) -> Any:
        return self._core.get_protocol()

    def abort(self) -> None:
        self._core.abort()

    def _force_close(self, exc: BaseException | None) -> None:
        self._core._force_close(exc)

    def _fatal_error(self, exc: BaseException, message: str = "Fatal error on transport") -> None:
        self._core._fatal_error(exc, message)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        self._core._call_connection_lost(exc)

    # asyncio's private state, read by the stdlib and by tests.
    @property
    def _protocol(self) -> Any:
        return self._core.get_protocol()

    @property
    def _closing(self) -> bool:
        return self._core.is_closing()

    @property
    def _conn_lost(self) -> int:
        return self._core._conn_lost

    def _after_connection_lost(self) -> None:
        """The native object's last step, once the fd is closed."""


class _WriteBuffer:
    """The write buffer's size and water marks, for every transport that
    writes (streams and datagrams)."""

    _core: Any

    get_write_buffer_size = _BoundOnUse()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._core.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._core.set_write_buffer_limits(high, low)


class _Writable(_WriteBuffer):
    """The write side's forwarders, for the writable stream transports."""

    _core: StreamTransport

    write = _BoundOnUse()
    writelines = _BoundOnUse()

    def can_write_eof(self) -> bool:
        return self._core.can_write_eof()

    def write_eof(self) -> None:
        self._core.write_eof()


class SocketTransport(_NativeTransport, _Writable, asyncio.Transport):
    """A connected stream socket (TCP or Unix) as an asyncio transport."""

    _start_tls_compatible = True
    _sendfile_compatible = constants._SendfileMode.TRY_NATIVE

    def __init__(self, loop: Any, sock: Any, protocol: asyncio.BaseProtocol,
                 waiter: asyncio.Future[Any] | None = None, extra: dict[str, Any] | None = None,
                 server: Any = None, context: contextvars.Context | None = None) -> None:
        """``context`` (3.15): the connection's own, which the protocol's
        callbacks run in."""
        super().__init__(extra)
        _socket_extra(self._extra, sock)
        self._loop = loop
        self._sock_obj = sock
        self._sock_fd = sock.fileno()
        self._server = server
        self._bind_native(StreamTransport(loop, self, sock, self._sock_fd, protocol, "socket", context))
        if server is not None:
            try:
                _attach(server, self)
            except BaseException:
                # The server closed meanwhile (asyncio's Server asserts):
                # the socket stays the caller's to close.
                self._sock_obj = None
                raise
        loop._transports[self._sock_fd] = self
        loop.call_soon(protocol.connection_made, self, context=context)
        loop.call_soon(self._core._start, context=context)
        if waiter is not None:
            loop.call_soon(futures._set_result_unless_cancelled, waiter, None)

    def __repr__(self) -> str:
        info = [type(self).__name__]
        if self._sock is None:
            info.append("closed")
        elif self._closing:
            info.append("closing")
        info.append(f"fd={self._sock_fd}")
        if self._sock is not None and not self._closing:
            reading, writing = self._core._polling
            info.append("read=" + ("polling" if reading else "idle"))
            info.append(f"write=<{'polling' if writing else 'idle'}, bufsize={self.get_write_buffer_size()}>")
        return "<{}>".format(" ".join(info))

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_sock_obj", None) is not None and not self._core._finished:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._sock_obj.close()
            if self._server is not None:
                _detach(self._server, self)
                self._server = None

    @property
    def _sock(self) -> Any:
        """The socket while the connection lives (asyncio's ``_sock``)."""
        return None if self._core._finished else self._sock_obj

    @_sock.setter
    def _sock(self, sock: Any) -> None:
        # Tests set it to None to skip the unclosed-transport warning.
        self._sock_obj = sock

    @property
    def _eof(self) -> bool:
        return self._core._eof

    @property
    def _read_ready_cb(self) -> Any:
        """asyncio's reader callback, as its tests look at it: None once the
        transport is closing (reading is native: nothing to call)."""
        return None if self._closing else self._core.resume_reading

    def _make_empty_waiter(self) -> asyncio.Future[None]:
        """For sendfile: a future done when the write buffer has drained."""
        return self._core._make_empty_waiter()

    def _reset_empty_waiter(self) -> None:
        self._core._reset_empty_waiter()

    def _after_connection_lost(self) -> None:
        self._sock_obj = None
        server = self._server
        if server is not None:
            _detach(server, self)
            self._server = None


class _PipeTransport(_NativeTransport):
    """What both pipe directions share (asyncio's Unix rules: pipes,
    sockets and character devices)."""

    def _init_pipe(self, loop: Any, pipe: Any, protocol: Any, kind: str, refused: str) -> int:
        self._extra["pipe"] = pipe
        self._loop = loop
        self._pipe_obj = pipe
        self._fileno = pipe.fileno()
        mode = os.fstat(self._fileno).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            self._pipe_obj = None
            raise ValueError(refused)
        os.set_blocking(self._fileno, False)
        self._bind_native(StreamTransport(loop, self, pipe, self._fileno, protocol, kind))
        return mode

    @property
    def _pipe(self) -> Any:
        return None if self._core._finished else self._pipe_obj

    @_pipe.setter
    def _pipe(self, pipe: Any) -> None:
        # Tests set it to None to skip the unclosed-transport warning.
        self._pipe_obj = pipe

    def __repr__(self) -> str:
        state = "closed" if self._pipe is None else ("closing" if self._closing else "open")
        return f"<{type(self).__name__} {state} fd={self._fileno}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_pipe_obj", None) is not None and not self._core._finished:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._pipe_obj.close()

    def _after_connection_lost(self) -> None:
        self._pipe_obj = None


class ReadPipeTransport(_PipeTransport, asyncio.ReadTransport):
    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        self._init_pipe(loop, pipe, protocol, "read_pipe", "Pipe transport is for pipes/sockets only.")
        loop.call_soon(protocol.connection_made, self)
        # Reading starts after connection_made(), unless that paused or
        # closed the transport (asyncio's rule).
        loop.call_soon(self._core._start)
        if waiter is not None:
            loop.call_soon(futures._set_result_unless_cancelled, waiter, None)


# An asyncio.Transport, not only a WriteTransport: asyncio's write pipe
# transport is one (through _FlowControlMixin), so it is also a
# ReadTransport whose pause_reading() raises NotImplementedError.
class WritePipeTransport(_PipeTransport, _Writable, asyncio.Transport):
    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        mode = self._init_pipe(loop, pipe, protocol, "write_pipe",
                               "Pipe transport is only for pipes, sockets and character devices")
        loop.call_soon(protocol.connection_made, self)
        # The write end of a pipe turns readable when the reader closes
        # (not on AIX, where only sockets do that).
        if stat.S_ISSOCK(mode) or (stat.S_ISFIFO(mode) and not sys.platform.startswith("aix")):
            loop.call_soon(self._core._start)
        if waiter is not None:
            loop.call_soon(futures._set_result_unless_cancelled, waiter, None)

    is_reading = asyncio.ReadTransport.is_reading
    pause_reading = asyncio.ReadTransport.pause_reading
    resume_reading = asyncio.ReadTransport.resume_reading


# Since 3.13 (gh-113812) empty datagrams are sent (up to 3.12 sendto()
# drops them) and each queued datagram counts 8 header bytes in the write
# buffer size, so that empty ones fill it too.
_DROP_EMPTY_DATAGRAMS = sys.version_info < (3, 13)
_DATAGRAM_HEADER_SIZE = 8 if sys.version_info >= (3, 13) else 0


class DatagramTransport(_NativeTransport, _WriteBuffer, asyncio.DatagramTransport, asyncio.Transport):
    """A datagram socket as an asyncio transport. Like asyncio's own, it is
    also an ``asyncio.Transport`` (``isinstance`` checks in the wild)."""

    def __init__(self, loop: Any, sock: Any, protocol: Any, address: Any = None,
                 waiter: Any = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        _socket_extra(self._extra, sock)
        self._loop = loop
        self._sock_obj = sock
        self._sock_fd = sock.fileno()
        self._address = address
        self._bind_native(_NativeDatagram(loop, self, sock, protocol, address,
                                          _DATAGRAM_HEADER_SIZE, _DROP_EMPTY_DATAGRAMS))
        loop._transports[self._sock_fd] = self
        loop.call_soon(protocol.connection_made, self)
        loop.call_soon(self._core._start)
        if waiter is not None:
            loop.call_soon(futures._set_result_unless_cancelled, waiter, None)

    def __repr__(self) -> str:
        state = "closed" if self._sock is None else ("closing" if self._closing else "open")
        return f"<{type(self).__name__} {state} fd={self._sock_fd}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_sock_obj", None) is not None and not self._core._finished:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._sock_obj.close()

    sendto = _BoundOnUse()

    @property
    def _sock(self) -> Any:
        return None if self._core._finished else self._sock_obj

    @_sock.setter
    def _sock(self, sock: Any) -> None:
        self._sock_obj = sock

    def _after_connection_lost(self) -> None:
        self._sock_obj = None

