"""Transports under protocols that misbehave or end the connection from
inside their own callbacks, twin-tested on asyncio and ferroloop: the same
reports to the exception handler, the same ends; and no fd or memory kept
across 100,000 connections opened and dropped."""

from __future__ import annotations

import asyncio
import gc
import os
import socket

import pytest

from _helpers import ferroloop_only



def proc_open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Recorder(asyncio.Protocol):
    """Records the callbacks it sees; `fail_in` raises in that one."""

    def __init__(self, fail_in: str | None = None) -> None:
        self.fail_in = fail_in
        self.calls: list[str] = []
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def _maybe_fail(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_in:
            raise ZeroDivisionError(f"protocol bug in {name}")

    def connection_made(self, transport):
        self.transport = transport
        self._maybe_fail("connection_made")

    def data_received(self, data):
        self._maybe_fail("data_received")

    def eof_received(self):
        self._maybe_fail("eof_received")

    def pause_writing(self):
        self._maybe_fail("pause_writing")

    def resume_writing(self):
        self._maybe_fail("resume_writing")

    def connection_lost(self, exc):
        if not self.lost.done():
            self.lost.set_result(exc)
        self._maybe_fail("connection_lost")


class BufferedRecorder(asyncio.BufferedProtocol, Recorder):
    def __init__(self, fail_in: str | None = None) -> None:
        Recorder.__init__(self, fail_in)
        self.buffer = bytearray(1024)

    def get_buffer(self, sizehint):
        self._maybe_fail("get_buffer")
        return self.buffer

    def buffer_updated(self, nbytes):
        self._maybe_fail("buffer_updated")


async def _served(loop, protocol_factory):
    """A server whose one connection gets a protocol from the factory, and a
    plain client socket connected to it."""
    protocols = []

    def factory():
        protocols.append(protocol_factory())
        return protocols[-1]

    server = await loop.create_server(factory, "127.0.0.1", 0)
    client = socket.socket()
    client.setblocking(False)
    await loop.sock_connect(client, server.sockets[0].getsockname())
    while not protocols or protocols[0].transport is None:
        await asyncio.sleep(0.001)
    return server, client, protocols[0]


async def _finish(server, client):
    client.close()
    server.close()
    await server.wait_closed()


@pytest.mark.parametrize(
    "fail_in, message",
    [
        ("data_received", "Fatal error: protocol.data_received() call failed."),
        ("eof_received", "Fatal error: protocol.eof_received() call failed."),
    ],
)
def test_a_protocol_that_raises_in_a_read_callback(loop, loop_errors, fail_in, message):
    async def main():
        server, client, proto = await _served(loop, lambda: Recorder(fail_in))
        await loop.sock_sendall(client, b"data")
        if fail_in == "eof_received":
            client.shutdown(socket.SHUT_WR)
        exc = await asyncio.wait_for(proto.lost, 5)
        await _finish(server, client)
        return exc, proto.calls

    exc, calls = loop.run_until_complete(main())
    assert isinstance(exc, ZeroDivisionError)
    assert calls[-1] == "connection_lost"
    errors = loop_errors.take()
    assert [e["message"] for e in errors] == [message]
    assert errors[0]["exception"] is exc


@pytest.mark.parametrize(
    "fail_in, message",
    [
        ("get_buffer", "Fatal error: protocol.get_buffer() call failed."),
        ("buffer_updated", "Fatal error: protocol.buffer_updated() call failed."),
    ],
)
def test_a_buffered_protocol_that_raises(loop, loop_errors, fail_in, message):
    async def main():
        server, client, proto = await _served(loop, lambda: BufferedRecorder(fail_in))
        await loop.sock_sendall(client, b"data")
        exc = await asyncio.wait_for(proto.lost, 5)
        await _finish(server, client)
        return exc

    exc = loop.run_until_complete(main())
    assert isinstance(exc, ZeroDivisionError)
    errors = loop_errors.take()
    assert [e["message"] for e in errors] == [message]


@pytest.mark.parametrize("fail_in", ["pause_writing", "resume_writing"])
def test_a_failing_flow_callback_is_reported_and_the_transport_goes_on(loop, loop_errors, fail_in):
    async def main():
        server, client, proto = await _served(loop, lambda: Recorder(fail_in))
        transport = proto.transport
        transport.set_write_buffer_limits(high=1024)
        transport.write(b"x" * 4 * 1024 * 1024)  # past the high water mark
        received = 0
        while received < 4 * 1024 * 1024:
            received += len(await loop.sock_recv(client, 1 << 20))
        # Drained: resume_writing ran.
        while "resume_writing" not in proto.calls:
            await asyncio.sleep(0.001)
        transport.write(b"still open")
        got = await loop.sock_recv(client, 100)
        transport.close()
        await asyncio.wait_for(proto.lost, 5)
        await _finish(server, client)
        return got

    assert loop.run_until_complete(main()) == b"still open"
    errors = loop_errors.take()
    assert [e["message"] for e in errors] == [f"protocol.{fail_in}() failed"]


def test_a_failing_connection_lost_is_the_loops_to_report(loop, loop_errors):
    async def main():
        server, client, proto = await _served(loop, lambda: Recorder("connection_lost"))
        proto.transport.close()
        await asyncio.wait_for(proto.lost, 5)
        await asyncio.sleep(0.01)
        await _finish(server, client)

    loop.run_until_complete(main())
    errors = loop_errors.take()
    assert len(errors) == 1 and isinstance(errors[0]["exception"], ZeroDivisionError)


@pytest.mark.parametrize("how", ["close", "abort", "write_then_close", "write_eof"])
def test_ending_the_connection_from_inside_data_received(loop, how):
    class Ender(Recorder):
        def data_received(self, data):
            super().data_received(data)
            if how == "close":
                self.transport.close()
            elif how == "abort":
                self.transport.abort()
            elif how == "write_then_close":
                self.transport.write(b"bye " * 100_000)
                self.transport.close()
            else:
                self.transport.write(b"half")
                self.transport.write_eof()

    async def main():
        server, client, proto = await _served(loop, Ender)
        await loop.sock_sendall(client, b"go")
        received = b""
        while True:
            chunk = await loop.sock_recv(client, 1 << 20)
            if not chunk:
                break
            received += chunk
        if how == "write_eof":
            client.close()  # the peer's end: the transport then sees EOF
        exc = await asyncio.wait_for(proto.lost, 5)
        await _finish(server, client)
        return exc, len(received), proto.transport.is_closing()

    exc, size, closing = loop.run_until_complete(main())
    assert exc is None
    assert closing
    assert size == {"close": 0, "abort": 0, "write_then_close": 400_000, "write_eof": 4}[how]


@pytest.mark.once
@ferroloop_only
def test_a_hundred_thousand_connections_keep_no_fd_or_memory(loop):
    """Connections opened, echoed once and dropped, 100,000 of them, by
    plain blocking clients in threads: the server's fd count returns to
    where it was and its RSS grows by at most a few MiB (nothing per
    connection is kept)."""

    class Echo(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport

        def data_received(self, data):
            self.transport.write(data)

    def rss_kib() -> int:
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def clients(address, count: int) -> None:
        for _ in range(count):
            with socket.create_connection(address, timeout=10) as s:
                s.sendall(b"ping")
                assert s.recv(4) == b"ping"

    async def run_clients(address, total: int, threads: int = 4) -> None:
        await asyncio.gather(*(asyncio.to_thread(clients, address, total // threads) for _ in range(threads)))

    async def main():
        server = await loop.create_server(Echo, "127.0.0.1", 0, backlog=1000)
        address = server.sockets[0].getsockname()
        await run_clients(address, 2_000)  # warm-up
        await asyncio.sleep(0.05)
        gc.collect()
        fds, rss = proc_open_fds(os.getpid()), rss_kib()
        await run_clients(address, 100_000)
        await asyncio.sleep(0.1)
        gc.collect()
        grown = rss_kib() - rss
        left = proc_open_fds(os.getpid()) - fds
        server.close()
        await server.wait_closed()
        return left, grown

    left, grown = loop.run_until_complete(main())
    assert left == 0, f"{left} fds more after 100,000 connections"
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB over 100,000 connections"
