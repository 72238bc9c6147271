"""ASGI `websocket` sessions in `ferroloop.Server`: the quick behaviour
checks of the glue (scope, the events before and after accept, refusals,
denials, the disconnect on every path, backpressure, shutdown), with the
`websockets` asyncio client over real sockets.

The server runs in a thread of the test process (as tests/http's
`start_server`); what the app saw is recorded in `Seen`, read after the
client is done. Self-contained: the broad suite's fixtures (conftest.py,
ws_support.py) are another file's.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402

IO_TIMEOUT = 10.0


class Seen:
    """What the app saw, shared with the test thread."""

    def __init__(self) -> None:
        self.events: list = []
        self.scope: dict | None = None
        self.errors: list[BaseException] = []
        self.done = threading.Event()

    def wait(self, timeout: float = IO_TIMEOUT) -> None:
        assert self.done.wait(timeout), f"the app did not finish; saw {self.events!r}"


def _start(app, **config):
    import ferroloop

    config.setdefault("log_level", "warning")
    server = ferroloop.Server(ferroloop.Config(app, port=0, host="127.0.0.1", **config))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            ferroloop.run(server.serve())
        except BaseException as exc:  # noqa: BLE001 - reported at stop
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive(), f"server exited: {errors!r}"
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.005)
    port = server.sockets[0].getsockname()[1]
    return server, thread, port, errors


@pytest.fixture
def asgi_server():
    started = []

    def start(app, **config):
        server, thread, port, errors = _start(app, **config)
        started.append((server, thread, errors))
        return port, server

    yield start
    for server, thread, errors in started:
        server.should_exit = True
        thread.join(20)
        assert not thread.is_alive(), "server did not stop"
        assert not errors, errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, IO_TIMEOUT))


def echo_app(seen: Seen, **accept):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return
        seen.scope = scope
        try:
            assert (await receive())["type"] == "websocket.connect"
            await send({"type": "websocket.accept", **accept})
            while True:
                msg = await receive()
                seen.events.append(msg)
                if msg["type"] == "websocket.disconnect":
                    break
                if msg.get("text") == "close-4001":
                    await send({"type": "websocket.close", "code": 4001, "reason": "bye"})
                    seen.events.append(await receive())
                    break
                if msg.get("bytes") is not None:
                    await send({"type": "websocket.send", "bytes": msg["bytes"]})
                else:
                    await send({"type": "websocket.send", "text": msg["text"]})
            try:
                await send({"type": "websocket.send", "text": "after"})
            except BaseException as exc:  # noqa: BLE001 - recorded
                seen.errors.append(exc)
        finally:
            seen.done.set()

    return app


def test_echo_text_and_bytes_and_the_scope(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen))

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/chat/room?x=1", subprotocols=None) as ws:
            await ws.send("héllo")
            assert await ws.recv() == "héllo"
            await ws.send(b"\x00\x01binary")
            assert await ws.recv() == b"\x00\x01binary"
            big = bytes(range(256)) * 1024
            await ws.send(big)
            assert await ws.recv() == big

    run(client())
    seen.wait()
    scope = seen.scope
    assert scope["type"] == "websocket"
    assert scope["asgi"] == {"version": "3.0", "spec_version": "2.5"}
    assert scope["scheme"] == "ws"
    assert scope["http_version"] == "1.1"
    assert scope["path"] == "/chat/room"
    assert scope["raw_path"] == b"/chat/room"
    assert scope["query_string"] == b"x=1"
    assert scope["subprotocols"] == []
    assert "method" not in scope
    assert scope["extensions"] == {"websocket.http.response": {}}
    assert scope["client"][0] == "127.0.0.1"
    assert any(name == b"sec-websocket-key" for name, _ in scope["headers"])
    # The client closed normally: one disconnect, its code; send() after it
    # raises ClientDisconnected (an OSError).
    disconnects = [e for e in seen.events if e["type"] == "websocket.disconnect"]
    assert disconnects == [{"type": "websocket.disconnect", "code": 1000, "reason": ""}]
    import ferroloop

    assert len(seen.errors) == 1 and isinstance(seen.errors[0], ferroloop.ClientDisconnected)
    assert isinstance(seen.errors[0], OSError)


def test_subprotocol_and_headers_of_the_accept(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen, subprotocol="chat.v2", headers=[(b"x-session", b"42")]))

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/", subprotocols=["chat.v1", "chat.v2"]) as ws:
            assert ws.subprotocol == "chat.v2"
            assert ws.response.headers["x-session"] == "42"
            await ws.send("x")
            assert await ws.recv() == "x"

    run(client())
    seen.wait()
    assert seen.scope["subprotocols"] == ["chat.v1", "chat.v2"]


def test_client_close_code_and_reason_reach_the_app(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen))

    async def client():
        ws = await connect(f"ws://127.0.0.1:{port}/")
        await ws.send("one")
        assert await ws.recv() == "one"
        await ws.close(4321, "client leaves")

    run(client())
    seen.wait()
    assert seen.events[-1] == {"type": "websocket.disconnect", "code": 4321, "reason": "client leaves"}


def test_server_close_reaches_the_client(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen))

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/") as ws:
            await ws.send("close-4001")
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            assert info.value.rcvd.code == 4001
            assert info.value.rcvd.reason == "bye"

    run(client())
    seen.wait()
    # The app's own close: its disconnect carries its code, once.
    assert seen.events[-1] == {"type": "websocket.disconnect", "code": 4001, "reason": "bye"}
    # A send after its own close is the app's mistake, named.
    assert len(seen.errors) == 1 and isinstance(seen.errors[0], RuntimeError)
    assert "websocket.close" in str(seen.errors[0])


def test_tcp_reset_is_disconnect_1006(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen))

    async def client():
        ws = await connect(f"ws://127.0.0.1:{port}/")
        await ws.send("one")
        assert await ws.recv() == "one"
        sock = ws.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        ws.transport.abort()

    run(client())
    seen.wait()
    assert seen.events[-1]["type"] == "websocket.disconnect"
    assert seen.events[-1]["code"] == 1006
    assert [e["type"] for e in seen.events].count("websocket.disconnect") == 1


def _status_of(port: int, path: str = "/") -> int:
    async def client():
        with pytest.raises(InvalidStatus) as info:
            async with connect(f"ws://127.0.0.1:{port}{path}"):
                pass
        return info.value.response

    return run(client())


def test_close_before_accept_is_403(asgi_server):
    done = threading.Event()
    events = []

    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        await send({"type": "websocket.close"})
        events.append(await receive())
        done.set()

    port, _ = asgi_server(app)
    assert _status_of(port).status_code == 403
    assert done.wait(IO_TIMEOUT)
    assert events == [{"type": "websocket.disconnect", "code": 1006, "reason": ""}]


def test_denial_response(asgi_server):
    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        await send(
            {
                "type": "websocket.http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
            }
        )
        await send({"type": "websocket.http.response.body", "body": b"no ", "more_body": True})
        await send({"type": "websocket.http.response.body", "body": b"entry"})

    port, _ = asgi_server(app)
    response = _status_of(port)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.body == b"no entry"


@pytest.mark.parametrize("how", ["raises", "returns"])
def test_app_failing_before_accept_is_500(asgi_server, how):
    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        if how == "raises":
            raise ValueError("boom")

    port, _ = asgi_server(app)
    assert _status_of(port).status_code == 500


def test_wrong_message_before_accept_names_it(asgi_server):
    errors = []
    done = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        try:
            await send({"type": "websocket.send", "text": "too early"})
        except RuntimeError as exc:
            errors.append(str(exc))
        await send({"type": "websocket.close"})
        done.set()

    port, _ = asgi_server(app)
    assert _status_of(port).status_code == 403
    assert done.wait(IO_TIMEOUT)
    assert "websocket.accept" in errors[0] and "websocket.send" in errors[0]


def _raw_upgrade(port: int, headers: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{headers}\r\n".encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk


def test_invalid_handshakes_are_answered_by_the_server(asgi_server):
    called = []

    async def app(scope, receive, send):
        if scope["type"] != "lifespan":
            called.append(scope["type"])

    port, _ = asgi_server(app)
    missing_key = _raw_upgrade(port, "Sec-WebSocket-Version: 13\r\n")
    assert missing_key.startswith(b"HTTP/1.1 400 ")
    old_version = _raw_upgrade(port, "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")
    assert old_version.startswith(b"HTTP/1.1 426 ")
    assert b"sec-websocket-version: 13" in old_version.lower()
    assert called == []


def test_backpressure_keeps_every_message_in_order(asgi_server):
    """The app reads only after the client sent everything: reading pauses
    at the queue bound and resumes as the app takes messages."""
    seen = Seen()
    release = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        await send({"type": "websocket.accept"})
        while not release.is_set():
            await asyncio.sleep(0.01)
        count = 0
        while True:
            msg = await receive()
            if msg["type"] == "websocket.disconnect":
                break
            assert msg["bytes"] == count.to_bytes(4, "big") * 256
            count += 1
            if count == 500:
                await send({"type": "websocket.send", "text": "all"})
        seen.events.append(count)
        seen.done.set()

    port, _ = asgi_server(app)

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/", max_queue=None) as ws:
            for i in range(500):
                await ws.send(i.to_bytes(4, "big") * 256)
            release.set()
            assert await ws.recv() == "all"

    run(client())
    seen.wait()
    assert seen.events == [500]


def test_graceful_shutdown_sends_1012(asgi_server):
    seen = Seen()
    port, server = asgi_server(echo_app(seen))

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/") as ws:
            await ws.send("x")
            assert await ws.recv() == "x"
            server.should_exit = True
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            assert info.value.rcvd.code == 1012

    run(client())
    seen.wait()
    assert seen.events[-1] == {"type": "websocket.disconnect", "code": 1012, "reason": ""}


def test_ws_none_leaves_upgrades_to_http(asgi_server):
    scopes = []

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return
        scopes.append(scope["type"])
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    port, _ = asgi_server(app, ws="none")
    assert _status_of(port).status_code == 404
    assert scopes == ["http"]


def test_access_log_lines_of_a_session(asgi_server):
    import logging

    records = []

    class Capture(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    handler = Capture()
    logger = logging.getLogger("ferroloop.access")
    seen = Seen()
    # Installed once the server configured logging (which replaces handlers).
    port, _ = asgi_server(echo_app(seen), access_log=True, log_level="info")
    logger.addHandler(handler)
    try:

        async def client():
            async with connect(f"ws://127.0.0.1:{port}/logged?q=1") as ws:
                await ws.send("x")
                assert await ws.recv() == "x"

        run(client())
        seen.wait()
        deadline = time.monotonic() + IO_TIMEOUT
        while len(records) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        logger.removeHandler(handler)
    lines = [r for r in records if "WebSocket" in r]
    assert lines[0].endswith('"WebSocket /logged?q=1" [accepted]'), lines
    assert lines[1].endswith('"WebSocket /logged?q=1" closed 1000'), lines


def test_proxy_headers_and_root_path_apply_as_for_http(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen), proxy_headers=True, forwarded_allow_ips="*", root_path="/api")

    async def client():
        headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
        async with connect(f"ws://127.0.0.1:{port}/chat", additional_headers=headers) as ws:
            await ws.send("x")
            assert await ws.recv() == "x"

    run(client())
    seen.wait()
    assert seen.scope["scheme"] == "wss"
    assert seen.scope["client"][0] == "203.0.113.7"
    assert seen.scope["root_path"] == "/api"
    assert seen.scope["path"] == "/api/chat"


def test_limit_concurrency_counts_open_sessions(asgi_server):
    seen = Seen()
    port, _ = asgi_server(echo_app(seen), limit_concurrency=1)

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/") as ws:
            await ws.send("x")
            assert await ws.recv() == "x"
            # The open session is the one allowed connection.
            with pytest.raises(InvalidStatus) as info:
                async with connect(f"ws://127.0.0.1:{port}/"):
                    pass
            assert info.value.response.status_code == 503

    run(client())
    seen.wait()


@pytest.mark.parametrize("how", ["returns", "raises"])
def test_app_ending_an_open_session_closes_it(asgi_server, how):
    async def app(scope, receive, send):
        if scope["type"] != "websocket":
            return
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "last"})
        if how == "raises":
            raise ValueError("boom")

    port, _ = asgi_server(app)

    async def client():
        async with connect(f"ws://127.0.0.1:{port}/") as ws:
            assert await ws.recv() == "last"
            with pytest.raises(ConnectionClosed) as info:
                await ws.recv()
            return info.value.rcvd.code

    assert run(client()) == (1000 if how == "returns" else 1011)
