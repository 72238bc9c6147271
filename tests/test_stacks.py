"""Networking stacks users run on a loop: uvicorn (embedded and its CLI with
``--loop ferroloop:new_event_loop``), aiohttp server and client, the httpx
async client and anyio's TCP streams — each on asyncio and on ferroloop."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import aiohttp
import anyio
import httpx
import pytest
import uvicorn
from aiohttp import web

from _helpers import free_port


async def asgi_app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    loop_module = type(asyncio.get_running_loop()).__module__.split(".")[0]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": loop_module.encode() + b":" + body})


def test_uvicorn_embedded_with_httpx_and_aiohttp_clients(loop, loop_impl):
    async def main():
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(asgi_app, host="127.0.0.1", port=port, log_level="warning", loop="none"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            async with httpx.AsyncClient() as client:
                first = await client.post(f"http://127.0.0.1:{port}/", content=b"x" * 100_000)
            async with aiohttp.ClientSession() as session:
                async with session.post(f"http://127.0.0.1:{port}/", data=b"aio") as response:
                    second = (response.status, await response.text())
        finally:
            server.should_exit = True
            await serving
        return first, second

    first, second = loop.run_until_complete(main())
    expected_loop = loop_impl.__name__
    assert first.status_code == 200
    assert first.text == f"{expected_loop}:" + "x" * 100_000
    assert second == (200, f"{expected_loop}:aio")


def test_aiohttp_server(loop):
    async def hello(request):
        return web.Response(text="hello from aiohttp " + request.match_info["name"])

    async def main():
        app = web.Application()
        app.router.add_get("/{name}", hello)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        try:
            async with httpx.AsyncClient() as client:
                responses = await asyncio.gather(*[client.get(f"http://127.0.0.1:{port}/n{i}") for i in range(20)])
        finally:
            await runner.cleanup()
        return [r.text for r in responses]

    assert loop.run_until_complete(main()) == [f"hello from aiohttp n{i}" for i in range(20)]


def test_anyio_tcp_streams(loop_impl):
    async def main():
        async def serve(stream):
            async with stream:
                data = await stream.receive()
                await stream.send(data[::-1])

        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            async with await anyio.connect_tcp("127.0.0.1", port) as client:
                await client.send(b"anyio")
                reply = await client.receive()
            tg.cancel_scope.cancel()
        return reply

    reply = anyio.run(main, backend="asyncio", backend_options={"loop_factory": loop_impl.new_event_loop})
    assert reply == b"oiyna"


def test_uvicorn_cli_with_the_ferroloop_loop(tmp_path):
    """`uvicorn --loop ferroloop:new_event_loop` serves on a ferroloop loop."""
    (tmp_path / "app.py").write_text(
        "import asyncio\n"
        "async def app(scope, receive, send):\n"
        "    if scope['type'] != 'http':\n"
        "        return\n"
        "    name = type(asyncio.get_running_loop()).__module__\n"
        "    await send({'type': 'http.response.start', 'status': 200, 'headers': []})\n"
        "    await send({'type': 'http.response.body', 'body': name.encode()})\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--loop", "ferroloop:new_event_loop", "--port", str(port),
         "--log-level", "info", "app:app"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert response.status_code == 200
        assert response.text.startswith("ferroloop")
    finally:
        proc.terminate()
        _, log = proc.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert proc.returncode in (0, -signal.SIGTERM)
    assert "Finished server process" in log
