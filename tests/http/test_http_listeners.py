"""Listeners: TCP with port=0, Unix domain socket, a pre-bound fd, a
``sock=`` object; in-thread and through the CLI."""

from __future__ import annotations

import os
import socket
import stat

import httpx
import pytest

import apps
from http_support import RawConn, request_bytes


def test_port_zero_exposes_listening_sockets(start_server):
    srv = start_server(apps.app, host="127.0.0.1", port=0)
    sockets = srv.server.sockets
    assert len(sockets) >= 1
    host, port = sockets[0].getsockname()[:2]
    assert host == "127.0.0.1" and port > 0
    assert httpx.get(f"http://127.0.0.1:{port}/").text == "hello, world"


def test_ipv6_host(start_server):
    if not socket.has_ipv6:
        pytest.fail("IPv6 unavailable on this machine")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.fail(f"cannot bind ::1: {exc}")
    srv = start_server(apps.app, host="::1")
    port = srv.server.sockets[0].getsockname()[1]
    scope = httpx.get(f"http://[::1]:{port}/scope").json()
    assert scope["client"][0] == "::1"
    assert scope["server"] == ["::1", port]


def test_uds_listener(start_server, tmp_path):
    path = str(tmp_path / "ferroloop.sock")
    srv = start_server(apps.app, uds=path)
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert srv.server.sockets[0].getsockname() == path
    with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as client:
        hello = client.get("http://localhost/")
        scope = client.post("http://localhost/scope", content=b"over-uds").json()
    assert hello.text == "hello, world"
    assert scope["server"] == [path, None]
    assert scope["body"] == "over-uds"
    # Keep-alive and pipelining work the same over a Unix socket.
    with RawConn.open(path) as conn:
        conn.send(request_bytes("GET", "/") * 3)
        assert [conn.read_response().body for _ in range(3)] == [b"hello, world"] * 3


def test_uds_listener_replaces_stale_socket_file(start_server, tmp_path):
    path = str(tmp_path / "stale.sock")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)
    stale.close()  # file left behind, nobody listening
    srv = start_server(apps.app, uds=path)
    with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as client:
        assert client.get("http://localhost/").status_code == 200


def _fd_still_same_socket(fd: int, expected_name) -> bool:
    try:
        probe = socket.socket(fileno=os.dup(fd))
    except OSError:
        return False
    try:
        return probe.getsockname() == expected_name
    except OSError:
        return False
    finally:
        probe.close()


def test_fd_listener(start_server):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    name = listener.getsockname()
    fd = listener.detach()  # the server owns it now
    srv = start_server(apps.app, fd=fd)
    assert srv.server.sockets[0].getsockname() == name
    scope = httpx.get(f"http://127.0.0.1:{name[1]}/scope").json()
    assert scope["server"] == ["127.0.0.1", name[1]]
    srv.stop()
    if _fd_still_same_socket(fd, name):
        os.close(fd)


def test_fd_listener_unix(start_server, tmp_path):
    path = str(tmp_path / "fd.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(128)
    fd = listener.detach()
    srv = start_server(apps.app, fd=fd)
    with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as client:
        assert client.get("http://localhost/").text == "hello, world"
    srv.stop()
    if _fd_still_same_socket(fd, path):
        os.close(fd)


def test_sock_parameter(start_server):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    try:
        srv = start_server(apps.app, sock=listener)
        assert srv.port == port
        with httpx.Client() as client:
            assert [client.get(f"http://127.0.0.1:{port}/").status_code for _ in range(3)] == [200] * 3
        srv.stop()
    finally:
        listener.close()


@pytest.mark.parametrize("backlog, burst", [(64, 32), (None, 500)], ids=["backlog-64", "default-2048"])
def test_backlog_accepts_burst_of_connections(start_server, backlog, burst):
    srv = start_server(apps.app, **({} if backlog is None else {"backlog": backlog}))
    conns = [srv.raw() for _ in range(burst)]
    try:
        for conn in conns:
            conn.send(request_bytes("GET", "/", headers=[("Connection", "close")]))
        assert all(conn.read_response().status == 200 for conn in conns)
    finally:
        for conn in conns:
            conn.close()


# --------------------------------------------------------------------------
# The CLI's listeners


def test_cli_uds(server_process, tmp_path):
    from http_support import cli_argv

    path = str(tmp_path / "cli.sock")
    proc = server_process(cli_argv("tests.http.apps:app", "--uds", path), uds=path)
    with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as client:
        assert client.get("http://localhost/").text == "hello, world"
    assert proc.stop() == 0


def test_cli_fd(server_process):
    from http_support import cli_argv

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    try:
        fd = listener.fileno()
        proc = server_process(cli_argv("tests.http.apps:app", "--fd", str(fd)), port=port, pass_fds=(fd,))
        listener.close()  # the child has its own copy
        assert httpx.get(f"http://127.0.0.1:{port}/").text == "hello, world"
        assert proc.stop() == 0
    finally:
        listener.close()
