"""The ``sock_*`` coroutines, on real sockets (socketpairs, loopback TCP and
UDP), with asyncio's errors."""

from __future__ import annotations

import asyncio
import io
import socket
import ssl

import pytest


def _pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def test_sendall_and_recv_large_payload_both_ways(loop):
    a, b = _pair()
    payload = bytes(range(256)) * 8192  # 2 MiB: far beyond the socket buffers

    async def pump(src, dst):
        send = loop.create_task(loop.sock_sendall(src, payload))
        received = bytearray()
        while len(received) < len(payload):
            chunk = await loop.sock_recv(dst, 65536)
            assert chunk
            received += chunk
        await send
        return bytes(received)

    async def main():
        return await asyncio.gather(pump(a, b), pump(b, a))

    with a, b:
        one, two = loop.run_until_complete(main())
    assert one == payload and two == payload


def test_recv_into_waits_for_data(loop):
    a, b = _pair()

    async def main():
        buf = bytearray(10)
        reader = loop.create_task(loop.sock_recv_into(a, buf))
        await asyncio.sleep(0.01)
        assert not reader.done()
        await loop.sock_sendall(b, b"hello")
        n = await reader
        return bytes(buf[:n])

    with a, b:
        assert loop.run_until_complete(main()) == b"hello"


def test_connect_and_accept_over_tcp(loop):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    client = socket.socket()
    client.setblocking(False)

    async def main():
        accept = loop.create_task(loop.sock_accept(listener))
        await loop.sock_connect(client, listener.getsockname())
        conn, address = await accept
        with conn:
            assert conn.gettimeout() == 0, "accepted sockets are non-blocking"
            assert address == client.getsockname()
            await loop.sock_sendall(client, b"ping")
            return await loop.sock_recv(conn, 10)

    with listener, client:
        assert loop.run_until_complete(main()) == b"ping"


def test_connect_resolves_host_names(loop):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = socket.socket()
    client.setblocking(False)
    with listener, client:
        loop.run_until_complete(loop.sock_connect(client, ("localhost", listener.getsockname()[1])))
        assert client.getpeername()[1] == listener.getsockname()[1]


def test_connect_refused(loop):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    address = probe.getsockname()
    probe.close()
    client = socket.socket()
    client.setblocking(False)
    with client, pytest.raises(ConnectionRefusedError):
        loop.run_until_complete(loop.sock_connect(client, address))


def test_udp_sendto_and_recvfrom(loop):
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.setblocking(False)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.bind(("127.0.0.1", 0))
    client.setblocking(False)

    async def main():
        receive = loop.create_task(loop.sock_recvfrom(server, 100))
        sent = await loop.sock_sendto(client, b"datagram", server.getsockname())
        data, sender = await receive
        buf = bytearray(4)
        await loop.sock_sendto(server, b"reply!", sender)
        n, _ = await loop.sock_recvfrom_into(client, buf)
        return sent, data, sender, bytes(buf[:n])

    with server, client:
        sent, data, sender, reply = loop.run_until_complete(main())
        assert sender == client.getsockname()
    assert (sent, data) == (8, b"datagram")
    assert reply == b"repl", "recvfrom_into fills at most len(buf)"


def test_cancelled_recv_unregisters_its_reader(loop):
    a, b = _pair()

    async def main():
        task = loop.create_task(loop.sock_recv(a, 10))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The reader went away with the waiter.
        return loop.remove_reader(a.fileno())

    with a, b:
        assert loop.run_until_complete(main()) is False


def test_ssl_socket_is_rejected(loop):
    context = ssl.create_default_context()
    raw = socket.socket()
    wrapped = context.wrap_socket(raw, do_handshake_on_connect=False, server_hostname="localhost")
    with wrapped, pytest.raises(TypeError, match="Socket cannot be of type SSLSocket"):
        loop.run_until_complete(loop.sock_recv(wrapped, 1))


def test_blocking_socket_is_rejected_in_debug_mode(loop):
    loop.set_debug(True)
    a, b = socket.socketpair()
    with a, b, pytest.raises(ValueError, match="the socket must be non-blocking"):
        loop.run_until_complete(loop.sock_recv(a, 1))


@pytest.mark.parametrize("use_fileno", [True, False], ids=["sendfile", "fallback"])
def test_sock_sendfile(loop, tmp_path, use_fileno):
    data = bytes(range(256)) * 4096  # 1 MiB
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    a, b = _pair()

    async def main(file):
        send = loop.create_task(loop.sock_sendfile(a, file, offset=100, count=500_000))
        received = bytearray()
        while len(received) < 500_000:
            received += await loop.sock_recv(b, 65536)
        return await send, bytes(received)

    with a, b, open(path, "rb") as raw:
        file = raw if use_fileno else io.BytesIO(raw.read())
        sent, received = loop.run_until_complete(main(file))
        assert sent == 500_000
        assert received == data[100:500_100]
        assert file.tell() == 500_100, "the file position follows what was sent"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count": 0}, ValueError, "count must be a positive integer"),
        ({"count": "1"}, TypeError, "count must be a positive integer"),
        ({"offset": -1}, ValueError, "offset must be a non-negative integer"),
        ({"offset": 1.5}, TypeError, "offset must be a non-negative integer"),
    ],
)
def test_sock_sendfile_checks_its_arguments(loop, tmp_path, kwargs, error, message):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    a, b = _pair()
    with a, b, open(path, "rb") as file, pytest.raises(error, match=message):
        loop.run_until_complete(loop.sock_sendfile(a, file, **kwargs))


def test_sock_sendfile_needs_a_binary_file(loop, tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    a, b = _pair()
    with a, b, open(path) as file, pytest.raises(ValueError, match="binary mode"):
        loop.run_until_complete(loop.sock_sendfile(a, file))
