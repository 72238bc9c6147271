"""Raw ASGI 3 apps for the HTTP server tests.

Imported as ``apps`` by the tests and as ``tests.http.apps`` by child
processes (``python -m ferroloop tests.http.apps:app``). Everything here is
stateless between requests, so the same app serves in-thread and child
servers; tests needing to observe the app from outside build closures.

``app`` routes on the path:

==================  =========================================================
``/``               200 ``hello, world`` with a content-length
``/echo``           reads the whole body, echoes it (content-length)
``/scope...``       (any path under it) reads the body, answers JSON: the scope (bytes as
                    latin-1), the body's length and the chunks as received
``/stream``         ``?chunks=N&size=S&delay=D``: chunked, no content-length
``/download``       ``?size=BYTES&cl=0|1``: 1 MiB pieces of ``pattern()``
``/status``         ``?code=C``: that status; no body for 204/304
``/sleep``          ``?t=SECONDS``: sleeps, then answers ``slept``
``/slow-upload``    ``?stall=S&rate=B``: waits S s before reading, then reads
                    at most B bytes/s; answers ``{"received": n}``
``/no-read``        answers at once without reading the body
``/error``          raises before starting a response
``/error-after-start``  starts a chunked response, sends a piece, raises
``/pid``            the server process id
==================  =========================================================
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from urllib.parse import parse_qsl

MIB = 1024 * 1024


def pattern(size: int = MIB) -> bytes:
    """Deterministic, non-repeating-within-a-line bytes."""
    line = bytes(range(256))
    return (line * (size // 256 + 1))[:size]


PIECE = pattern(MIB)


def query(scope) -> dict[str, str]:
    return dict(parse_qsl(scope["query_string"].decode("latin-1")))


async def read_body(receive):
    """(body, chunks [(len, more_body)], disconnected)."""
    body = bytearray()
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body), chunks, True
        assert message["type"] == "http.request", message
        data = message.get("body", b"")
        more = message.get("more_body", False)
        chunks.append((len(data), more))
        body += data
        if not more:
            return bytes(body), chunks, False


async def respond(send, status=200, body=b"", headers=None, content_type=b"text/plain"):
    hdrs = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    hdrs += headers or []
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


def jsonable(value):
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def scope_summary(scope) -> dict:
    out = {}
    for key, value in scope.items():
        if key == "state":
            out["state"] = {k: jsonable(v) for k, v in value.items()}
        elif key == "extensions":
            out["extensions"] = sorted(value) if value is not None else None
        else:
            out[key] = jsonable(value)
    out["types"] = {
        "raw_path": type(scope.get("raw_path")).__name__,
        "query_string": type(scope.get("query_string")).__name__,
        "path": type(scope.get("path")).__name__,
        "headers_item": type(scope["headers"][0]).__name__ if scope.get("headers") else None,
        "header_name": type(scope["headers"][0][0]).__name__ if scope.get("headers") else None,
        "client": type(scope.get("client")).__name__,
        "server": type(scope.get("server")).__name__,
    }
    return out


async def lifespan(scope, receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if "state" in scope:
                scope["state"]["started"] = "yes"
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await lifespan(scope, receive, send)
        return
    if scope["type"] != "http":
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1000})
        return
    path = scope["path"].removeprefix(scope.get("root_path", "")) or "/"
    if path.startswith("/scope"):
        route = scope_route
    else:
        route = ROUTES.get(path, not_found)
    await route(scope, receive, send)


async def not_found(scope, receive, send):
    await respond(send, 404, b"not found")


async def hello(scope, receive, send):
    await respond(send, 200, b"hello, world")


async def echo(scope, receive, send):
    body, _, disconnected = await read_body(receive)
    if disconnected:
        return
    ctype = dict(scope["headers"]).get(b"content-type", b"application/octet-stream")
    await respond(send, 200, body, content_type=ctype)


async def scope_route(scope, receive, send):
    body, chunks, disconnected = await read_body(receive)
    if disconnected:
        return
    summary = scope_summary(scope)
    summary["body_length"] = len(body)
    summary["body"] = body[:1000].decode("latin-1")
    summary["chunks"] = chunks
    await respond(send, 200, json.dumps(summary).encode(), content_type=b"application/json")


async def stream(scope, receive, send):
    q = query(scope)
    count, size, delay = int(q.get("chunks", 5)), int(q.get("size", 10)), float(q.get("delay", 0))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    for i in range(count):
        piece = (b"%d" % (i % 10)) * size
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        if delay:
            await asyncio.sleep(delay)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def download(scope, receive, send):
    q = query(scope)
    size = int(q.get("size", MIB))
    headers = [(b"content-type", b"application/octet-stream")]
    if q.get("cl", "1") == "1":
        headers.append((b"content-length", str(size).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    sent = 0
    while sent < size:
        piece = PIECE if size - sent >= MIB else PIECE[: size - sent]
        sent += len(piece)
        await send({"type": "http.response.body", "body": piece, "more_body": sent < size})


async def status(scope, receive, send):
    code = int(query(scope).get("code", 200))
    if code in (204, 304):
        await send({"type": "http.response.start", "status": code, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    else:
        await respond(send, code, b"status %d" % code)


async def sleep(scope, receive, send):
    await asyncio.sleep(float(query(scope).get("t", 0.5)))
    await respond(send, 200, b"slept")


async def slow_upload(scope, receive, send):
    q = query(scope)
    stall, rate = float(q.get("stall", 1.0)), float(q.get("rate", 50 * MIB))
    await asyncio.sleep(stall)
    received = 0
    started = time.monotonic()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        received += len(message.get("body", b""))
        ahead = received / rate - (time.monotonic() - started)
        if ahead > 0:
            await asyncio.sleep(ahead)
        if not message.get("more_body", False):
            break
    await respond(send, 200, json.dumps({"received": received}).encode(), content_type=b"application/json")


async def no_read(scope, receive, send):
    await respond(send, 200, b"no-read")


class AppError(Exception):
    pass


async def error(scope, receive, send):
    raise AppError("boom-before-start")


async def error_after_start(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    raise AppError("boom-after-start")


async def pid(scope, receive, send):
    await respond(send, 200, str(os.getpid()).encode())


ROUTES = {
    "/": hello,
    "/echo": echo,
    "/scope": scope_route,
    "/stream": stream,
    "/download": download,
    "/status": status,
    "/sleep": sleep,
    "/slow-upload": slow_upload,
    "/no-read": no_read,
    "/error": error,
    "/error-after-start": error_after_start,
    "/pid": pid,
}


# --------------------------------------------------------------------------
# Lifespan variants (CLI and serve() exit codes)


async def startup_fails_app(scope, receive, send):
    if scope["type"] == "lifespan":
        message = await receive()
        assert message["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.failed", "message": "startup-failed-on-purpose"})
        return
    await app(scope, receive, send)


async def no_lifespan_app(scope, receive, send):
    """An app that does not support lifespan (raises on the scope)."""
    if scope["type"] == "lifespan":
        raise RuntimeError("lifespan not supported by this app")
    await app(scope, receive, send)


not_an_app = 42
