"""The HTTP suite's application (bench/README.md, "HTTP suite"): raw ASGI 3, no framework.

    GET  /        200 text/plain        "Hello, World!" (13 bytes)
    GET  /json    200 application/json  51 bytes, built with json.dumps per request
    POST /post    reads the whole body; 200 with its length as text if it is
                  4,096 bytes, else 400 (same body)
    GET  /__count 200 text/plain        how many times the app served any other
                  request (itself not counted), for the harness to check
                  against the load generator's completed requests
    anything else 404

Every response sets content-length.  The count lives in this process: every
server under test runs the app in one worker process, and the harness asks
the same server for it, so it works the same way for all of them.  Lifespan
is answered (startup and shutdown complete), so servers that insist on it
start and servers that tolerate its absence lose nothing.
"""

from __future__ import annotations

import json

PLAINTEXT = b"Hello, World!"
# Serialized per request; 51 bytes with json.dumps' default separators.
JSON_DOCUMENT = {"message": "Hello, World!", "items": [1, 2, 3, 4]}
JSON_BODY = json.dumps(JSON_DOCUMENT).encode()
POST_SIZE = 4096

_PLAIN_HEADERS = [(b"content-type", b"text/plain"), (b"content-length", b"13")]
_JSON_TYPE = (b"content-type", b"application/json")
_TEXT_TYPE = (b"content-type", b"text/plain")

# Requests served, /__count excluded.
calls = 0


async def _respond(send, status: int, headers: list, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _text(body: bytes) -> list:
    return [_TEXT_TYPE, (b"content-length", str(len(body)).encode())]


async def lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope, receive, send) -> None:
    global calls
    kind = scope["type"]
    if kind == "lifespan":
        await lifespan(receive, send)
        return
    if kind != "http":
        return
    path = scope["path"]
    method = scope["method"]
    if path == "/__count":
        await _respond(send, 200, _text(b"%d" % calls), b"%d" % calls)
        return
    calls += 1
    if path == "/" and method == "GET":
        await _respond(send, 200, _PLAIN_HEADERS, PLAINTEXT)
    elif path == "/json" and method == "GET":
        body = json.dumps({"message": "Hello, World!", "items": [1, 2, 3, 4]}).encode()
        await _respond(
            send, 200, [_JSON_TYPE, (b"content-length", str(len(body)).encode())], body
        )
    elif path == "/post" and method == "POST":
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"%d" % size
        await _respond(send, 200 if size == POST_SIZE else 400, _text(body), body)
    else:
        await _respond(send, 404, _text(b"not found"), b"not found")
