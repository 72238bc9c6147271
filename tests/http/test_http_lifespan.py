"""Lifespan (auto/on/off, startup failure, state) and graceful shutdown
(drain in-flight requests, refuse new connections, close idle keep-alive
connections, then lifespan shutdown)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

import apps
import ferroloop
from http_support import connect_refused, request_bytes, wait_until


def lifespan_app(events, state_init=None, fail_startup=None, fail_shutdown=None):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            events.append(("scope", scope["type"], sorted(scope.get("asgi", {}))))
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await asyncio.sleep(0.2)  # started must wait for this
                    if fail_startup:
                        events.append("startup-failed")
                        await send({"type": "lifespan.startup.failed", "message": fail_startup})
                        return
                    if state_init is not None:
                        scope["state"].update(state_init)
                    events.append("startup")
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    events.append("shutdown")
                    if fail_shutdown:
                        await send({"type": "lifespan.shutdown.failed", "message": fail_shutdown})
                    else:
                        await send({"type": "lifespan.shutdown.complete"})
                    return
        elif scope["type"] == "http":
            events.append(("request", scope["path"]))
            if scope["path"] == "/state":
                state = scope["state"]
                body = f"{state.get('n')} {len(state.get('items', []))}".encode()
                state["n"] = "changed-by-request"
                state.setdefault("items", []).append("x")
                state["new-key"] = 1
                await apps.respond(send, 200, body)
                return
            await apps.app(scope, receive, send)

    return app


def run_serve(app, timeout=10.0, **config):
    """Run ``serve()`` to completion in a thread; (started, error)."""
    server = ferroloop.Server(ferroloop.Config(app, port=0, **config))
    outcome = {}

    def target():
        try:
            outcome["result"] = ferroloop.run(server.serve())
        except BaseException as exc:  # noqa: BLE001
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        server.should_exit = True
        thread.join(5)
        raise AssertionError("serve() still running: the startup failure did not stop the server")
    return server, outcome


def test_lifespan_startup_then_shutdown(start_server):
    events = []
    srv = start_server(lifespan_app(events), lifespan="on")
    assert events[-1] == "startup", "started must be True only after lifespan startup completed"
    assert httpx.get(f"{srv.url}/").status_code == 200
    srv.stop()
    assert events[0][:2] == ("scope", "lifespan")
    assert "version" in events[0][2]
    assert events[1:] == ["startup", ("request", "/"), "shutdown"]


def test_lifespan_auto_runs_it_when_supported(start_server):
    events = []
    srv = start_server(lifespan_app(events))
    assert "startup" in events
    srv.stop()
    assert events[-1] == "shutdown"


def test_lifespan_state_is_shallow_copied_per_request(start_server):
    events = []
    srv = start_server(lifespan_app(events, state_init={"n": "one", "items": []}))
    with httpx.Client() as client:
        first = client.get(f"{srv.url}/state").text
        second = client.get(f"{srv.url}/state").text
    # Rebinding a key in one request's state does not leak into the next;
    # mutating a shared value does (shallow copy, like uvicorn).
    assert first == "one 0"
    assert second == "one 1"


def test_lifespan_state_in_scope(start_server):
    events = []
    srv = start_server(lifespan_app(events, state_init={"db": "connected"}))
    scope = httpx.get(f"{srv.url}/scope").json()
    assert scope["state"]["db"] == "connected"


def test_lifespan_startup_failure_stops_server():
    events = []
    server, outcome = run_serve(lifespan_app(events, fail_startup="database unreachable"), lifespan="on")
    assert not server.started
    assert isinstance(outcome.get("error"), (Exception, SystemExit)), (
        f"serve() must raise when lifespan startup fails, got {outcome}"
    )
    assert "request" not in str(events)
    assert "shutdown" not in events


def test_lifespan_startup_failure_in_auto_mode_also_stops_server():
    """An app that explicitly reports lifespan.startup.failed supports the
    protocol: auto mode does not continue without it."""
    events = []
    server, outcome = run_serve(lifespan_app(events, fail_startup="nope"))
    assert not server.started
    assert "error" in outcome


def test_lifespan_on_with_app_raising_stops_server():
    server, outcome = run_serve(apps.no_lifespan_app, lifespan="on")
    assert not server.started
    assert "error" in outcome


def test_lifespan_auto_with_app_raising_continues_without(start_server):
    srv = start_server(apps.no_lifespan_app, lifespan="auto")
    assert httpx.get(f"{srv.url}/").text == "hello, world"
    scope = httpx.get(f"{srv.url}/scope").json()
    assert scope.get("state", {}) == {}


def test_lifespan_off_never_calls_lifespan(start_server):
    events = []
    srv = start_server(lifespan_app(events), lifespan="off")
    assert httpx.get(f"{srv.url}/").status_code == 200
    srv.stop()
    assert events == [("request", "/")]


def test_lifespan_shutdown_failure_still_stops(start_server):
    events = []
    srv = start_server(lifespan_app(events, fail_shutdown="could not flush"))
    srv.request_stop()
    srv.thread.join(10)
    assert not srv.thread.is_alive()
    srv.stopped = True
    assert events[-1] == "shutdown"


def test_lifespan_startup_timeout_free_slow_startup(start_server):
    """A slow startup delays started (and listening) but works."""
    events = []
    begun = time.monotonic()
    srv = start_server(lifespan_app(events))
    assert time.monotonic() - begun >= 0.2
    assert httpx.get(f"{srv.url}/").status_code == 200


# --------------------------------------------------------------------------
# Graceful shutdown


def test_graceful_drain_with_request_in_flight(start_server):
    events = []
    in_app = threading.Event()
    release = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/slow":
            events.append("request-start")
            in_app.set()
            while not release.is_set():
                await asyncio.sleep(0.01)
            events.append("request-end")
            await apps.respond(send, 200, b"finished")
            return
        await lifespan_app(events)(scope, receive, send)

    srv = start_server(app, lifespan="on")
    idle = srv.raw()
    idle.send(request_bytes("GET", "/"))
    assert idle.read_response().status == 200

    busy = srv.raw()
    busy.send(request_bytes("GET", "/slow"))
    assert in_app.wait(5)

    srv.request_stop()
    # New connections are refused once shutdown began...
    wait_until(lambda: connect_refused(srv.port), timeout=5, message="still accepting after should_exit")
    # ...idle keep-alive connections are closed...
    assert idle.wait_closed(5.0), "idle keep-alive connection not closed on shutdown"
    idle.close()
    # ...while the in-flight request is still allowed to finish...
    time.sleep(0.3)
    assert srv.thread.is_alive()
    assert "shutdown" not in events
    release.set()
    response = busy.read_response()
    assert (response.status, response.body) == (200, b"finished")
    assert busy.wait_closed(5.0), "connection kept alive after the drained response"
    busy.close()
    # ...and lifespan shutdown runs only after it.
    srv.thread.join(10)
    assert not srv.thread.is_alive()
    srv.stop()
    assert events[-3:] == ["request-start", "request-end", "shutdown"]


def test_graceful_shutdown_timeout_cancels_stuck_request(start_server):
    events = []
    cancelled = threading.Event()
    in_app = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] == "http":
            in_app.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return
        await lifespan_app(events)(scope, receive, send)

    srv = start_server(app, timeout_graceful_shutdown=0.5)
    conn = srv.raw()
    conn.send(request_bytes("GET", "/"))
    assert in_app.wait(5)
    begun = time.monotonic()
    srv.request_stop()
    srv.thread.join(10)
    assert not srv.thread.is_alive()
    assert time.monotonic() - begun < 5.0
    srv.stop()
    assert cancelled.is_set(), "the stuck request task was not cancelled"
    assert conn.wait_closed(3.0)
    conn.close()
    assert events[-1] == "shutdown"


def test_shutdown_with_no_connections_is_prompt(start_server):
    srv = start_server(apps.app)
    begun = time.monotonic()
    srv.stop()
    assert time.monotonic() - begun < 2.0


def test_shutdown_while_client_streams_request_body(start_server):
    """A request still uploading its body is in flight, not idle."""
    srv = start_server(apps.app, timeout_graceful_shutdown=5)
    conn = srv.raw()
    conn.send(request_bytes("POST", "/echo", headers=[("Content-Length", "6")]) + b"abc")
    time.sleep(0.2)
    srv.request_stop()
    time.sleep(0.3)
    conn.send(b"def")
    response = conn.read_response()
    assert (response.status, response.body) == (200, b"abcdef")
    conn.close()
    srv.stop()
