"""Nothing lost, nothing twice: one channel hammered from several loops and
plain threads at once, sends, receives and selects cancelled at random
moments, and every item counted.

A send that ends in CancelledError (or a send_sync that times out) must not
have put its item in; a receive that ends so must not have taken one. So at
the end the items received (plus what is left in the channel) are exactly
the items whose send completed, each once.
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
import uvloop

import ferroloop
from ferroloop import toolkit

ITEMS_PER_PRODUCER = 1000
# Generous: a 2-core machine shared with builds.
DEADLINE = 60.0


class Tally:
    """Items sent and received, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[int] = []
        self.received: list[int] = []

    def add_sent(self, item: int) -> None:
        with self.lock:
            self.sent.append(item)

    def add_received(self, item: int) -> None:
        with self.lock:
            self.received.append(item)


async def _maybe_cancelled(op, rng: random.Random):
    """Run the awaitable `op` as a task, cancelling it at a random moment
    half of the time. (True, value) if it completed, (False, None) if it
    ended cancelled."""
    task = asyncio.ensure_future(op)
    if rng.random() < 0.5:
        for _ in range(rng.randrange(3)):
            await asyncio.sleep(0)
        if rng.random() < 0.5:
            asyncio.get_running_loop().call_later(rng.random() / 2000, task.cancel)
        else:
            task.cancel()
    try:
        return True, await task
    except asyncio.CancelledError:
        if task.cancelled():
            return False, None
        raise


async def _producer(ch, first: int, tally: Tally, seed: int) -> None:
    rng = random.Random(seed)
    for item in range(first, first + ITEMS_PER_PRODUCER):
        while True:
            done, _ = await _maybe_cancelled(ch.send(item), rng)
            if done:
                tally.add_sent(item)
                break


async def _consumer(ch, other, tally: Tally, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        if rng.random() < 0.3:
            # A select with a channel nobody sends on: only ch can win.
            done, got = await _maybe_cancelled(toolkit.select(ch.recv_op(), other.recv_op(), default=None), rng)
            if done and got is not None:
                tally.add_received(got[1])
            elif done:
                await asyncio.sleep(0.0005)
        else:
            try:
                done, got = await _maybe_cancelled(ch.recv(timeout=0.05), rng)
            except toolkit.TimeoutError:
                continue
            if done:
                tally.add_received(got)


def _loop_thread(new_loop, main) -> threading.Thread:
    def run():
        loop = new_loop()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _sync_producer(ch, first: int, tally: Tally, seed: int) -> None:
    rng = random.Random(seed)
    for item in range(first, first + ITEMS_PER_PRODUCER):
        while True:
            try:
                ch.send_sync(item, timeout=rng.choice([0, 0.0005, 0.01, None]))
            except toolkit.TimeoutError:
                continue
            tally.add_sent(item)
            break


def _sync_consumer(ch, tally: Tally, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        try:
            tally.add_received(ch.recv_sync(timeout=rng.choice([0, 0.0005, 0.01])))
        except toolkit.TimeoutError:
            pass


@pytest.mark.parametrize("maxsize", [1, 8, 0])
def test_random_cancellations_lose_and_duplicate_nothing(maxsize):
    ch = toolkit.Channel(maxsize)
    other = toolkit.Channel()
    tally = Tally()
    stop = threading.Event()
    producers = [
        _loop_thread(ferroloop.new_event_loop, lambda: _producer(ch, 0, tally, 1)),
        _loop_thread(ferroloop.new_event_loop, lambda: _producer(ch, 10_000, tally, 2)),
        _loop_thread(asyncio.new_event_loop, lambda: _producer(ch, 20_000, tally, 3)),
        _loop_thread(uvloop.new_event_loop, lambda: _producer(ch, 30_000, tally, 4)),
        threading.Thread(target=_sync_producer, args=(ch, 40_000, tally, 5), daemon=True),
    ]
    producers[-1].start()
    consumers = [
        _loop_thread(ferroloop.new_event_loop, lambda: _consumer(ch, other, tally, stop, 6)),
        _loop_thread(asyncio.new_event_loop, lambda: _consumer(ch, other, tally, stop, 7)),
        _loop_thread(ferroloop.new_event_loop, lambda: _consumer(ch, other, tally, stop, 8)),
        threading.Thread(target=_sync_consumer, args=(ch, tally, stop, 9), daemon=True),
    ]
    consumers[-1].start()
    for thread in producers:
        thread.join(DEADLINE)
        assert not thread.is_alive(), "a producer is stuck"
    stop.set()
    for thread in consumers:
        thread.join(DEADLINE)
        assert not thread.is_alive(), "a consumer is stuck"
    while True:
        try:
            tally.add_received(ch.try_recv())
        except toolkit.WouldBlock:
            break
    assert ch._waiting() == (0, 0, 0), "a waiter was left registered"
    assert len(tally.sent) == 5 * ITEMS_PER_PRODUCER
    duplicates = len(tally.received) - len(set(tally.received))
    assert duplicates == 0, f"{duplicates} items received twice"
    lost = set(tally.sent) - set(tally.received)
    assert not lost, f"{len(lost)} items lost, e.g. {sorted(lost)[:5]}"
    assert set(tally.received) <= set(tally.sent), "received an item never sent"
