"""The scheduling workloads of bench/README.md ("Scheduling suite"), each self-verifying.

A workload is `run(loop, n) -> seconds`: it does n operations on `loop`, times
only the loop run that performs them (time.perf_counter), then checks the
result (order, counts, sums) and raises VerificationError if the loop did not
do the work exactly as asked, so no contender wins by skipping work.

All code here is stdlib-only (but for the native-queue workloads, which
import the queue they measure): it runs in the bench venv against any loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

AnyLoop = asyncio.AbstractEventLoop


class VerificationError(AssertionError):
    """The loop ran the workload but the outcome is wrong."""


def verify(ok: bool, what: str) -> None:
    """Check an outcome after the timed run (`what` is built eagerly, so hot
    paths raise VerificationError themselves)."""
    if not ok:
        raise VerificationError(what)


def _first_mismatch(got: list, want: range) -> str:
    """Describe where an observed sequence departs from the expected one."""
    if len(got) != len(want):
        return f"{len(got)} items, expected {len(want)}"
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    return f"item {i} is {got[i]!r}, expected {want[i]!r}"


def _verify_sequence(got: list, n: int, what: str) -> None:
    if got != list(range(n)):
        raise VerificationError(f"{what}: {_first_mismatch(got, range(n))}")


def _run_forever_timed(loop: AnyLoop, start: Callable[[], object]) -> float:
    """Schedule `start` on the loop and time run_forever until a callback stops it."""
    loop.call_soon(start)
    t0 = perf_counter()
    loop.run_forever()
    return perf_counter() - t0


def _run_until_complete_timed(loop: AnyLoop, coro) -> tuple[float, object]:
    t0 = perf_counter()
    result = loop.run_until_complete(coro)
    return perf_counter() - t0, result


def _spread_us(i: int) -> int:
    """A fixed scatter of i over 0..999 µs, so timers are not created in
    deadline order (7919 is coprime to 1000: each run of 1000 consecutive i
    takes every value once)."""
    return i * 7919 % 1000


# --- callbacks -------------------------------------------------------------


def call_soon_chain(loop: AnyLoop, n: int) -> float:
    order: list[int] = []
    append = order.append

    def step(i: int) -> None:
        append(i)
        if i + 1 < n:
            loop.call_soon(step, i + 1)
        else:
            loop.stop()

    elapsed = _run_forever_timed(loop, lambda: step(0))
    _verify_sequence(order, n, "callbacks out of order")
    return elapsed


BURST = 10_000


def call_soon_burst(loop: AnyLoop, n: int) -> float:
    order: list[int] = []
    append = order.append
    call_soon = loop.call_soon
    burst_last = -1  # index of the last callback of the burst in flight

    def schedule_burst(start: int) -> None:
        nonlocal burst_last
        burst_last = min(start + BURST, n) - 1
        for i in range(start, burst_last + 1):
            call_soon(ran, i)

    def ran(i: int) -> None:
        append(i)
        if i == burst_last:  # with FIFO order the whole burst has run now
            if i + 1 < n:
                schedule_burst(i + 1)
            else:
                loop.stop()

    elapsed = _run_forever_timed(loop, lambda: schedule_burst(0))
    _verify_sequence(order, n, "callbacks not run in FIFO order")
    return elapsed


# --- timers ----------------------------------------------------------------


def timer_fire(loop: AnyLoop, n: int) -> float:
    fired = bytearray(n)
    count = 0

    def fire(i: int) -> None:
        nonlocal count
        fired[i] += 1
        count += 1
        if count == n:
            loop.stop()

    def schedule_all() -> None:
        call_later = loop.call_later
        for i in range(n):
            call_later(_spread_us(i) * 1e-6, fire, i)

    elapsed = _run_forever_timed(loop, schedule_all)
    verify(count == n, f"{count} timer callbacks ran, expected {n}")
    verify(fired == b"\x01" * n, "some timer fired twice and another never")
    return elapsed


CANCEL_KEEP_EVERY = 16


def timer_schedule_cancel(loop: AnyLoop, n: int) -> float:
    fired: list[int] = []
    kept = range(0, n, CANCEL_KEEP_EVERY)

    def fire(i: int) -> None:
        fired.append(i)
        if len(fired) == len(kept):
            loop.stop()

    def schedule_and_cancel() -> None:
        call_later = loop.call_later
        # Delays 1.000-1.999 ms: nothing is due before all the cancels are done,
        # since the loop does not get control back in between.
        handles = [call_later((1000 + _spread_us(i)) * 1e-6, fire, i) for i in range(n)]
        for i, handle in enumerate(handles):
            if i % CANCEL_KEEP_EVERY:
                handle.cancel()

    elapsed = _run_forever_timed(loop, schedule_and_cancel)
    # Untimed grace period: a cancelled timer due after the last kept one would
    # fire here.
    loop.run_until_complete(asyncio.sleep(0.005))
    verify(
        sorted(fired) == list(kept),
        f"{len(fired)} timers fired, expected the {len(kept)} kept ones"
        f" (cancelled ones that fired: {len(set(fired) - set(kept))})",
    )
    return elapsed


# --- coroutines and tasks --------------------------------------------------


def sleep0_chain(loop: AnyLoop, n: int) -> float:
    trace: list[int] = []
    append = trace.append
    half = n // 2

    async def ticker(me: int) -> None:
        for _ in range(half):
            append(me)
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(loop.create_task(ticker(0)), loop.create_task(ticker(1)))

    elapsed, _ = _run_until_complete_timed(loop, main())
    verify(len(trace) == 2 * half, f"{len(trace)} steps, expected {2 * half}")
    first = trace[0] if trace else 0
    verify(trace == [first, 1 - first] * half, "the two tasks did not strictly alternate")
    return elapsed


TASK_BATCH = 100


async def _identity(i: int) -> int:
    return i


def task_spawn(loop: AnyLoop, n: int) -> float:
    async def main() -> tuple[int, int]:
        create_task = loop.create_task
        total = count = 0
        for start in range(0, n, TASK_BATCH):
            batch = [create_task(_identity(i)) for i in range(start, min(start + TASK_BATCH, n))]
            for task in batch:
                total += await task
                count += 1
        return count, total

    elapsed, (count, total) = _run_until_complete_timed(loop, main())
    verify(count == n, f"{count} tasks awaited, expected {n}")
    verify(total == n * (n - 1) // 2, f"sum of task results {total}, expected {n * (n - 1) // 2}")
    return elapsed


def gather_fanin(loop: AnyLoop, n: int) -> float:
    async def main() -> int:
        count = 0
        for start in range(0, n, TASK_BATCH):
            want = range(start, min(start + TASK_BATCH, n))
            got = await asyncio.gather(*[_identity(i) for i in want])
            if got != list(want):  # not verify(): the message must not be built per batch
                raise VerificationError(f"gather returned {_first_mismatch(got, want)}")
            count += len(got)
        return count

    elapsed, count = _run_until_complete_timed(loop, main())
    verify(count == n, f"{count} coroutines gathered, expected {n}")
    return elapsed


def future_chain(loop: AnyLoop, n: int) -> float:
    done = loop.create_future()
    steps = 0
    # Raising inside a done-callback would only reach the loop's exception
    # handler, so a wrong value is recorded and reported after the run.
    mismatch = ""

    def on_done(fut: asyncio.Future) -> None:
        nonlocal steps, mismatch
        value = fut.result()
        if value != steps and not mismatch:
            mismatch = f"future {steps} resolved with {value}"
        steps += 1
        if steps < n:
            nxt = loop.create_future()
            nxt.add_done_callback(on_done)
            nxt.set_result(value + 1)
        else:
            done.set_result(value)

    def start() -> None:
        first = loop.create_future()
        first.add_done_callback(on_done)
        first.set_result(0)

    async def main() -> int:
        start()
        return await done

    elapsed, last = _run_until_complete_timed(loop, main())
    verify(not mismatch, mismatch)
    verify(steps == n, f"{steps} done-callbacks ran, expected {n}")
    verify(last == n - 1, f"last future resolved with {last}, expected {n - 1}")
    return elapsed


def _queue_round_trips(loop: AnyLoop, n: int, queue_class: Callable[[], asyncio.Queue]) -> float:
    """queue_pingpong's workload on queues built by `queue_class`."""

    async def main() -> int:
        pings: asyncio.Queue[int] = queue_class()
        pongs: asyncio.Queue[int] = queue_class()

        async def ponger() -> None:
            for _ in range(n):
                pongs.put_nowait(await pings.get() + 1)

        task = loop.create_task(ponger())
        trips = 0
        for i in range(n):
            pings.put_nowait(i)
            reply = await pongs.get()
            if reply != i + 1:  # not verify(): the message must not be built per trip
                raise VerificationError(f"round trip {i} answered {reply}, expected {i + 1}")
            trips += 1
        await task
        return trips

    elapsed, trips = _run_until_complete_timed(loop, main())
    verify(trips == n, f"{trips} round trips, expected {n}")
    return elapsed


def queue_pingpong(loop: AnyLoop, n: int) -> float:
    return _queue_round_trips(loop, n, asyncio.Queue)


# The same round trips on the loop-agnostic native queues, on every
# contender's loop: ferroloop's (the ferroloop package is in the bench venv)
# and cadeloop's, its peer. Imported when run, so the other workloads never
# depend on either package.
def queue_pingpong_native(loop: AnyLoop, n: int) -> float:
    import ferroloop

    return _queue_round_trips(loop, n, ferroloop.Queue)


def queue_pingpong_cadeloop(loop: AnyLoop, n: int) -> float:
    import cadeloop

    return _queue_round_trips(loop, n, cadeloop.Queue)


# --- threads ---------------------------------------------------------------


def threadsafe_throughput(loop: AnyLoop, n: int) -> float:
    order: list[int] = []
    append = order.append

    def ran(i: int) -> None:
        append(i)
        if i == n - 1:
            loop.stop()

    def produce() -> None:
        call_soon_threadsafe = loop.call_soon_threadsafe
        for i in range(n):
            call_soon_threadsafe(ran, i)

    producer = threading.Thread(target=produce, name="bench-producer")
    elapsed = _run_forever_timed(loop, producer.start)
    producer.join()
    _verify_sequence(order, n, "threadsafe callbacks out of order")
    return elapsed


# --- fib -------------------------------------------------------------------

FIB_DEPTH = 21
FIB_WARMUP_DEPTH = 16


def _fib_expected(depth: int) -> tuple[int, int]:
    """(fib(depth), nodes in the call tree); nodes(k) = 2*fib(k+1) - 1."""
    a, b = 0, 1
    for _ in range(depth):
        a, b = b, a + b
    return a, 2 * b - 1


def _fib_tree(loop: AnyLoop, depth: int) -> float:
    nodes = 0

    async def fib(k: int) -> int:
        nonlocal nodes
        nodes += 1
        if k < 2:
            return k
        a, b = await asyncio.gather(loop.create_task(fib(k - 1)), loop.create_task(fib(k - 2)))
        return a + b

    elapsed, value = _run_until_complete_timed(loop, fib(depth))
    want_value, want_nodes = _fib_expected(depth)
    verify(value == want_value, f"fib({depth}) = {value}, expected {want_value}")
    verify(nodes == want_nodes, f"fib({depth}) ran {nodes} nodes, expected {want_nodes}")
    return elapsed


def fib21(loop: AnyLoop, n: int) -> float:
    """n trees of fib(21) (the spec's n is one tree)."""
    return sum(_fib_tree(loop, FIB_DEPTH) for _ in range(n))


# --- registry --------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    n: int  # operations per measurement, from bench/README.md
    unit: str  # what one operation is (singular), for the report
    run: Callable[[AnyLoop, int], float]
    # The in-process warm-up: a smaller run of the same workload. By default a
    # tenth of n; fib21 cannot shrink n below one tree, so it warms up on a
    # smaller tree.
    warmup: Callable[[AnyLoop, int], object] | None = None

    def warm_up(self, loop: AnyLoop, n: int) -> None:
        if self.warmup is not None:
            self.warmup(loop, n)
        else:
            self.run(loop, max(1, n // 10))


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("call_soon_chain", 200_000, "callback", call_soon_chain),
        Workload("call_soon_burst", 500_000, "callback", call_soon_burst),
        Workload("timer_fire", 100_000, "timer", timer_fire),
        Workload("timer_schedule_cancel", 200_000, "timer", timer_schedule_cancel),
        Workload("sleep0_chain", 200_000, "sleep", sleep0_chain),
        Workload("task_spawn", 100_000, "task", task_spawn),
        Workload("threadsafe_throughput", 200_000, "callback", threadsafe_throughput),
        Workload("future_chain", 200_000, "future", future_chain),
        Workload("gather_fanin", 100_000, "coroutine", gather_fanin),
        Workload("queue_pingpong", 50_000, "round trip", queue_pingpong),
        Workload("queue_pingpong_native", 50_000, "round trip", queue_pingpong_native),
        Workload("queue_pingpong_cadeloop", 50_000, "round trip", queue_pingpong_cadeloop),
        Workload("fib21", 1, "tree", fib21, lambda loop, n: _fib_tree(loop, FIB_WARMUP_DEPTH)),
        # The same tree after a full-depth warm-up tree: the collector's
        # thresholds start elsewhere, and fib21's figure moved with them;
        # both are measured so a lead holds either way.
        Workload("fib21_full_warmup", 1, "tree", fib21, lambda loop, n: _fib_tree(loop, FIB_DEPTH)),
    )
}
