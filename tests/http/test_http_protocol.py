"""Malformed and hostile requests over raw sockets (strict RFC 9112), request
smuggling, and unread request bodies."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

import apps
from http_support import chunked, request_bytes

H = b"Host: 127.0.0.1\r\n"

# request bytes -> expected status; the connection must be closed afterwards.
HOSTILE = [
    ("missing-host-http11", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("two-host-headers", b"GET / HTTP/1.1\r\n" + H + b"Host: other\r\n\r\n", 400),
    ("cl-and-te", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-and-cl", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
    ("te-in-http10", b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400),
    ("differing-duplicate-cl", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    ("differing-cl-list", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5, 6\r\n\r\nhello!", 400),
    ("cl-not-a-number", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", 400),
    ("cl-negative", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
    ("cl-plus-sign", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: +5\r\n\r\nhello", 400),
    ("cl-hex", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 0x5\r\n\r\nhello", 400),
    ("te-chunked-not-final", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400),
    ("te-chunked-twice-lines-not-final", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n", 400),
    ("te-unsupported-coding", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    ("chunk-size-not-hex", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-size-negative", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-size-0x-prefix", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-size-overflow", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffffff\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-size-empty", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-data-without-crlf", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", 400),
    ("bare-cr-in-header-line", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\rX-B: b\r\n\r\n", 400),
    ("bare-cr-in-request-line", b"GET /\r HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("obs-fold", b"GET / HTTP/1.1\r\n" + H + b"X-Folded: a\r\n  b\r\n\r\n", 400),
    ("obs-fold-tab", b"GET / HTTP/1.1\r\n" + H + b"X-Folded: a\r\n\tb\r\n\r\n", 400),
    ("space-before-colon", b"GET / HTTP/1.1\r\n" + H + b"X-Space : a\r\n\r\n", 400),
    ("space-before-colon-cl", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length : 5\r\n\r\nhello", 400),
    ("ctl-in-header-name", b"GET / HTTP/1.1\r\n" + H + b"X-C\x01tl: a\r\n\r\n", 400),
    ("separator-in-header-name", b"GET / HTTP/1.1\r\n" + H + b"X(Paren): a\r\n\r\n", 400),
    ("empty-header-name", b"GET / HTTP/1.1\r\n" + H + b": a\r\n\r\n", 400),
    ("header-without-colon", b"GET / HTTP/1.1\r\n" + H + b"X-No-Colon\r\n\r\n", 400),
    ("ctl-in-header-value", b"GET / HTTP/1.1\r\n" + H + b"X-V: a\x01b\r\n\r\n", 400),
    ("nul-in-header-value", b"GET / HTTP/1.1\r\n" + H + b"X-V: a\x00b\r\n\r\n", 400),
    ("del-in-header-value", b"GET / HTTP/1.1\r\n" + H + b"X-V: a\x7fb\r\n\r\n", 400),
    ("ctl-in-target", b"GET /a\x01b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("nul-in-target", b"GET /a\x00b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("space-in-target", b"GET /a b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("del-in-target", b"GET /a\x7fb HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("bad-protocol-name", b"GET / FOO/1.1\r\n" + H + b"\r\n", 400),
    ("missing-version", b"GET /\r\n" + H + b"\r\n", 400),
    ("empty-method", b" / HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("non-token-method", b"G(T / HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40 + b"\r\n\r\n", 400),
]


@pytest.mark.parametrize("data, expected", [pytest.param(d, e, id=i) for i, d, e in HOSTILE])
def test_hostile_request_rejected_and_connection_closed(start_server, data, expected):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(data)
        response = conn.read_response()
        assert response.status == expected
        assert conn.wait_closed(3.0), "connection left open after a rejected request"
        assert conn.buf == b"", f"bytes after the error response: {bytes(conn.buf)!r}"
    assert httpx.get(f"{srv.url}/").status_code == 200


def test_hostile_heads_never_reach_the_app(start_server):
    seen = []

    async def app(scope, receive, send):
        if scope["type"] == "http":
            seen.append(scope["path"])
        await apps.app(scope, receive, send)

    srv = start_server(app, lifespan="off")
    for ident, data, _ in HOSTILE:
        if ident.startswith("chunk-"):
            continue  # the head is valid there; the body is what is wrong
        with srv.raw() as conn:
            conn.send(data)
            conn.read_response()
    assert seen == []


def test_valid_header_edge_cases_are_accepted(start_server):
    """The flip side of strictness: what RFC 9110/9112 allow stays allowed."""
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(
            b"GET /scope HTTP/1.1\r\n" + H
            + b"X-Tab:\tvalue\twith tab\t\r\n"
            + b"X-Empty:\r\n"
            + b"X-Obs-Text: caf\xe9\r\n"
            + b"X-Token!#$%&'*+-.^_`|~: ok\r\n"
            + b"Content-Length: 0\r\n"
            + b"\r\n"
        )
        response = conn.read_response()
        assert response.status == 200
        headers = dict((k, v) for k, v in response.json()["headers"])
        assert headers["x-tab"] == "value\twith tab"
        assert headers["x-empty"] == ""
        assert headers["x-obs-text"] == "caf\xe9"
        assert headers["x-token!#$%&'*+-.^_`|~"] == "ok"
        assert conn.is_open()


def test_identical_duplicate_content_length_is_accepted(start_server):
    """RFC 9110 8.6: identical repeated Content-Length values may be taken as one."""
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"hello")


def test_uppercase_chunked_and_mixed_case_header_names(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(b"POST /echo HTTP/1.1\r\nhOsT: x\r\nTRANSFER-ENCODING: Chunked\r\n\r\n" + chunked(b"abc", b"de"))
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"abcde")


# --------------------------------------------------------------------------
# Smuggling: leftover body bytes are never parsed as a request


def _recording_app(seen):
    async def app(scope, receive, send):
        if scope["type"] == "http":
            seen.append(scope["path"])
        await apps.app(scope, receive, send)

    return app


SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_unread_small_body_is_discarded_not_parsed(start_server):
    """App answers without reading a (<= 64 KiB) body that contains a valid
    request: the body is discarded, the connection kept, the next real
    request answered."""
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    body = SMUGGLED + b"x" * 1000 + SMUGGLED
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", body=body) + request_bytes("POST", "/echo", body=b"second"))
        first = conn.read_response()
        second = conn.read_response()
        assert (first.status, first.body) == (200, b"no-read")
        assert (second.status, second.body) == (200, b"second")
        assert conn.is_open()
    assert seen == ["/no-read", "/echo"]


def test_unread_chunked_body_is_discarded_not_parsed(start_server):
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    with srv.raw() as conn:
        conn.send(
            request_bytes("POST", "/no-read", headers=[("Transfer-Encoding", "chunked")])
            + chunked(SMUGGLED, b"0\r\n\r\n" + SMUGGLED)
            + request_bytes("GET", "/")
        )
        assert conn.read_response().body == b"no-read"
        assert conn.read_response().body == b"hello, world"
    assert seen == ["/no-read", "/"]


def test_unread_body_at_64_kib_keeps_connection(start_server):
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    body = SMUGGLED * ((60 * 1024) // len(SMUGGLED))
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", body=body) + request_bytes("GET", "/"))
        assert conn.read_response().body == b"no-read"
        assert conn.read_response().body == b"hello, world"
    assert seen == ["/no-read", "/"]


def test_unread_large_body_closes_connection(start_server):
    """More than 64 KiB left unread: the connection is closed after the
    response (at once, or once 64 KiB were discarded), and nothing of the
    body is taken as a request."""
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    size = 1024 * 1024
    body = (SMUGGLED * (size // len(SMUGGLED) + 1))[:size]
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", headers=[("Content-Length", str(size))]))
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"no-read")

        def feed():
            try:
                for i in range(0, size, 8192):
                    conn.send(body[i : i + 8192])
            except OSError:
                pass

        feeder = threading.Thread(target=feed)
        feeder.start()
        assert conn.wait_closed(5.0)
        feeder.join(5)
    assert seen == ["/no-read"]


def test_unread_large_chunked_body_closes_connection(start_server):
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    piece = SMUGGLED * 200  # ~9 KiB per chunk
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", headers=[("Transfer-Encoding", "chunked")]))
        assert conn.read_response().body == b"no-read"

        def feed():
            try:
                for _ in range(20):  # ~180 KiB, never terminated
                    conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            except OSError:
                pass

        feeder = threading.Thread(target=feed)
        feeder.start()
        assert conn.wait_closed(5.0)
        feeder.join(5)
    assert seen == ["/no-read"]


def test_partially_read_body_rest_discarded(start_server):
    """The app reads one piece of the body, then answers; the remainder is
    discarded and the next request works."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] == "/partial":
            message = await receive()
            await apps.respond(send, 200, b"got %d" % (len(message["body"]) > 0))
        else:
            await apps.app(scope, receive, send)

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/partial", headers=[("Content-Length", "20000")]))
        conn.send(b"a" * 10000)
        assert conn.read_response().body == b"got 1"
        conn.send(SMUGGLED[:5] + b"b" * (10000 - 5))
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().body == b"hello, world"


def test_request_after_echo_with_exact_content_length(start_server):
    """Content-Length decides where the body ends: bytes after it are the next request."""
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 3\r\n\r\nabc" + request_bytes("GET", "/"))
        assert conn.read_response().body == b"abc"
        assert conn.read_response().body == b"hello, world"


def test_expect_100_with_unread_body_does_not_parse_body(start_server):
    seen = []
    srv = start_server(_recording_app(seen), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/no-read", headers=[("Content-Length", str(len(SMUGGLED))), ("Expect", "100-continue")]))
        response = conn.read_response()
        assert response.status == 200
        try:
            conn.send(SMUGGLED)
        except OSError:
            pass
        conn.wait_closed(1.0)
    assert seen == ["/no-read"]


def test_server_survives_hostile_input(start_server):
    srv = start_server(apps.app)

    async def hammer():
        async def one(data):
            try:
                reader, writer = await asyncio.open_connection(srv.host, srv.port)
                writer.write(data)
                await writer.drain()
                await asyncio.wait_for(reader.read(), 5)
                writer.close()
            except (OSError, asyncio.TimeoutError):
                pass

        await asyncio.gather(*[one(data) for _, data, _ in HOSTILE * 3])

    asyncio.run(hammer())
    assert httpx.get(f"{srv.url}/").text == "hello, world"
