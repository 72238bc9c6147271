"""Real clients against the native server: httpx (sync and async), aiohttp,
curl; keep-alive reuse, pipelining, HEAD/204/304, HTTP/1.0, chunked request
bodies, response trailers, and the ASGI HTTP scope."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import aiohttp
import httpx
import pytest

import apps
from http_support import chunked, request_bytes

CURL = shutil.which("curl") or "/usr/bin/curl"


# --------------------------------------------------------------------------
# Clients


def test_httpx_sync_get_post_and_keep_alive_reuse(start_server):
    srv = start_server(apps.app)
    with httpx.Client(base_url=srv.url) as client:
        first = client.get("/")
        assert first.status_code == 200
        assert first.text == "hello, world"
        assert first.headers["content-length"] == "12"
        echoed = client.post("/echo", content=b"x" * 100_000, headers={"content-type": "application/x-test"})
        assert echoed.status_code == 200
        assert echoed.content == b"x" * 100_000
        assert echoed.headers["content-type"] == "application/x-test"
        ports = {client.get("/scope").json()["client"][1] for _ in range(5)}
    # All requests went over one kept-alive connection.
    assert len(ports) == 1


def test_httpx_async_concurrent_requests(start_server):
    srv = start_server(apps.app)

    async def main():
        async with httpx.AsyncClient(base_url=srv.url) as client:
            responses = await asyncio.gather(
                *[client.post("/echo", content=f"body-{i}".encode()) for i in range(50)]
            )
        return [r.text for r in responses]

    assert asyncio.run(main()) == [f"body-{i}" for i in range(50)]


def test_aiohttp_client_get_post_stream(start_server):
    srv = start_server(apps.app)

    async def main():
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{srv.url}/") as r:
                first = (r.status, await r.text())
            async with session.post(f"{srv.url}/echo", data=b"aio" * 1000) as r:
                second = (r.status, await r.read())
            async with session.get(f"{srv.url}/stream?chunks=4&size=3") as r:
                third = (r.status, r.headers.get("Transfer-Encoding"), await r.read())
        return first, second, third

    first, second, third = asyncio.run(main())
    assert first == (200, "hello, world")
    assert second == (200, b"aio" * 1000)
    assert third == (200, "chunked", b"000111222333")


def test_keep_alive_connection_reused_by_server_raw(start_server):
    """Several requests on one socket, answered in turn on the same connection."""
    srv = start_server(apps.app)
    with srv.raw() as conn:
        for i in range(5):
            conn.send(request_bytes("POST", "/scope", body=b"n%d" % i))
            response = conn.read_response()
            assert response.status == 200
            data = response.json()
            assert data["client"] == ["127.0.0.1", conn.local_port]
            assert data["body"] == f"n{i}"
        assert conn.is_open()


def test_curl_get_and_post(start_server):
    srv = start_server(apps.app)
    out = subprocess.run(
        [CURL, "-sS", "-i", f"{srv.url}/"], capture_output=True, timeout=30, check=True
    ).stdout
    assert out.startswith(b"HTTP/1.1 200")
    assert out.endswith(b"\r\n\r\nhello, world")
    out = subprocess.run(
        [CURL, "-sS", "--data-binary", "@-", f"{srv.url}/echo"],
        input=b"curl-body", capture_output=True, timeout=30, check=True,
    ).stdout
    assert out == b"curl-body"


def test_curl_http10(start_server):
    srv = start_server(apps.app)
    proc = subprocess.run(
        [CURL, "-sS", "--http1.0", "-w", "\n%{http_version}", f"{srv.url}/scope"],
        capture_output=True, timeout=30, check=True,
    )
    body, _, _ = proc.stdout.rpartition(b"\n")
    assert json.loads(body)["http_version"] == "1.0"
    # A streamed response (no content-length) to HTTP/1.0 is close-delimited.
    proc = subprocess.run(
        [CURL, "-sS", "--http1.0", f"{srv.url}/stream?chunks=3&size=2"],
        capture_output=True, timeout=30, check=True,
    )
    assert proc.stdout == b"001122"


def test_curl_expect_100_continue(start_server):
    """curl waits for ``100 Continue`` (up to --expect100-timeout) before the body."""
    srv = start_server(apps.app)
    started = time.monotonic()
    proc = subprocess.run(
        [
            CURL, "-sS", "-v", "-H", "Expect: 100-continue", "--expect100-timeout", "20",
            "--data-binary", "@-", f"{srv.url}/echo",
        ],
        input=b"e" * 5000, capture_output=True, timeout=60, check=True,
    )
    elapsed = time.monotonic() - started
    assert proc.stdout == b"e" * 5000
    assert b"HTTP/1.1 100 Continue" in proc.stderr
    assert elapsed < 10, "curl had to wait out its expect timeout: no 100 Continue"


def test_curl_download_content_length_and_chunked(start_server):
    srv = start_server(apps.app)
    for cl in ("1", "0"):
        proc = subprocess.run(
            [CURL, "-sS", "-o", "/dev/null", "-w", "%{size_download} %{http_code}",
             f"{srv.url}/download?size=3000000&cl={cl}"],
            capture_output=True, timeout=60, check=True,
        )
        assert proc.stdout == b"3000000 200"


def test_websockets_client_against_http_server_fails_cleanly(start_server):
    """A WebSocket handshake gets a definite answer (no hang) and the server
    keeps serving HTTP afterwards."""
    import websockets.exceptions
    from websockets.sync.client import connect

    srv = start_server(apps.app)
    with pytest.raises(websockets.exceptions.InvalidHandshake):
        with connect(f"ws://127.0.0.1:{srv.port}/", open_timeout=10) as ws:
            ws.recv(timeout=5)
    assert httpx.get(f"{srv.url}/").text == "hello, world"


# --------------------------------------------------------------------------
# Pipelining


def test_pipelined_requests_answered_in_order(start_server):
    srv = start_server(apps.app)
    requests = [
        request_bytes("GET", "/sleep?t=0.2"),
        request_bytes("POST", "/echo", body=b"second"),
        request_bytes("GET", "/stream?chunks=2&size=2"),
        request_bytes("POST", "/echo", headers=[("Transfer-Encoding", "chunked")]) + chunked(b"fo", b"urth"),
        request_bytes("GET", "/"),
    ]
    with srv.raw() as conn:
        conn.send(b"".join(requests))
        bodies = [conn.read_response().body for _ in requests]
        assert conn.is_open()
    assert bodies == [b"slept", b"second", b"0011", b"fourth", b"hello, world"]


def test_pipelined_requests_byte_by_byte(start_server):
    srv = start_server(apps.app)
    data = request_bytes("POST", "/echo", body=b"a") + request_bytes("POST", "/echo", body=b"b")
    with srv.raw() as conn:
        for i in range(len(data)):
            conn.send(data[i : i + 1])
        assert [conn.read_response().body for _ in range(2)] == [b"a", b"b"]


# --------------------------------------------------------------------------
# HEAD, 204, 304


def test_head_has_headers_but_no_body(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("HEAD", "/") + request_bytes("GET", "/"))
        head = conn.read_response(method="HEAD")
        assert head.status == 200
        assert head.header("content-length") == "12"
        # No body bytes were sent: the next response follows right away.
        get = conn.read_response()
        assert get.body == b"hello, world"
    with httpx.Client() as client:
        response = client.head(f"{srv.url}/download?size=100000")
        assert response.status_code == 200 and response.content == b""
        assert response.headers["content-length"] == "100000"


def test_head_of_streamed_response_has_no_body(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("HEAD", "/stream?chunks=3&size=4") + request_bytes("GET", "/"))
        head = conn.read_response(method="HEAD")
        assert head.status == 200
        get = conn.read_response()
        assert (get.status, get.body) == (200, b"hello, world")


@pytest.mark.parametrize("code", [204, 304])
def test_no_body_statuses_keep_connection_usable(start_server, code):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", f"/status?code={code}") + request_bytes("GET", "/"))
        response = conn.read_response()
        assert response.status == code
        if code == 204:
            # RFC 9112 6.1: no Transfer-Encoding in a 204.
            assert response.header("transfer-encoding") is None
            assert response.header("content-length") in (None, "0")
        nxt = conn.read_response()
        assert (nxt.status, nxt.body) == (200, b"hello, world")
        assert conn.is_open()


# --------------------------------------------------------------------------
# Response framing, HTTP/1.0


def test_response_with_content_length_is_kept_alive_and_without_is_chunked(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/download?size=1000&cl=1"))
        sized = conn.read_response()
        assert sized.header("content-length") == "1000" and not sized.chunked
        conn.send(request_bytes("GET", "/stream?chunks=3&size=5"))
        streamed = conn.read_response()
        assert streamed.chunked and streamed.header("content-length") is None
        assert streamed.body == b"000001111122222"
        assert conn.is_open()


def test_http10_request_closes_after_response(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/scope", version="1.0", host=None))
        response = conn.read_response()
        assert response.status == 200
        assert response.json()["http_version"] == "1.0"
        assert conn.wait_closed(3.0)


def test_http10_streamed_response_is_close_delimited(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/stream?chunks=3&size=4", version="1.0"))
        response = conn.read_response()
        assert not response.chunked, "HTTP/1.0 clients do not understand chunked"
        assert response.header("transfer-encoding") is None
        assert response.close_delimited
        assert response.body == b"000011112222"


def test_http10_expect_gets_no_100_continue(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", version="1.0", headers=[("Content-Length", "4"), ("Expect", "100-continue")]))
        assert conn.recv_some(0.5) == b"", "100 Continue sent to an HTTP/1.0 client"
        conn.send(b"abcd")
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"abcd")


# --------------------------------------------------------------------------
# 100 Continue


def test_100_continue_sent_on_first_receive_then_body_read(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Content-Length", "5"), ("Expect", "100-continue")]))
        interim = conn.read_response()
        assert interim.status == 100
        conn.send(b"hello")
        final = conn.read_response()
        assert (final.status, final.body) == (200, b"hello")
        # And a plain request on the same connection afterwards.
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().body == b"hello, world"


def test_100_continue_is_lazy_and_sent_once(start_server):
    """Not before the app's first receive(); never twice for one request."""
    receive_after = 0.6

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await asyncio.sleep(receive_after)
        body, _, _ = await apps.read_body(receive)
        await apps.respond(send, 200, body)

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/", headers=[("Content-Length", "6"), ("Expect", "100-continue")]))
        assert conn.recv_some(receive_after / 2) == b"", "100 Continue before the app called receive()"
        assert conn.read_response().status == 100
        for piece in (b"ab", b"cd", b"ef"):
            conn.send(piece)
            time.sleep(0.05)
        final = conn.read_response()
        assert (final.status, final.body) == (200, b"abcdef")
        assert conn.buf == b""


def test_no_100_continue_when_app_answers_without_reading(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", headers=[("Content-Length", "1000"), ("Expect", "100-continue")]))
        response = conn.read_response()
        assert response.status == 200, "the final response must come first, with no interim 100"
        assert response.body == b"no-read"


# --------------------------------------------------------------------------
# Request bodies


def test_chunked_request_with_extensions_and_trailers(start_server):
    srv = start_server(apps.app)
    body = (
        b"5;name=value\r\nhello\r\n"
        b"1;quoted=\"a;b\"\r\n \r\n"
        b"A\r\n0123456789\r\n"
        b"0005;x\r\nworld\r\n"
        b"0;last\r\nX-Trailer: t1\r\nX-Other: t2\r\n\r\n"
    )
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Transfer-Encoding", "chunked")]) + body + request_bytes("GET", "/"))
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"hello 0123456789world")
        # The trailer section was consumed, not taken for the next request.
        assert conn.read_response().body == b"hello, world"


def test_request_body_arrives_in_chunks_as_sent(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/scope", headers=[("Content-Length", "3000")]))
        for _ in range(3):
            conn.send(b"z" * 1000)
            time.sleep(0.15)
        data = conn.read_response().json()
    assert data["body_length"] == 3000
    chunks = [c for c in data["chunks"] if c[0]]
    assert len(chunks) >= 3, f"body not delivered as it arrived: {data['chunks']}"
    assert all(more for _, more in data["chunks"][:-1])
    assert data["chunks"][-1][1] is False


def test_empty_body_request_gets_single_final_message(start_server):
    srv = start_server(apps.app)
    data = httpx.get(f"{srv.url}/scope").json()
    assert data["body_length"] == 0
    assert data["chunks"] == [[0, False]]


# --------------------------------------------------------------------------
# Scope


def test_http_scope_contents(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(
            request_bytes(
                "POST",
                "/scope/caf%C3%A9/a%20b%2Fc?x=1&y=%20&z",
                headers=[("X-Custom", "A"), ("x-custom", "B"), ("Content-Type", "text/plain")],
                body=b"payload",
            )
        )
        scope = conn.read_response().json()
        local_port = conn.local_port
    assert scope["type"] == "http"
    assert scope["asgi"]["version"] == "3.0"
    assert isinstance(scope["asgi"]["spec_version"], str)
    assert scope["http_version"] == "1.1"
    assert scope["method"] == "POST"
    assert scope["scheme"] == "http"
    assert scope["path"] == "/scope/café/a b/c"
    assert scope["raw_path"] == "/scope/caf%C3%A9/a%20b%2Fc"
    assert scope["query_string"] == "x=1&y=%20&z"
    assert scope["root_path"] == ""
    assert scope["types"]["raw_path"] == "bytes"
    assert scope["types"]["query_string"] == "bytes"
    assert scope["types"]["path"] == "str"
    assert scope["types"]["header_name"] == "bytes"
    headers = scope["headers"]
    assert all(name == name.lower() for name, _ in headers)
    assert ["host", "127.0.0.1"] in headers
    custom = [value for name, value in headers if name == "x-custom"]
    assert custom == ["A", "B"], "duplicate headers must be kept, in order"
    assert ["content-length", "7"] in headers
    assert scope["client"] == ["127.0.0.1", local_port]
    assert scope["server"] == ["127.0.0.1", srv.port]
    assert "http.response.trailers" in scope["extensions"]
    assert scope["body"] == "payload"


def test_root_path_prefixes_path_and_raw_path(start_server):
    """Like uvicorn >= 0.26: the client asks for /scope; path and raw_path
    both carry the root_path prefix."""
    srv = start_server(apps.app, root_path="/api")
    scope = httpx.get(f"{srv.url}/scope?q=2").json()
    assert scope["root_path"] == "/api"
    assert scope["path"] == "/api/scope"
    assert scope["raw_path"] == "/api/scope"
    assert scope["query_string"] == "q=2"


def test_empty_query_string(start_server):
    srv = start_server(apps.app)
    scope = httpx.get(f"{srv.url}/scope").json()
    assert scope["query_string"] == "" and scope["path"] == "/scope"


def test_absolute_form_target(start_server):
    """RFC 9112 3.2.2: a server MUST accept the absolute form; the scope
    path is the path component alone."""
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", f"http://127.0.0.1:{srv.port}/scope?a=b"))
        scope = conn.read_response().json()
        assert scope["path"] == "/scope"
        assert scope["query_string"] == "a=b"


# --------------------------------------------------------------------------
# Server-set headers, response trailers


def test_server_and_date_headers(start_server):
    on = start_server(apps.app)
    response = httpx.get(f"{on.url}/")
    assert "server" in response.headers
    assert "date" in response.headers
    off = start_server(apps.app, server_header=False, date_header=False)
    response = httpx.get(f"{off.url}/")
    assert "server" not in response.headers
    assert "date" not in response.headers


def test_response_trailers(start_server):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        assert "http.response.trailers" in scope["extensions"]
        await send({
            "type": "http.response.start", "status": 200, "trailers": True,
            "headers": [(b"content-type", b"text/plain"), (b"trailer", b"x-checksum")],
        })
        await send({"type": "http.response.body", "body": b"part1-", "more_body": True})
        await send({"type": "http.response.body", "body": b"part2", "more_body": False})
        await send({"type": "http.response.trailers", "headers": [(b"x-checksum", b"abc123")], "more_trailers": False})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("TE", "trailers")]))
        response = conn.read_response()
        assert response.status == 200
        assert response.chunked
        assert response.body == b"part1-part2"
        assert response.trailers == [("x-checksum", "abc123")]
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().body == b"part1-part2"
