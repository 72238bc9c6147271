"""run_forever, run_until_complete, stop, close, is_running, is_closed, time."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from _helpers import run_once


def test_is_running_only_while_running(loop):
    seen = []
    loop.call_soon(lambda: seen.append(loop.is_running()))
    assert not loop.is_running()
    run_once(loop)
    assert seen == [True]
    assert not loop.is_running()


def test_running_loop_is_set_while_running(loop):
    seen = []
    loop.call_soon(lambda: seen.append(asyncio.get_running_loop()))
    run_once(loop)
    assert seen == [loop]
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


def test_stop_before_run_forever_runs_one_iteration(loop):
    calls = []
    loop.call_soon(calls.append, 1)
    loop.call_soon(lambda: loop.call_soon(calls.append, "next"))
    loop.stop()
    loop.run_forever()
    assert calls == [1]
    # The loop is not left "stopping": the next run goes on until stopped.
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    assert calls == [1, "next"]


def test_stop_finishes_the_current_iteration(loop):
    calls = []
    loop.call_soon(loop.stop)
    loop.call_soon(calls.append, "same tick")
    loop.call_soon(lambda: loop.call_soon(calls.append, "next tick"))
    loop.run_forever()
    assert calls == ["same tick"]
    run_once(loop)
    assert calls == ["same tick", "next tick"]


def test_run_forever_can_be_restarted(loop):
    calls = []
    for i in range(3):
        loop.call_soon(calls.append, i)
        loop.call_soon(loop.stop)
        loop.run_forever()
    assert calls == [0, 1, 2]


def test_run_until_complete_with_a_coroutine(loop):
    async def coro(x):
        await asyncio.sleep(0)
        return x + 1

    assert loop.run_until_complete(coro(1)) == 2


def test_run_until_complete_with_a_future(loop):
    fut = loop.create_future()
    loop.call_later(0.01, fut.set_result, "done")
    assert loop.run_until_complete(fut) == "done"
    # An already finished future returns at once.
    assert loop.run_until_complete(fut) == "done"


def test_run_until_complete_with_an_awaitable(loop):
    class Awaitable:
        def __await__(self):
            yield from asyncio.sleep(0).__await__()
            return "awaited"

    assert loop.run_until_complete(Awaitable()) == "awaited"


def test_run_until_complete_raises_the_exception(loop):
    async def fail():
        await asyncio.sleep(0)
        raise LookupError("nope")

    with pytest.raises(LookupError, match="nope"):
        loop.run_until_complete(fail())


def test_run_until_complete_with_a_cancelled_future(loop):
    fut = loop.create_future()
    loop.call_soon(fut.cancel)
    with pytest.raises(asyncio.CancelledError):
        loop.run_until_complete(fut)


def test_run_until_complete_stopped_before_the_future_is_done(loop):
    fut = loop.create_future()
    loop.call_soon(loop.stop)
    with pytest.raises(RuntimeError, match=r"^Event loop stopped before Future completed\.$"):
        loop.run_until_complete(fut)
    assert not fut.done()


def test_run_until_complete_rejects_a_non_awaitable(loop):
    with pytest.raises(
        TypeError, match="An asyncio.Future, a coroutine or an awaitable is required"
    ):
        loop.run_until_complete(42)


def test_run_until_complete_rejects_a_future_of_another_loop(loop, loop_impl):
    other = loop_impl.new_event_loop()
    try:
        fut = other.create_future()
        with pytest.raises(ValueError, match="The future belongs to a different loop"):
            loop.run_until_complete(fut)
    finally:
        other.close()


def test_close_is_idempotent(loop):
    loop.close()
    assert loop.is_closed()
    loop.close()
    assert loop.is_closed()


def test_keyboard_interrupt_in_a_callback_propagates(loop):
    calls = []

    def interrupt():
        raise KeyboardInterrupt

    loop.call_soon(interrupt)
    loop.call_soon(calls.append, "after")
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()
    assert not loop.is_running()
    assert asyncio._get_running_loop() is None
    # The callbacks that were not run yet are still scheduled.
    run_once(loop)
    assert calls == ["after"]


def test_system_exit_in_a_callback_propagates(loop):
    def leave():
        raise SystemExit(3)

    loop.call_soon(leave)
    with pytest.raises(SystemExit) as info:
        loop.run_forever()
    assert info.value.code == 3
    assert not loop.is_running()


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_base_exception_in_a_task_propagates_from_run_until_complete(loop, exc_type):
    async def main():
        await asyncio.sleep(0)
        raise exc_type

    with pytest.raises(exc_type):
        loop.run_until_complete(main())
    assert not loop.is_running()
    # The loop still works afterwards.
    assert loop.run_until_complete(asyncio.sleep(0, result="ok")) == "ok"


def test_keyboard_interrupt_in_a_timer_callback_propagates(loop):
    def interrupt():
        raise KeyboardInterrupt

    loop.call_later(0.001, interrupt)
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()
    assert not loop.is_running()


def test_time_follows_the_monotonic_clock(loop):
    before = time.monotonic()
    now = loop.time()
    after = time.monotonic()
    assert isinstance(now, float)
    assert before <= now <= after


def test_time_reads_the_clock_inside_a_callback(loop):
    # time() is not frozen at the start of an iteration.
    readings = []

    def measure():
        readings.append(loop.time())
        time.sleep(0.02)
        readings.append(loop.time())

    loop.call_soon(measure)
    run_once(loop)
    assert readings[1] - readings[0] >= 0.02 - time.get_clock_info("monotonic").resolution


def test_repr_states_running_and_closed(loop):
    text = repr(loop)
    assert "running=False" in text and "closed=False" in text
    loop.close()
    assert "closed=True" in repr(loop)


def test_close_releases_the_loops_own_fds(loop_impl):
    # asyncio closes its selector in close(); ferroloop closes its epoll fd
    # and wake-up eventfd there too, not when the object is freed.
    def open_fds():
        return set(os.listdir("/proc/self/fd"))

    before = open_fds()
    loop = loop_impl.new_event_loop()
    loop.run_until_complete(asyncio.sleep(0))
    alive = loop  # keep the object: only close() may release the fds
    alive.close()
    assert open_fds() <= before
