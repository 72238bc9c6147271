"""No file descriptor outlives its transport, on asyncio and on ferroloop.

Each test runs a workload a number of times on the ``loop`` fixture and
compares the entries of /proc/self/fd before and after (the loop's own
descriptors exist before the first count: the loop has run once)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import ssl
import struct
import subprocess
import sys
import time

import pytest

import _tls

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")

ROUNDS = 20


def _open_fds() -> dict[int, str]:
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the directory listing's own fd, closed by now
    return fds


def assert_no_fd_growth(loop, workload, rounds: int = ROUNDS) -> None:
    """Run ``workload()`` (a coroutine function) ``rounds`` times on
    ``loop``; afterwards no more descriptors may be open than before."""

    async def settle():
        # Transports finish closing in callbacks a few iterations later.
        for _ in range(5):
            await asyncio.sleep(0)
        await asyncio.sleep(0.02)

    loop.run_until_complete(settle())
    gc.collect()
    before = _open_fds()

    async def run_all():
        for _ in range(rounds):
            await workload()
        await settle()

    loop.run_until_complete(run_all())
    gc.collect()
    after = _open_fds()
    grown = {fd: target for fd, target in after.items() if before.get(fd) != target}
    assert len(after) <= len(before), f"{len(after) - len(before)} more fds open: {grown}"


async def _lines_server(loop, **kwargs):
    """An echo-a-line server; returns it and its port."""

    async def handle(reader, writer):
        try:
            while line := await reader.readline():
                writer.write(line)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, **kwargs)
    return server, server.sockets[0].getsockname()[1]


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_connections_opened_and_closed(loop, tmp_path):
    async def workload():
        server, port = await _lines_server(loop)
        path = str(tmp_path / "u.sock")

        async def unix_echo(reader, writer):
            writer.write(await reader.read(100))
            writer.close()

        unix_server = await asyncio.start_unix_server(unix_echo, path)
        for i in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"line\n")
            assert await reader.readline() == b"line\n"
            if i % 2:
                writer.write_eof()  # the server closes first
                assert await reader.read() == b""
            writer.close()
            await writer.wait_closed()
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(b"unix")
            assert await reader.read() == b"unix"
            writer.close()
            await writer.wait_closed()
        server.close()
        unix_server.close()
        await server.wait_closed()
        await unix_server.wait_closed()

    assert_no_fd_growth(loop, workload)


def test_refused_and_failed_connects(loop, tmp_path):
    port = _closed_port()
    missing = str(tmp_path / "nobody-listens-here")

    async def workload():
        with pytest.raises(ConnectionRefusedError):
            await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.1", 0))
        with pytest.raises(FileNotFoundError):
            await loop.create_unix_connection(asyncio.Protocol, missing)
        # A connect cancelled while in progress: a listener whose accept
        # queue is full drops the SYN, which leaves the connect pending.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(listener.getsockname())
            fillers.append(filler)
        task = asyncio.ensure_future(loop.create_connection(asyncio.Protocol, *listener.getsockname()))
        await asyncio.sleep(0.02)
        task.cancel()
        try:
            transport, _ = await task
        except asyncio.CancelledError:
            pass
        else:  # it got through after all
            transport.close()
        for filler in fillers:
            filler.close()
        listener.close()
        # Binding the server to a taken port fails cleanly.
        server, taken = await _lines_server(loop)
        with pytest.raises(OSError):
            await loop.create_server(asyncio.Protocol, "127.0.0.1", taken, reuse_address=False)
        server.close()
        await server.wait_closed()

    assert_no_fd_growth(loop, workload)


def test_tls_handshake_failures(loop):
    async def silent(reader, writer):
        await reader.read()
        writer.close()

    async def workload():
        server, port = await _lines_server(loop, ssl=_tls.server_context(), ssl_handshake_timeout=0.2)
        plain = await asyncio.start_server(silent, "127.0.0.1", 0)
        plain_port = plain.sockets[0].getsockname()[1]
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=_tls.client_context(), server_hostname="wrong.example")
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=_tls.untrusting_client_context(),
                                          server_hostname="localhost")
        # Garbage instead of a ClientHello: the server's handshake fails.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        assert await reader.read() == b""
        writer.close()
        await writer.wait_closed()
        # A client that never starts the handshake: the server times out.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        await writer.wait_closed()
        # A TLS client against a server that never answers: client timeout.
        with pytest.raises(ConnectionAbortedError):
            await asyncio.open_connection("127.0.0.1", plain_port, ssl=_tls.client_context(),
                                          server_hostname="localhost", ssl_handshake_timeout=0.05)
        # A working TLS connection, for contrast.
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=_tls.client_context(),
                                                       server_hostname="localhost")
        writer.write(b"fine\n")
        assert await reader.readline() == b"fine\n"
        writer.close()
        await writer.wait_closed()
        await asyncio.sleep(0.02)
        server.close()
        plain.close()
        await server.wait_closed()
        await plain.wait_closed()

    assert_no_fd_growth(loop, workload, rounds=5)


def test_aborted_and_reset_transports(loop):
    async def workload():
        lost = []

        class Proto(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport

            def connection_lost(self, exc):
                lost.append(exc)

        server = await loop.create_server(Proto, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        for i in range(4):
            transport, _ = await loop.create_connection(Proto, "127.0.0.1", port)
            transport.write(b"x" * 3_000_000)  # leaves a write buffer behind
            if i % 2:
                sock = transport.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        while len(lost) < 8:
            await asyncio.sleep(0.005)
        server.close()
        await server.wait_closed()

    assert_no_fd_growth(loop, workload)


def test_server_closed_with_clients_connected(loop):
    async def workload():
        server, port = await _lines_server(loop)
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(5)]
        for reader, writer in clients:
            writer.write(b"hi\n")
            assert await reader.readline() == b"hi\n"
        server.close()
        closed = asyncio.ensure_future(server.wait_closed())
        # The connections outlive server.close(): they still work.
        for reader, writer in clients:
            writer.write(b"still\n")
            assert await reader.readline() == b"still\n"
        if sys.version_info >= (3, 12):
            # 3.12 (gh-79033): wait_closed() also waits for the server's
            # connections to close.
            assert not closed.done()
        else:
            # 3.11: wait_closed() returns once the server is closed.
            assert closed.done()
        for reader, writer in clients:
            writer.close()
            await writer.wait_closed()
        await asyncio.wait_for(closed, 5)

    assert_no_fd_growth(loop, workload)


def test_subprocesses(loop):
    async def workload():
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read().upper())",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate(b"shout")
        assert (out, err, proc.returncode) == (b"SHOUT", b"", 0)
        # Killed while its pipes are open.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import time; time.sleep(30)",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        proc.kill()
        assert await proc.wait() == -9
        # A shell, and a program that does not exist.
        proc = await asyncio.create_subprocess_shell("exit 3", stdout=asyncio.subprocess.DEVNULL)
        assert await proc.wait() == 3
        with pytest.raises(FileNotFoundError):
            await asyncio.create_subprocess_exec("/nonexistent/program", stdout=asyncio.subprocess.PIPE)

    assert_no_fd_growth(loop, workload, rounds=5)


def test_pipes(loop):
    async def workload():
        read_fd, write_fd = os.pipe()
        reader = asyncio.StreamReader()
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                         os.fdopen(read_fd, "rb"))
        write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, "wb"))
        write_transport.write(b"p" * 200_000)
        write_transport.close()
        assert len(await reader.read()) == 200_000
        read_transport.close()
        # The reader goes away while the writer has data buffered.
        read_fd, write_fd = os.pipe()
        lost = loop.create_future()

        class Proto(asyncio.Protocol):
            def connection_lost(self, exc):
                lost.set_result(exc)

        write_transport, _ = await loop.connect_write_pipe(Proto, os.fdopen(write_fd, "wb"))
        write_transport.write(b"q" * 500_000)
        os.close(read_fd)
        assert isinstance(await asyncio.wait_for(lost, 5), BrokenPipeError)

    assert_no_fd_growth(loop, workload)


def test_datagram_endpoints(loop, tmp_path):
    async def workload():
        received = loop.create_future()

        class Server(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.transport = transport

            def datagram_received(self, data, addr):
                self.transport.sendto(data.upper(), addr)

        class Client(asyncio.DatagramProtocol):
            def datagram_received(self, data, addr):
                received.set_result(data)

        server, _ = await loop.create_datagram_endpoint(Server, local_addr=("127.0.0.1", 0))
        client, _ = await loop.create_datagram_endpoint(Client, remote_addr=server.get_extra_info("sockname"))
        client.sendto(b"ping")
        assert await asyncio.wait_for(received, 5) == b"PING"
        client.close()
        server.close()
        # Connected to nobody: error_received, then closed.
        refused, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol,
                                                         remote_addr=("127.0.0.1", _closed_port()))
        refused.sendto(b"x")
        await asyncio.sleep(0.005)
        refused.abort()
        # Unix datagrams.
        path = str(tmp_path / "d.sock")
        unix, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=path,
                                                      family=socket.AF_UNIX)
        unix.close()
        os.unlink(path)
        await asyncio.sleep(0)

    assert_no_fd_growth(loop, workload)


def _asyncio_watches_children_with_pidfds() -> bool:
    """3.12 (gh-98023) made PidfdChildWatcher asyncio's default child
    watcher where os.pidfd_open() works; 3.11 used ThreadedChildWatcher."""
    if sys.version_info < (3, 12):
        return False
    from asyncio import unix_events

    return unix_events.can_use_pidfd()


# The Popen object never hears of the exit that a watcher thread reaped:
# "subprocess N is still running" when it is collected (on both loops).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_loop_closed_while_a_child_runs(loop, loop_impl, caplog, request):
    """The loop is closed before it learns that its child exited (the
    transport killed it, nobody waited): the child is still reaped
    (asyncio's ThreadedChildWatcher thread warns "Loop ... that handles
    pid ... is closed"; ferroloop does the same) and ferroloop's pidfd for
    it is not left open."""
    if loop_impl is asyncio and _asyncio_watches_children_with_pidfds():
        # PidfdChildWatcher (the default since 3.12, gh-98023) waits for the
        # child from the loop, with a pidfd reader: once the loop is closed
        # nothing reaps the child (a zombie, no warning) and the pidfd stays
        # open. ferroloop keeps reaping it and closing its pidfd.
        request.applymarker(pytest.mark.xfail(
            strict=True,
            reason="asyncio 3.12+ PidfdChildWatcher: a child outliving its closed loop "
                   "is never reaped and its pidfd stays open (gh-98023 made it the default)"))

    class Proto(asyncio.SubprocessProtocol):
        pass

    async def start():
        transport, _ = await loop.subprocess_exec(
            Proto, sys.executable, "-c", "import time; time.sleep(30)",
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return transport

    loop.run_until_complete(asyncio.sleep(0))
    gc.collect()
    before = _open_fds()
    transport = loop.run_until_complete(start())
    pid = transport.get_pid()
    with caplog.at_level(logging.WARNING, logger="asyncio"):
        transport.close()  # kills the child
        loop.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if any(f"that handles pid {pid} is closed" in r.getMessage() for r in caplog.records):
                break
            time.sleep(0.02)
    # Reaped: the pid is no longer our child.
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    warned = any(f"that handles pid {pid} is closed" in r.getMessage() for r in caplog.records)
    # asyncio's watcher thread warns only if it finds the loop closed: when
    # the killed child's exit reaches it before `loop.close()` runs (seen on
    # a loaded CI host), it hands the exit to the still-open loop and says
    # nothing. The reference's warning is therefore not required.
    assert warned or loop_impl is asyncio
    del transport
    gc.collect()
    after = _open_fds()
    new = {fd: target for fd, target in after.items() if before.get(fd) != target}
    assert not new, new
