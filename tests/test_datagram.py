"""UDP endpoints: create_datagram_endpoint with local/remote addresses and
sock=, datagram_received/error_received, and asyncio's argument errors."""

from __future__ import annotations

import asyncio
import socket

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


def test_argument_errors(loop):
    stream = socket.socket()
    with stream, pytest.raises(ValueError, match="A UDP Socket was expected"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol, sock=stream))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with udp, pytest.raises(ValueError, match="socket modifier keyword arguments can not be used"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol, sock=udp, family=socket.AF_INET))
    with pytest.raises(ValueError, match="unexpected address family"):
        loop.run_until_complete(loop.create_datagram_endpoint(asyncio.DatagramProtocol))
