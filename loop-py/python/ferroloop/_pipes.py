"""Pipe transports: ``connect_read_pipe`` and ``connect_write_pipe``, for
pipes, sockets and character devices (asyncio's Unix rules). The write side
also watches for readability, which is how a pipe tells that its reader has
gone."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import stat
import sys
import warnings
from typing import Any, Callable

from ._flow import FlowControl
from ._transport import LOG_THRESHOLD_FOR_CONNLOST_WRITES, _set_result_unless_cancelled

logger = logging.getLogger("asyncio")

_WOULD_BLOCK = (BlockingIOError, InterruptedError)


class _PipeTransport:
    """What both pipe directions share: the fd, closing, losing."""

    _protocol: Any

    def _init_pipe(self, loop: Any, pipe: Any, protocol: Any) -> int:
        self._loop = loop
        self._pipe = pipe
        self._fileno = pipe.fileno()
        self._protocol = protocol
        self._closing = False
        self._lost = False
        return os.fstat(self._fileno).st_mode

    def __repr__(self) -> str:
        state = "closed" if self._pipe is None else ("closing" if self._closing else "open")
        return f"<{type(self).__name__} {state} fd={self._fileno}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_pipe", None) is not None:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._pipe.close()

    def set_protocol(self, protocol: Any) -> None:
        self._protocol = protocol

    def get_protocol(self) -> Any:
        return self._protocol

    def is_closing(self) -> bool:
        return self._closing

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        # Once only: the paths that end a pipe can overlap (close() or
        # abort() from resume_writing() while the buffer drains, abort()
        # twice), and asyncio then fails in the exception handler.
        if self._lost:
            return
        self._lost = True
        try:
            self._protocol.connection_lost(exc)
        finally:
            if self._pipe is not None:
                self._pipe.close()
                self._pipe = None
            self._protocol = None

    def _report(self, exc: BaseException, message: str, quiet: bool) -> None:
        if quiet:
            if self._loop.get_debug():
                logger.debug("%r: %s", self, message, exc_info=True)
        else:
            self._loop.call_exception_handler({"message": message, "exception": exc, "transport": self, "protocol": self._protocol})


class ReadPipeTransport(_PipeTransport, asyncio.ReadTransport):
    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        self._extra["pipe"] = pipe
        mode = self._init_pipe(loop, pipe, protocol)
        self._paused = False
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            self._pipe = None
            self._protocol = None
            raise ValueError("Pipe transport is for pipes/sockets only.")
        os.set_blocking(self._fileno, False)
        loop.call_soon(protocol.connection_made, self)
        # Reading starts after connection_made(), unless that paused or
        # closed the transport (asyncio's rule).
        loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(_set_result_unless_cancelled, waiter, None)

    def _start_reading(self) -> None:
        if self.is_reading():
            self._loop._add_reader(self._fileno, self._read_ready)

    def _read_ready(self) -> None:
        try:
            nbytes = os.readv(self._fileno, [self._loop._read_buffer.buffer])
            data = bytes(self._loop._read_buffer.view[:nbytes])
        except _WOULD_BLOCK:
            return
        except OSError as exc:
            self._fatal_error(exc, "Fatal read error on pipe transport")
            return
        if data:
            self._protocol.data_received(data)
            return
        if self._loop.get_debug():
            logger.info("%r was closed by peer", self)
        self._closing = True
        self._loop._remove_reader(self._fileno)
        self._loop.call_soon(self._protocol.eof_received)
        self._loop.call_soon(self._call_connection_lost, None)

    def is_reading(self) -> bool:
        return not self._paused and not self._closing

    def pause_reading(self) -> None:
        if not self.is_reading():
            return
        self._paused = True
        self._loop._remove_reader(self._fileno)

    def resume_reading(self) -> None:
        if self._closing or not self._paused:
            return
        self._paused = False
        self._loop._add_reader(self._fileno, self._read_ready)

    def close(self) -> None:
        if not self._closing:
            self._close(None)

    def _fatal_error(self, exc: BaseException, message: str) -> None:
        # EIO is how a pty reports its other side closing.
        self._report(exc, message, quiet=isinstance(exc, OSError) and exc.errno == errno.EIO)
        self._close(exc)

    def _close(self, exc: BaseException | None) -> None:
        self._closing = True
        self._loop._remove_reader(self._fileno)
        self._loop.call_soon(self._call_connection_lost, exc)


# An asyncio.Transport, not only a WriteTransport: asyncio's write pipe
# transport is one (through _FlowControlMixin), so it is also a
# ReadTransport whose pause_reading() raises NotImplementedError.
class WritePipeTransport(_PipeTransport, FlowControl, asyncio.Transport):
    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        self._extra["pipe"] = pipe
        mode = self._init_pipe(loop, pipe, protocol)
        self._buffer = bytearray()
        self._conn_lost = 0
        self._init_flow_control()
        is_socket = stat.S_ISSOCK(mode)
        is_fifo = stat.S_ISFIFO(mode)
        if not (stat.S_ISCHR(mode) or is_fifo or is_socket):
            self._pipe = None
            self._protocol = None
            raise ValueError("Pipe transport is only for pipes, sockets and character devices")
        os.set_blocking(self._fileno, False)
        loop.call_soon(protocol.connection_made, self)
        # The write end of a pipe turns readable when the reader closes
        # (not on AIX, where only sockets do that).
        if is_socket or (is_fifo and not sys.platform.startswith("aix")):
            loop.call_soon(loop._add_reader, self._fileno, self._read_ready)
        if waiter is not None:
            loop.call_soon(_set_result_unless_cancelled, waiter, None)

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def _read_ready(self) -> None:
        if self._loop.get_debug():
            logger.info("%r was closed by peer", self)
        if self._buffer:
            self._close(BrokenPipeError())
        else:
            self._close()

    def write(self, data: Any) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, not {type(data).__name__!r}")
        if isinstance(data, bytearray):
            data = memoryview(data)
        if not data:
            return
        if self._conn_lost or self._closing:
            if self._conn_lost >= LOG_THRESHOLD_FOR_CONNLOST_WRITES:
                logger.warning("pipe closed by peer or os.write(pipe, data) raised exception.")
            self._conn_lost += 1
            return
        if not self._buffer:
            try:
                written = os.write(self._fileno, data)
            except _WOULD_BLOCK:
                written = 0
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._conn_lost += 1
                self._fatal_error(exc, "Fatal write error on pipe transport")
                return
            if written == len(data):
                return
            data = memoryview(data).cast("B")[written:]
            self._loop._add_writer(self._fileno, self._write_ready)
        self._buffer += data
        self._maybe_pause_protocol()

    def _write_ready(self) -> None:
        try:
            written = os.write(self._fileno, self._buffer)
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._buffer.clear()
            self._conn_lost += 1
            self._loop._remove_writer(self._fileno)
            self._fatal_error(exc, "Fatal write error on pipe transport")
            return
        if written == len(self._buffer):
            self._buffer.clear()
            self._loop._remove_writer(self._fileno)
            self._maybe_resume_protocol()
            if self._closing:
                self._loop._remove_reader(self._fileno)
                self._call_connection_lost(None)
            return
        if written > 0:
            del self._buffer[:written]

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self._closing:
            return
        self._closing = True
        if not self._buffer:
            self._loop._remove_reader(self._fileno)
            self._loop.call_soon(self._call_connection_lost, None)

    def close(self) -> None:
        if self._pipe is not None and not self._closing:
            # Like asyncio: closing a write pipe flushes it first.
            self.write_eof()

    def abort(self) -> None:
        self._close(None)

    def _fatal_error(self, exc: BaseException, message: str) -> None:
        self._report(exc, message, quiet=isinstance(exc, OSError))
        self._close(exc)

    def _close(self, exc: BaseException | None = None) -> None:
        self._closing = True
        if self._buffer:
            self._loop._remove_writer(self._fileno)
        self._buffer.clear()
        self._loop._remove_reader(self._fileno)
        self._loop.call_soon(self._call_connection_lost, exc)


class PipeOps:
    """``connect_read_pipe``/``connect_write_pipe`` for ``Loop`` (a mixin)."""

    async def connect_read_pipe(self, protocol_factory: Callable[[], Any], pipe: Any) -> tuple[Any, Any]:
        return await self._connect_pipe(ReadPipeTransport, protocol_factory, pipe)

    async def connect_write_pipe(self, protocol_factory: Callable[[], Any], pipe: Any) -> tuple[Any, Any]:
        return await self._connect_pipe(WritePipeTransport, protocol_factory, pipe)

    async def _connect_pipe(self, kind: Any, protocol_factory: Callable[[], Any], pipe: Any) -> tuple[Any, Any]:
        loop: Any = self
        protocol = protocol_factory()
        waiter = loop.create_future()
        transport = kind(loop, pipe, protocol, waiter)
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        return transport, protocol
