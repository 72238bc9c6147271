"""``Loop.stats()``: the loop's always-on counters and gauges.

ferroloop only (asyncio's loop has no such method). Counts are checked
exactly where the test controls every callback; times only as fractions of
wall time the test itself spends busy or asleep, never as durations.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import typing

import pytest

import ferroloop

KEYS = set(typing.get_type_hints(ferroloop.LoopStats))


@pytest.fixture
def loop():
    loop = ferroloop.new_event_loop()
    yield loop
    loop.close()


def test_keys_and_types_follow_the_typed_dict(loop):
    stats = loop.stats()
    assert set(stats) == KEYS
    hints = typing.get_type_hints(ferroloop.LoopStats)
    for key, value in stats.items():
        assert type(value) is hints[key], key
    assert stats["utilization"] == 0.0, "0.0 before the loop first ran"
    assert stats["ticks"] == stats["callbacks"] == 0


def test_callbacks_and_ticks_are_counted(loop):
    ran = []
    for i in range(100):
        loop.call_soon(ran.append, i)
    loop.call_soon(loop.stop)
    loop.run_forever()
    stats = loop.stats()
    assert ran == list(range(100))
    assert stats["callbacks"] == 101
    assert stats["ticks"] >= 1

    # A chain of callbacks runs one per tick.
    def chain(n):
        if n:
            loop.call_soon(chain, n - 1)
        else:
            loop.stop()

    before = loop.stats()
    loop.call_soon(chain, 50)
    loop.run_forever()
    after = loop.stats()
    assert after["callbacks"] - before["callbacks"] == 51
    assert after["ticks"] - before["ticks"] >= 51


def test_an_interrupted_tick_does_not_count_its_unrun_callbacks_twice(loop):
    ran = []

    def interrupt():
        raise KeyboardInterrupt

    loop.call_soon(ran.append, 1)
    loop.call_soon(interrupt)
    loop.call_soon(ran.append, 2)
    loop.call_soon(ran.append, 3)
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()
    assert ran == [1]
    assert loop.stats()["ready"] == 2
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert ran == [1, 2, 3]
    assert loop.stats()["callbacks"] == 5


def test_timers_fired_and_cancelled(loop):
    fired = []
    for i in range(10):
        loop.call_later(0, fired.append, i)
    late = [loop.call_later(3600, fired.append, "late") for _ in range(5)]
    assert loop.stats()["timers"] == 15
    for handle in late:
        handle.cancel()
    # Cancelled timers leave the gauge at once, before the loop notices.
    assert loop.stats()["timers"] == 10

    async def until_fired():
        while len(fired) < 10:
            await asyncio.sleep(0.001)

    loop.run_until_complete(until_fired())
    stats = loop.stats()
    assert sorted(fired) == list(range(10))
    assert stats["timers_cancelled"] == 5
    # The ten, plus the sleeps' own timers.
    assert stats["timers_fired"] >= 10
    assert stats["timers"] == 0


def test_timers_fired_exactly(loop):
    fired = []
    now = loop.time()
    for i in range(7):
        loop.call_at(now, fired.append, i)
    loop.call_at(now, loop.stop)
    # All eight are due at the first tick, which runs them and stops.
    loop.run_forever()
    assert fired == list(range(7))
    assert loop.stats()["timers_fired"] == 8


def test_threadsafe_calls_from_another_thread(loop):
    received = []
    done = threading.Event()

    def producer():
        for i in range(200):
            loop.call_soon_threadsafe(received.append, i)
        loop.call_soon_threadsafe(loop.stop)
        done.set()

    loop.call_soon(threading.Thread(target=producer).start)
    # The injector keeps order: all 200 ran before the stop queued after them.
    loop.run_forever()
    assert done.wait(60)
    assert received == list(range(200))
    assert loop.stats()["threadsafe_calls"] == 201


def test_threadsafe_calls_on_the_running_loop_thread_are_plain_callbacks(loop):
    # The running loop's own thread skips the cross-thread queue.
    loop.call_soon(loop.call_soon_threadsafe, loop.stop)
    loop.run_forever()
    stats = loop.stats()
    assert stats["threadsafe_calls"] == 0
    assert stats["callbacks"] == 2


def test_registered_fds(loop):
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    try:
        assert loop.stats()["fds"] == 0
        loop.add_reader(a.fileno(), lambda: None)
        loop.add_writer(a.fileno(), lambda: None)
        loop.add_reader(c.fileno(), lambda: None)
        assert loop.stats()["fds"] == 2
        loop.remove_reader(a.fileno())
        loop.remove_writer(a.fileno())
        assert loop.stats()["fds"] == 1
        loop.remove_reader(c.fileno())
        assert loop.stats()["fds"] == 0
    finally:
        for s in (a, b, c, d):
            s.close()


def test_ready_depth(loop):
    for _ in range(3):
        loop.call_soon(lambda: None)
    assert loop.stats()["ready"] == 3
    seen = []

    def look():
        loop.call_soon(lambda: None)
        loop.call_soon(lambda: None)
        seen.append(loop.stats()["ready"])
        loop.stop()

    loop.call_soon(look)
    loop.run_forever()
    # Inside a callback: what was queued for the next tick.
    assert seen == [2]
    assert loop.stats()["ready"] == 2


def test_a_sleeping_loop_is_idle(loop):
    loop.run_until_complete(asyncio.sleep(0.5))
    stats = loop.stats()
    assert stats["blocking_polls"] >= 1
    assert stats["polls"] >= stats["blocking_polls"]
    assert stats["poll_seconds"] > 0.0
    assert 0.0 <= stats["utilization"] < 0.5
    assert stats["busy_seconds"] >= 0.0


def test_a_busy_loop_is_utilized(loop):
    # Busy for a stretch of wall time: a chain of callbacks (never a
    # blocking poll) and one long callback.
    end = time.monotonic() + 0.3

    def spin():
        if time.monotonic() < end:
            loop.call_soon(spin)
        else:
            loop.stop()

    def hog():
        stop = time.monotonic() + 0.2
        while time.monotonic() < stop:
            pass

    loop.call_soon(hog)
    loop.call_soon(spin)
    loop.run_forever()
    stats = loop.stats()
    assert stats["blocking_polls"] == 0
    assert stats["poll_seconds"] == 0.0
    assert stats["utilization"] > 0.9
    assert stats["busy_seconds"] >= 0.2


def test_time_between_runs_does_not_count(loop):
    loop.call_soon(loop.stop)
    loop.run_forever()
    busy = loop.stats()["busy_seconds"]
    time.sleep(0.3)
    assert loop.stats()["busy_seconds"] == busy


def test_stats_while_running_from_the_loop(loop):
    async def main():
        await asyncio.sleep(0)
        return loop.stats()

    stats = loop.run_until_complete(main())
    assert stats["ticks"] >= 1
    assert 0.0 <= stats["utilization"] <= 1.0


def test_another_thread_is_refused_while_the_loop_runs(loop):
    errors = []

    def probe():
        try:
            loop.stats()
        except RuntimeError as e:
            errors.append(e)
        finally:
            loop.call_soon_threadsafe(loop.stop)

    loop.call_soon(threading.Thread(target=probe).start)
    loop.run_forever()
    assert len(errors) == 1
    # Not running: any thread may read it.
    out = []
    t = threading.Thread(target=lambda: out.append(loop.stats()))
    t.start()
    t.join(60)
    assert out and set(out[0]) == KEYS
