"""call_later, call_at and TimerHandle."""

from __future__ import annotations

import asyncio
import time

from _helpers import PROMPT, ferroloop_only, run_once

RESOLUTION = time.get_clock_info("monotonic").resolution


def named_timer_callback():
    pass


def test_call_later_fires_after_the_delay(loop):
    fired = []
    start = loop.time()
    handle = loop.call_later(0.05, lambda: fired.append(loop.time()))
    loop.call_later(0.06, loop.stop)
    loop.run_forever()
    assert len(fired) == 1
    assert handle.when() >= start + 0.05
    assert handle.when() - RESOLUTION <= fired[0] < handle.when() + PROMPT


def test_call_at_fires_at_the_deadline(loop):
    fired = []
    when = loop.time() + 0.03
    handle = loop.call_at(when, lambda: fired.append(loop.time()))
    assert handle.when() == when
    loop.call_at(when + 0.01, loop.stop)
    loop.run_forever()
    assert len(fired) == 1
    assert when - RESOLUTION <= fired[0] < when + PROMPT


def test_call_later_passes_arguments(loop):
    calls = []
    loop.call_later(0.001, lambda *a: calls.append(a), 1, 2)
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    assert calls == [(1, 2)]


def test_timers_fire_in_deadline_order(loop):
    calls = []
    for delay in (0.05, 0.01, 0.04, 0.02, 0.03):
        loop.call_later(delay, calls.append, delay)
    loop.call_later(0.06, loop.stop)
    loop.run_forever()
    assert calls == [0.01, 0.02, 0.03, 0.04, 0.05]


def test_timers_due_in_one_tick_run_in_deadline_order(loop):
    calls = []
    now = loop.time()
    for age in (0.1, 0.3, 0.2):
        loop.call_at(now - age, calls.append, age)
    run_once(loop)
    assert calls == [0.3, 0.2, 0.1]


@ferroloop_only
def test_equal_deadlines_fire_in_scheduling_order(loop):
    # Stronger than asyncio, whose heap does not keep the order of equal
    # deadlines (docs/architecture.md, "The loop", promises it for ferroloop).
    calls = []
    when = loop.time() + 0.01
    for i in range(50):
        loop.call_at(when, calls.append, i)
    loop.call_at(when + 0.01, loop.stop)
    loop.run_forever()
    assert calls == list(range(50))


def test_due_timer_runs_after_the_ready_callbacks_of_its_tick(loop):
    calls = []
    loop.call_soon(calls.append, "a")
    loop.call_later(0, calls.append, "timer")
    loop.call_soon(calls.append, "b")
    run_once(loop)
    assert calls == ["a", "b", "timer"]


def test_negative_delay_fires_in_the_next_tick(loop):
    calls = []
    loop.call_later(-10, calls.append, "past")
    run_once(loop)
    assert calls == ["past"]


def test_timer_scheduled_by_a_timer_runs_in_a_later_tick(loop):
    calls = []

    def first():
        calls.append("first")
        loop.call_later(0, calls.append, "second")

    loop.call_later(0, first)
    run_once(loop)
    assert calls == ["first"]
    run_once(loop)
    assert calls == ["first", "second"]


def test_cancelled_timer_does_not_fire(loop):
    calls = []
    handle = loop.call_later(0.01, calls.append, "cancelled")
    loop.call_later(0.02, calls.append, "kept")
    handle.cancel()
    assert handle.cancelled()
    loop.call_later(0.03, loop.stop)
    loop.run_forever()
    assert calls == ["kept"]


def test_many_cancelled_timers(loop):
    # Cancelled entries dominating the heap must not delay or lose the others.
    calls = []
    handles = [loop.call_later(0.01 + i * 1e-5, calls.append, i) for i in range(2000)]
    for i, handle in enumerate(handles):
        if i % 100:
            handle.cancel()
    loop.call_later(0.1, loop.stop)
    loop.run_forever()
    assert calls == list(range(0, 2000, 100))


def test_far_timer_does_not_keep_a_stopped_loop_running(loop):
    loop.call_later(3600, named_timer_callback)
    start = time.monotonic()
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    assert time.monotonic() - start < PROMPT


def test_timer_handle_repr(loop):
    handle = loop.call_later(10, named_timer_callback)
    text = repr(handle)
    assert "named_timer_callback" in text
    assert "when=" in text
    handle.cancel()
    assert "cancelled" in repr(handle)


def test_timer_handle_when_with_call_later(loop):
    before = loop.time()
    handle = loop.call_later(5, named_timer_callback)
    after = loop.time()
    assert before + 5 <= handle.when() <= after + 5


def test_sleep_sleeps_at_least_the_delay(loop):
    async def main():
        start = time.monotonic()
        await asyncio.sleep(0.05)
        return time.monotonic() - start

    elapsed = loop.run_until_complete(main())
    assert 0.05 - RESOLUTION <= elapsed < PROMPT


def test_wait_for_times_out(loop):
    async def main():
        with_timeout = asyncio.wait_for(asyncio.sleep(3600), 0.02)
        start = loop.time()
        try:
            await with_timeout
        except asyncio.TimeoutError:
            return loop.time() - start
        return None

    elapsed = loop.run_until_complete(main())
    assert elapsed is not None
    assert 0.02 - RESOLUTION <= elapsed < PROMPT
