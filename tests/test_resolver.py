"""getaddrinfo and getnameinfo, on loopback names and addresses only."""

from __future__ import annotations

import socket

import pytest


def test_getaddrinfo_numeric_address(loop):
    infos = loop.run_until_complete(
        loop.getaddrinfo("127.0.0.1", 8080, family=socket.AF_INET, type=socket.SOCK_STREAM)
    )
    assert infos == [
        (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", 8080))
    ]


def test_getaddrinfo_matches_the_socket_module(loop):
    args = ("localhost", 80)
    kwargs = {"type": socket.SOCK_STREAM}
    infos = loop.run_until_complete(loop.getaddrinfo(*args, **kwargs))
    assert sorted(infos) == sorted(socket.getaddrinfo(*args, **kwargs))
    assert any(sockaddr[0] in ("127.0.0.1", "::1") for *_, sockaddr in infos)


def test_getaddrinfo_error(loop):
    with pytest.raises(socket.gaierror):
        loop.run_until_complete(
            loop.getaddrinfo("not a numeric host", 80, flags=socket.AI_NUMERICHOST)
        )


def test_getnameinfo_numeric(loop):
    flags = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    result = loop.run_until_complete(loop.getnameinfo(("127.0.0.1", 80), flags))
    assert result == ("127.0.0.1", "80")


def test_getnameinfo_matches_the_socket_module(loop):
    result = loop.run_until_complete(loop.getnameinfo(("127.0.0.1", 0)))
    assert result == socket.getnameinfo(("127.0.0.1", 0), 0)
