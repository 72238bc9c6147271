"""The toolkit suite's workloads: ferroloop.toolkit against the other ways
Python programs move data between loops and threads.

Each workload lists its implementations (the suite's contenders): "ferroloop"
(the toolkit's Channel, select or pool), "janus" and "culsans" (their
queues: async side on a loop, sync side in a thread), "rcts"
(`asyncio.run_coroutine_threadsafe` + `asyncio.wrap_future`, to a ferroloop
or, as "rcts-asyncio", a stdlib loop in a thread), "asyncio.Queue" and
"ferroloop.Queue" where the workload stays on one loop. The "floor"
workload is two plain threads answering each other through pipes: the least
a cross-thread round trip costs (two wake-ups, two GIL hand-offs). Async sides run on
ferroloop's loop. Every function returns the elapsed seconds of the measured
part and verifies its result: every item received once, in order where the
workload has an order.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


class VerificationError(Exception):
    """The workload's result is wrong."""


def verify(ok: bool, message: str) -> None:
    if not ok:
        raise VerificationError(message)


def new_loop() -> asyncio.AbstractEventLoop:
    import ferroloop

    return ferroloop.new_event_loop()


def _run(main) -> float:
    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(main())


def _thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def _loop_in_thread(factory) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = factory()
    return loop, _thread(loop.run_forever)


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


# --- queues with an async side and a sync side ------------------------------


def _queues(impl: str, maxsize: int = 0):
    """Two-sided queue of `impl`: (async put, async get, sync put, sync get, close)."""
    if impl == "ferroloop":
        from ferroloop.toolkit import Channel

        ch = Channel(maxsize)
        return ch.send, ch.recv, ch.send_sync, ch.recv_sync, ch
    if impl == "janus":
        import janus

        q = janus.Queue(maxsize)
        return q.async_q.put, q.async_q.get, q.sync_q.put, q.sync_q.get, q
    if impl != "culsans":
        raise ValueError(f"no two-sided queue for {impl!r}")
    import culsans

    q = culsans.Queue(maxsize)
    return q.async_q.put, q.async_q.get, q.sync_q.put, q.sync_q.get, q


def thread_pingpong(impl: str, n: int) -> float:
    """The loop sends i and awaits i + 1; a plain thread blocks for i and
    answers i + 1."""

    async def main() -> float:
        there, back = _queues(impl), _queues(impl)
        return await _pingpong(there[0], back[1], there[3], back[2], n)

    return _run(main)


async def _round_trips(n: int, ask) -> float:
    """`await ask(i)` must give i + 1, for i in range(n); the seconds taken."""
    start = time.perf_counter()
    for i in range(n):
        reply = await ask(i)
        if reply != i + 1:
            raise VerificationError(f"round trip {i} answered {reply}")
    return time.perf_counter() - start


def _asker(put, get):
    async def ask(i: int):
        await put(i)
        return await get()

    return ask


async def _pingpong(put, get, sync_get, sync_put, n: int) -> float:
    def echo() -> None:
        for _ in range(n):
            sync_put(sync_get() + 1)

    thread = _thread(echo)
    elapsed = await _round_trips(n, _asker(put, get))
    thread.join(10)
    return elapsed


def floor_pingpong(n: int) -> float:
    """Two plain threads answering through two pipes: os.read blocks with
    the GIL released, os.write wakes the reader."""
    there_r, there_w = os.pipe()
    back_r, back_w = os.pipe()

    def echo() -> None:
        for _ in range(n):
            os.write(back_w, os.read(there_r, 1))

    thread = _thread(echo)
    try:
        start = time.perf_counter()
        for i in range(n):
            byte = bytes((i & 0xFF,))
            os.write(there_w, byte)
            verify(os.read(back_r, 1) == byte, f"round trip {i} answered wrong")
        elapsed = time.perf_counter() - start
        thread.join(10)
    finally:
        for fd in (there_r, there_w, back_r, back_w):
            os.close(fd)
    return elapsed


def loop_pingpong(impl: str, n: int) -> float:
    """A task on this loop and one on a ferroloop loop in another thread
    answer each other (every wake-up crosses threads)."""
    if impl == "rcts":
        return _rcts_round_trips(new_loop, n)

    async def main() -> float:
        if impl == "ferroloop":
            from ferroloop.toolkit import Channel

            there, back = Channel(1), Channel(1)
            put, get, their_get, their_put = there.send, back.recv, there.recv, back.send
        else:
            import culsans

            there, back = culsans.Queue(1), culsans.Queue(1)
            put, get = there.async_q.put, back.async_q.get
            their_get, their_put = there.async_q.get, back.async_q.put

        async def echo() -> None:
            for _ in range(n):
                await their_put(await their_get() + 1)

        other, thread = _loop_in_thread(new_loop)
        done = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(echo(), other))
        elapsed = await _round_trips(n, _asker(put, get))
        await done
        _stop(other, thread)
        return elapsed

    return _run(main)


async def _answer(i: int) -> int:
    return i + 1


def _rcts_round_trips(factory, n: int) -> float:
    """run_coroutine_threadsafe to a loop in another thread, awaited here
    through wrap_future."""

    async def main() -> float:
        other, thread = _loop_in_thread(factory)
        elapsed = await _round_trips(
            n, lambda i: asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_answer(i), other))
        )
        _stop(other, thread)
        return elapsed

    return _run(main)


def submit_round_trip(impl: str, n: int) -> float:
    """A coroutine run on a loop in another thread, its result awaited here."""
    if impl == "rcts":
        return _rcts_round_trips(new_loop, n)
    if impl == "rcts-asyncio":
        return _rcts_round_trips(asyncio.new_event_loop, n)

    async def main() -> float:
        from ferroloop.toolkit import EventLoopThreadPool

        async with EventLoopThreadPool(num_threads=1) as pool:
            submit = pool.submit
            return await _round_trips(n, lambda i: submit(_answer, i))

    return _run(main)


FAN_IN_PRODUCERS = 8


def fan_in(impl: str, n: int) -> float:
    """Eight plain threads send n items in all (blocking sends, room for 64)
    to one task on the loop, which checks each producer's order."""

    async def main() -> float:
        _, get, sync_put, _, _ = _queues(impl, 64)
        each = n // FAN_IN_PRODUCERS

        def produce(p: int) -> None:
            for i in range(each):
                sync_put((p, i))

        start = time.perf_counter()
        threads = [_thread(produce, p) for p in range(FAN_IN_PRODUCERS)]
        nexts = [0] * FAN_IN_PRODUCERS
        for _ in range(each * FAN_IN_PRODUCERS):
            p, i = await get()
            if nexts[p] != i:
                raise VerificationError(f"producer {p}: got {i}, expected {nexts[p]}")
            nexts[p] += 1
        elapsed = time.perf_counter() - start
        for t in threads:
            t.join(10)
        verify(nexts == [each] * FAN_IN_PRODUCERS, f"items per producer {nexts}")
        return elapsed

    return _run(main)


def _same_loop(impl: str, n: int, maxsize: int) -> float:
    async def main() -> float:
        if impl == "asyncio.Queue":
            q = asyncio.Queue(maxsize)
            put, get = q.put, q.get
        elif impl == "ferroloop.Queue":
            import ferroloop

            q = ferroloop.Queue(maxsize)
            put, get = q.put, q.get
        else:
            put, get, _, _, _ = _queues(impl, maxsize)

        async def produce() -> None:
            for i in range(n):
                await put(i)

        start = time.perf_counter()
        task = asyncio.ensure_future(produce())
        for i in range(n):
            item = await get()
            if item != i:
                raise VerificationError(f"item {i} came as {item}")
        await task
        return time.perf_counter() - start

    return _run(main)


def same_loop_1(impl: str, n: int) -> float:
    """A producer and a consumer task on one loop, room for one item."""
    return _same_loop(impl, n, 1)


def same_loop_64(impl: str, n: int) -> float:
    """The same with room for 64 items."""
    return _same_loop(impl, n, 64)


SELECT_CHANNELS = 4


def select_4(impl: str, n: int) -> float:
    """A producer task sends n items round robin into 4 channels (room for
    one each); the consumer takes whichever is ready, each item once."""

    async def main() -> float:
        from ferroloop import toolkit

        if impl == "asyncio":
            queues = [asyncio.Queue(1) for _ in range(SELECT_CHANNELS)]
            puts = [q.put for q in queues]
            getters: dict[asyncio.Task, asyncio.Queue] = {}

            async def take() -> int:
                # asyncio's select: a get task per queue, the first done wins;
                # the others stay for the next round (cancelling one could
                # lose the item it just took).
                for q in queues:
                    if q not in getters.values():
                        getters[asyncio.ensure_future(q.get())] = q
                done, _ = await asyncio.wait(getters, return_when=asyncio.FIRST_COMPLETED)
                task = done.pop()
                del getters[task]
                return task.result()
        else:
            chans = [toolkit.Channel(1) for _ in range(SELECT_CHANNELS)]
            puts = [ch.send for ch in chans]
            ops = [ch.recv_op() for ch in chans]

            async def take() -> int:
                if impl == "ferroloop":
                    return (await toolkit.select(*ops))[1]
                return (await toolkit.select_channel(*chans))[1]

        async def produce() -> None:
            for i in range(n):
                await puts[i % SELECT_CHANNELS](i)

        start = time.perf_counter()
        task = asyncio.ensure_future(produce())
        seen = bytearray(n)
        for _ in range(n):
            item = await take()
            verify(not seen[item], f"item {item} received twice")
            seen[item] = 1
        await task
        elapsed = time.perf_counter() - start
        verify(all(seen), "an item was not received")
        return elapsed

    return _run(main)


@dataclass(frozen=True)
class Workload:
    name: str
    n: int
    unit: str
    # Crosses threads (the floor and the janus/culsans/rcts gates apply).
    cross_thread: bool
    run: Callable[[str, int], float]
    impls: tuple[str, ...]


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("floor", 20_000, "round trip", True, lambda impl, n: floor_pingpong(n), ("floor",)),
        Workload("thread_pingpong", 20_000, "round trip", True, thread_pingpong,
                 ("ferroloop", "janus", "culsans")),
        Workload("loop_pingpong", 20_000, "round trip", True, loop_pingpong,
                 ("ferroloop", "culsans", "rcts")),
        Workload("fan_in_8", 200_000, "item", True, fan_in, ("ferroloop", "janus", "culsans")),
        Workload("submit_round_trip", 20_000, "round trip", True, submit_round_trip,
                 ("ferroloop", "rcts", "rcts-asyncio")),
        Workload("same_loop_1", 100_000, "item", False, same_loop_1,
                 ("ferroloop", "asyncio.Queue", "ferroloop.Queue", "janus", "culsans")),
        Workload("same_loop_64", 200_000, "item", False, same_loop_64,
                 ("ferroloop", "asyncio.Queue", "ferroloop.Queue", "janus", "culsans")),
        Workload("select_4", 50_000, "item", False, select_4,
                 ("ferroloop", "select_channel", "asyncio")),
    )
}  # fmt: skip

# Every implementation, in report order; and the PyPI distributions they need.
IMPLS = ("ferroloop", "janus", "culsans", "rcts", "rcts-asyncio", "asyncio.Queue",
         "ferroloop.Queue", "select_channel", "asyncio", "floor")  # fmt: skip
DISTS = {"janus": ("janus",), "culsans": ("culsans",)}


def run(workload: str, impl: str, n: int) -> float:
    return WORKLOADS[workload].run(impl, n)
