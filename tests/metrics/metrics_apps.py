"""The app the metrics tests send known traffic to (served by a child
``python -m ferroloop tests.metrics.metrics_apps:app``)."""

from __future__ import annotations


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "websocket":
        await _echo(receive, send)
        return
    path = scope["path"]
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    if path == "/slow":
        # Held until the client leaves: a slot of limit_concurrency taken.
        while (await receive())["type"] != "http.disconnect":
            pass
        return
    if path == "/":
        status, reply = 200, b"Hello, World!"
    elif path == "/echo" and scope["method"] == "POST":
        status, reply = 200, body
    else:
        status, reply = 404, b"not found"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(reply)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": reply})


async def _echo(receive, send):
    message = await receive()
    assert message["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})
