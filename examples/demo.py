"""ferroloop demo: a small asyncio program run on ferroloop, the demo ASGI
app (`examples/app.py`) served by ferroloop's native HTTP server and queried
over real sockets, then scheduling work measured on the stdlib loop and on
ferroloop as the benchmark suite measures it (fresh processes, alternating
rounds, medians, the ratio).

    cargo xtask demo          # installs the shipped build into .venv-demo and runs this
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import statistics
import subprocess
import sys
import threading
from pathlib import Path

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
    print("  serve it yourself: .venv-demo/bin/ferroloop examples.app:app  (then curl http://127.0.0.1:8000/)")


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


#: The comparison: scheduling work where the loop itself is most of the
#: cost, each workload as the benchmark suite defines and verifies it
#: (bench/sched_workloads.py), with its n.
WORKLOADS = (
    ("call_soon_chain", 200_000, "call_soon chain", "callbacks"),
    ("timer_schedule_cancel", 200_000, "timers scheduled and cancelled", "timers"),
    ("future_chain", 200_000, "future done-callback chain", "futures"),
)
ROUNDS = 5


def measure(loop: str, workload: str, n: int) -> float:
    """One measurement in a fresh process, by the benchmark suite's worker
    (warm-up, then the timed and verified run); operations per second."""
    worker = Path(__file__).resolve().parent.parent / "bench" / "sched_worker.py"
    done = subprocess.run(
        [sys.executable, str(worker), loop, workload, str(n)], capture_output=True, text=True, check=False
    )
    record = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    if record.get("status") != "ok":
        raise RuntimeError(f"{loop} {workload}: {record.get('error') or done.stderr.strip()}")
    return record["ops_per_s"]


def compare() -> None:
    print(
        f"\nstdlib asyncio against ferroloop: median of {ROUNDS} rounds, each loop in a fresh process per "
        "round, alternating (the method of `cargo xtask bench sched`):"
    )
    for workload, n, label, unit in WORKLOADS:
        rates: dict[str, list[float]] = {"asyncio": [], "ferroloop": []}
        ratios = []
        for round_no in range(ROUNDS):
            order = ("asyncio", "ferroloop") if round_no % 2 == 0 else ("ferroloop", "asyncio")
            got = {loop: measure(loop, workload, n) for loop in order}
            for loop, rate in got.items():
                rates[loop].append(rate)
            ratios.append(got["ferroloop"] / got["asyncio"])
        mine, theirs = statistics.median(rates["ferroloop"]), statistics.median(rates["asyncio"])
        print(
            f"  {label:32} asyncio {theirs / 1e6:5.2f} M {unit}/s   ferroloop {mine / 1e6:5.2f} M {unit}/s"
            f"   {statistics.median(ratios):4.1f}x (paired ratios {min(ratios):.1f}-{max(ratios):.1f})"
        )


if __name__ == "__main__":
    ferroloop.run(showcase())
    ferroloop.run(serve_demo_app())
    compare()
