"""Many sessions at once: a broadcast to many connections, 1,000
concurrent connections each echoing, abrupt resets in bulk."""

from __future__ import annotations

import asyncio
import resource

import pytest
from websockets.asyncio.client import connect as async_connect

from ws_support import wait_until

CONCURRENT = 1000


def _raise_own_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"ulimit -n is {hard}: {CONCURRENT} connections need {needed}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_broadcast_to_many_connections(ws_server):
    srv = ws_server()
    n = 50

    async def main():
        clients = [await async_connect(srv.ws_url("/broadcast", conn=f"b{i}")) for i in range(n)]
        try:
            # Every one registered before the broadcast.
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: [srv.events.wait(f"b{i}", "registered") for i in range(n)]
            )
            await clients[7].send("all:news for everyone")
            received = await asyncio.gather(*(asyncio.wait_for(c.recv(), 30) for c in clients))
            assert received == ["news for everyone"] * n
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    asyncio.run(main())
    for i in range(n):
        assert [e["code"] for e in srv.events.wait_done(f"b{i}") if e["event"] == "disconnect"] == [1000]


def test_thousand_concurrent_connections(ws_server):
    _raise_own_fd_limit(CONCURRENT * 2 + 200)
    srv = ws_server()

    async def session(i: int, ready: asyncio.Event, opened: list):
        async with async_connect(srv.ws_url(conn=f"k{i}"), open_timeout=60, compression=None, ping_interval=None) as ws:
            opened.append(i)
            if len(opened) == CONCURRENT:
                ready.set()
            # All open at once before anyone talks.
            await asyncio.wait_for(ready.wait(), 120)
            for j in range(3):
                await ws.send(f"{i}:{j}")
                assert await asyncio.wait_for(ws.recv(), 60) == f"{i}:{j}"

    async def main():
        ready = asyncio.Event()
        opened: list = []
        # Opened in batches so the listen backlog is not the test.
        tasks = []
        for start in range(0, CONCURRENT, 100):
            tasks += [asyncio.create_task(session(i, ready, opened)) for i in range(start, start + 100)]
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)

    asyncio.run(main())
    wait_until(lambda: sum(1 for e in srv.events.all() if e["event"] == "done") == CONCURRENT, timeout=60)
    assert sum(1 for e in srv.events.all() if e["event"] == "disconnect") == CONCURRENT


def test_abrupt_resets_in_bulk_leave_the_server_serving(ws_server):
    srv = ws_server()
    clients = [srv.raw(conn=f"x{i}") for i in range(100)]
    for i, ws in enumerate(clients):
        ws.send_text("x" * i)
    for ws in clients:
        ws.reset()
    wait_until(lambda: sum(1 for e in srv.events.all() if e["event"] == "disconnect") == 100, timeout=60)
    for i in range(100):
        assert len(srv.events.of(f"x{i}", "disconnect")) == 1
    ws = srv.raw(conn="after")
    ws.send_text("still serving")
    assert ws.recv_message() == (0x1, b"still serving")
    ws.close()
