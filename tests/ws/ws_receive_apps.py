"""The apps of test_ws_receive.py: receive() under wait_for, asyncio.timeout,
cancellation, create_task/ensure_future/gather, two at once, and after
websocket.disconnect. Each reports what it saw over the WebSocket (text
frames), then echoes one more message to show the session is intact.
Served as `ws_receive_apps:app`."""

from __future__ import annotations

import asyncio

from ws_apps import record

# What the apps wait for before giving up on a receive(): the client sends
# nothing then, so the timeout fires whatever the machine's speed.
QUIET = 0.2


async def _accept(receive, send) -> None:
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})


async def _echo_one(receive, send) -> None:
    message = await receive()
    await send({"type": "websocket.send", "bytes": message.get("bytes"), "text": message.get("text")})


async def _wait_for(receive, send) -> None:
    try:
        await asyncio.wait_for(receive(), QUIET)
        await send({"type": "websocket.send", "text": "no timeout"})
    except asyncio.TimeoutError:
        await send({"type": "websocket.send", "text": "timeout"})
    await _echo_one(receive, send)


async def _timeout_scope(receive, send) -> None:
    # The app's own task is cancelled while it awaits receive() directly.
    try:
        async with asyncio.timeout(QUIET):
            await receive()
        await send({"type": "websocket.send", "text": "no timeout"})
    except TimeoutError:
        await send({"type": "websocket.send", "text": "timeout"})
    await _echo_one(receive, send)


async def _cancel_task(receive, send) -> None:
    task = asyncio.ensure_future(receive())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await send({"type": "websocket.send", "text": f"cancelled={task.cancelled()}"})
    await _echo_one(receive, send)


async def _cancel_direct(receive, send) -> None:
    # Another task cancels the app's task while it awaits receive().
    me = asyncio.current_task()
    waiting = asyncio.get_running_loop().create_future()

    async def canceller():
        await waiting
        me.cancel("from a sibling")

    sibling = asyncio.ensure_future(canceller())
    asyncio.get_running_loop().call_soon(waiting.set_result, None)
    try:
        await receive()
        outcome = "received"
    except asyncio.CancelledError as e:
        outcome = f"cancelled {e.args!r}"
        me.uncancel()
    await sibling
    await send({"type": "websocket.send", "text": outcome})
    await _echo_one(receive, send)


async def _create_task(receive, send) -> None:
    task = asyncio.create_task(receive())
    await send({"type": "websocket.send", "text": "ready"})
    message = await task
    await send({"type": "websocket.send", "bytes": message["bytes"]})


async def _ensure_future(receive, send) -> None:
    future = asyncio.ensure_future(receive())
    await send({"type": "websocket.send", "text": "ready"})
    message = await future
    await send({"type": "websocket.send", "bytes": message["bytes"]})


async def _gather(receive, send) -> None:
    # gather wraps the awaitable in a task of its own.
    await send({"type": "websocket.send", "text": "ready"})
    (message,) = await asyncio.gather(receive())
    await send({"type": "websocket.send", "bytes": message["bytes"]})


async def _two_pending(receive, send) -> None:
    first = asyncio.ensure_future(receive())
    await asyncio.sleep(0)
    try:
        await receive()
        outcome = "second delivered"
    except RuntimeError as e:
        outcome = f"RuntimeError: {e}"
    await send({"type": "websocket.send", "text": outcome})
    message = await first
    await send({"type": "websocket.send", "bytes": message["bytes"]})


async def _after_disconnect(conn, receive, send) -> None:
    while (message := await receive())["type"] != "websocket.disconnect":
        pass
    record(conn, "disconnect", code=message["code"])
    for how in ("await", "task"):
        try:
            if how == "await":
                await receive()
            else:
                await asyncio.ensure_future(receive())
            record(conn, "after", how=how, outcome="delivered")
        except OSError as e:
            record(conn, "after", how=how, outcome=type(e).__name__)


ROUTES = {
    "/wait-for": _wait_for,
    "/timeout-scope": _timeout_scope,
    "/cancel-task": _cancel_task,
    "/cancel-direct": _cancel_direct,
    "/create-task": _create_task,
    "/ensure-future": _ensure_future,
    "/gather": _gather,
    "/two-pending": _two_pending,
}


async def app(scope, receive, send):
    if scope["type"] != "websocket":
        return
    conn = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p).get("id", "?")
    await _accept(receive, send)
    try:
        if scope["path"] == "/after-disconnect":
            await _after_disconnect(conn, receive, send)
        else:
            await ROUTES[scope["path"]](receive, send)
    finally:
        record(conn, "done")
