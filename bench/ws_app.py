"""The WebSocket suite's application (bench/README.md, "WebSocket suite"):
raw ASGI 3, no framework.

    websocket (any path)  accept, then echo every message as it came: bytes
                          as bytes, text as text, until websocket.disconnect
    GET /__count          200 text/plain: how many messages the app echoed,
                          for the harness to check against the client's count
    anything else (http)  404

The count lives in this process (every server under test runs the app in
one worker process).  Lifespan is answered as by the HTTP suite's app.
"""

from __future__ import annotations

from http_app import lifespan

# Messages echoed, over every connection.
echoed = 0

_TEXT = (b"content-type", b"text/plain")


async def _http(scope, send) -> None:
    if scope["path"] == "/__count":
        status, body = 200, b"%d" % echoed
    else:
        status, body = 404, b"not found"
    headers = [_TEXT, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _echo(receive, send) -> None:
    global echoed
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return  # websocket.disconnect
        echoed += 1
        text = message.get("text")
        if text is not None:
            await send({"type": "websocket.send", "text": text})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


async def app(scope, receive, send) -> None:
    kind = scope["type"]
    if kind == "websocket":
        await _echo(receive, send)
    elif kind == "http":
        await _http(scope, send)
    elif kind == "lifespan":
        await lifespan(receive, send)
