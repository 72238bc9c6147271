"""Transports when the peer misbehaves, each on asyncio and on ferroloop:
connections reset by the peer (SO_LINGER 0), EPIPE on writes to a closed
peer, abrupt closes in the middle of a transfer, writes after the loss.
The loop keeps running, ``connection_lost`` gets the exception type asyncio
gives, and nothing reaches the exception handler (the ``loop`` fixture
fails the test on any call it did not expect)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import sys

import pytest

from _helpers import ferroloop_only

MIB = 1024 * 1024


def reset(sock: socket.socket) -> None:
    """Close ``sock`` with an RST instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class Recorder(asyncio.Protocol):
    def __init__(self, keep_open_on_eof: bool = False) -> None:
        loop = asyncio.get_running_loop()
        self.made = loop.create_future()
        self.lost = loop.create_future()
        self.data = bytearray()
        self.eof = False
        self.keep_open_on_eof = keep_open_on_eof
        self.transport = None
        self.paused = 0
        self.resumed = 0

    def connection_made(self, transport):
        self.transport = transport
        self.made.set_result(transport)

    def data_received(self, data):
        self.data += data

    def eof_received(self):
        self.eof = True
        return self.keep_open_on_eof

    def pause_writing(self):
        self.paused += 1

    def resume_writing(self):
        self.resumed += 1

    def connection_lost(self, exc):
        self.lost.set_result(exc)


async def _server(loop, protocols, **kwargs):
    def factory():
        proto = Recorder(**kwargs)
        protocols.append(proto)
        return proto

    server = await loop.create_server(factory, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _raw_client(loop, port) -> socket.socket:
    sock = socket.socket()
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    return sock


async def _still_works(loop) -> None:
    """The loop still serves a plain echo after whatever went wrong."""

    async def echo(reader, writer):
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"still alive\n")
        assert await reader.readline() == b"still alive\n"
        writer.close()
        await writer.wait_closed()


def test_reset_by_peer_while_reading(loop):
    async def main():
        protocols = []
        server, port = await _server(loop, protocols)
        client = await _raw_client(loop, port)
        await loop.sock_sendall(client, b"some data")
        while not protocols or not protocols[0].data:
            await asyncio.sleep(0.001)
        reset(client)
        exc = await asyncio.wait_for(protocols[0].lost, 5)
        assert not protocols[0].eof
        server.close()
        await server.wait_closed()
        await _still_works(loop)
        return exc

    exc = loop.run_until_complete(main())
    assert type(exc) is ConnectionResetError


def test_reset_by_peer_with_a_full_write_buffer(loop):
    """The server is blocked writing (paused) when the client resets: the
    loss arrives with ConnectionResetError and resume_writing never comes."""

    async def main():
        protocols = []
        server, port = await _server(loop, protocols)
        client = await _raw_client(loop, port)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        while not protocols:
            await asyncio.sleep(0.001)
        proto = protocols[0]
        await proto.made
        chunk = b"x" * 65536
        while not proto.paused:
            proto.transport.write(chunk)
        assert proto.transport.get_write_buffer_size() > 0
        await asyncio.sleep(0.05)
        reset(client)
        exc = await asyncio.wait_for(proto.lost, 5)
        assert proto.resumed == 0
        assert proto.transport.is_closing()
        assert proto.transport.get_write_buffer_size() == 0
        server.close()
        await server.wait_closed()
        await _still_works(loop)
        return exc

    exc = loop.run_until_complete(main())
    assert type(exc) is ConnectionResetError


def test_epipe_on_write_to_a_closed_peer(loop):
    """The peer closed (FIN, then RST for our first write): a later write
    fails with EPIPE and the protocol sees BrokenPipeError."""

    async def main():
        protocols = []
        server, port = await _server(loop, protocols, keep_open_on_eof=True)
        client = await _raw_client(loop, port)
        client.close()
        while not protocols or not protocols[0].eof:
            await asyncio.sleep(0.001)
        proto = protocols[0]
        proto.transport.write(b"first write draws an RST")
        await asyncio.sleep(0.05)
        assert not proto.lost.done()
        proto.transport.write(b"second write hits EPIPE")
        exc = await asyncio.wait_for(proto.lost, 5)
        server.close()
        await server.wait_closed()
        await _still_works(loop)
        return exc

    exc = loop.run_until_complete(main())
    assert type(exc) is BrokenPipeError


def test_writes_after_the_loss_are_dropped_with_a_warning(loop, caplog):
    """asyncio counts writes to a lost connection and logs "socket.send()
    raised exception." from the fifth on; nothing is raised."""

    async def main():
        a, b = socket.socketpair()
        proto = None

        def factory():
            nonlocal proto
            proto = Recorder()
            return proto

        transport, _ = await loop.connect_accepted_socket(factory, a)
        reset(b)
        transport.write(b"x")
        await asyncio.sleep(0.01)
        transport.write(b"y")
        exc = await asyncio.wait_for(proto.lost, 5)
        for _ in range(7):
            transport.write(b"after the loss")
        return exc

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        exc = loop.run_until_complete(main())
    assert isinstance(exc, (BrokenPipeError, ConnectionResetError))
    warnings = [r for r in caplog.records if r.getMessage() == "socket.send() raised exception."]
    assert len(warnings) == 4


@pytest.mark.timeout(60)
def test_abrupt_close_mid_transfer_streams(loop):
    """A client resets the connection after 1 MiB of a 64 MiB download:
    the server's drain() raises, its write path sees the reset, the
    client's loss is clean (it aborted), the loop goes on."""
    outcome = {}

    async def serve(reader, writer):
        block = b"z" * (256 * 1024)
        sent = 0
        try:
            while sent < 64 * MIB:
                writer.write(block)
                sent += len(block)
                await writer.drain()
        except ConnectionError as exc:
            outcome["drain"] = exc
        finally:
            outcome["sent"] = sent
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError as exc:
                outcome["wait_closed"] = exc
            outcome["done"] = True

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await reader.readexactly(MIB)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        await writer.wait_closed()
        while "done" not in outcome:
            await asyncio.sleep(0.005)
        server.close()
        await server.wait_closed()
        await _still_works(loop)

    loop.run_until_complete(main())
    assert outcome["sent"] < 64 * MIB
    assert type(outcome["drain"]) is ConnectionResetError
    assert type(outcome.get("wait_closed")) is ConnectionResetError


@pytest.mark.timeout(60)
def test_abrupt_close_mid_transfer_protocols(loop):
    """The same with Protocols: the receiver aborts with RST half way
    through; the sender, paused or writing, loses the connection with
    ConnectionResetError."""

    async def main():
        lost = loop.create_future()

        class Sender(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport
                self.paused = False
                self.sent = 0
                self.pump()

            def pump(self):
                while not self.paused and not self.transport.is_closing():
                    self.transport.write(b"q" * 100_000)
                    self.sent += 100_000

            def pause_writing(self):
                self.paused = True

            def resume_writing(self):
                self.paused = False
                loop.call_soon(self.pump)

            def connection_lost(self, exc):
                lost.set_result(exc)

        server = await loop.create_server(Sender, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        receiver = None

        class Receiver(Recorder):
            def data_received(self, data):
                super().data_received(data)
                if len(self.data) >= 4 * MIB and not self.transport.is_closing():
                    sock = self.transport.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.transport.abort()

        def factory():
            nonlocal receiver
            receiver = Receiver()
            return receiver

        await loop.create_connection(factory, "127.0.0.1", port)
        client_exc = await asyncio.wait_for(receiver.lost, 10)
        server_exc = await asyncio.wait_for(lost, 10)
        server.close()
        await server.wait_closed()
        await _still_works(loop)
        return client_exc, server_exc

    client_exc, server_exc = loop.run_until_complete(main())
    assert client_exc is None
    assert type(server_exc) is ConnectionResetError


def test_peer_reset_before_accept_is_handled(loop):
    """A connection reset while still in the listen queue: accept() may hand
    out a dead socket; the server copes and goes on serving."""

    async def main():
        protocols = []
        server, port = await _server(loop, protocols)
        for _ in range(20):
            sock = socket.socket()
            sock.connect(("127.0.0.1", port))
            reset(sock)
        deadline = loop.time() + 5
        while (len(protocols) < 20 or not all(p.lost.done() for p in protocols)) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        excs = {type(p.lost.result()).__name__ if p.lost.done() and p.lost.result() else None for p in protocols}
        server.close()
        await server.wait_closed()
        await _still_works(loop)
        return len(protocols), excs

    count, excs = loop.run_until_complete(main())
    # Linux hands the already-reset connections out; each is lost at once.
    assert count == 20
    assert excs <= {"ConnectionResetError"}, excs


def test_udp_connected_to_a_closed_port(loop):
    """ICMP port unreachable on a connected UDP socket: error_received with
    ConnectionRefusedError, the endpoint stays open."""

    async def main():
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        errors = []

        class Proto(asyncio.DatagramProtocol):
            def error_received(self, exc):
                errors.append(exc)

        transport, _ = await loop.create_datagram_endpoint(Proto, remote_addr=("127.0.0.1", port))
        for _ in range(3):
            transport.sendto(b"anyone?")
            await asyncio.sleep(0.02)
        assert not transport.is_closing()
        transport.close()
        await asyncio.sleep(0)
        return errors

    errors = loop.run_until_complete(main())
    assert errors and all(type(e) is ConnectionRefusedError for e in errors)


def test_sendfile_learns_of_an_abort_while_the_buffer_drains(loop, tmp_path):
    """loop.sendfile() first waits for the transport's write buffer to
    drain; an abort() meanwhile fails it with asyncio's ConnectionError
    instead of leaving it waiting forever."""
    path = tmp_path / "file.bin"
    path.write_bytes(b"f" * 1000)

    async def main():
        a, b = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, a)
        transport.write(b"x" * 10_000_000)  # the peer reads none of it
        with open(path, "rb") as file:
            sending = asyncio.ensure_future(loop.sendfile(transport, file))
            await asyncio.sleep(0.02)
            assert not sending.done()
            transport.abort()
            with pytest.raises(ConnectionError, match="Connection is closed by peer") as info:
                await asyncio.wait_for(sending, 5)
        b.close()
        return info.value

    exc = loop.run_until_complete(main())
    assert type(exc) is ConnectionError


def test_sendfile_when_the_peer_goes_away_while_the_buffer_drains(loop, loop_impl, loop_errors, tmp_path):
    """The peer closes while sendfile() waits for the buffer: the write
    error (EPIPE or a reset) reaches sendfile()'s caller."""
    path = tmp_path / "file.bin"
    path.write_bytes(b"f" * 1000)

    async def main():
        a, b = socket.socketpair()
        transport, proto = await loop.connect_accepted_socket(asyncio.Protocol, a)
        transport.write(b"x" * 10_000_000)
        with open(path, "rb") as file:
            sending = asyncio.ensure_future(loop.sendfile(transport, file))
            await asyncio.sleep(0.02)
            b.recv(65536)  # the transport gets to write once more, then fails
            b.close()
            with pytest.raises(ConnectionError) as info:
                await asyncio.wait_for(sending, 5)
        await asyncio.sleep(0.01)
        return info.value

    exc = loop.run_until_complete(main())
    assert isinstance(exc, (BrokenPipeError, ConnectionResetError))
    # asyncio 3.11 completes the waiter twice here (with the write error,
    # then "closed by peer" in _call_connection_lost) and reports the
    # InvalidStateError; ferroloop completes it once.
    errors = loop_errors.take()
    if loop_impl is asyncio:
        assert [type(e.get("exception")) for e in errors] == [asyncio.InvalidStateError]
    else:
        assert errors == []


@ferroloop_only
def test_server_closed_before_an_accepted_connection_is_set_up(loop):
    """A connection accepted in the same tick as server.close() cannot be
    attached to the closed server (asyncio's Server asserts, python/cpython
    #109564). asyncio leaves that socket to the garbage collector and the
    client hangs; ferroloop closes it at once, so the client sees EOF."""

    async def main():
        server = None

        def factory():
            server.close()  # closes the server between accept and set-up
            return asyncio.Protocol()

        server = await loop.create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        data = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        await writer.wait_closed()
        await server.wait_closed()
        return data

    assert loop.run_until_complete(main()) == b""


@pytest.mark.parametrize("how", ["close", "abort", "write_eof"])
def test_ending_a_socket_transport_from_resume_writing(loop, loop_impl, loop_errors, how):
    """A producer that ends the connection from resume_writing() once its
    data is all out: connection_lost comes once. (asyncio 3.11 calls it a
    second time after close()/abort() there, which fails in the exception
    handler; ferroloop does not.)"""

    async def main():
        a, b = socket.socketpair()
        b.setblocking(False)
        calls = []

        class Producer(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport

            def resume_writing(self):
                if not self.transport.get_write_buffer_size():
                    getattr(self.transport, how)()

            def connection_lost(self, exc):
                calls.append(exc)

        transport, _ = await loop.connect_accepted_socket(Producer, a)
        transport.write(b"x" * 1_000_000)
        received = 0
        while True:
            try:
                data = b.recv(1 << 20)
            except BlockingIOError:
                if how == "write_eof" and received == 1_000_000:
                    break
                await asyncio.sleep(0.001)
                continue
            if not data:
                break
            received += len(data)
        if how == "write_eof":
            transport.close()
        await asyncio.sleep(0.01)
        b.close()
        return calls, received

    calls, received = loop.run_until_complete(main())
    assert calls == [None]
    if how != "abort":
        assert received == 1_000_000
    errors = loop_errors.take()
    if loop_impl is asyncio and how != "write_eof" and sys.version_info < (3, 14):
        # Before 3.14 asyncio calls connection_lost a second time here, which
        # fails (gh-156512 stopped that).
        assert [type(e.get("exception")) for e in errors] == [AttributeError]
    else:
        assert errors == []


@pytest.mark.parametrize("how", ["close", "abort", "abort_twice"])
def test_ending_a_write_pipe_from_resume_writing(loop, loop_impl, loop_errors, how):
    """The same for a write pipe, and abort() called twice."""

    async def main():
        read_fd, write_fd = os.pipe()
        calls = []

        class Producer(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport

            def resume_writing(self):
                if how != "abort_twice" and not self.transport.get_write_buffer_size():
                    getattr(self.transport, how)()

            def connection_lost(self, exc):
                calls.append(exc)

        transport, _ = await loop.connect_write_pipe(Producer, os.fdopen(write_fd, "wb"))
        if how == "abort_twice":
            transport.abort()
            transport.abort()
        else:
            transport.write(b"x" * 1_000_000)
        os.set_blocking(read_fd, False)
        received = 0
        while True:
            try:
                data = os.read(read_fd, 1 << 20)
            except BlockingIOError:
                await asyncio.sleep(0.001)
                continue
            if not data:
                break
            received += len(data)
        os.close(read_fd)
        await asyncio.sleep(0.01)
        return calls, received

    calls, received = loop.run_until_complete(main())
    assert calls == [None]
    if how == "close":
        assert received == 1_000_000
    errors = loop_errors.take()
    if loop_impl is asyncio:
        assert [type(e.get("exception")) for e in errors] == [AttributeError]
    else:
        assert errors == []
