"""The stream transport's per-message paths, each on asyncio and on
ferroloop, whose transports are native (``loop-py/src/transport``) under a
thin Python shell (``_transports.py``); these pin down that they behave as
asyncio's do: protocol switches, writes of every bytes-like type, partial
sends, writes while closing, after EOF and from ``connection_lost``, failing
``data_received``, large and small reads, the shell's hot methods, and
transports that are collected once closed."""

from __future__ import annotations

import array
import asyncio
import gc
import re
import socket
import sys
import weakref

import pytest

from _helpers import ferroloop_only


class Sink(asyncio.Protocol):
    """Records what arrives; optionally writes from connection_lost."""

    def __init__(self, write_when_lost: bytes = b"") -> None:
        loop = asyncio.get_running_loop()
        self.made = loop.create_future()
        self.lost = loop.create_future()
        self.data = bytearray()
        self.transport = None
        self.write_when_lost = write_when_lost

    def connection_made(self, transport):
        self.transport = transport
        self.made.set_result(None)

    def data_received(self, data):
        assert type(data) is bytes
        self.data += data

    def connection_lost(self, exc):
        if self.write_when_lost:
            self.transport.write(self.write_when_lost)
        self.lost.set_result(exc)


async def _pair(loop, **sink_kwargs):
    """A server transport (Sink protocol) and its raw client socket."""
    sinks = []

    def factory():
        sinks.append(Sink(**sink_kwargs))
        return sinks[-1]

    server = await loop.create_server(factory, "127.0.0.1", 0)
    client = socket.socket()
    client.setblocking(False)
    await loop.sock_connect(client, server.sockets[0].getsockname())
    while not sinks:
        await asyncio.sleep(0.001)
    await sinks[0].made
    return server, client, sinks[0]


async def _recv_until(loop, sock, n):
    got = bytearray()
    while len(got) < n:
        chunk = await loop.sock_recv(sock, 1 << 20)
        if not chunk:
            break
        got += chunk
    return bytes(got)


async def _close(server, client):
    client.close()
    server.close()
    await server.wait_closed()


def test_set_protocol_switches_where_data_goes(loop):
    async def main():
        server, client, first = await _pair(loop)
        await loop.sock_sendall(client, b"one")
        while bytes(first.data) != b"one":
            await asyncio.sleep(0.001)
        second = Sink()
        first.transport.set_protocol(second)
        assert first.transport.get_protocol() is second
        await loop.sock_sendall(client, b"two")
        while bytes(second.data) != b"two":
            await asyncio.sleep(0.001)
        assert bytes(first.data) == b"one"
        # To a BufferedProtocol and back.
        chunks = []

        class Buffered(asyncio.BufferedProtocol):
            def __init__(self):
                self.buf = bytearray(64)

            def get_buffer(self, sizehint):
                return self.buf

            def buffer_updated(self, nbytes):
                chunks.append(bytes(self.buf[:nbytes]))

        first.transport.set_protocol(Buffered())
        await loop.sock_sendall(client, b"three")
        while b"".join(chunks) != b"three":
            await asyncio.sleep(0.001)
        first.transport.set_protocol(second)
        await loop.sock_sendall(client, b"four")
        while bytes(second.data) != b"twofour":
            await asyncio.sleep(0.001)
        await _close(server, client)

    loop.run_until_complete(main())


@pytest.mark.parametrize(
    "data",
    [
        b"bytes",
        bytearray(b"bytearray"),
        memoryview(b"xxmemoryviewxx")[2:-2],
        memoryview(array.array("i", [1, 2, 3])),
    ],
    ids=["bytes", "bytearray", "memoryview-slice", "memoryview-int"],
)
def test_every_bytes_like_type_is_written_whole(loop, data):
    async def main():
        server, client, sink = await _pair(loop)
        sink.transport.write(data)
        expected = bytes(memoryview(data).cast("B"))
        assert await _recv_until(loop, client, len(expected)) == expected
        await _close(server, client)

    loop.run_until_complete(main())


def test_write_rejects_what_asyncio_rejects(loop):
    async def main():
        server, client, sink = await _pair(loop)
        # asyncio's wording of this version.
        if sys.version_info >= (3, 14):
            expected = "data argument must be a bytes, bytearray, or memoryview object, not 'str'"
        else:
            expected = "data argument must be a bytes-like object, not 'str'"
        with pytest.raises(TypeError, match=re.escape(expected)):
            sink.transport.write("text")
        sink.transport.write(b"")
        sink.transport.write_eof()
        with pytest.raises(RuntimeError, match="after write_eof"):
            sink.transport.write(b"late")
        assert await loop.sock_recv(client, 10) == b""
        await _close(server, client)

    loop.run_until_complete(main())


def test_partial_sends_keep_order_and_bytes(loop):
    """Writes bigger than the socket buffer, then small ones behind them."""

    async def main():
        server, client, sink = await _pair(loop)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        big = bytes(range(256)) * 16384  # 4 MiB
        sink.transport.write(big)
        assert sink.transport.get_write_buffer_size() > 0
        sink.transport.write(b"tail-1")
        sink.transport.write(bytearray(b"tail-2"))
        expected = big + b"tail-1tail-2"
        assert await _recv_until(loop, client, len(expected)) == expected
        while sink.transport.get_write_buffer_size():
            await asyncio.sleep(0.001)
        # The buffer drained: the next write goes out at once again.
        sink.transport.write(b"after")
        assert sink.transport.get_write_buffer_size() == 0
        assert await _recv_until(loop, client, 5) == b"after"
        await _close(server, client)

    loop.run_until_complete(main())


def test_writes_while_closing_follow_the_buffer(loop):
    """close() with bytes buffered: later writes are still sent (asyncio
    does not check closing in write()); close() with nothing buffered: they
    are dropped."""

    async def main():
        server, client, sink = await _pair(loop)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        big = b"b" * (4 * 1024 * 1024)
        sink.transport.write(big)
        sink.transport.close()
        sink.transport.write(b"while-closing")
        assert await _recv_until(loop, client, len(big) + 13) == big + b"while-closing"
        assert await loop.sock_recv(client, 10) == b""
        assert await sink.lost is None
        await _close(server, client)

        server, client, sink = await _pair(loop)
        sink.transport.close()
        sink.transport.write(b"dropped")
        assert await loop.sock_recv(client, 10) == b""
        await sink.lost
        await _close(server, client)

    loop.run_until_complete(main())


def test_a_write_from_connection_lost_goes_nowhere(loop):
    async def main():
        server, client, sink = await _pair(loop, write_when_lost=b"ghost")
        await loop.sock_sendall(client, b"x")
        while not sink.data:
            await asyncio.sleep(0.001)
        sink.transport.close()
        assert await sink.lost is None
        assert await loop.sock_recv(client, 10) == b""
        await _close(server, client)

    loop.run_until_complete(main())


def test_a_failing_data_received_is_reported_and_closes(loop, loop_errors):
    class Failing(Sink):
        def data_received(self, data):
            raise ValueError("protocol bug")

    async def main():
        sinks = []

        def factory():
            sinks.append(Failing())
            return sinks[-1]

        server = await loop.create_server(factory, "127.0.0.1", 0)
        client = socket.socket()
        client.setblocking(False)
        await loop.sock_connect(client, server.sockets[0].getsockname())
        await loop.sock_sendall(client, b"boom")
        exc = await asyncio.wait_for(_lost_of(sinks), 5)
        assert isinstance(exc, ValueError)
        assert await loop.sock_recv(client, 10) == b""
        await _close(server, client)

    async def _lost_of(sinks):
        while not sinks:
            await asyncio.sleep(0.001)
        return await sinks[0].lost

    loop.run_until_complete(main())
    errors = loop_errors.take()
    assert [e["message"] for e in errors] == ["Fatal error: protocol.data_received() call failed."]
    assert isinstance(errors[0]["exception"], ValueError)


@ferroloop_only
def test_closed_transports_are_collected(loop):
    """The native reader and writer refer back to their transport: the cycle
    must not keep a closed connection alive."""

    async def main():
        server, client, sink = await _pair(loop)
        ref = weakref.ref(sink.transport)
        sink.transport.write(b"hello")
        assert await _recv_until(loop, client, 5) == b"hello"
        sink.transport.close()
        await sink.lost
        sink.transport = None
        await _close(server, client)
        return ref

    ref = loop.run_until_complete(main())
    gc.collect()
    assert ref() is None


@ferroloop_only
def test_hot_methods_are_the_native_ones_once_used(loop):
    """write and is_closing are bound to the transport at first use (no
    Python frame per call after that, none held by an idle connection); an
    attribute the application sets on the instance still wins, and the
    method called through the class still works."""

    async def main():
        server, client, sink = await _pair(loop)
        transport = sink.transport
        assert "write" not in vars(transport)
        transport.write(b"one;")
        assert type(vars(transport)["write"]).__name__ == "builtin_function_or_method"
        assert transport.is_closing() is False
        type(transport).write(transport, b"two;")
        written = []
        transport.write = written.append
        transport.write(b"kept")
        del transport.write
        transport.write(b"three;")
        assert await _recv_until(loop, client, 14) == b"one;two;three;"
        assert written == [b"kept"]
        await _close(server, client)

    loop.run_until_complete(main())


def test_big_and_small_reads_alternate_without_loss(loop):
    """Bulk input (ferroloop then reads straight into a bytes object sized
    from the last read and shrinks it to what arrived), then a trickle, then
    bulk again, then EOF: every byte in order, each chunk a bytes object."""

    async def main():
        server, client, sink = await _pair(loop)
        big = bytes(range(251)) * 20_000  # ~5 MB, no period matching 64 KiB
        await loop.sock_sendall(client, big)
        for i in range(5):
            await asyncio.sleep(0.005)
            await loop.sock_sendall(client, b"small-%d;" % i)
        await loop.sock_sendall(client, big)
        client.shutdown(socket.SHUT_WR)
        await sink.lost
        expected = big + b"".join(b"small-%d;" % i for i in range(5)) + big
        assert bytes(sink.data) == expected
        await _close(server, client)

    loop.run_until_complete(main())


def test_a_protocol_without_data_received_fails_at_the_first_read(loop, loop_errors):
    """A BaseProtocol that cannot take data connects fine; the first data
    fails the connection with AttributeError, as on asyncio."""

    async def main():
        lost = loop.create_future()

        class NoData(asyncio.BaseProtocol):
            def connection_lost(self, exc):
                lost.set_result(exc)

        server = await loop.create_server(NoData, "127.0.0.1", 0)
        client = socket.socket()
        client.setblocking(False)
        await loop.sock_connect(client, server.sockets[0].getsockname())
        await loop.sock_sendall(client, b"data")
        exc = await asyncio.wait_for(lost, 5)
        await _close(server, client)
        return exc

    exc = loop.run_until_complete(main())
    assert isinstance(exc, AttributeError)
    errors = loop_errors.take()
    assert [e["message"] for e in errors] == ["Fatal error: protocol.data_received() call failed."]
