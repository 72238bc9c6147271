"""call_soon_threadsafe and other cross-thread use of a loop."""

from __future__ import annotations

import asyncio
import contextvars
import socket
import threading
import time

import pytest

from _helpers import PROMPT, run_until

THREADS = 8
PER_THREAD = 2000


def start_thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_threadsafe_callback_wakes_a_loop_with_nothing_scheduled(loop):
    calls = []

    def other_thread():
        time.sleep(0.1)
        loop.call_soon_threadsafe(calls.append, "woken")
        loop.call_soon_threadsafe(loop.stop)

    thread = start_thread(other_thread)
    start = time.monotonic()
    loop.run_forever()
    elapsed = time.monotonic() - start
    thread.join(PROMPT)
    assert calls == ["woken"]
    assert elapsed < PROMPT


def test_threadsafe_callback_wakes_a_loop_waiting_for_a_far_timer(loop):
    loop.call_later(3600, lambda: None)
    thread = start_thread(lambda: (time.sleep(0.1), loop.call_soon_threadsafe(loop.stop)))
    start = time.monotonic()
    loop.run_forever()
    thread.join(PROMPT)
    assert time.monotonic() - start < PROMPT


def test_stop_from_another_thread_through_call_soon_threadsafe_repeatedly(loop):
    # Every wake-up must be delivered, not only the first one.
    for _ in range(20):
        thread = start_thread(lambda: (time.sleep(0.005), loop.call_soon_threadsafe(loop.stop)))
        start = time.monotonic()
        loop.run_forever()
        thread.join(PROMPT)
        assert time.monotonic() - start < PROMPT


def test_threadsafe_callbacks_before_the_loop_runs(loop):
    calls = []
    thread = start_thread(lambda: [loop.call_soon_threadsafe(calls.append, i) for i in range(10)])
    thread.join(PROMPT)
    run_until(loop, lambda: len(calls) == 10)
    assert calls == list(range(10))


def test_many_threads_all_callbacks_run_in_per_thread_order(loop):
    calls = []
    barrier = threading.Barrier(THREADS)

    def producer(tid):
        barrier.wait()
        for i in range(PER_THREAD):
            loop.call_soon_threadsafe(calls.append, (tid, i))

    threads = [start_thread(producer, tid) for tid in range(THREADS)]
    run_until(loop, lambda: len(calls) == THREADS * PER_THREAD, timeout=30)
    for thread in threads:
        thread.join(PROMPT)
    assert len(calls) == THREADS * PER_THREAD
    for tid in range(THREADS):
        assert [i for t, i in calls if t == tid] == list(range(PER_THREAD))


def test_threadsafe_callback_is_never_overtaken_by_a_later_call_soon(loop):
    # Another thread calls call_soon_threadsafe(A_n), then signals over a
    # socket. The loop-side reader of the signal calls call_soon(B_n), which
    # happens after call_soon_threadsafe(A_n) returned: A_n must run first.
    rounds = 2000
    order = []
    received = 0
    a, b = socket.socketpair()
    a.setblocking(False)

    def on_signal():
        nonlocal received
        data = a.recv(4096)
        for _ in data:
            loop.call_soon(order.append, ("B", received))
            received += 1

    def producer():
        for n in range(rounds):
            loop.call_soon_threadsafe(order.append, ("A", n))
            b.send(b"x")
            if n % 7 == 0:
                time.sleep(0)  # vary the phase against the loop's ticks

    with a, b:
        loop.add_reader(a, on_signal)
        thread = start_thread(producer)
        run_until(loop, lambda: len(order) == 2 * rounds, timeout=30)
        thread.join(PROMPT)
        loop.remove_reader(a)

    position = {entry: index for index, entry in enumerate(order)}
    overtaken = [n for n in range(rounds) if position[("B", n)] < position[("A", n)]]
    assert overtaken == []


def test_threadsafe_callback_context(loop):
    var = contextvars.ContextVar("var", default="unset")
    ctx = contextvars.copy_context()
    ctx.run(var.set, "given")
    seen = []
    thread = start_thread(
        lambda: loop.call_soon_threadsafe(lambda: seen.append(var.get()), context=ctx)
    )
    thread.join(PROMPT)
    run_until(loop, lambda: seen)
    assert seen == ["given"]


def test_threadsafe_call_on_a_closed_loop_raises(loop):
    loop.close()
    errors = []

    def other_thread():
        try:
            loop.call_soon_threadsafe(lambda: None)
        except RuntimeError as exc:
            errors.append(str(exc))

    start_thread(other_thread).join(PROMPT)
    assert errors == ["Event loop is closed"]


def test_run_coroutine_threadsafe(loop):
    results = []

    async def add(x, y):
        await asyncio.sleep(0.001)
        return x + y

    def other_thread():
        future = asyncio.run_coroutine_threadsafe(add(2, 3), loop)
        results.append(future.result(timeout=PROMPT))
        loop.call_soon_threadsafe(loop.stop)

    thread = start_thread(other_thread)
    loop.run_forever()
    thread.join(PROMPT)
    assert results == [5]


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param(lambda loop: loop.call_soon(lambda: None), id="call_soon"),
        pytest.param(lambda loop: loop.call_later(1, lambda: None), id="call_later"),
        pytest.param(lambda loop: loop.call_at(loop.time() + 1, lambda: None), id="call_at"),
    ],
)
def test_debug_detects_a_non_threadsafe_call(loop, schedule):
    loop.set_debug(True)
    errors = []

    def other_thread():
        try:
            schedule(loop)
        except RuntimeError as exc:
            errors.append(str(exc))
        finally:
            loop.call_soon_threadsafe(loop.stop)

    threads = []
    loop.call_soon(lambda: threads.append(start_thread(other_thread)))
    loop.run_forever()
    threads[0].join(PROMPT)
    assert errors == [
        "Non-thread-safe operation invoked on an event loop other than the current one"
    ]


# -- the handle call_soon_threadsafe returns (3.14: asyncio's _ThreadSafeHandle) --


py314 = pytest.mark.skipif(not hasattr(asyncio.events, "_ThreadSafeHandle"), reason="asyncio 3.14+ _ThreadSafeHandle")


@py314
def test_threadsafe_handle_is_asyncios_own(loop):
    handle = loop.call_soon_threadsafe(lambda: None)
    assert isinstance(handle, asyncio.events._ThreadSafeHandle)
    handle.cancel()
    assert handle.cancelled()
    loop.run_until_complete(asyncio.sleep(0))


@py314
def test_cancel_from_another_thread_waits_for_the_running_callback(loop):
    started, finished = threading.Event(), threading.Event()
    seen = {}

    def callback():
        started.set()
        # Long enough for the other thread to reach cancel() meanwhile.
        time.sleep(0.3)
        finished.set()

    def other_thread():
        handle = loop.call_soon_threadsafe(callback)
        started.wait(PROMPT)
        handle.cancel()  # blocks until the callback returns
        seen["finished when cancel returned"] = finished.is_set()
        seen["cancelled"] = handle.cancelled()
        loop.call_soon_threadsafe(loop.stop)

    thread = start_thread(other_thread)
    loop.run_forever()
    thread.join(PROMPT)
    assert seen == {"finished when cancel returned": True, "cancelled": True}


def test_cancel_from_another_thread_before_the_callback_runs(loop):
    calls = []
    queued = threading.Event()

    def other_thread():
        handle = loop.call_soon_threadsafe(calls.append, "ran")
        handle.cancel()
        queued.set()
        loop.call_soon_threadsafe(loop.stop)

    # The loop is busy until the other thread has queued and cancelled.
    loop.call_soon(queued.wait, PROMPT)
    thread = start_thread(other_thread)
    loop.run_forever()
    thread.join(PROMPT)
    assert calls == []


@py314
def test_a_slow_threadsafe_callback_is_logged_as_its_handle(loop, caplog):
    loop.set_debug(True)
    loop.slow_callback_duration = 0.1

    def slow():
        time.sleep(0.3)

    with caplog.at_level("WARNING", logger="asyncio"):
        handle = loop.call_soon_threadsafe(slow)
        loop.run_until_complete(asyncio.sleep(0.01))
    # (A loaded host may make other steps slow too: only this one counts.)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Executing") and "slow()" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"Executing {handle!r} took "), lines
