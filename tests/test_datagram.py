"""UDP endpoints: create_datagram_endpoint with local/remote addresses and
sock=, datagram_received/error_received, and asyncio's argument errors."""

from __future__ import annotations

import asyncio
import re
import socket
import sys

import pytest


class Collector(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.datagrams: asyncio.Queue[tuple[bytes, object]] = asyncio.Queue()
        self.errors: asyncio.Queue[BaseException] = asyncio.Queue()
        self.lost: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data, addr):
        self.datagrams.put_nowait((data, addr))

    def error_received(self, exc):
        self.errors.put_nowait(exc)

    def connection_lost(self, exc):
        self.lost.set_result(exc)


def test_datagram_round_trip(loop):
    async def main():
        server, server_proto = await loop.create_datagram_endpoint(Collector, local_addr=("127.0.0.1", 0))
        address = server.get_extra_info("sockname")
        client, client_proto = await loop.create_datagram_endpoint(Collector, remote_addr=address)
        assert isinstance(client, asyncio.BaseTransport)
        assert client.get_extra_info("peername") == address
        client.sendto(b"ping")
        data, sender = await server_proto.datagrams.get()
        server.sendto(b"pong", sender)
        reply = await client_proto.datagrams.get()
        with pytest.raises(ValueError, match="Invalid address"):
            client.sendto(b"x", ("127.0.0.1", 1))
        client.close()
        server.close()
        await client_proto.lost
        await server_proto.lost
        return data, reply[0]

    assert loop.run_until_complete(main()) == (b"ping", b"pong")


def test_connected_udp_reports_icmp_errors(loop):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    dead = probe.getsockname()
    probe.close()

    async def main():
        transport, proto = await loop.create_datagram_endpoint(Collector, remote_addr=dead)
        transport.sendto(b"anyone?")
        exc = await asyncio.wait_for(proto.errors.get(), 5)
        assert not transport.is_closing(), "an ICMP error does not close the endpoint"
        transport.close()
        return exc

    assert isinstance(loop.run_until_complete(main()), ConnectionRefusedError)


def test_existing_socket(loop):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))

    async def main():
        transport, proto = await loop.create_datagram_endpoint(Collector, sock=sock)
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        other.sendto(b"hi", sock.getsockname())
        data, _ = await proto.datagrams.get()
        other.close()
        transport.close()
        await proto.lost
        return data

    assert loop.run_until_complete(main()) == b"hi"


# create_datagram_endpoint(sock=...): since gh-114887 (3.13, backported to
# 3.11.8 and 3.12.2) asyncio rejects only stream sockets, saying "datagram";
# before, it wanted exactly SOCK_DGRAM and said "UDP".
ANY_DATAGRAM_SOCK = sys.version_info >= (3, 12, 2) or (3, 11, 8) <= sys.version_info < (3, 12)
NOT_DATAGRAM = "A datagram socket was expected" if ANY_DATAGRAM_SOCK else "A UDP Socket was expected"


def test_argument_errors(loop):
    stream = socket.socket()
    with stream, pytest.raises(ValueError, match=rf"^{NOT_DATAGRAM}, got {re.escape(repr(stream))}$"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol, sock=stream))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with udp, pytest.raises(ValueError, match="socket modifier keyword arguments can not be used"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol, sock=udp, family=socket.AF_INET))
    with pytest.raises(ValueError, match="unexpected address family"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol))


def test_sock_of_another_datagram_type(loop):
    """A Unix SOCK_SEQPACKET socket: taken since gh-114887 (any socket
    that is not a stream socket), refused before (SOCK_DGRAM only)."""
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

    async def main():
        transport, proto = await loop.create_datagram_endpoint(Collector, sock=left)
        right.send(b"packet")
        data, _ = await asyncio.wait_for(proto.datagrams.get(), 5)
        transport.close()
        await proto.lost
        return data

    with left, right:
        if ANY_DATAGRAM_SOCK:
            assert loop.run_until_complete(main()) == b"packet"
        else:
            with pytest.raises(ValueError, match=rf"^{NOT_DATAGRAM}, got {re.escape(repr(left))}$"):
                loop.run_until_complete(main())


def test_empty_datagram(loop):
    """sendto(b"") sends a zero-length datagram since 3.13 (gh-113812); up
    to 3.12 the transport drops it."""

    async def main():
        server, server_proto = await loop.create_datagram_endpoint(Collector, local_addr=("127.0.0.1", 0))
        client, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol,
                                                        remote_addr=server.get_extra_info("sockname"))
        client.sendto(b"")
        client.sendto(b"after")
        received = [(await asyncio.wait_for(server_proto.datagrams.get(), 5))[0]]
        if received == [b""]:
            received.append((await asyncio.wait_for(server_proto.datagrams.get(), 5))[0])
        client.close()
        server.close()
        return received

    expected = [b"", b"after"] if sys.version_info >= (3, 13) else [b"after"]
    assert loop.run_until_complete(main()) == expected


def test_write_buffer_size_of_queued_datagrams(loop, tmp_path):
    """get_write_buffer_size() sums the datagrams waiting to be sent; since
    3.13 (gh-113812) it also counts 8 header bytes for each, so that empty
    datagrams fill the buffer too."""
    header = 8 if sys.version_info >= (3, 13) else 0
    path = str(tmp_path / "d.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)  # never read: the sender's queue fills

    async def main():
        transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=path,
                                                           family=socket.AF_UNIX)
        transport.set_write_buffer_limits(high=1 << 30)
        for _ in range(100_000):
            transport.sendto(b"x" * 100)
            if transport.get_write_buffer_size():
                break
        # The datagram the socket refused waits in the transport's buffer.
        assert transport.get_write_buffer_size() == 100 + header
        for size in (0, 1, 1000):
            transport.sendto(b"y" * size)
        sizes = transport.get_write_buffer_size()
        transport.abort()
        return sizes

    with receiver:
        assert loop.run_until_complete(main()) == 100 + 0 + 1 + 1000 + 4 * header


def test_pause_and_resume_reading(loop):
    # asyncio's datagram transport is a _SelectorTransport: it pauses too.
    received = []

    class Proto(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            received.append(data)

    async def main():
        transport, _ = await loop.create_datagram_endpoint(Proto, local_addr=("127.0.0.1", 0))
        addr = transport.get_extra_info("sockname")
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            assert transport.is_reading()
            transport.pause_reading()
            assert not transport.is_reading()
            sender.sendto(b"while paused", addr)
            await asyncio.sleep(0.05)
            assert received == []
            transport.resume_reading()
            assert transport.is_reading()
            for _ in range(100):
                if received:
                    break
                await asyncio.sleep(0.01)
            assert received == [b"while paused"]
            transport.close()
            assert not transport.is_reading()
        finally:
            sender.close()

    loop.run_until_complete(main())
