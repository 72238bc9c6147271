"""Go's select (``ferroloop.select``) and multiloop's ``select_channel``:
exactly one operation completes, the others are withdrawn with no effect,
``default`` makes it non-blocking, and ready operations are picked fairly."""

from __future__ import annotations

import asyncio
import collections
import threading

import pytest

from ferroloop import toolkit
from ferroloop.toolkit.testing import wait_all_tasks_blocked


def test_exactly_one_of_several_ready_operations_completes(run):
    async def main():
        for _ in range(50):
            a, b, c = toolkit.Channel(1), toolkit.Channel(1), toolkit.Channel()
            await c.send("c")
            ops = (a.send_op("a"), b.send_op("b"), c.recv_op())
            op, value = await toolkit.select(*ops)
            done = [a.qsize(), b.qsize(), 1 - c.qsize()]
            assert sum(done) == 1, done
            assert done[ops.index(op)] == 1
            assert value == ("c" if op is ops[2] else None)

    run(main())


def test_default_is_returned_when_nothing_is_ready(run):
    async def main():
        a, b = toolkit.Channel(), toolkit.Channel(1)
        await b.send("fills b")
        marker = object()
        assert await toolkit.select(a.recv_op(), b.send_op("x"), default=marker) is marker
        assert await toolkit.select(a.recv_op(), default=None) is None
        assert await toolkit.select(a.recv_op(), default=0) == 0
        assert b.qsize() == 1 and a._waiting() == b._waiting() == (0, 0, 0)
        op, value = await toolkit.select(a.recv_op(), b.recv_op(), default=None)
        assert (op.channel, value) == (b, "fills b")

    run(main())


def test_a_waiting_select_takes_the_first_ready_and_withdraws_the_rest(run):
    async def main():
        a, b, full = toolkit.Channel(), toolkit.Channel(), toolkit.Channel(1)
        await full.send("old")
        waiting = asyncio.create_task(toolkit.select(a.recv_op(), b.recv_op(), full.send_op("new")))
        await wait_all_tasks_blocked()
        assert a._waiting() == b._waiting() == (0, 0, 1) and full._waiting() == (0, 0, 1)
        b.try_send("from b")
        a.try_send("from a")  # too late: a keeps it
        op, value = await waiting
        assert (op.channel, value) == (b, "from b")
        assert a.try_recv() == "from a"
        assert full.try_recv() == "old"
        with pytest.raises(toolkit.WouldBlock):
            full.try_recv()  # the send op never happened
        for ch in (a, b, full):
            assert ch._waiting() == (0, 0, 0)

    run(main())


def test_a_cancelled_select_has_no_effect(run):
    async def main():
        a, full = toolkit.Channel(), toolkit.Channel(1)
        await full.send("old")
        waiting = asyncio.create_task(toolkit.select(a.recv_op(), full.send_op("new")))
        await wait_all_tasks_blocked()
        a.try_send("granted, then cancelled")  # a grants the select
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert a.try_recv() == "granted, then cancelled"
        assert full.try_recv() == "old" and full.qsize() == 0
        assert a._waiting() == full._waiting() == (0, 0, 0)

    run(main())


def test_operations_on_closed_channels_complete_with_an_error(run):
    async def main():
        a, b = toolkit.Channel(), toolkit.Channel()
        a.close()
        with pytest.raises(toolkit.ChannelClosedError):
            await toolkit.select(a.send_op(1))
        with pytest.raises(toolkit.ChannelClosedError):
            await toolkit.select(a.recv_op(), b.recv_op())
        waiting = asyncio.create_task(toolkit.select(b.recv_op()))
        await wait_all_tasks_blocked()
        b.close()
        with pytest.raises(toolkit.ChannelClosedError):
            await waiting

    run(main())


def _spread(counts: collections.Counter, keys, total: int) -> list[float]:
    return [counts[k] / total for k in keys]


def test_ready_operations_are_picked_uniformly(run):
    """Every ready operation equally likely, also when the ready ones are
    not next to each other (a random starting point would favour the one
    after a gap)."""

    async def main():
        chans = [toolkit.Channel() for _ in range(4)]
        counts: collections.Counter = collections.Counter()
        total = 4000
        for _ in range(total):
            for ch in chans:
                if ch.qsize() == 0:
                    ch.try_send(1)
            op, _ = await toolkit.select(*(ch.recv_op() for ch in chans))
            counts[op.channel] += 1
        shares = _spread(counts, chans, total)
        assert all(0.2 < s < 0.3 for s in shares), shares
        # Ready: a and c; b (between them) and d are empty.
        a, b, c, d = (toolkit.Channel() for _ in range(4))
        counts.clear()
        total = 3000
        for _ in range(total):
            for ch in (a, c):
                if ch.qsize() == 0:
                    ch.try_send(1)
            op, _ = await toolkit.select(a.recv_op(), b.recv_op(), c.recv_op(), d.recv_op())
            counts[op.channel] += 1
        shares = _spread(counts, (a, c), total)
        assert all(0.42 < s < 0.58 for s in shares), shares

    run(main())


def test_a_select_is_woken_from_another_thread(run):
    async def main():
        a, b = toolkit.Channel(), toolkit.Channel()
        waiting = asyncio.create_task(toolkit.select(a.recv_op(), b.recv_op()))
        await wait_all_tasks_blocked()
        threading.Thread(target=b.send_sync, args=("hello",)).start()
        op, value = await asyncio.wait_for(waiting, 10)
        assert (op.channel, value) == (b, "hello")

    run(main())


def test_bad_arguments():
    with pytest.raises(ValueError):
        toolkit.select()
    with pytest.raises(TypeError):
        toolkit.select(toolkit.Channel())
    with pytest.raises(TypeError):
        toolkit.select(toolkit.Channel().recv_op(), timeout=1)


# --- multiloop's select_channel -------------------------------------------


def test_select_channel_basics(run):
    async def main():
        ch1, ch2 = toolkit.Channel(), toolkit.Channel()

        async def feeder():
            await asyncio.sleep(0.01)
            await ch2.send("from ch2")

        task = asyncio.create_task(feeder())
        assert await toolkit.select_channel(ch1, ch2, timeout=5) == (ch2, "from ch2")
        await task
        with pytest.raises(ValueError, match="at least one channel"):
            await toolkit.select_channel()
        ch1.try_send("ready")
        assert await toolkit.select_channel(ch1, ch2, timeout=0) == (ch1, "ready")
        with pytest.raises(toolkit.TimeoutError, match="select_channel timed out"):
            await toolkit.select_channel(ch1, ch2, timeout=0)
        assert await toolkit.select_channel(ch1, ch2, default="none") == "none"

    run(main())


def test_select_channel_and_closed_channels(run):
    async def main():
        a, b = toolkit.Channel(), toolkit.Channel()
        a.close()
        waiting = asyncio.create_task(toolkit.select_channel(a, b))
        await wait_all_tasks_blocked()
        assert not waiting.done()
        await b.send("data")
        assert await waiting == (b, "data")
        c = toolkit.Channel()
        await c.send("buffered")
        c.close()
        b.close()
        assert await toolkit.select_channel(a, c, b) == (c, "buffered")
        with pytest.raises(toolkit.ChannelClosedError):
            await toolkit.select_channel(a, b, c)

    run(main())


def test_select_channel_loses_nothing_at_the_timeout_boundary(run):
    async def main():
        for i in range(100):
            ch = toolkit.Channel()

            async def late(ch=ch, i=i):
                await asyncio.sleep(0.002)
                await ch.send(i)

            sender = asyncio.create_task(late())
            taken = 0
            try:
                await toolkit.select_channel(ch, timeout=0.002)
                taken = 1
            except toolkit.TimeoutError:
                pass
            await sender
            assert ch.qsize() + taken == 1

    run(main())


def test_select_channel_watchers_are_counted_and_withdrawn(run):
    async def main():
        a, b = toolkit.Channel(), toolkit.Channel()
        tasks = [asyncio.create_task(toolkit.select_channel(a, b)) for _ in range(100)]
        await wait_all_tasks_blocked()
        assert len(a._notifiers) == len(b._notifiers) == 100
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert len(a._notifiers) == len(b._notifiers) == 0
        await a.send("healthy")
        assert await toolkit.select_channel(a, b) == (a, "healthy")

    run(main())
