"""UDP (and Unix datagram) endpoints: ``create_datagram_endpoint`` and its
transport — sends tried at once and queued when the socket is full,
``datagram_received``/``error_received`` on the protocol."""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import sys
from typing import Any, Callable

from ._streams import remove_stale_unix_socket
from ._transport import LOG_THRESHOLD_FOR_CONNLOST_WRITES, SocketTransportBase, _set_result_unless_cancelled

logger = logging.getLogger("asyncio")

_WOULD_BLOCK = (BlockingIOError, InterruptedError)

# create_datagram_endpoint(sock=...): since gh-114887 (3.13, 3.12.2, 3.11.8)
# asyncio rejects only stream sockets and says "datagram"; before, it wanted
# exactly SOCK_DGRAM and said "UDP".
if sys.version_info >= (3, 12, 2) or (3, 11, 8) <= sys.version_info < (3, 12):
    def _not_datagram(sock: socket.socket) -> bool:
        return sock.type == socket.SOCK_STREAM
    _NOT_DATAGRAM_MESSAGE = "A datagram socket was expected, got {!r}"
else:
    def _not_datagram(sock: socket.socket) -> bool:
        return sock.type != socket.SOCK_DGRAM
    _NOT_DATAGRAM_MESSAGE = "A UDP Socket was expected, got {!r}"

# Since 3.13 (gh-113812) empty datagrams are sent (up to 3.12 sendto()
# drops them) and each queued datagram counts 8 header bytes in the write
# buffer size, so that empty ones fill it too. (3.13.0 forgets to take the
# header off again once sent, gh-135444; fixed in later patch releases and
# here.)
_DROP_EMPTY_DATAGRAMS = sys.version_info < (3, 13)
_HEADER_SIZE = 8 if sys.version_info >= (3, 13) else 0


class DatagramTransport(SocketTransportBase, asyncio.DatagramTransport, asyncio.Transport):
    """A datagram socket as an asyncio transport. Like asyncio's own, it is
    also an ``asyncio.Transport`` (``isinstance`` checks in the wild)."""

    def __init__(self, loop: Any, sock: socket.socket, protocol: Any, address: Any = None,
                 waiter: Any = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(extra)
        self._init_socket(loop, sock)
        self.set_protocol(protocol)
        self._address = address
        # A connected socket sends with send(). asyncio tests the peername
        # for truth, which takes a socket connected to an unnamed Unix
        # socket (a socketpair: peername '') for unconnected and fails in
        # sendto(data, None); uvloop sends on it, and so does this.
        self._connected = self._extra["peername"] is not None
        self._buffer: collections.deque[tuple[bytes, Any]] = collections.deque()
        self._buffer_size = 0
        loop._transports[self._sock_fd] = self
        loop.call_soon(protocol.connection_made, self)
        loop.call_soon(self._add_reader)
        if waiter is not None:
            loop.call_soon(_set_result_unless_cancelled, waiter, None)

    def __repr__(self) -> str:
        state = "closed" if self._sock is None else ("closing" if self._closing else "open")
        return f"<{type(self).__name__} {state} fd={self._sock_fd}>"

    def set_protocol(self, protocol: Any) -> None:
        self._protocol = protocol
        self._protocol_connected = True

    def get_write_buffer_size(self) -> int:
        return self._buffer_size

    def _read_ready(self) -> None:
        if self._conn_lost:
            return
        try:
            nbytes, addr = self._sock.recvfrom_into(self._loop._read_buffer.buffer)  # type: ignore[union-attr]
            data = bytes(self._loop._read_buffer.view[:nbytes])
        except _WOULD_BLOCK:
            return
        except OSError as exc:
            # ICMP errors (ECONNREFUSED on a connected socket) are news for
            # the protocol, not the end of the endpoint.
            self._protocol.error_received(exc)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal read error on datagram transport")
        else:
            self._protocol.datagram_received(data, addr)

    def sendto(self, data: Any, addr: Any = None) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, not {type(data).__name__!r}")
        if _DROP_EMPTY_DATAGRAMS and not data:
            return
        if self._address:
            if addr not in (None, self._address):
                raise ValueError(f"Invalid address: must be None or {self._address}")
            addr = self._address
        # asyncio drops sends of a lost connected endpoint; an unconnected
        # one keeps sending until its socket is gone, and then fails with an
        # AttributeError out of sendto() (uvloop drops those too).
        if self._conn_lost and (self._address or self._sock is None):
            if self._conn_lost >= LOG_THRESHOLD_FOR_CONNLOST_WRITES:
                logger.warning("socket.send() raised exception.")
            self._conn_lost += 1
            return
        if not self._buffer:
            try:
                if self._connected:
                    self._sock.send(data)  # type: ignore[union-attr]
                else:
                    self._sock.sendto(data, addr)  # type: ignore[union-attr]
                return
            except _WOULD_BLOCK:
                self._loop._add_writer(self._sock_fd, self._sendto_ready)
            except OSError as exc:
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
        self._buffer.append((bytes(data), addr))
        self._buffer_size += len(data) + _HEADER_SIZE
        self._maybe_pause_protocol()

    def _sendto_ready(self) -> None:
        while self._buffer:
            data, addr = self._buffer.popleft()
            self._buffer_size -= len(data) + _HEADER_SIZE
            try:
                if self._connected:
                    self._sock.send(data)  # type: ignore[union-attr]
                else:
                    self._sock.sendto(data, addr)  # type: ignore[union-attr]
            except _WOULD_BLOCK:
                self._buffer.appendleft((data, addr))
                self._buffer_size += len(data) + _HEADER_SIZE
                break
            except OSError as exc:
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
        self._maybe_resume_protocol()
        if not self._buffer:
            self._loop._remove_writer(self._sock_fd)
            if self._closing:
                self._call_connection_lost(None)

    def _drop_write_buffer(self) -> None:
        self._buffer.clear()
        self._buffer_size = 0


class DatagramOps:
    """``create_datagram_endpoint`` for ``Loop`` (a mixin)."""

    async def create_datagram_endpoint(self, protocol_factory: Callable[[], Any], local_addr: Any = None,
                                       remote_addr: Any = None, *, family: int = 0, proto: int = 0, flags: int = 0,
                                       reuse_port: bool | None = None, allow_broadcast: bool | None = None,
                                       sock: socket.socket | None = None) -> tuple[Any, Any]:
        loop: Any = self
        r_addr = None
        if sock is not None:
            if _not_datagram(sock):
                raise ValueError(_NOT_DATAGRAM_MESSAGE.format(sock))
            modifiers = {"local_addr": local_addr, "remote_addr": remote_addr, "family": family, "proto": proto,
                         "flags": flags, "reuse_port": reuse_port, "allow_broadcast": allow_broadcast}
            if any(modifiers.values()):
                problems = ", ".join(f"{k}={v}" for k, v in modifiers.items() if v)
                raise ValueError(f"socket modifier keyword arguments can not be used when sock is specified. ({problems})")
            sock.setblocking(False)
        else:
            pairs = await self._datagram_address_pairs(local_addr, remote_addr, family, proto, flags)
            errors: list[OSError] = []
            for (fam, pro), (local_address, remote_address) in pairs:
                candidate = None
                try:
                    candidate = socket.socket(family=fam, type=socket.SOCK_DGRAM, proto=pro)
                    if reuse_port:
                        if not hasattr(socket, "SO_REUSEPORT"):
                            raise ValueError("reuse_port not supported by socket module")
                        candidate.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                    if allow_broadcast:
                        candidate.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
                    candidate.setblocking(False)
                    if local_addr:
                        candidate.bind(local_address)
                    if remote_addr:
                        if not allow_broadcast:
                            await loop.sock_connect(candidate, remote_address)
                        r_addr = remote_address
                except OSError as exc:
                    if candidate is not None:
                        candidate.close()
                    errors.append(exc)
                except BaseException:
                    if candidate is not None:
                        candidate.close()
                    raise
                else:
                    sock = candidate
                    break
            else:
                raise errors[0]
        protocol = protocol_factory()
        waiter = loop.create_future()
        transport = DatagramTransport(loop, sock, protocol, r_addr, waiter)
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        return transport, protocol

    async def _datagram_address_pairs(self, local_addr: Any, remote_addr: Any, family: int, proto: int,
                                      flags: int) -> list[Any]:
        """(family, proto) → (local, remote) address pairs to try in turn."""
        if not (local_addr or remote_addr):
            if family == 0:
                raise ValueError("unexpected address family")
            return [((family, proto), (None, None))]
        if hasattr(socket, "AF_UNIX") and family == socket.AF_UNIX:
            for addr in (local_addr, remote_addr):
                if addr is not None and not isinstance(addr, str):
                    raise TypeError("string is expected")
            if local_addr:
                remove_stale_unix_socket(local_addr)
            return [((family, proto), (local_addr, remote_addr))]
        by_key: dict[tuple[int, int], list[Any]] = {}
        for index, addr in ((0, local_addr), (1, remote_addr)):
            if addr is None:
                continue
            if not (isinstance(addr, tuple) and len(addr) == 2):
                raise TypeError("2-tuple is expected")
            loop: Any = self
            infos = await loop._ensure_resolved(addr, family=family, type=socket.SOCK_DGRAM, proto=proto, flags=flags)
            if not infos:
                raise OSError("getaddrinfo() returned empty list")
            for fam, _, pro, _, address in infos:
                by_key.setdefault((fam, pro), [None, None])[index] = address
        pairs = [
            (key, pair) for key, pair in by_key.items()
            if not ((local_addr and pair[0] is None) or (remote_addr and pair[1] is None))
        ]
        if not pairs:
            raise ValueError("can not get address information")
        return pairs
