"""The ASGI app of tests/tls, served in a child process (the `ferroloop`
CLI or uvicorn, see tls_support.py) as ``tls_apps:app``.

Routes (one process serves them all):

* ``/`` → ``hello``; ``/info`` → JSON: ``scheme``, ``http_version`` and
  ``tls`` (``scope["extensions"]["tls"]`` with its PEM fields reduced to
  counts, or ``None``).
* ``POST /upload`` → JSON ``{"bytes": N, "sha256": ...}`` of the body,
  read chunk by chunk (never held whole).
* ``/download?n=N`` → N bytes of a repeating pattern, in 64 KiB chunks.
* ``POST /slow?id=ID`` → reads the body, recording each message's type in
  the events file; ``http.disconnect`` is what truncation must deliver.
* WebSocket ``/echo`` → echoes every message; ``/scope`` first sends
  ``{"scheme": ..., "tls": ...}`` as on ``/info``, then echoes.

Events are JSON lines in ``TLS_TEST_DIR/events.jsonl`` (O_APPEND, one
write per line), read by the tests by waiting, never by sleeping.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import parse_qs

DIR = Path(os.environ.get("TLS_TEST_DIR", "."))
CHUNK = 64 * 1024
PATTERN = bytes(range(256)) * (CHUNK // 256)


def record(conn: str, event: str, **fields) -> None:
    line = json.dumps({"conn": conn, "event": event, **fields}) + "\n"
    fd = os.open(DIR / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _tls_summary(scope) -> dict | None:
    tls = (scope.get("extensions") or {}).get("tls")
    if tls is None:
        return None
    out = dict(tls)
    chain = out.get("client_cert_chain") or []
    out["client_cert_chain"] = len(chain)
    out["client_leaf_pem"] = chain[0] if chain else None
    out["server_cert"] = bool(out.get("server_cert"))
    return out


async def _respond(send, status: int, body: bytes, content_type: bytes = b"text/plain") -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _echo(scope, receive, send) -> None:
    message = await receive()
    assert message["type"] == "websocket.connect", message
    await send({"type": "websocket.accept"})
    if scope["path"] == "/scope":
        # First message: what the scope said (the scheme, the extension).
        await send({"type": "websocket.send", "text": json.dumps({"scheme": scope["scheme"], "tls": _tls_summary(scope)})})
    await echo_messages(receive, send)


async def echo_messages(receive, send) -> None:
    """Send every WebSocket message back as it came, until the disconnect."""
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


async def lifespan(receive, send) -> None:
    """Complete startup and shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    if scope["type"] == "websocket":
        await _echo(scope, receive, send)
        return
    path = scope["path"]
    query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    if path == "/info":
        body = json.dumps(
            {"scheme": scope["scheme"], "http_version": scope["http_version"], "tls": _tls_summary(scope)}
        ).encode()
        await _respond(send, 200, body, b"application/json")
    elif path == "/upload":
        digest, total, more = hashlib.sha256(), 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            digest.update(chunk)
            total += len(chunk)
            more = message.get("more_body", False)
        await _respond(send, 200, json.dumps({"bytes": total, "sha256": digest.hexdigest()}).encode())
    elif path == "/download":
        n = int(query.get("n", "0"))
        headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(n).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        sent = 0
        while sent < n:
            piece = PATTERN[: min(CHUNK, n - sent)]
            sent += len(piece)
            await send({"type": "http.response.body", "body": piece, "more_body": sent < n})
        if n == 0:
            await send({"type": "http.response.body", "body": b""})
    elif path == "/slow":
        conn = query.get("id", "?")
        record(conn, "start")
        while True:
            message = await receive()
            record(conn, "message", type=message["type"], body_len=len(message.get("body", b"")))
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                break
        record(conn, "done")
        if message["type"] != "http.disconnect":
            await _respond(send, 200, b"ok")
    else:
        await _respond(send, 200, b"hello")
