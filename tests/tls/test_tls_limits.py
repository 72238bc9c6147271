"""Bounds over TLS: 50 MiB up and down with the server's memory bounded,
slow and half-sent handshakes closed by ``--ssl-handshake-timeout``,
plaintext HTTP on the TLS port answered by a close, 1,000 concurrent TLS
connections, and truncation (EOF without ``close_notify``) delivered to
the app as ``http.disconnect`` with no error logged."""

from __future__ import annotations

import asyncio
import hashlib
import json
import resource
import socket
import ssl
import time

import pytest

from tls_apps import CHUNK, PATTERN
from tls_support import IO_TIMEOUT, client_context, https_get, read_response, request, tls_connect, vm_rss

MIB = 1 << 20
BIG = 50 * MIB
# Memory, not time: a server that buffers the body whole grows by >= 50 MiB.
RSS_GROWTH_BOUND = 32 * MIB


def wait_closed(sock: socket.socket, timeout: float) -> bytes:
    """Read until the peer closes (EOF or reset); fail after ``timeout`` s.
    Returns what arrived before the close."""
    deadline = time.monotonic() + timeout
    got = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"the server did not close within {timeout} s (got {got[:80]!r})")
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return got
        except socket.timeout:
            continue
        if not data:
            return got
        got += data


def test_large_upload_bounded_memory(tls_server, tls_files):
    srv = tls_server(max_body_size="none")  # ferroloop's default is 16 MiB
    context = client_context(tls_files)
    assert https_get(srv.port, context)[0] == 200  # warm up before measuring
    before = vm_rss(srv.pid)
    block = bytes(range(256)) * (MIB // 256)
    digest = hashlib.sha256()
    with tls_connect(srv.port, context) as tls:
        tls.sendall(f"POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: {BIG}\r\n\r\n".encode())
        for _ in range(BIG // MIB):
            tls.sendall(block)
            digest.update(block)
        status, _, body = read_response(tls)
    after = vm_rss(srv.pid)
    assert status == 200, body
    assert json.loads(body) == {"bytes": BIG, "sha256": digest.hexdigest()}
    assert after - before < RSS_GROWTH_BOUND, f"server RSS grew by {(after - before) / MIB:.1f} MiB for a 50 MiB upload"


def test_large_download_bounded_memory(tls_server, tls_files):
    srv = tls_server()
    context = client_context(tls_files)
    assert https_get(srv.port, context)[0] == 200
    before = vm_rss(srv.pid)
    peak = before
    with tls_connect(srv.port, context) as tls:
        tls.sendall(f"GET /download?n={BIG} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += tls.recv(65536)
        head, _, body = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        received = len(body)
        digest = hashlib.sha256(body)
        while received < BIG:
            data = tls.recv(1 << 18)
            assert data, f"closed after {received} bytes"
            received += len(data)
            digest.update(data)
            if received % (8 * MIB) < len(data):
                peak = max(peak, vm_rss(srv.pid))
    expected = hashlib.sha256()
    for _ in range(BIG // CHUNK):
        expected.update(PATTERN)
    assert received == BIG
    assert digest.hexdigest() == expected.hexdigest()
    peak = max(peak, vm_rss(srv.pid))
    assert peak - before < RSS_GROWTH_BOUND, f"server RSS grew by {(peak - before) / MIB:.1f} MiB for a 50 MiB download"


def _client_hello() -> bytes:
    """A real ClientHello (the stdlib's), from a memory BIO."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    obj = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = outgoing.read()
    assert hello[:1] == b"\x16", hello[:8]
    return hello


@pytest.mark.ferroloop_only
@pytest.mark.parametrize("send", ["nothing", "half-hello"])
def test_slow_handshake_is_closed(tls_server, tls_files, send):
    srv = tls_server(ssl_handshake_timeout=1)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT) as sock:
        if send == "half-hello":
            hello = _client_hello()
            sock.sendall(hello[: len(hello) // 2])
        wait_closed(sock, timeout=15.0)
    # The server still serves.
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"
    assert srv.error_lines() == []


def test_plaintext_http_to_the_tls_port_is_closed(tls_server, tls_files):
    srv = tls_server()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        got = wait_closed(sock, timeout=15.0)
    # At most a TLS alert record, never an HTTP response.
    assert not got.startswith(b"HTTP/"), got
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"
    assert srv.error_lines() == []


def test_1000_concurrent_tls_connections(tls_server, tls_files):
    n = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n + 200:
        if hard != resource.RLIM_INFINITY and hard < n + 200:
            pytest.fail(f"the fd limit (hard {hard}) is below {n + 200}: raise it", pytrace=False)
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1024 if hard == resource.RLIM_INFINITY else min(n + 1024, hard), hard))
    srv = tls_server(backlog=2048)
    context = client_context(tls_files)

    async def main():
        served = asyncio.Event()
        done = 0

        async def one(i: int) -> bytes:
            nonlocal done
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    "127.0.0.1", srv.port, ssl=context, server_hostname="localhost", ssl_handshake_timeout=120
                ),
                120,
            )
            try:
                writer.write(f"GET /?i={i} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 120)
                body = await asyncio.wait_for(reader.readexactly(5), 120)
                done += 1
                if done == n:
                    served.set()
                # Hold the connection until all are served: 1,000 at once.
                await asyncio.wait_for(served.wait(), 120)
                return head.split(b"\r\n", 1)[0] + b" " + body
            finally:
                writer.close()

        return await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)

    results = asyncio.run(main())
    failures = [r for r in results if r != b"HTTP/1.1 200 OK hello"]
    assert not failures, f"{len(failures)} of {n} failed, e.g. {failures[:3]!r}\n{srv.output()[-2000:]}"
    assert srv.error_lines() == []


def test_truncated_request_body_is_a_disconnect(tls_server, tls_files):
    srv = tls_server()
    tls = tls_connect(srv.port, client_context(tls_files))
    tls.sendall(b"POST /slow?id=trunc HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100_000)
    srv.wait_event("trunc", "message")
    # TCP FIN without close_notify: SSLSocket.shutdown() sends no alert.
    tls.shutdown(socket.SHUT_RDWR)
    tls.close()
    events = srv.wait_event("trunc", "done")
    types = [e["type"] for e in events if e["event"] == "message"]
    assert types[-1] == "http.disconnect", events
    assert srv.error_lines() == []
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"


def test_truncated_download_logs_no_error(tls_server, tls_files):
    srv = tls_server()
    tls = tls_connect(srv.port, client_context(tls_files))
    tls.sendall(f"GET /download?n={BIG} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    got = 0
    while got < MIB:
        got += len(tls.recv(65536))
    tls.shutdown(socket.SHUT_RDWR)
    tls.close()
    # The server goes on (and a request after it is served).
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"
    assert srv.error_lines() == []


def test_keep_alive_many_requests_one_session(tls_server, tls_files):
    srv = tls_server()
    with tls_connect(srv.port, client_context(tls_files)) as tls:
        for _ in range(200):
            assert request(tls)[2] == b"hello"
