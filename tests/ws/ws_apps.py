"""ASGI WebSocket apps for tests/ws, served in a child process (the
`ferroloop` CLI or uvicorn, see ws_support.py) as ``ws_apps:NAME``.

The child reports what the app saw through an events file: one JSON line
per event, ``{"conn": ..., "event": ..., ...}``, in the directory named by
``WS_TEST_DIR`` (``events.jsonl``). ``conn`` is the ``id`` query parameter
(the test names its connections). A test waits for lines there, never
sleeps. A *gate* is a file in that directory: an app waiting on gate
``NAME`` goes on once the test creates ``WS_TEST_DIR/NAME``.

``echo`` dispatches on the path (one server process serves every route of a
test); the framework apps (Starlette, FastAPI) are at the bottom.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from urllib.parse import parse_qs

DIR = Path(os.environ.get("WS_TEST_DIR", "."))
EVENTS = DIR / "events.jsonl"


def record(conn: str, event: str, **fields) -> None:
    # O_APPEND and one write per line: lines of concurrent connections
    # never interleave.
    line = json.dumps({"conn": conn, "event": event, **fields}) + "\n"
    fd = os.open(EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


async def gate(name: str) -> None:
    path = DIR / name
    while not path.exists():
        await asyncio.sleep(0.02)


def _query(scope) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}


def _message_fields(message: dict) -> dict:
    """What a test compares: the type and the ASGI fields, payloads as
    lengths and prefixes (a 16 MiB payload does not belong in a log line)."""
    fields = {"type": message["type"]}
    for key in ("code", "reason"):
        if key in message:
            fields[key] = message[key]
    if message.get("bytes") is not None:
        fields["bytes_len"] = len(message["bytes"])
    if message.get("text") is not None:
        fields["text_len"] = len(message["text"])
        fields["text_head"] = message["text"][:64]
    return fields


async def _after_disconnect(conn: str, receive) -> None:
    """A receive() after websocket.disconnect must not deliver it again:
    record what a second call gives (a message is a failure for the test;
    waiting or raising is fine)."""
    try:
        again = await asyncio.wait_for(receive(), 0.5)
    except asyncio.TimeoutError:
        record(conn, "after-disconnect", outcome="waited")
    except Exception as exc:  # noqa: BLE001 - the outcome is what is recorded
        record(conn, "after-disconnect", outcome="raised", error=type(exc).__name__)
    else:
        record(conn, "after-disconnect", outcome="message", message=_message_fields(again))


async def _echo_loop(conn: str, receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            record(conn, "disconnect", **_message_fields(message))
            await _after_disconnect(conn, receive)
            return
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


BROADCAST: dict[str, object] = {}


async def echo(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"plain http"})
        return
    assert scope["type"] == "websocket"
    query = _query(scope)
    conn = query.get("id", "?")
    # The path includes root_path (as uvicorn and Starlette have it).
    path = scope["path"].removeprefix(scope.get("root_path", ""))
    connect = await receive()
    record(conn, "connect", type=connect["type"], path=scope["path"])
    try:
        await ROUTES.get(path, _route_echo)(conn, scope, query, receive, send)
    except Exception as exc:  # noqa: BLE001 - recorded for the test, then re-raised for the server's log
        record(conn, "app-error", error=type(exc).__name__, message=str(exc))
        raise
    finally:
        record(conn, "done")


async def _route_echo(conn, scope, query, receive, send):
    await send({"type": "websocket.accept"})
    await _echo_loop(conn, receive, send)


async def _route_scope(conn, scope, query, receive, send):
    """Accept, send the scope (JSON) as the first message, then echo."""
    shown = {
        k: v
        for k, v in scope.items()
        if k in ("type", "asgi", "http_version", "scheme", "path", "raw_path", "query_string", "root_path", "subprotocols", "client", "server")
    }
    shown["raw_path"] = scope.get("raw_path", b"").decode("latin-1")
    shown["query_string"] = scope["query_string"].decode("latin-1")
    shown["headers"] = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]]
    shown["extensions"] = sorted((scope.get("extensions") or {}).keys())
    shown["has_state"] = "state" in scope
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": json.dumps(shown)})
    await _echo_loop(conn, receive, send)


async def _route_subprotocol(conn, scope, query, receive, send):
    """Accept with the subprotocol named by ``?pick=`` if offered."""
    offered = scope.get("subprotocols", [])
    record(conn, "subprotocols", offered=offered)
    pick = query.get("pick")
    await send({"type": "websocket.accept", "subprotocol": pick if pick in offered else None})
    await _echo_loop(conn, receive, send)


async def _route_headers(conn, scope, query, receive, send):
    await send(
        {
            "type": "websocket.accept",
            "headers": [(b"x-ws-test", b"accepted"), (b"set-cookie", b"session=1")],
        }
    )
    await _echo_loop(conn, receive, send)


async def _route_deny(conn, scope, query, receive, send):
    """Close before accept: HTTP 403."""
    await send({"type": "websocket.close", "code": 1000})
    message = await receive()
    record(conn, "disconnect", **_message_fields(message))


async def _route_deny_response(conn, scope, query, receive, send):
    """The websocket.http.response extension: a 401 with a body."""
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        record(conn, "no-extension")
        await send({"type": "websocket.close"})
        return
    await send(
        {
            "type": "websocket.http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"text/plain"), (b"x-ws-test", b"denied")],
        }
    )
    await send({"type": "websocket.http.response.body", "body": b"no ", "more_body": True})
    await send({"type": "websocket.http.response.body", "body": b"entry"})
    message = await receive()
    record(conn, "disconnect", **_message_fields(message))


async def _route_deny_pending(conn, scope, query, receive, send):
    """A denial response while a receive() is pending: that receive()
    gets the disconnect when the response completes."""
    pending = asyncio.ensure_future(receive())
    await asyncio.sleep(0)
    await send({"type": "websocket.http.response.start", "status": 401, "headers": [(b"content-length", b"2")]})
    await send({"type": "websocket.http.response.body", "body": b"no"})
    message = await pending
    record(conn, "disconnect", **_message_fields(message))


async def _route_server_close(conn, scope, query, receive, send):
    """Accept, take one message, close with 4001 'bye', then receive."""
    await send({"type": "websocket.accept"})
    first = await receive()
    record(conn, "received", **_message_fields(first))
    await send({"type": "websocket.close", "code": 4001, "reason": "bye"})
    message = await receive()
    record(conn, "disconnect", **_message_fields(message))
    await _after_disconnect(conn, receive)


async def _route_gate_accept(conn, scope, query, receive, send):
    """Wait for gate ``?gate=`` before doing anything after connect; then
    receive (a client that left meanwhile is a disconnect) and try to
    accept."""
    await gate(query["gate"])
    message = await receive()
    record(conn, "after-gate", **_message_fields(message))
    if message["type"] == "websocket.disconnect":
        try:
            await send({"type": "websocket.accept"})
        except Exception as exc:  # noqa: BLE001 - the outcome is what is recorded
            record(conn, "accept-after-disconnect", outcome="raised", error=type(exc).__name__, oserror=isinstance(exc, OSError))
        else:
            record(conn, "accept-after-disconnect", outcome="returned")


async def _route_send_after_disconnect(conn, scope, query, receive, send):
    """Accept, wait for disconnect, then send: must raise an OSError
    subclass (ClientDisconnected)."""
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            record(conn, "disconnect", **_message_fields(message))
            break
    try:
        await send({"type": "websocket.send", "text": "too late"})
    except Exception as exc:  # noqa: BLE001 - the outcome is what is recorded
        record(conn, "send-after-disconnect", outcome="raised", error=type(exc).__name__, oserror=isinstance(exc, OSError))
    else:
        record(conn, "send-after-disconnect", outcome="returned")


async def _route_wrong_order(conn, scope, query, receive, send):
    """Messages out of order (``?case=``) must raise; record the error."""
    case = query["case"]
    steps = {
        "send-before-accept": [{"type": "websocket.send", "text": "x"}],
        "http-response-after-accept": [
            {"type": "websocket.accept"},
            {"type": "websocket.http.response.start", "status": 500, "headers": []},
        ],
        "accept-twice": [{"type": "websocket.accept"}, {"type": "websocket.accept"}],
        "send-after-close": [
            {"type": "websocket.accept"},
            {"type": "websocket.close", "code": 1000},
            {"type": "websocket.send", "text": "x"},
        ],
        "unknown-type": [{"type": "websocket.accept"}, {"type": "websocket.bogus"}],
        "http-type": [{"type": "http.response.start", "status": 200, "headers": []}],
    }[case]
    for i, message in enumerate(steps):
        try:
            await send(message)
        except Exception as exc:  # noqa: BLE001 - the outcome is what is recorded
            record(conn, "wrong-order", step=i, error=type(exc).__name__, message=str(exc))
            return
    record(conn, "wrong-order", step=None)


async def _route_broadcast(conn, scope, query, receive, send):
    """Each connection registers; a text 'all:X' is sent to every one."""
    await send({"type": "websocket.accept"})
    BROADCAST[conn] = send
    record(conn, "registered", count=len(BROADCAST))
    try:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                record(conn, "disconnect", **_message_fields(message))
                return
            text = message.get("text") or ""
            if text.startswith("all:"):
                for other in list(BROADCAST.values()):
                    with contextlib.suppress(OSError):
                        await other({"type": "websocket.send", "text": text[4:]})
    finally:
        BROADCAST.pop(conn, None)


async def _route_gate_reader(conn, scope, query, receive, send):
    """A slow app: accept, then read nothing until gate ``?gate=``; then
    count what arrives until the text 'end'."""
    await send({"type": "websocket.accept"})
    record(conn, "accepted")
    await gate(query["gate"])
    total = 0
    messages = 0
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            record(conn, "disconnect", **_message_fields(message))
            return
        if message.get("text") == "end":
            record(conn, "drained", bytes=total, messages=messages)
            await send({"type": "websocket.send", "text": f"{messages} {total}"})
            continue
        total += len(message.get("bytes") or b"")
        messages += 1


async def _route_flood(conn, scope, query, receive, send):
    """Send ``?count=`` binary messages of ``?size=`` bytes as fast as
    send() lets the app, recording progress every message."""
    count = int(query["count"])
    size = int(query["size"])
    await send({"type": "websocket.accept"})
    for i in range(count):
        payload = bytes([i % 256]) * size
        await send({"type": "websocket.send", "bytes": payload})
        record(conn, "sent", n=i + 1)
    await _echo_loop(conn, receive, send)


async def _route_wait_close(conn, scope, query, receive, send):
    """Accept and wait for the disconnect (for shutdown and timeouts)."""
    await send({"type": "websocket.accept"})
    record(conn, "accepted")
    await _echo_loop(conn, receive, send)


ROUTES = {
    "/echo": _route_echo,
    "/scope": _route_scope,
    "/subprotocol": _route_subprotocol,
    "/headers": _route_headers,
    "/deny": _route_deny,
    "/deny-response": _route_deny_response,
    "/deny-pending": _route_deny_pending,
    "/server-close": _route_server_close,
    "/gate-accept": _route_gate_accept,
    "/send-after-disconnect": _route_send_after_disconnect,
    "/wrong-order": _route_wrong_order,
    "/broadcast": _route_broadcast,
    "/gate-reader": _route_gate_reader,
    "/flood": _route_flood,
    "/wait-close": _route_wait_close,
}


# --------------------------------------------------------------------------
# Autobahn's echo: bytes to bytes, text to text, nothing recorded (517 cases).


async def autobahn_echo(scope, receive, send):
    if scope["type"] != "websocket":
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        return
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


# --------------------------------------------------------------------------
# Frameworks


def _make_starlette():
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def chat(websocket: WebSocket):
        conn = websocket.query_params.get("id", "?")
        await websocket.accept(subprotocol="chat" if "chat" in websocket.scope["subprotocols"] else None)
        try:
            while True:
                data = await websocket.receive_json()
                await websocket.send_json({"echo": data, "room": websocket.path_params["room"]})
        except WebSocketDisconnect as exc:
            record(conn, "disconnect", code=exc.code, reason=exc.reason)

    async def closer(websocket: WebSocket):
        await websocket.close(code=4403, reason="go away")

    return Starlette(routes=[WebSocketRoute("/rooms/{room}", chat), WebSocketRoute("/closer", closer)])


# At module level: FastAPI resolves the endpoints' (string) annotations
# in the module's globals.
from fastapi import Depends, FastAPI, Query, WebSocket, WebSocketDisconnect, WebSocketException, status  # noqa: E402


def _make_fastapi():
    app = FastAPI()

    async def token(token: str | None = Query(default=None)):
        if token != "secret":
            raise WebSocketException(code=status.WS_1008_POLICY_VIOLATION, reason="bad token")
        return token

    @app.websocket("/items/{item_id}")
    async def items(websocket: WebSocket, item_id: int, tok: str = Depends(token)):
        conn = websocket.query_params.get("id", "?")
        await websocket.accept()
        try:
            while True:
                text = await websocket.receive_text()
                await websocket.send_text(f"item {item_id}: {text}")
                data = await websocket.receive_bytes()
                await websocket.send_bytes(data[::-1])
        except WebSocketDisconnect as exc:
            record(conn, "disconnect", code=exc.code, reason=exc.reason)

    return app


starlette_app = _make_starlette()
fastapi_app = _make_fastapi()
