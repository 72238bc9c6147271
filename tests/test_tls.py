"""TLS through the loop API with certificates made at test time (trustme),
on asyncio and on ferroloop: mutual verification, a large transfer,
verification failures (hostname mismatch, unknown CA, missing client
certificate), handshake timeouts on either side, and start_tls."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import ssl
import struct

import pytest

import _tls

MIB = 1024 * 1024


async def _echo(reader, writer):
    try:
        while data := await reader.read(256 * 1024):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def _start(loop, handler, family, tmp_path, **kwargs):
    """A streams server; returns it and open_connection's arguments."""
    if family == "tcp":
        server = await asyncio.start_server(handler, "127.0.0.1", 0, **kwargs)
        return server, ("127.0.0.1", server.sockets[0].getsockname()[1])
    path = str(tmp_path / "tls.sock")
    server = await asyncio.start_unix_server(handler, path, **kwargs)
    return server, (path,)


async def _open(family, address, **kwargs):
    if family == "tcp":
        return await asyncio.open_connection(*address, **kwargs)
    return await asyncio.open_unix_connection(*address, **kwargs)


@pytest.mark.parametrize("family", ["tcp", "unix"])
def test_mutual_verification(loop, family, tmp_path):
    """Each side verifies the other's certificate and sees it in
    get_extra_info('peercert')."""
    seen = {}

    async def handler(reader, writer):
        seen["client_cert"] = writer.get_extra_info("peercert")
        seen["server_ssl_object"] = writer.get_extra_info("ssl_object")
        await _echo(reader, writer)

    async def main():
        server, address = await _start(loop, handler, family, tmp_path,
                                       ssl=_tls.server_context(require_client_cert=True))
        async with server:
            reader, writer = await _open(family, address, ssl=_tls.client_context(with_cert=True),
                                         server_hostname="localhost")
            peercert = writer.get_extra_info("peercert")
            assert isinstance(writer.get_extra_info("ssl_object"), ssl.SSLObject)
            assert writer.get_extra_info("sslcontext") is not None
            assert writer.get_extra_info("cipher")[1].startswith("TLS")
            writer.write(b"hello over tls\n")
            line = await reader.readline()
            writer.close()
            await writer.wait_closed()
        return peercert, line

    peercert, line = loop.run_until_complete(main())
    assert line == b"hello over tls\n"
    assert ("DNS", "localhost") in peercert["subjectAltName"]
    client_subject = dict(item[0] for item in seen["client_cert"]["subject"])
    assert client_subject["commonName"] == "test client"
    assert isinstance(seen["server_ssl_object"], ssl.SSLObject)


@pytest.mark.timeout(60)
def test_large_transfer_over_tls(loop):
    """32 MiB echoed through TLS on both ends, with drain() and hashes."""

    async def main():
        server, address = await _start(loop, _echo, "tcp", None, ssl=_tls.server_context())
        async with server:
            reader, writer = await _open("tcp", address, ssl=_tls.client_context(), server_hostname="localhost")
            assert not writer.can_write_eof()
            sent = hashlib.sha256()
            back = hashlib.sha256()
            total = 32 * MIB
            block = os.urandom(2 * MIB)

            async def read_back():
                count = 0
                while count < total:
                    data = await reader.read(256 * 1024)
                    assert data, "connection closed early"
                    back.update(data)
                    count += len(data)
                return count

            reading = asyncio.create_task(read_back())
            position = 0
            while position < total:
                size = min(total - position, 300_001)
                start = (position * 7) % MIB
                chunk = block[start:start + size]
                sent.update(chunk)
                writer.write(chunk)
                position += size
                await writer.drain()
            count = await asyncio.wait_for(reading, 40)
            writer.close()
            await writer.wait_closed()
            return count, sent.hexdigest(), back.hexdigest()

    count, sent, back = loop.run_until_complete(main())
    assert count == 32 * MIB
    assert sent == back


def test_hostname_mismatch(loop):
    async def main():
        server, address = await _start(loop, _echo, "tcp", None, ssl=_tls.server_context())
        async with server:
            with pytest.raises(ssl.SSLCertVerificationError) as info:
                await _open("tcp", address, ssl=_tls.client_context(), server_hostname="wrong.example.org")
            # The server's side of the failed handshake ends quietly.
            await asyncio.sleep(0.05)
        return info.value

    exc = loop.run_until_complete(main())
    assert "Hostname mismatch" in exc.verify_message


def test_unknown_authority(loop):
    async def main():
        server, address = await _start(loop, _echo, "tcp", None, ssl=_tls.server_context())
        async with server:
            with pytest.raises(ssl.SSLCertVerificationError) as info:
                await _open("tcp", address, ssl=_tls.untrusting_client_context(), server_hostname="localhost")
            await asyncio.sleep(0.05)
        return info.value

    exc = loop.run_until_complete(main())
    assert "unable to get local issuer certificate" in exc.verify_message


def test_missing_client_certificate(loop):
    """A server requiring a client certificate refuses one without: the
    client learns on its first read (TLS 1.3 ends the handshake before the
    server checks), the server never calls the connection callback."""
    handled = []

    async def handler(reader, writer):
        handled.append(writer)
        writer.close()

    async def main():
        server, address = await _start(loop, handler, "tcp", None,
                                       ssl=_tls.server_context(require_client_cert=True))
        async with server:
            try:
                reader, writer = await _open("tcp", address, ssl=_tls.client_context(), server_hostname="localhost")
            except (ssl.SSLError, ConnectionResetError) as exc:
                return exc
            try:
                outcome = await asyncio.wait_for(reader.read(), 5)
            except (ssl.SSLError, ConnectionResetError) as exc:
                outcome = exc
            finally:
                writer.close()
                try:
                    await writer.wait_closed()
                except (ssl.SSLError, ConnectionError):
                    pass
            return outcome

    outcome = loop.run_until_complete(main())
    assert handled == []
    # The server's alert ends the connection: end of stream or an error,
    # never data.
    assert outcome == b"" or isinstance(outcome, (ssl.SSLError, ConnectionResetError)), outcome


def test_client_handshake_timeout(loop):
    """The server accepts but never speaks TLS: the client gives up after
    ssl_handshake_timeout with asyncio's ConnectionAbortedError."""

    async def main():
        silent = []

        async def handler(reader, writer):
            silent.append(writer)
            await reader.read()  # says nothing, waits for the client to go
            writer.close()

        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            start = loop.time()
            with pytest.raises(ConnectionAbortedError) as info:
                await asyncio.open_connection("127.0.0.1", port, ssl=_tls.client_context(),
                                              server_hostname="localhost", ssl_handshake_timeout=0.3)
            elapsed = loop.time() - start
            while silent and not silent[0].is_closing():
                await asyncio.sleep(0.01)
        return info.value, elapsed

    exc, elapsed = loop.run_until_complete(main())
    assert "SSL handshake is taking longer than 0.3 seconds" in str(exc)
    assert 0.25 <= elapsed < 3


def test_server_handshake_timeout(loop):
    """A client connects to a TLS server and sends nothing: the server drops
    it after ssl_handshake_timeout, quietly, and goes on serving."""

    async def main():
        server, address = await _start(loop, _echo, "tcp", None, ssl=_tls.server_context(),
                                       ssl_handshake_timeout=0.3)
        async with server:
            sock = socket.socket()
            sock.setblocking(False)
            await loop.sock_connect(sock, address)
            start = loop.time()
            data = await asyncio.wait_for(loop.sock_recv(sock, 100), 5)
            elapsed = loop.time() - start
            sock.close()
            # A real client still gets through.
            reader, writer = await _open("tcp", address, ssl=_tls.client_context(), server_hostname="localhost")
            writer.write(b"ok\n")
            line = await reader.readline()
            writer.close()
            await writer.wait_closed()
        return data, elapsed, line

    data, elapsed, line = loop.run_until_complete(main())
    assert data == b""
    assert 0.25 <= elapsed < 3
    assert line == b"ok\n"


def test_start_tls_with_protocols(loop):
    """loop.start_tls on both ends of a plain connection, Protocol level."""

    class Line(asyncio.Protocol):
        def __init__(self):
            self.lines = asyncio.Queue()
            self.buffer = b""
            self.transport = None

        def connection_made(self, transport):
            self.transport = transport

        def data_received(self, data):
            self.buffer += data
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                self.lines.put_nowait(line)

    async def main():
        server_side = loop.create_future()

        def server_factory():
            proto = Line()
            server_side.set_result(proto)
            return proto

        server = await loop.create_server(server_factory, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            transport, client = await loop.create_connection(Line, "127.0.0.1", port)
            peer = await server_side
            transport.write(b"STARTTLS\n")
            assert await peer.lines.get() == b"STARTTLS"
            server_upgrade = asyncio.ensure_future(
                loop.start_tls(peer.transport, peer, _tls.server_context(require_client_cert=True), server_side=True))
            client_tls = await loop.start_tls(transport, client, _tls.client_context(with_cert=True),
                                              server_hostname="localhost")
            server_tls = await server_upgrade
            peer.transport = server_tls
            client.transport = client_tls
            assert client_tls.get_extra_info("peercert")["subjectAltName"]
            client_subject = dict(item[0] for item in server_tls.get_extra_info("peercert")["subject"])
            client_tls.write(b"secret\n")
            assert await peer.lines.get() == b"secret"
            server_tls.write(b"SECRET\n")
            answer = await client.lines.get()
            client_tls.close()
            server_tls.close()
            await asyncio.sleep(0.05)
        return client_subject, answer

    subject, answer = loop.run_until_complete(main())
    assert subject["commonName"] == "test client"
    assert answer == b"SECRET"


def test_start_tls_streams_and_hostname_mismatch(loop):
    """StreamWriter.start_tls with trustme certificates works; with the
    wrong server_hostname it fails with SSLCertVerificationError."""

    async def handler(reader, writer):
        while line := await reader.readline():
            if line == b"STARTTLS\n":
                writer.write(b"GO\n")
                await writer.drain()
                try:
                    await writer.start_tls(_tls.server_context())
                except (ssl.SSLError, ConnectionError):
                    writer.close()
                    return
            else:
                writer.write(line.upper())
                await writer.drain()
        writer.close()

    async def main():
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"STARTTLS\n")
            assert await reader.readline() == b"GO\n"
            await writer.start_tls(_tls.client_context(), server_hostname="localhost")
            assert writer.get_extra_info("peercert") is not None
            writer.write(b"upgraded\n")
            good = await reader.readline()
            writer.close()
            await writer.wait_closed()

            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"STARTTLS\n")
            assert await reader.readline() == b"GO\n"
            with pytest.raises(ssl.SSLCertVerificationError):
                await writer.start_tls(_tls.client_context(), server_hostname="wrong.example.org")
            assert writer.transport.is_closing()
            await asyncio.sleep(0.05)
        return good

    assert loop.run_until_complete(main()) == b"UPGRADED\n"


def test_reset_during_a_tls_session(loop):
    """The client resets the TCP connection under an established TLS
    session: the server's reader fails with ConnectionResetError, nothing
    reaches the exception handler, the server goes on."""
    outcome = loop.create_future()

    async def handler(reader, writer):
        if outcome.done():
            writer.close()  # the second client, after the reset
            return
        try:
            while await reader.read(65536):
                pass
            outcome.set_result("eof")
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcome.set_result(exc)
        finally:
            writer.close()

    async def main():
        server, address = await _start(loop, handler, "tcp", None, ssl=_tls.server_context())
        async with server:
            reader, writer = await _open("tcp", address, ssl=_tls.client_context(), server_hostname="localhost")
            writer.write(b"x" * 100_000)
            await writer.drain()
            await asyncio.sleep(0.02)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            result = await asyncio.wait_for(outcome, 5)
            reader, writer = await _open("tcp", address, ssl=_tls.client_context(), server_hostname="localhost")
            writer.close()
            await writer.wait_closed()
        return result

    result = loop.run_until_complete(main())
    assert type(result) is ConnectionResetError


@pytest.mark.timeout(60)
def test_many_concurrent_tls_connections(loop):
    """200 TLS clients at once against one server, each verified."""
    clients = 200

    async def main():
        server, address = await _start(loop, _echo, "tcp", None, ssl=_tls.server_context(), backlog=clients)
        context = _tls.client_context()

        async def client(i):
            reader, writer = await _open("tcp", address, ssl=context, server_hostname="localhost")
            message = b"client %d\n" % i
            writer.write(message)
            answer = await reader.readline()
            writer.close()
            await writer.wait_closed()
            return answer == message

        async with server:
            results = await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(clients))), 45)
        return results

    assert loop.run_until_complete(main()) == [True] * clients
