"""A client that leaves in the middle of a response is not an application
error: the real `ferroloop` command serving Starlette and FastAPI apps
(streaming, server-sent events, a plain response whose body cannot be sent,
a WebSocket whose client vanishes) logs no ERROR and no traceback for it,
counts it in `ferroloop_client_disconnects_total` (not in
`ferroloop_app_exceptions_total`), and writes the request's access line with
the status that was sent. An app error while the client is still there is
still an ERROR with its traceback."""

from __future__ import annotations

import socket
import textwrap
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from cli_support import free_port

APPS = '''
import asyncio

from fastapi import FastAPI
from fastapi.responses import StreamingResponse as FastAPIStreaming
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route, WebSocketRoute

STARTED = {}


async def _lines(prefix):
    for i in range(10_000):
        yield f"{prefix} {i}\\n".encode() * 64
        await asyncio.sleep(0.005)


async def stream(request):
    return StreamingResponse(_lines("line"), media_type="text/plain")


async def events(request):
    async def sse():
        for i in range(10_000):
            yield f"event: tick\\ndata: {i}\\n\\n"
            await asyncio.sleep(0.005)

    return StreamingResponse(sse(), media_type="text/event-stream")


async def slow_plain(request):
    # The client has gone by the time the response is sent.
    await asyncio.sleep(0.5)
    return PlainTextResponse("late " * 100_000)


async def boom(request):
    raise RuntimeError("a genuine application error")


async def ticker(websocket):
    await websocket.accept()
    while True:
        await websocket.send_text("tick " * 1000)
        await asyncio.sleep(0.005)


starlette_app = Starlette(
    routes=[
        Route("/stream", stream),
        Route("/events", events),
        Route("/slow", slow_plain),
        Route("/boom", boom),
        WebSocketRoute("/ws", ticker),
    ]
)

fastapi_app = FastAPI()


@fastapi_app.get("/stream")
async def fastapi_stream():
    return FastAPIStreaming(_lines("fastapi"), media_type="text/plain")
'''


def metrics(port: int) -> dict[str, float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10.0).text
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


def serve(ferroloop_cmd, tmp_path, app: str):
    (tmp_path / "disconnect_apps.py").write_text(textwrap.dedent(APPS))
    port, metrics_port = free_port(), free_port()
    child = ferroloop_cmd(
        f"disconnect_apps:{app}", "--port", str(port), "--metrics-port", str(metrics_port),
        port=port, cwd=tmp_path,
    )
    # The app's port accepts (into its backlog) from the moment it listens,
    # before the metrics listener starts; "running on" comes after both.
    child.wait_for_output("running on")
    return child, port, metrics_port


def hang_up_mid_stream(port: int, path: str) -> bytes:
    """Read the head and some body, then leave (a close, as a browser tab
    that is closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        got = b""
        while len(got) < 20_000:
            data = s.recv(65536)
            assert data, got
            got += data
    return got


def wait_for(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def assert_quiet(output: str) -> None:
    assert "ERROR" not in output and "Traceback" not in output, output
    assert "Exception in ASGI application" not in output, output


def test_streaming_clients_that_leave_are_client_disconnects(ferroloop_cmd, tmp_path):
    child, port, metrics_port = serve(ferroloop_cmd, tmp_path, "starlette_app")
    for path in ("/stream", "/events"):
        assert hang_up_mid_stream(port, path).startswith(b"HTTP/1.1 200 OK\r\n")
    assert wait_for(lambda: metrics(metrics_port)["ferroloop_client_disconnects_total"] >= 2)
    sample = metrics(metrics_port)
    assert sample["ferroloop_client_disconnects_total"] == 2
    assert sample["ferroloop_app_exceptions_total"] == 0
    output = child.output()
    assert_quiet(output)
    # The access log still shows each request, with the status it got.
    assert '"GET /stream HTTP/1.1" 200 OK' in output, output
    assert '"GET /events HTTP/1.1" 200 OK' in output, output
    assert child.stop() == 0


def test_fastapi_streaming_client_that_leaves(ferroloop_cmd, tmp_path):
    child, port, metrics_port = serve(ferroloop_cmd, tmp_path, "fastapi_app")
    hang_up_mid_stream(port, "/stream")
    assert wait_for(lambda: metrics(metrics_port)["ferroloop_client_disconnects_total"] == 1)
    assert metrics(metrics_port)["ferroloop_app_exceptions_total"] == 0
    assert_quiet(child.output())
    assert '"GET /stream HTTP/1.1" 200 OK' in child.output()


def test_a_plain_response_whose_client_left_before_it_was_sent(ferroloop_cmd, tmp_path):
    child, port, metrics_port = serve(ferroloop_cmd, tmp_path, "starlette_app")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    assert wait_for(lambda: metrics(metrics_port)["ferroloop_client_disconnects_total"] == 1)
    assert metrics(metrics_port)["ferroloop_app_exceptions_total"] == 0
    assert_quiet(child.output())


def test_a_websocket_client_that_vanishes(ferroloop_cmd, tmp_path):
    child, port, metrics_port = serve(ferroloop_cmd, tmp_path, "starlette_app")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        got = b""
        while len(got) < 20_000:
            data = s.recv(65536)
            assert data, got
            got += data
        assert got.startswith(b"HTTP/1.1 101 ")
        # Gone without a close frame.
    assert wait_for(lambda: metrics(metrics_port)["ferroloop_websocket_sessions_open"] == 0)
    time.sleep(0.3)  # the app's task ends after the session does
    assert metrics(metrics_port)["ferroloop_app_exceptions_total"] == 0
    assert_quiet(child.output())


def test_an_app_error_with_the_client_still_there_is_an_error(ferroloop_cmd, tmp_path):
    child, port, metrics_port = serve(ferroloop_cmd, tmp_path, "starlette_app")
    assert httpx.get(f"http://127.0.0.1:{port}/boom", timeout=10).status_code == 500
    assert wait_for(lambda: "a genuine application error" in child.output())
    output = child.output()
    assert "ERROR:    Exception in ASGI application" in output, output
    assert "Traceback" in output and "RuntimeError: a genuine application error" in output, output
    sample = metrics(metrics_port)
    assert sample["ferroloop_app_exceptions_total"] == 1
    assert sample["ferroloop_client_disconnects_total"] == 0
