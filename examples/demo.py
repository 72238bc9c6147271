"""ferroloop demo: a small asyncio program run on ferroloop, the demo ASGI
app (`examples/app.py`) served by ferroloop's native HTTP server and queried
over real sockets, then the same scheduling work timed on ferroloop and on
the stdlib loop side by side.

    cargo xtask demo          # builds ferroloop into .venv and runs this
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import ferroloop

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


async def worker(name: str, queue: asyncio.Queue[int], results: list[str]) -> None:
    request_id.set(name)
    while True:
        item = await queue.get()
        await asyncio.sleep(0.001 * (item % 3))
        results.append(f"{request_id.get()}:{item}")
        queue.task_done()


async def showcase() -> None:
    loop = asyncio.get_running_loop()
    print(f"running on {type(loop).__module__}.{type(loop).__qualname__} (poller: {loop._poller_backend})")

    queue: asyncio.Queue[int] = asyncio.Queue()
    results: list[str] = []
    async with asyncio.TaskGroup() as tg:
        workers = [tg.create_task(worker(f"w{i}", queue, results)) for i in range(4)]
        for item in range(20):
            queue.put_nowait(item)
        await queue.join()
        for w in workers:
            w.cancel()
    print(f"task group: 4 workers handled {len(results)} items, e.g. {results[:3]}")

    total = await loop.run_in_executor(None, sum, range(1_000_000))
    print(f"run_in_executor: sum(range(1e6)) = {total}")

    done = loop.create_future()
    threading.Thread(target=lambda: loop.call_soon_threadsafe(done.set_result, "hello from a thread")).start()
    print(f"call_soon_threadsafe: {await done}")

    try:
        async with asyncio.timeout(0.05):
            await asyncio.sleep(10)
    except TimeoutError:
        print("asyncio.timeout: a 10 s sleep was cut off after 50 ms")


async def serve_demo_app() -> None:
    """Serve examples/app.py with ferroloop's own server and query it."""
    import httpx

    from app import app

    server = ferroloop.Server(ferroloop.Config(app, port=0, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    base = "http://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
    async with httpx.AsyncClient(base_url=base) as client:
        for response in await asyncio.gather(client.get("/"), client.get("/json?x=1"), client.get("/stream")):
            text = response.text.strip().replace("\n", " | ")
            print(f"GET {response.request.url.raw_path.decode():10} {response.status_code} {text}")
        upload = b"x" * (1 << 20)
        echoed = await client.post("/echo", content=upload)
        print(f"POST /echo (1 MiB, streamed back chunked): {echoed.status_code}, {len(echoed.content)} bytes, intact: {echoed.content == upload}")
    await websocket_demo(base.replace("http://", "ws://") + "/ws")
    server.should_exit = True
    await serving
    print("  serve it yourself: .venv/bin/ferroloop examples.app:app  (then curl http://127.0.0.1:8000/)")


async def websocket_demo(url: str) -> None:
    """The app's WebSocket echo, with the `websockets` client (permessage-deflate on)."""
    from websockets.asyncio.client import connect

    async with connect(url) as ws:
        extensions = ws.response.headers.get("sec-websocket-extensions", "none")
        await ws.send("hello")
        text = await ws.recv()
        blob = bytes(range(256)) * 4096
        await ws.send(blob)
        echoed = await ws.recv()
        await ws.send("stats")
        stats = await ws.recv()
    print(f"WebSocket /ws: text {text!r}, 1 MiB binary intact: {echoed == blob}, {stats!r}; extensions: {extensions}")
    print(f"  closed with code {ws.close_code}")


def chain(loop: asyncio.AbstractEventLoop, n: int) -> float:
    """n callbacks, each scheduling the next with call_soon; ops/s."""
    count = 0

    def step() -> None:
        nonlocal count
        count += 1
        if count < n:
            loop.call_soon(step)
        else:
            loop.stop()

    loop.call_soon(step)
    start = time.perf_counter()
    loop.run_forever()
    return n / (time.perf_counter() - start)


async def fib(k: int) -> int:
    if k < 2:
        return k
    a, b = await asyncio.gather(fib(k - 1), fib(k - 2))
    return a + b


def compare() -> None:
    print("\nsame work, stdlib asyncio vs ferroloop (one run each; see `cargo xtask bench` for the method):")
    for label, factory in (("asyncio", asyncio.new_event_loop), ("ferroloop", ferroloop.new_event_loop)):
        loop = factory()
        try:
            rate = chain(loop, 200_000)
            start = time.perf_counter()
            assert loop.run_until_complete(fib(18)) == 2584
            fib_time = time.perf_counter() - start
        finally:
            loop.close()
        print(f"  {label:10} call_soon chain {rate / 1e6:5.2f} M callbacks/s   fib(18) with tasks {fib_time * 1000:6.1f} ms")


if __name__ == "__main__":
    ferroloop.run(showcase())
    ferroloop.run(serve_demo_app())
    compare()
