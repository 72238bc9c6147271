"""ferroloop demo: a small asyncio program run on ferroloop, a demo ASGI
app served on a ferroloop loop (by uvicorn until ferroloop's own HTTP server
lands) and queried over real sockets, then the same scheduling work timed on
ferroloop and on the stdlib loop side by side.

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


async def demo_app(scope, receive, send) -> None:
    """The demo ASGI app: says which loop served the request."""
    if scope["type"] != "http":
        return
    loop = asyncio.get_running_loop()
    body = f"Hello from {type(loop).__module__}: {scope['method']} {scope['path']}\n".encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def serve_demo_app() -> None:
    import httpx
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(demo_app, host="127.0.0.1", port=0, log_level="warning", loop="none"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    async with httpx.AsyncClient() as client:
        responses = await asyncio.gather(*(client.get(f"http://127.0.0.1:{port}/item/{i}") for i in range(3)))
    for response in responses:
        print(f"ASGI app on ferroloop: {response.status_code} {response.text.strip()}")
    server.should_exit = True
    await serving


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
