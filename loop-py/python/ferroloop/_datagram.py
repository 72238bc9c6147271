"""UDP (and Unix datagram) endpoints: ``create_datagram_endpoint`` (the
transport itself is native, ``_transports.py``)."""

from __future__ import annotations

import socket
import sys
from typing import Any, Callable

from ._streams import remove_stale_unix_socket
from ._transports import DatagramTransport

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
