"""`Server.stats()`: the native server's counters, checked against known
traffic from real clients over real sockets (raw sockets, so the bytes
sent are known exactly; httpx for a client library's keep-alive use).

Each counter family: requests by method and status class, bytes on the
wire, connections (and a client's RST), the server's own answers (400,
408, 413, 414, 431, 500, 503), timeouts, app exceptions. The WebSocket
and TLS families are in tests/ws/test_ws_stats.py and
tests/tls/test_tls_server.py."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

import apps
from http_support import IO_TIMEOUT, request_bytes, wait_until

ferroloop = pytest.importorskip("ferroloop")


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await apps.read_body(receive)
    path = scope["path"]
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/missing":
        await apps.respond(send, 404, b"no")
        return
    if path == "/redirect":
        await apps.respond(send, 302, b"", headers=[(b"location", b"/")])
        return
    await apps.respond(send, 200, b"ok")


def stats(srv) -> dict:
    """`stats()`, called on the server's loop thread."""
    done = threading.Event()
    box: dict = {}

    def call():
        box["stats"] = srv.server.stats()
        done.set()

    srv.server._loop.call_soon_threadsafe(call)
    assert done.wait(IO_TIMEOUT), "the server's loop did not run stats()"
    return box["stats"]


def wait_stats(srv, predicate, message: str = "") -> dict:
    """Poll `stats()` until `predicate(stats)` holds; the last stats."""
    box: dict = {}

    def check() -> bool:
        box["stats"] = stats(srv)
        return predicate(box["stats"])

    try:
        wait_until(check, timeout=IO_TIMEOUT * 2)
    except AssertionError:
        raise AssertionError(f"{message}: {box.get('stats')}") from None
    return box["stats"]


def test_stats_is_empty_before_the_server_started():
    server = ferroloop.Server(ferroloop.Config(app))
    assert server.stats() == {}


def test_the_shape_is_the_contracts(start_server):
    srv = start_server(app, lifespan="off")
    got = stats(srv)
    assert set(got) == {
        "connections",
        "requests",
        "bytes",
        "rejections",
        "timeouts",
        "app_exceptions",
        "client_disconnects",
        "websocket",
        "tls",
        "backend",
    }
    assert got["backend"] in ("io_uring", "epoll")
    assert set(got["connections"]) == {"open", "accepted", "closed", "reset"}
    assert set(got["requests"]["by_method"]) == {
        "GET",
        "HEAD",
        "POST",
        "PUT",
        "DELETE",
        "CONNECT",
        "OPTIONS",
        "TRACE",
        "PATCH",
        "other",
    }
    assert set(got["requests"]["by_status"]) == {"1xx", "2xx", "3xx", "4xx", "5xx"}
    assert {"400", "408", "413", "414", "431", "503"} <= set(got["rejections"])
    assert {"keep_alive", "request_head", "body", "tls_handshake", "ws_close", "ws_ping"} <= set(got["timeouts"])
    assert got["tls"] == {}  # TLS is off
    # A fresh dict each call.
    again = stats(srv)
    assert again == got and again is not got


def test_requests_by_method_and_status_and_bytes_on_the_wire(start_server):
    srv = start_server(app, lifespan="off")
    sent = 0
    received = 0
    with srv.raw() as conn:
        for i in range(5):
            data = request_bytes("GET", f"/?n={i}")
            conn.send(data)
            sent += len(data)
            response = conn.read_response()
            assert response.status == 200
            received += len(response.head) + len(response.body)
        for _ in range(3):
            data = request_bytes("POST", "/", body=b"x" * 1000)
            conn.send(data)
            sent += len(data)
            response = conn.read_response()
            assert response.status == 200
            received += len(response.head) + len(response.body)
        for method, target, status in [
            ("GET", "/missing", 404),
            ("GET", "/missing", 404),
            ("PUT", "/redirect", 302),
            ("BREW", "/", 200),
        ]:
            data = request_bytes(method, target)
            conn.send(data)
            sent += len(data)
            response = conn.read_response()
            assert response.status == status
            received += len(response.head) + len(response.body)
        live = stats(srv)
        # Live connections count too, before they close.
        assert live["bytes"]["in"] == sent
        assert live["bytes"]["out"] >= received
        assert live["connections"]["open"] == 1
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1, "the connection's close was not counted")
    requests = got["requests"]
    assert requests["total"] == 12
    assert requests["in_flight"] == 0
    by_method = requests["by_method"]
    assert (by_method["GET"], by_method["POST"], by_method["PUT"], by_method["other"]) == (7, 3, 1, 1)
    assert sum(by_method.values()) == 12
    assert requests["by_status"] == {"1xx": 0, "2xx": 9, "3xx": 1, "4xx": 2, "5xx": 0}
    assert got["bytes"]["in"] == sent
    assert got["bytes"]["out"] >= received
    assert got["connections"] == {"open": 0, "accepted": 1, "closed": 1, "reset": 0}
    assert got["app_exceptions"] == 0
    assert all(n == 0 for n in got["rejections"].values())


def test_httpx_keep_alive_client_is_one_connection(start_server):
    srv = start_server(app, lifespan="off")
    with httpx.Client(base_url=srv.url, timeout=IO_TIMEOUT) as client:
        for _ in range(4):
            assert client.get("/").status_code == 200
        for _ in range(2):
            assert client.post("/", content=b"abc").status_code == 200
        assert client.delete("/missing").status_code == 404
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1, "httpx's connection did not close")
    assert got["connections"]["accepted"] == 1
    by_method = got["requests"]["by_method"]
    assert (by_method["GET"], by_method["POST"], by_method["DELETE"]) == (4, 2, 1)
    assert got["requests"]["by_status"]["2xx"] == 6
    assert got["requests"]["by_status"]["4xx"] == 1


def test_an_app_exception_is_counted_and_its_500_is_the_servers(start_server):
    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/boom"))
        assert conn.read_response().status == 500
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1)
    assert got["app_exceptions"] == 1
    assert got["rejections"]["500"] == 1
    assert got["requests"]["by_status"]["5xx"] == 1


@pytest.mark.parametrize(
    "settings, request_data, status",
    [
        ({}, b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400),
        ({"max_header_size": 1024}, request_bytes("GET", "/", headers=[("X-Big", "a" * 4000)]), 431),
        ({"max_request_line": 100}, request_bytes("GET", "/" + "a" * 500), 414),
        ({"max_body_size": 10}, request_bytes("POST", "/", body=b"x" * 100), 413),
    ],
    ids=["400-malformed", "431-head", "414-line", "413-body"],
)
def test_requests_the_server_rejects_are_counted_by_status(start_server, settings, request_data, status):
    srv = start_server(app, lifespan="off", **settings)
    with srv.raw() as conn:
        conn.send(request_data)
        assert conn.read_response().status == status
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1)
    assert got["rejections"][str(status)] == 1
    assert sum(got["rejections"].values()) == 1
    assert got["requests"]["by_status"]["4xx"] == 1
    assert got["app_exceptions"] == 0


def test_limit_concurrency_503_is_a_rejection(start_server):
    release = threading.Event()
    entered = []

    async def blocking(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] == "/block":
            entered.append(1)
            while not release.is_set():
                await asyncio.sleep(0.01)
        await apps.respond(send, 200, b"ok")

    srv = start_server(blocking, limit_concurrency=1, lifespan="off")
    blocked = srv.raw()
    blocked.send(request_bytes("GET", "/block"))
    wait_until(lambda: len(entered) == 1)
    assert stats(srv)["requests"]["in_flight"] == 1
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().status == 503
    release.set()
    assert blocked.read_response().status == 200
    blocked.close()
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 2)
    assert got["rejections"]["503"] == 1
    assert got["requests"]["by_status"] == {"1xx": 0, "2xx": 1, "3xx": 0, "4xx": 0, "5xx": 1}
    assert got["requests"]["in_flight"] == 0


def test_a_keep_alive_timeout_is_counted(start_server):
    srv = start_server(app, lifespan="off", timeout_keep_alive=0.3)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        assert conn.read_response().status == 200
        # The server closes the idle connection: EOF.
        assert conn.recv_some(timeout=IO_TIMEOUT * 2) == b""
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1)
    assert got["timeouts"]["keep_alive"] == 1
    assert got["timeouts"]["request_head"] == 0


def test_a_request_head_timeout_is_a_408_and_a_timeout(start_server):
    srv = start_server(app, lifespan="off", timeout_request_head=0.3)
    with srv.raw() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: x\r\n")  # the head never ends
        assert conn.read_response().status == 408
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 1)
    assert got["timeouts"]["request_head"] == 1
    assert got["rejections"]["408"] == 1


def test_a_client_rst_counts_as_reset(start_server):
    srv = start_server(app, lifespan="off")
    conn = srv.raw()
    conn.send(request_bytes("GET", "/"))
    assert conn.read_response().status == 200
    with srv.raw() as clean:
        clean.send(request_bytes("GET", "/"))
        assert clean.read_response().status == 200
    conn.reset()  # SO_LINGER 0: an RST while the server waits for a request
    got = wait_stats(srv, lambda s: s["connections"]["closed"] == 2, "both connections' ends were not counted")
    assert got["connections"]["reset"] == 1
    assert got["connections"]["accepted"] == 2
    assert got["connections"]["open"] == 0


# --------------------------------------------------------------------------
# WebSocket (here, not in tests/ws: these need the in-process server)


async def ws_app(scope, receive, send):
    if scope["type"] != "websocket":
        if scope["type"] == "http":
            await apps.respond(send, 200, b"ok")
        return
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if scope["path"] == "/close4001":
            await send({"type": "websocket.close", "code": 4001})
            return
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


def test_websocket_sessions_messages_and_close_codes(start_server):
    from websockets.sync.client import connect

    srv = start_server(ws_app, lifespan="off")
    url = f"ws://{srv.host}:{srv.port}"
    with connect(url + "/echo", open_timeout=IO_TIMEOUT, close_timeout=IO_TIMEOUT) as ws:
        for i in range(3):
            ws.send(f"text {i}")
            assert ws.recv(timeout=IO_TIMEOUT) == f"text {i}"
        for i in range(2):
            ws.send(bytes([i]) * 100)
            assert ws.recv(timeout=IO_TIMEOUT) == bytes([i]) * 100
        live = stats(srv)
        assert live["websocket"]["sessions_open"] == 1
        assert live["requests"]["in_flight"] == 1
    with connect(url + "/close4001", open_timeout=IO_TIMEOUT, close_timeout=IO_TIMEOUT) as ws:
        ws.send("bye")
        with pytest.raises(Exception):  # ConnectionClosedError with 4001
            ws.recv(timeout=IO_TIMEOUT)
        assert ws.close_code == 4001
    got = wait_stats(srv, lambda s: s["websocket"]["sessions_open"] == 0 and s["connections"]["closed"] == 2)
    websocket = got["websocket"]
    assert websocket["sessions_total"] == 2
    assert (websocket["messages_in"], websocket["messages_out"]) == (6, 5)
    # A private-use code counts in its group (the labels stay bounded).
    assert websocket["close_codes"] == {"1000": 1, "private": 1}
    # The handshakes are GET requests answered 101.
    assert got["requests"]["by_method"]["GET"] == 2
    assert got["requests"]["by_status"]["1xx"] == 2
    assert got["connections"]["accepted"] == 2
    assert got["bytes"]["in"] > 5 * 100 and got["bytes"]["out"] > 5 * 100


def test_close_codes_a_client_picks_count_in_bounded_groups(start_server):
    from websockets.sync.client import connect

    srv = start_server(ws_app, lifespan="off")
    url = f"ws://{srv.host}:{srv.port}/echo"
    codes = (1001, 3000, 3999, 4000, 4567, 4999)
    for code in codes:
        with connect(url, open_timeout=IO_TIMEOUT, close_timeout=IO_TIMEOUT) as ws:
            ws.send("x")
            assert ws.recv(timeout=IO_TIMEOUT) == "x"
            ws.close(code=code)
    got = wait_stats(srv, lambda s: sum(s["websocket"]["close_codes"].values()) == len(codes))
    assert got["websocket"]["close_codes"] == {"1001": 1, "application": 2, "private": 3}


UPGRADE = [
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
]


def test_a_websocket_ping_timeout_is_counted(start_server):
    srv = start_server(ws_app, lifespan="off", ws_ping_interval=0.2, ws_ping_timeout=0.2)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/echo", headers=UPGRADE))
        assert conn.read_response().status == 101
        # This client never answers a ping: the server closes with 1011.
        got = wait_stats(srv, lambda s: s["websocket"]["sessions_open"] == 0, "the session did not end")
    assert got["timeouts"]["ws_ping"] == 1
    assert got["timeouts"]["ws_close"] == 0
    assert got["websocket"]["close_codes"] == {"1011": 1}


def test_a_websocket_close_timeout_is_counted(start_server):
    srv = start_server(ws_app, lifespan="off", ws_close_timeout=0.3)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/close4001", headers=UPGRADE))
        assert conn.read_response().status == 101
        # One masked text frame (a zero mask key): the app closes with 4001,
        # and this client never answers the close.
        conn.send(b"\x81\x83\x00\x00\x00\x00bye")
        got = wait_stats(srv, lambda s: s["websocket"]["sessions_open"] == 0, "the session did not end")
    assert got["timeouts"]["ws_close"] == 1
    assert got["timeouts"]["ws_ping"] == 0
    assert got["websocket"]["messages_in"] == 1
