"""The demo ASGI app (raw ASGI 3, no framework), served by ferroloop:

    ferroloop examples.app:app                 # http://127.0.0.1:8000
    python -m ferroloop examples.app:app --port 8080 --access-log

Routes: `/` text, `/json` JSON, `/echo` (POST: streams the request body
back, chunked), `/stream` (a streamed, chunked response), `/state` (what
lifespan startup stored), and the WebSocket `/ws`: an echo (text back as
text, bytes as bytes) that answers "stats" with how many messages it saw.
Anything else is a 404 (a WebSocket elsewhere is refused: HTTP 403).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            scope["state"]["started_at"] = time.time()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def respond(send: Any, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def websocket_echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    message = await receive()
    assert message["type"] == "websocket.connect"
    if scope["path"] != "/ws":
        await send({"type": "websocket.close"})  # before accept: HTTP 403
        return
    await send({"type": "websocket.accept"})
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        seen += 1
        if message.get("text") == "stats":
            await send({"type": "websocket.send", "text": f"{seen} messages so far"})
        elif message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        return await lifespan(scope, receive, send)
    if scope["type"] == "websocket":
        return await websocket_echo(scope, receive, send)
    assert scope["type"] == "http"
    path, method = scope["path"], scope["method"]
    if path == "/":
        loop = type(asyncio.get_running_loop())
        await respond(send, 200, f"Hello from ferroloop ({loop.__module__}.{loop.__qualname__})\n".encode(), b"text/plain")
    elif path == "/json":
        client = scope["client"][0] if scope["client"] else None
        body = json.dumps({"path": path, "query": scope["query_string"].decode(), "client": client}).encode()
        await respond(send, 200, body, b"application/json")
    elif path == "/echo" and method == "POST":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/octet-stream")]})
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            more = message.get("more_body", False)
            await send({"type": "http.response.body", "body": message.get("body", b""), "more_body": more})
    elif path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for i in range(5):
            await send({"type": "http.response.body", "body": f"chunk {i}\n".encode(), "more_body": True})
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b""})
    elif path == "/state":
        await respond(send, 200, json.dumps({"started_at": scope["state"].get("started_at")}).encode(), b"application/json")
    else:
        await respond(send, 404, b"Not Found\n", b"text/plain")
