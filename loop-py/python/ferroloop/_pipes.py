"""``connect_read_pipe`` and ``connect_write_pipe``: the pipe transports
themselves are native (``_transports.py``)."""

from __future__ import annotations

from typing import Any, Callable

from ._transports import ReadPipeTransport, WritePipeTransport


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
