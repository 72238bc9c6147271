"""Stream connections and servers over real sockets: TCP and Unix, the
Protocol and BufferedProtocol contracts, flow control, half-close, TLS (the
ssl module on both ends) and loop.sendfile."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import io
import os
import socket
import ssl
import sys
import weakref

import pytest

from _helpers import PROMPT

CERTDATA = os.path.join(os.path.dirname(os.__file__), "test", "certdata")
CERT = os.path.join(CERTDATA, "ssl_cert.pem")  # CN=localhost, self-signed
KEY = os.path.join(CERTDATA, "ssl_key.pem")
needs_certs = pytest.mark.skipif(not os.path.exists(CERT), reason="CPython's test certificates are not installed")


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


def test_stream_echo_over_tcp(loop):
    payload = os.urandom(3_000_000)

    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(payload)
            echoed = await reader.readexactly(len(payload))
            writer.write_eof()
            assert await reader.read() == b""
            writer.close()
            await writer.wait_closed()
            return echoed

    assert loop.run_until_complete(main()) == payload


def test_stream_echo_over_unix_socket(loop, tmp_path):
    path = str(tmp_path / "sock")

    async def main():
        server = await asyncio.start_unix_server(_echo, path)
        async with server:
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(b"over unix")
            data = await reader.readexactly(9)
            writer.close()
            await writer.wait_closed()
            return data

    assert loop.run_until_complete(main()) == b"over unix"


class Recorder(asyncio.Protocol):
    """Records the protocol lifecycle as asyncio calls it."""

    def __init__(self, keep_open_on_eof: bool = False) -> None:
        self.events: list[object] = []
        self.data = bytearray()
        self.keep_open_on_eof = keep_open_on_eof
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport
        self.events.append("made")

    def data_received(self, data):
        if not self.events or self.events[-1] != "data":
            self.events.append("data")
        self.data += data

    def eof_received(self):
        self.events.append("eof")
        return self.keep_open_on_eof

    def pause_writing(self):
        self.events.append("pause")

    def resume_writing(self):
        self.events.append("resume")

    def connection_lost(self, exc):
        self.events.append(("lost", type(exc).__name__ if exc else None))


def test_protocol_lifecycle_and_half_close(loop):
    async def main():
        server_proto = Recorder(keep_open_on_eof=True)
        server = await loop.create_server(lambda: server_proto, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = Recorder()
        transport, _ = await loop.create_connection(lambda: client, "127.0.0.1", port)
        assert transport.get_extra_info("peername") == ("127.0.0.1", port)
        assert transport.get_extra_info("sockname")[0] == "127.0.0.1"
        assert isinstance(transport.get_extra_info("socket").fileno(), int)
        assert transport.can_write_eof()
        transport.write(b"hello")
        transport.write_eof()
        while "eof" not in server_proto.events:
            await asyncio.sleep(0.005)
        # Half-closed: the server can still answer.
        server_proto.transport.write(b"answer")
        server_proto.transport.close()
        while not client.events or client.events[-1][0] != "lost":
            await asyncio.sleep(0.005)
        server.close()
        await server.wait_closed()
        return server_proto, client

    server_proto, client = loop.run_until_complete(main())
    assert server_proto.data == b"hello"
    assert server_proto.events == ["made", "data", "eof", ("lost", None)]
    assert client.data == b"answer"
    assert client.events == ["made", "data", "eof", ("lost", None)]


def test_flow_control_pauses_and_resumes_writing(loop):
    async def main():
        reader_sock, writer_sock = socket.socketpair()
        proto = Recorder()
        transport, _ = await loop.connect_accepted_socket(lambda: proto, writer_sock)
        transport.set_write_buffer_limits(high=64 * 1024, low=16 * 1024)
        assert transport.get_write_buffer_limits() == (16 * 1024, 64 * 1024)
        while "pause" not in proto.events:
            transport.write(b"x" * 65536)
        assert transport.get_write_buffer_size() > 64 * 1024
        reader_sock.setblocking(False)
        while "resume" not in proto.events:
            try:
                while reader_sock.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass
            await asyncio.sleep(0.001)
        assert transport.get_write_buffer_size() <= 16 * 1024
        transport.abort()
        await asyncio.sleep(0.01)
        reader_sock.close()
        return proto.events

    events = loop.run_until_complete(main())
    assert events[:3] == ["made", "pause", "resume"]
    assert events[-1] == ("lost", None)


@pytest.mark.parametrize(("high", "low"), [(1, 2), (-1, None)])
def test_invalid_water_marks(loop, high, low):
    async def main():
        a, b = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, a)
        try:
            with pytest.raises(ValueError, match="must be >= low"):
                transport.set_write_buffer_limits(high=high, low=low)
        finally:
            transport.close()
            b.close()
            await asyncio.sleep(0)

    loop.run_until_complete(main())


class Buffered(asyncio.BufferedProtocol):
    def __init__(self) -> None:
        self.buffer = bytearray(1000)
        self.received = bytearray()
        self.done: asyncio.Future[None] | None = None

    def connection_made(self, transport):
        self.done = asyncio.get_running_loop().create_future()

    def get_buffer(self, sizehint):
        return self.buffer

    def buffer_updated(self, nbytes):
        self.received += self.buffer[:nbytes]

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self.done.set_result(None)


def test_buffered_protocol(loop):
    payload = os.urandom(100_000)

    async def main():
        a, b = socket.socketpair()
        proto = Buffered()
        await loop.connect_accepted_socket(lambda: proto, a)
        b.sendall(payload)
        b.close()
        await proto.done
        return bytes(proto.received)

    assert loop.run_until_complete(main()) == payload


def test_connection_refused(loop):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(ConnectionRefusedError):
        loop.run_until_complete(loop.create_connection(asyncio.Protocol, "127.0.0.1", port))


def test_happy_eyeballs_connects(loop):
    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("localhost", port, happy_eyeballs_delay=0.05)
            writer.write(b"eyeballs")
            data = await reader.readexactly(8)
            writer.close()
            await writer.wait_closed()
            return data

    assert loop.run_until_complete(main()) == b"eyeballs"


def test_create_server_argument_errors(loop):
    with pytest.raises(ValueError, match="Neither host/port nor sock were specified"):
        loop.run_until_complete(loop.create_server(asyncio.Protocol))
    with pytest.raises(TypeError, match="ssl argument must be an SSLContext or None"):
        loop.run_until_complete(loop.create_server(asyncio.Protocol, "127.0.0.1", 0, ssl=True))
    with pytest.raises(ValueError, match="ssl_handshake_timeout is only meaningful with ssl"):
        loop.run_until_complete(loop.create_server(asyncio.Protocol, "127.0.0.1", 0, ssl_handshake_timeout=1))


def test_fd_of_a_transport_cannot_get_other_callbacks(loop):
    async def main():
        a, b = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, a)
        try:
            with pytest.raises(RuntimeError, match="is used by transport"):
                loop.add_reader(a.fileno(), lambda: None)
        finally:
            transport.close()
            b.close()
            await asyncio.sleep(0)

    loop.run_until_complete(main())


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    return context


def _client_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(CERT)
    return context


@needs_certs
def test_tls_stream_echo(loop):
    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=_server_context())
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=_client_context(), server_hostname="localhost")
            assert writer.get_extra_info("peercert")["subject"]
            assert writer.get_extra_info("cipher") is not None
            writer.write(b"secret" * 10000)
            data = await reader.readexactly(60000)
            writer.close()
            await writer.wait_closed()
            return data

    assert loop.run_until_complete(main()) == b"secret" * 10000


@needs_certs
def test_tls_certificate_error(loop):
    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=_server_context())
        async with server:
            port = server.sockets[0].getsockname()[1]
            with pytest.raises(ssl.SSLCertVerificationError):
                await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context(),
                                              server_hostname="localhost")
            # Let the server side see the aborted handshake and finish.
            await asyncio.sleep(0.1)

    loop.run_until_complete(main())


@needs_certs
@pytest.mark.skipif(sys.version_info < (3, 11), reason="StreamWriter.start_tls is 3.11+")
def test_start_tls_upgrade(loop):
    async def handle(reader, writer):
        assert await reader.readline() == b"STARTTLS\n"
        writer.write(b"OK\n")
        await writer.drain()
        await writer.start_tls(_server_context())
        line = await reader.readline()
        writer.write(line.upper())
        await writer.drain()
        writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"STARTTLS\n")
            assert await reader.readline() == b"OK\n"
            await writer.start_tls(_client_context(), server_hostname="localhost")
            writer.write(b"encrypted now\n")
            line = await reader.readline()
            writer.close()
            await writer.wait_closed()
            return line

    assert loop.run_until_complete(main()) == b"ENCRYPTED NOW\n"


def test_loop_sendfile_over_a_transport(loop, tmp_path):
    data = os.urandom(1_000_000)
    path = tmp_path / "file.bin"
    path.write_bytes(data)

    async def main():
        a, b = socket.socketpair()
        b.setblocking(False)
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, a)
        received = bytearray()

        async def drain_peer():
            while len(received) < len(data) - 10:
                received.extend(await loop.sock_recv(b, 65536))

        with open(path, "rb") as file:
            peer = loop.create_task(drain_peer())
            sent = await loop.sendfile(transport, file, offset=10)
            await peer
        transport.close()
        b.close()
        await asyncio.sleep(0)
        return sent, bytes(received)

    sent, received = loop.run_until_complete(main())
    assert sent == len(data) - 10
    assert received == data[10:]


# -- what 3.14 and 3.15 changed ------------------------------------------------------

# The reference asyncio closes the socket of a connection whose transport
# never got made (gh-153133), drops a failed TLS connection's transport
# without a collection (gh-159049) and hands the stream's buffered bytes to
# start_tls (gh-142352) from 3.14 on; ferroloop does all three on every
# version (the second where the stdlib's SSLProtocol allows it, 3.13+).
fixed_in_asyncio_314 = sys.version_info >= (3, 14)


def _reference_lacks(loop_impl, fixed: bool) -> None:
    if loop_impl is asyncio and not fixed:
        pytest.skip("the reference asyncio of this version lacks the fix (ferroloop has it)")


def test_a_failing_protocol_factory_closes_the_socket(loop, loop_impl):
    _reference_lacks(loop_impl, fixed_in_asyncio_314)

    def factory():
        raise ZeroDivisionError

    async def main():
        listener = socket.create_server(("127.0.0.1", 0))
        listener.setblocking(False)
        port = listener.getsockname()[1]
        try:
            with pytest.raises(ZeroDivisionError):
                await loop.create_connection(factory, "127.0.0.1", port)
            peer, _ = await loop.sock_accept(listener)
            with peer:
                # The loop's own socket was closed: the server side sees EOF.
                assert await asyncio.wait_for(loop.sock_recv(peer, 10), PROMPT) == b""
            given = socket.create_connection(("127.0.0.1", port))
            with pytest.raises(ZeroDivisionError):
                await loop.create_connection(factory, sock=given)
            assert given.fileno() == -1  # the caller's socket, closed too
            (await loop.sock_accept(listener))[0].close()
        finally:
            listener.close()

    loop.run_until_complete(main())


@needs_certs
@pytest.mark.skipif(sys.version_info < (3, 13), reason="the stdlib's SSLProtocol, which both loops run TLS "
                    "through, keeps its handshake error in a reference cycle before 3.13")
def test_a_failed_tls_handshake_leaves_no_reference_cycle(loop, loop_impl):
    _reference_lacks(loop_impl, fixed_in_asyncio_314)
    transports = []

    class Remember(asyncio.Protocol):
        pass

    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=_server_context())
        async with server:
            port = server.sockets[0].getsockname()[1]
            # Plain first, then start_tls: the transport stays reachable for the check.
            transport, protocol = await loop.create_connection(Remember, "127.0.0.1", port)
            transports.append(weakref.ref(transport))
            del transport
            with pytest.raises(ssl.SSLCertVerificationError):
                await loop.start_tls(transports[0](), protocol, ssl.create_default_context(),
                                     server_hostname="localhost")
            await asyncio.sleep(0.05)  # the server side sees the aborted handshake

    gc.collect()
    gc.disable()
    try:
        loop.run_until_complete(main())
        assert transports[0]() is None
    finally:
        gc.enable()


@needs_certs
def test_start_tls_takes_the_bytes_the_stream_buffered(loop, loop_impl):
    _reference_lacks(loop_impl, fixed_in_asyncio_314)

    async def handle(reader, writer):
        # The client's ClientHello is in the stream's buffer before start_tls.
        await reader._wait_for_data("test")
        assert reader._buffer
        await writer.start_tls(_server_context())
        line = await reader.readline()
        writer.write(line.upper())
        await writer.drain()
        writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await writer.start_tls(_client_context(), server_hostname="localhost")
            writer.write(b"buffered hello\n")
            line = await asyncio.wait_for(reader.readline(), PROMPT)
            writer.close()
            await writer.wait_closed()
            return line

    assert loop.run_until_complete(main()) == b"BUFFERED HELLO\n"


connection_contexts = pytest.mark.skipif(
    sys.version_info < (3, 15), reason="3.15: a connection's callbacks run in a context of its own")


@connection_contexts
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_each_server_connection_runs_in_a_copy_of_the_servers_context(loop, tls):
    if tls and not os.path.exists(CERT):
        pytest.skip("CPython's test certificates are not installed")
    var = contextvars.ContextVar("var", default="default")
    seen = []

    class Proto(asyncio.Protocol):
        def __init__(self):
            seen.append(("factory", var.get()))

        def connection_made(self, transport):
            seen.append(("made", var.get()))
            var.set("set by the connection")
            self.transport = transport

        def data_received(self, data):
            seen.append(("data", var.get()))
            self.transport.write(data)
            self.transport.close()

        def connection_lost(self, exc):
            seen.append(("lost", var.get()))

    async def main():
        var.set("when the server was made")
        server = await loop.create_server(Proto, "127.0.0.1", 0, ssl=_server_context() if tls else None)
        var.set("after")
        async with server:
            port = server.sockets[0].getsockname()[1]
            for _ in range(2):
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", port, ssl=_client_context() if tls else None,
                    server_hostname="localhost" if tls else None)
                writer.write(b"x")
                assert await reader.read() == b"x"
                writer.close()
                await writer.wait_closed()
            while len(seen) < 8:
                await asyncio.sleep(0.01)
        return var.get()

    assert loop.run_until_complete(main()) == "after"
    first, second = seen[:4], seen[4:]
    # Each connection starts from the server's context, and keeps what its
    # own callbacks set; the server's stays untouched.
    for connection in (first, second):
        assert connection == [
            ("factory", "when the server was made"),
            ("made", "when the server was made"),
            ("data", "set by the connection"),
            ("lost", "set by the connection"),
        ]


@connection_contexts
def test_a_client_connection_runs_in_a_copy_of_the_callers_context(loop):
    var = contextvars.ContextVar("var", default="default")
    seen = []

    class Proto(asyncio.Protocol):
        def connection_made(self, transport):
            seen.append(var.get())
            var.set("set by the connection")

        def data_received(self, data):
            seen.append(var.get())

    async def main():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            var.set("the caller's")
            transport, _ = await loop.create_connection(Proto, "127.0.0.1", port)
            assert var.get() == "the caller's"
            transport.write(b"ping")
            while len(seen) < 2:
                await asyncio.sleep(0.01)
            transport.close()
            await asyncio.sleep(0)

    loop.run_until_complete(main())
    assert seen == ["the caller's", "set by the connection"]


@pytest.mark.parametrize("native", [True, False], ids=["sendfile", "fallback"])
def test_sock_sendfile_leaves_the_file_where_this_versions_asyncio_does(loop, tmp_path, native):
    """3.14: the file ends at offset + sent whatever was sent, and the
    fallback (a file without a descriptor) seeks to offset 0 too; before,
    the file moved only when something was sent, and the fallback read
    offset 0 from where the file was."""
    data = b"abcdef"
    path = tmp_path / "file.bin"
    path.write_bytes(data)

    async def send(offset):
        a, b = socket.socketpair()
        with a, b, (open(path, "rb") if native else io.BytesIO(data)) as file:
            a.setblocking(False)
            file.seek(2)
            sent = await loop.sock_sendfile(a, file, offset)
            a.shutdown(socket.SHUT_WR)
            received = b"".join(iter(lambda: b.recv(100), b""))
            return sent, received, file.tell()

    results = [loop.run_until_complete(send(offset)) for offset in (0, len(data))]
    if sys.version_info >= (3, 14):
        assert results == [(6, data, 6), (0, b"", 6)]
    elif native:
        assert results == [(6, data, 6), (0, b"", 2)]
    else:
        assert results == [(4, data[2:], 4), (0, b"", 6)]
