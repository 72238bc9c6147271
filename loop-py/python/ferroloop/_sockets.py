"""asyncio's ``sock_*`` coroutines, on the loop's fd callbacks.

Each operation is tried at once; only if the socket would block does it
wait for readiness (``_add_reader``/``_add_writer``) and retry from the
callback. A waiter removes its callback when its future completes or is
cancelled, unless another waiter has replaced it meanwhile (asyncio's rule,
kept by comparing handles).
"""

from __future__ import annotations

import errno
import functools
import inspect
import io
import os
import socket
from asyncio import exceptions, unix_events
from typing import TYPE_CHECKING, Any, Callable

try:
    import ssl
except ImportError:  # pragma: no cover - CPython built without ssl
    ssl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import asyncio

_WOULD_BLOCK = (BlockingIOError, InterruptedError)

#: Bytes per ``os.sendfile`` call and per fallback read.
_SENDFILE_BLOCK = 256 * 1024

#: 3.14's sendfile leaves the file at ``offset + sent`` whatever happened
#: (nothing sent, an error); before, only after sending something, and the
#: fallback did not seek to offset 0. Told apart by the helper that does it
#: (its ``total_sent`` parameter went), so a backport is followed too.
SENDFILE_ALWAYS_SEEKS = (
    len(inspect.signature(unix_events._UnixSelectorEventLoop._sock_sendfile_update_filepos).parameters) == 3
)


def _check_socket(loop: Any, sock: socket.socket) -> None:
    if ssl is not None and isinstance(sock, ssl.SSLSocket):
        raise TypeError("Socket cannot be of type SSLSocket")
    if loop.get_debug() and sock.gettimeout() != 0:
        raise ValueError("the socket must be non-blocking")


def _is_ip_literal(host: Any, family: int) -> bool:
    if not isinstance(host, str):
        return False
    families = [family] if family in (socket.AF_INET, socket.AF_INET6) else [socket.AF_INET, socket.AF_INET6]
    for fam in families:
        try:
            socket.inet_pton(fam, host.partition("%")[0])
            return True
        except (OSError, ValueError):
            continue
    return False


class SocketOps:
    """The ``sock_*`` half of ``AbstractEventLoop`` (mixed into ``Loop``)."""

    # -- waiting ---------------------------------------------------------------

    def _sock_wait(self, sock: socket.socket, write: bool, step: Callable[..., None], *args: Any) -> asyncio.Future[Any]:
        """A future completed by ``step(fut, *args)``, run each time ``sock``
        is ready for reading (or writing)."""
        loop: Any = self
        fut = loop.create_future()
        fd = sock.fileno()
        loop._ensure_fd_no_transport(fd)
        register = loop._add_writer if write else loop._add_reader
        handle = register(fd, step, fut, *args)
        fut.add_done_callback(functools.partial(self._sock_done, fd, write, handle))
        return fut

    def _sock_done(self, fd: int, write: bool, handle: Any, fut: asyncio.Future[Any]) -> None:
        # A cancelled handle was replaced by a later waiter on the same fd.
        if not handle.cancelled():
            loop: Any = self
            (loop._remove_writer if write else loop._remove_reader)(fd)

    @staticmethod
    def _sock_retry(fut: asyncio.Future[Any], sock: socket.socket, method: str, *args: Any) -> None:
        """Readiness callback: complete ``fut`` with ``sock.method(*args)``
        unless it would still block. The method is looked up on each try, as
        asyncio does (tests replace it on the socket while a call waits)."""
        if fut.done():
            return
        try:
            result = getattr(sock, method)(*args)
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    async def _sock_op(self, sock: socket.socket, write: bool, method: str, *args: Any) -> Any:
        _check_socket(self, sock)
        try:
            return getattr(sock, method)(*args)
        except _WOULD_BLOCK:
            pass
        return await self._sock_wait(sock, write, self._sock_retry, sock, method, *args)

    # -- receiving ---------------------------------------------------------------

    async def sock_recv(self, sock: socket.socket, nbytes: int) -> bytes:
        return await self._sock_op(sock, False, "recv", nbytes)

    async def sock_recv_into(self, sock: socket.socket, buf: Any) -> int:
        return await self._sock_op(sock, False, "recv_into", buf)

    async def sock_recvfrom(self, sock: socket.socket, bufsize: int) -> tuple[bytes, Any]:
        return await self._sock_op(sock, False, "recvfrom", bufsize)

    async def sock_recvfrom_into(self, sock: socket.socket, buf: Any, nbytes: int = 0) -> tuple[int, Any]:
        if not nbytes:
            nbytes = len(buf)
        return await self._sock_op(sock, False, "recvfrom_into", buf, nbytes)

    # -- sending -------------------------------------------------------------------

    async def sock_sendall(self, sock: socket.socket, data: Any) -> None:
        _check_socket(self, sock)
        try:
            sent = sock.send(data)
        except _WOULD_BLOCK:
            sent = 0
        view = memoryview(data).cast("B")
        if sent == len(view):
            return
        # A list cell carries the position between readiness callbacks.
        await self._sock_wait(sock, True, self._sock_sendall_step, sock, view, [sent])

    @staticmethod
    def _sock_sendall_step(fut: asyncio.Future[None], sock: socket.socket, view: memoryview, position: list[int]) -> None:
        if fut.done():
            return
        start = position[0]
        try:
            start += sock.send(view[start:])
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            return
        if start == len(view):
            fut.set_result(None)
        else:
            position[0] = start

    async def sock_sendto(self, sock: socket.socket, data: Any, address: Any) -> int:
        return await self._sock_op(sock, True, "sendto", data, address)

    # -- connecting and accepting ------------------------------------------------------

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        _check_socket(self, sock)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            address = await self._resolve_for(sock, address)
        try:
            sock.connect(address)
            return
        except _WOULD_BLOCK:
            pass
        await self._sock_wait(sock, True, self._sock_connect_step, sock, address)

    async def _resolve_for(self, sock: socket.socket, address: Any) -> Any:
        host, port = address[:2]
        if _is_ip_literal(host, sock.family) or host is None:
            return address
        loop: Any = self
        infos = await loop.getaddrinfo(host, port, family=sock.family, type=sock.type, proto=sock.proto)
        if not infos:
            raise OSError(f"getaddrinfo({host!r}) returned empty list")
        return infos[0][4]

    @staticmethod
    def _sock_connect_step(fut: asyncio.Future[None], sock: socket.socket, address: Any) -> None:
        if fut.done():
            return
        try:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err != 0:
                raise OSError(err, f"Connect call failed {address}")
        except _WOULD_BLOCK:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            fut.set_exception(exc)
        else:
            fut.set_result(None)

    async def sock_accept(self, sock: socket.socket) -> tuple[socket.socket, Any]:
        conn, address = await self._sock_op(sock, False, "accept")
        conn.setblocking(False)
        return conn, address

    # -- sendfile ------------------------------------------------------------------------

    async def sock_sendfile(
        self, sock: socket.socket, file: Any, offset: int = 0, count: int | None = None, *, fallback: bool = True
    ) -> int:
        _check_socket(self, sock)
        _check_sendfile_params(sock, file, offset, count)
        try:
            return await self._sock_sendfile_native(sock, file, offset, count)
        except exceptions.SendfileNotAvailableError:
            if not fallback:
                raise
        return await self._sock_sendfile_fallback(sock, file, offset, count)

    async def _sock_sendfile_native(self, sock: socket.socket, file: Any, offset: int, count: int | None) -> int:
        if not hasattr(os, "sendfile"):
            raise exceptions.SendfileNotAvailableError("os.sendfile() is not available")
        try:
            fileno = file.fileno()
        except (AttributeError, io.UnsupportedOperation) as err:
            raise exceptions.SendfileNotAvailableError("not a regular file") from err
        try:
            size = os.fstat(fileno).st_size
        except OSError:
            raise exceptions.SendfileNotAvailableError("not a regular file") from None
        total = count if count else size
        if not total:
            return 0
        sent = 0
        try:
            while sent < total:
                block = min(total - sent, _SENDFILE_BLOCK)
                try:
                    n = os.sendfile(sock.fileno(), fileno, offset + sent, block)
                except _WOULD_BLOCK:
                    await self._sock_wait(sock, True, self._sock_writable_step)
                    continue
                except OSError as exc:
                    if exc.errno == errno.ENOTCONN and type(exc) is not ConnectionError:
                        raise ConnectionError("socket is not connected", errno.ENOTCONN) from exc
                    if sent == 0:
                        # Nothing sent yet: this file or socket cannot use
                        # sendfile, and the caller may fall back to send().
                        raise exceptions.SendfileNotAvailableError("os.sendfile call failed") from exc
                    raise
                if n == 0:
                    break  # end of file
                sent += n
        finally:
            if sent > 0 or SENDFILE_ALWAYS_SEEKS:
                file.seek(offset + sent)
        return sent

    @staticmethod
    def _sock_writable_step(fut: asyncio.Future[None]) -> None:
        if not fut.done():
            fut.set_result(None)

    async def _sock_sendfile_fallback(self, sock: socket.socket, file: Any, offset: int, count: int | None) -> int:
        if offset or (SENDFILE_ALWAYS_SEEKS and hasattr(file, "seek")):
            file.seek(offset)
        block = min(count, _SENDFILE_BLOCK) if count else _SENDFILE_BLOCK
        buf = bytearray(block)
        sent = 0
        loop: Any = self
        try:
            while True:
                if count:
                    block = min(count - sent, block)
                    if block <= 0:
                        break
                view = memoryview(buf)[:block]
                read = await loop.run_in_executor(None, file.readinto, view)
                if not read:
                    break
                await self.sock_sendall(sock, view[:read])
                sent += read
            return sent
        finally:
            if sent > 0 and hasattr(file, "seek"):
                file.seek(offset + sent)


def _check_sendfile_params(sock: socket.socket, file: Any, offset: Any, count: Any) -> None:
    if "b" not in getattr(file, "mode", "b"):
        raise ValueError("file should be opened in binary mode")
    if not sock.type == socket.SOCK_STREAM:
        raise ValueError("only SOCK_STREAM type sockets are supported")
    if count is not None:
        if not isinstance(count, int):
            raise TypeError(f"count must be a positive integer (got {count!r})")
        if count <= 0:
            raise ValueError(f"count must be a positive integer (got {count!r})")
    if not isinstance(offset, int):
        raise TypeError(f"offset must be a non-negative integer (got {offset!r})")
    if offset < 0:
        raise ValueError(f"offset must be a non-negative integer (got {offset!r})")
