"""Limits and timeouts: every one with small configured values (fast) and
once with the defaults (8 KiB line, 64 KiB / 100 headers, 16 MiB body, 10 s
head, 5 s keep-alive, 240 B/s after 5 s, unlimited concurrency)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

import apps
from http_support import RawConn, chunked, request_bytes, wait_until

MIB = 1024 * 1024


def expect_status_then_close(conn: RawConn, status: int, timeout: float = 5.0) -> None:
    response = conn.read_response(timeout=timeout)
    assert response.status == status
    assert conn.wait_closed(3.0), f"connection not closed after {status}"


def expect_408_or_close(conn: RawConn, timeout: float) -> float:
    """Wait for a 408 (then close) or a plain close; return the time it took."""
    started = time.monotonic()
    assert conn.wait_closed(timeout), f"connection still open after {timeout} s"
    elapsed = time.monotonic() - started
    data = bytes(conn.buf)
    assert data == b"" or data.startswith(b"HTTP/1.1 408") or data.startswith(b"HTTP/1.0 408"), data[:100]
    return elapsed


# --------------------------------------------------------------------------
# Request line / target


def test_request_line_limit_configured(start_server):
    srv = start_server(apps.app, max_request_line=200)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/" + "a" * 150))
        assert conn.read_response().status == 404
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/" + "a" * 250))
        expect_status_then_close(conn, 414)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/?" + "q" * 250))
        expect_status_then_close(conn, 414)


def test_request_line_limit_default_8_kib(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/scope?" + "a" * 8000))
        assert conn.read_response().status == 200
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/" + "a" * 9000))
        expect_status_then_close(conn, 414)


def test_request_line_limit_without_line_end(start_server):
    """An endless request line is cut off at the limit, not buffered."""
    srv = start_server(apps.app, max_request_line=200)
    with srv.raw() as conn:
        conn.send(b"GET /" + b"a" * 1000)
        expect_status_then_close(conn, 414)


# --------------------------------------------------------------------------
# Header section size and count


def test_header_size_limit_configured(start_server):
    srv = start_server(apps.app, max_header_size=1024)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("X-A", "a" * 500)]))
        assert conn.read_response().status == 200
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("X-A", "a" * 2000)]))
        expect_status_then_close(conn, 431)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "b" * 100) for i in range(15)]))
        expect_status_then_close(conn, 431)


def test_header_count_limit_configured(start_server):
    srv = start_server(apps.app, max_header_count=5)
    with srv.raw() as conn:  # Host + 4
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "v") for i in range(4)]))
        assert conn.read_response().status == 200
    with srv.raw() as conn:  # Host + 5
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "v") for i in range(5)]))
        expect_status_then_close(conn, 431)


def test_header_limits_default(start_server):
    srv = start_server(apps.app)
    with srv.raw() as conn:  # 100 headers in all, ~50 KiB: accepted
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "v" * 500) for i in range(99)]))
        assert conn.read_response().status == 200
    with srv.raw() as conn:  # 101 headers
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "v") for i in range(100)]))
        expect_status_then_close(conn, 431)
    with srv.raw() as conn:  # 80 headers, 80 KiB
        conn.send(request_bytes("GET", "/", headers=[(f"X-{i}", "v" * 1000) for i in range(80)]))
        expect_status_then_close(conn, 431)
    with srv.raw() as conn:  # one 70 KiB header
        conn.send(request_bytes("GET", "/", headers=[("X-Big", "v" * 70 * 1024)]))
        expect_status_then_close(conn, 431)


def test_endless_header_section_is_cut_off(start_server):
    srv = start_server(apps.app, max_header_size=4096)
    with srv.raw() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        try:
            for i in range(100):
                conn.send(b"X-%d: %s\r\n" % (i, b"v" * 200))
        except OSError:
            pass
        expect_status_then_close(conn, 431)


# --------------------------------------------------------------------------
# Body size


def test_body_size_limit_configured(start_server):
    srv = start_server(apps.app, max_body_size=1000)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", body=b"a" * 1000))
        assert conn.read_response().body == b"a" * 1000
    # Declared too large: refused before any body byte is sent.
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Content-Length", "1001")]))
        expect_status_then_close(conn, 413)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Transfer-Encoding", "chunked")]) + chunked(b"a" * 600, b"b" * 400))
        assert conn.read_response().body == b"a" * 600 + b"b" * 400
    # Chunked: caught mid-body.
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Transfer-Encoding", "chunked")]))
        conn.send(b"258\r\n" + b"a" * 600 + b"\r\n")
        conn.send(b"191\r\n" + b"b" * 401 + b"\r\n")
        expect_status_then_close(conn, 413)


def test_body_size_limit_mid_chunked_with_app_reading(start_server):
    """The app is consuming the body when the limit is crossed: 413, close,
    and the app's receive() reports http.disconnect."""
    messages = []
    done = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        try:
            while True:
                message = await receive()
                messages.append(message["type"])
                if message["type"] == "http.disconnect" or not message.get("more_body"):
                    break
        finally:
            done.set()

    srv = start_server(app, max_body_size=10_000, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/", headers=[("Transfer-Encoding", "chunked")]))
        conn.send(b"1388\r\n" + b"a" * 5000 + b"\r\n")
        wait_until(lambda: "http.request" in messages)
        conn.send(b"1770\r\n" + b"b" * 6000 + b"\r\n")
        expect_status_then_close(conn, 413)
    assert done.wait(5)
    assert messages[-1] == "http.disconnect"


def test_body_size_limit_default_16_mib(start_server):
    srv = start_server(apps.app)
    body = b"x" * (16 * MIB)
    response = httpx.post(f"{srv.url}/echo", content=body, timeout=30)
    assert response.status_code == 200 and len(response.content) == 16 * MIB
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Content-Length", str(16 * MIB + 1))]))
        expect_status_then_close(conn, 413)
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/echo", headers=[("Transfer-Encoding", "chunked")]))
        piece = b"%x\r\n%s\r\n" % (MIB, b"y" * MIB)
        try:
            for _ in range(17):
                conn.send(piece)
        except OSError:
            pass
        expect_status_then_close(conn, 413)


# --------------------------------------------------------------------------
# Request head timeout


def test_request_head_timeout_from_connect(start_server):
    srv = start_server(apps.app, timeout_request_head=0.5)
    with srv.raw() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        elapsed = expect_408_or_close(conn, 5.0)
    assert 0.3 < elapsed < 3.0
    # A connection that sends nothing at all is closed too.
    with srv.raw() as conn:
        expect_408_or_close(conn, 5.0)


def test_request_head_timeout_is_not_extended_by_trickling(start_server):
    """Slowloris: one byte every 0.1 s does not keep a head alive."""
    srv = start_server(apps.app, timeout_request_head=1.0)
    data = request_bytes("GET", "/", headers=[("X-Pad", "p" * 200)])
    with srv.raw() as conn:
        started = time.monotonic()
        try:
            for i in range(len(data) - 4):
                conn.send(data[i : i + 1])
                time.sleep(0.1)
                if time.monotonic() - started > 6:
                    break
        except OSError:
            pass
        expect_408_or_close(conn, 5.0)
        assert time.monotonic() - started < 4.0


def test_request_head_timeout_counts_from_end_of_previous_response(start_server):
    srv = start_server(apps.app, timeout_request_head=0.5, timeout_keep_alive=10)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().status == 200
        conn.send(b"GET / HT")  # a partial head: not idle any more
        elapsed = expect_408_or_close(conn, 5.0)
    assert elapsed < 3.0


def test_request_head_timeout_default_10_s(start_server):
    srv = start_server(apps.app)
    with srv.raw(timeout=20) as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        elapsed = expect_408_or_close(conn, 15.0)
    assert 8.5 < elapsed < 14.0


# --------------------------------------------------------------------------
# Keep-alive idle timeout


def test_keep_alive_timeout_configured(start_server):
    srv = start_server(apps.app, timeout_keep_alive=0.5)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        conn.read_response()
        time.sleep(0.3)
        conn.send(request_bytes("GET", "/"))  # still alive: the timer restarts
        assert conn.read_response().status == 200
        started = time.monotonic()
        assert conn.wait_closed(5.0)
        elapsed = time.monotonic() - started
        assert conn.buf == b"", "an idle keep-alive connection is closed without a response"
    assert 0.3 < elapsed < 3.0


def test_keep_alive_timeout_default_5_s(start_server):
    srv = start_server(apps.app)
    with srv.raw(timeout=15) as conn:
        conn.send(request_bytes("GET", "/"))
        conn.read_response()
        time.sleep(3.0)
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().status == 200
        started = time.monotonic()
        assert conn.wait_closed(10.0)
        elapsed = time.monotonic() - started
    assert 4.0 < elapsed < 8.0


def test_keep_alive_timeout_does_not_apply_while_app_runs(start_server):
    srv = start_server(apps.app, timeout_keep_alive=0.3)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/sleep?t=1.0"))
        assert conn.read_response().body == b"slept"


# --------------------------------------------------------------------------
# Minimum body rate


def _disconnect_recording_app(events):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                events.append("disconnect")
                return
            total += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        events.append("complete")
        await apps.respond(send, 200, b"%d" % total)

    return app


def test_slow_body_closed_and_app_gets_disconnect(start_server):
    events = []
    srv = start_server(_disconnect_recording_app(events), min_body_rate=1000, body_rate_grace=0.5, lifespan="off")
    with srv.raw() as conn:
        # Timed from before the head is sent: the server's grace period
        # cannot start earlier, however late this thread runs again.
        started = time.monotonic()
        conn.send(request_bytes("POST", "/", headers=[("Content-Length", "100000")]))
        try:
            while time.monotonic() - started < 6 and not conn.wait_closed(0.1):
                conn.send(b"s" * 10)  # ~100 B/s
        except OSError:
            pass
        elapsed = time.monotonic() - started
        assert conn.wait_closed(0.5)
        assert conn.buf == b"" or bytes(conn.buf).startswith(b"HTTP/1.1 408")
    assert 0.4 < elapsed < 4.0
    wait_until(lambda: events, timeout=3)
    assert events == ["disconnect"]


def test_body_above_min_rate_is_accepted(start_server):
    events = []
    srv = start_server(_disconnect_recording_app(events), min_body_rate=1000, body_rate_grace=0.5, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/", headers=[("Content-Length", str(15 * 2000))]))
        for _ in range(15):  # 20 kB/s for 1.5 s
            conn.send(b"f" * 2000)
            time.sleep(0.1)
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"30000")
    assert events == ["complete"]


def test_min_body_rate_does_not_punish_a_slow_app(start_server):
    """Body reading paused by the app (back-pressure) is not the client's fault."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await asyncio.sleep(1.5)
        body, _, disconnected = await apps.read_body(receive)
        await apps.respond(send, 200, b"%d" % len(body))

    # Counted over the stall, the rate would be far below 5 MiB/s.
    srv = start_server(app, min_body_rate=5 * MIB, body_rate_grace=0.3, lifespan="off")
    size = 12 * MIB
    response = httpx.post(f"{srv.url}/", content=b"q" * size, timeout=20)
    assert (response.status_code, response.text) == (200, str(size))


@pytest.mark.timeout(60)
def test_slow_body_default_rate_240_after_5_s_grace(start_server):
    events = []
    srv = start_server(_disconnect_recording_app(events), lifespan="off")
    with srv.raw(timeout=20) as conn:
        conn.send(request_bytes("POST", "/", headers=[("Content-Length", "100000")]))
        started = time.monotonic()
        try:
            while time.monotonic() - started < 15 and not conn.wait_closed(0.25):
                conn.send(b"s" * 10)  # ~40 B/s
        except OSError:
            pass
        elapsed = time.monotonic() - started
    assert 4.5 < elapsed < 10.0
    wait_until(lambda: events, timeout=3)
    assert events == ["disconnect"]


# --------------------------------------------------------------------------
# Concurrency limit


def test_limit_concurrency_503_for_excess(start_server):
    release = threading.Event()
    entered = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] == "/block":
            entered.append(1)
            while not release.is_set():
                await asyncio.sleep(0.01)
        await apps.respond(send, 200, b"ok")

    srv = start_server(app, limit_concurrency=2, lifespan="off")
    blocked = [srv.raw(), srv.raw()]
    for conn in blocked:
        conn.send(request_bytes("GET", "/block", headers=[("Connection", "close")]))
    wait_until(lambda: len(entered) == 2)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("Connection", "close")]))
        assert conn.read_response().status == 503
    release.set()
    for conn in blocked:
        assert conn.read_response().body == b"ok"
        conn.close()
    time.sleep(0.2)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("Connection", "close")]))
        assert conn.read_response().status == 200


def test_no_concurrency_limit_by_default(start_server):
    release = threading.Event()
    entered = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        entered.append(1)
        while not release.is_set():
            await asyncio.sleep(0.01)
        await apps.respond(send, 200, b"ok")

    srv = start_server(app, lifespan="off")
    conns = [srv.raw() for _ in range(100)]
    for conn in conns:
        conn.send(request_bytes("GET", "/"))
    wait_until(lambda: len(entered) == 100, timeout=10)
    release.set()
    assert [c.read_response().status for c in conns] == [200] * 100
    for conn in conns:
        conn.close()


# --------------------------------------------------------------------------
# Chunk extensions and expectations


def test_chunk_extensions_are_bounded_per_request(start_server):
    srv = start_server(apps.app, max_chunk_extensions_size=1024)
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    within = b"".join(b"1;" + b"e" * 200 + b"\r\nx\r\n" for _ in range(4)) + b"0\r\n\r\n"
    with srv.raw() as conn:
        conn.send(head + within)
        assert conn.read_response().status == 200
    # 1 MiB of extensions on a 4 KiB body, each line within the 4 KiB line bound.
    chunk = b"1;" + b"e" * 4000 + b"\r\nx\r\n"
    with srv.raw() as conn:
        conn.send(head + chunk * 8)
        expect_status_then_close(conn, 400)


def test_chunk_extensions_default_bound(start_server):
    srv = start_server(apps.app)
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"1;" + b"e" * 4000 + b"\r\nx\r\n"
    with srv.raw() as conn:
        conn.send(head + chunk * 5)
        expect_status_then_close(conn, 400)


@pytest.mark.parametrize("expect", ["x-magic", "100-continue, foo=bar", "200-ok"])
def test_an_unknown_expectation_is_417_without_reading_the_body(start_server, expect):
    calls = []

    async def app(scope, receive, send):
        calls.append(scope["type"])
        await apps.app(scope, receive, send)

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(f"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: {expect}\r\nContent-Length: 100000\r\n\r\n".encode())
        expect_status_then_close(conn, 417)
    assert calls == [], "the app is not called"
    with srv.raw() as conn:  # 100-continue is served as before
        conn.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi")
        assert conn.read_response().status in (100, 200)
