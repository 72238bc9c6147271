"""Regression tests for bugs found in review of the native connection:
context vars leaking between keep-alive requests, a pipelined exchange
stranding the previous app's send(), 100-continue when the app answers
first, a refused chunked upload reset instead of answered, SSE-style heads
held back, and cancelling an embedded server."""

from __future__ import annotations

import asyncio
import contextvars
import socket
import threading
import time

import ferroloop
from http_support import chunked, connect_refused, request_bytes, wait_until

user: contextvars.ContextVar[str] = contextvars.ContextVar("user", default="nobody")


def test_context_vars_do_not_leak_between_requests_on_one_connection(start_server):
    """Request 1 sets a var and uploads more than the server's body buffer
    (its reader is re-registered inside the app's step); request 2 on the
    same connection must start from a clean context."""
    seen = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        seen.append(user.get())
        if scope["path"] == "/login":
            user.set("alice")
            more = True
            while more:
                message = await receive()
                more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/login", body=b"x" * (2 << 20)))
        assert conn.read_response().status == 200
        conn.send(request_bytes("GET", "/next"))
        assert conn.read_response().status == 200
    assert seen == ["nobody", "nobody"]


def test_pipelined_request_after_a_large_response_does_not_strand_send(start_server):
    """The first response is far above the write buffer's high-water mark;
    the second request is already pipelined. Both complete, and the first
    app's last send() returns."""
    finished = []
    big = b"y" * (8 << 20)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = big if scope["path"] == "/big" else b"small"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        finished.append(scope["path"])

    srv = start_server(app, lifespan="off")
    with srv.raw(timeout=30) as conn:
        conn.send(request_bytes("GET", "/big") + request_bytes("GET", "/small"))
        time.sleep(0.3)  # let the server fill its buffer before we read
        first = conn.read_response(timeout=30)
        second = conn.read_response(timeout=30)
    assert (first.status, len(first.body)) == (200, len(big))
    assert (second.status, second.body) == (200, b"small")
    wait_until(lambda: sorted(finished) == ["/big", "/small"], timeout=10)


def test_expect_continue_when_the_app_starts_its_response_first(start_server):
    """No 100 Continue after a final response has started; the client sends
    the body anyway and the app still reads it."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        await send({"type": "http.response.body", "body": b"got %d" % len(body)})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        head = request_bytes("POST", "/", headers=[("Expect", "100-continue"), ("Content-Length", "5")])
        conn.send(head)
        time.sleep(0.2)
        conn.send(b"hello")
        response = conn.read_response()
    assert response.status == 200
    assert response.body == b"got 5"


def test_refused_chunked_upload_is_answered_not_reset(start_server):
    """The app answers with a large error body without reading a large
    chunked upload. The upload overflows what the server discards; the
    response still buffered at that point must reach the client whole (the
    connection is half-closed after it, not reset with it cut short)."""
    answer = b"n" * (4 << 20)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-length", str(len(answer)).encode())]})
        await send({"type": "http.response.body", "body": answer})

    srv = start_server(app, lifespan="off")
    with srv.raw(timeout=30) as conn:
        head = request_bytes("POST", "/", headers=[("Transfer-Encoding", "chunked")])
        try:
            conn.send(head + chunked(*([b"z" * 65536] * 16)))
        except OSError:
            pass  # the server may already have half-closed and stopped reading
        response = conn.read_response(timeout=30)
        assert response.status == 413
        assert len(response.body) == len(answer)


def test_streamed_response_head_is_sent_while_the_app_waits(start_server):
    """An SSE-style app sends its head and then waits: the client sees the
    head before the first event."""
    release = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        while not release.is_set():
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"data: 1\n\n"})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/events"))
        first = conn.recv_some(timeout=5)
        assert first.startswith(b"HTTP/1.1 200 OK\r\n"), first
        release.set()


def test_cancelled_serve_stops_listening_and_closes_connections():
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def main():
        server = ferroloop.Server(ferroloop.Config(app, port=0, lifespan="off", log_level=None))
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        try:
            # Past the grace period connections are aborted: EOF or RST.
            eof = await asyncio.wait_for(reader.read(), 5)
        except ConnectionResetError:
            eof = b""
        writer.close()
        return port, eof

    port, eof = ferroloop.run(main())
    assert eof == b""
    assert connect_refused(port)


def test_keep_alive_connection_survives_many_requests_with_bodies(start_server):
    """A long keep-alive session alternating uploads and GETs stays in sync
    (no body byte ever parsed as a request)."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        total = 0
        more = True
        while more:
            message = await receive()
            total += len(message.get("body", b""))
            more = message.get("more_body", False)
        body = str(total).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        for i in range(200):
            if i % 2:
                conn.send(request_bytes("POST", "/", body=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * i))
                expected = str(len(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") * i).encode()
            else:
                conn.send(request_bytes("GET", "/"))
                expected = b"0"
            response = conn.read_response()
            assert (response.status, response.body) == (200, expected)


def test_socket_shutdown_write_by_client_after_request_is_a_disconnect(start_server):
    """Like uvicorn: EOF from the client while the app runs is a disconnect."""
    outcome = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        message = await receive()
        message = await receive()
        outcome.append(message["type"])

    srv = start_server(app, lifespan="off")
    with socket.create_connection((srv.host, srv.port)) as sock:
        sock.sendall(request_bytes("GET", "/"))
        sock.shutdown(socket.SHUT_WR)
        wait_until(lambda: outcome, timeout=5)
    assert outcome == ["http.disconnect"]
