"""Channel: multiloop's API and semantics, on each loop (ferroloop, asyncio,
uvloop), within a loop, across loops in threads and with plain threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

import ferroloop
from ferroloop import toolkit
from ferroloop.toolkit.testing import wait_all_tasks_blocked

from toolkit_loops import LOOPS


def test_buffered_items_come_out_in_order(run):
    async def main():
        ch = toolkit.Channel()
        items = [1, None, b"", {}, "x", 0, False]
        for item in items:
            await ch.send(item)
        assert ch.qsize() == len(items) and not ch.empty() and not ch.full()
        assert [await ch.recv() for _ in items] == items
        assert ch.empty()

    run(main())


def test_bounded_send_waits_for_room(run):
    async def main():
        ch = toolkit.Channel(maxsize=1)
        await ch.send("first")
        assert ch.full()
        sender = asyncio.create_task(ch.send("second"))
        await wait_all_tasks_blocked()
        assert not sender.done()
        assert len(ch._putters) == 1
        assert await ch.recv() == "first"
        await asyncio.wait_for(sender, 5)
        assert await ch.recv() == "second"

    run(main())


def test_try_send_and_try_recv():
    ch = toolkit.Channel(maxsize=1)
    with pytest.raises(toolkit.WouldBlock):
        ch.try_recv()
    assert ch.try_send(None) is True
    assert ch.try_send("no room") is False
    assert ch.try_recv() is None
    assert ch.maxsize == 1 and toolkit.Channel().maxsize == 0 and toolkit.Channel(-3).maxsize == 0
    ch.close()
    with pytest.raises(toolkit.ChannelClosedError):
        ch.try_send(1)
    with pytest.raises(toolkit.ChannelClosedError):
        ch.try_recv()
    assert issubclass(toolkit.WouldBlock, toolkit.MultiloopError)
    assert issubclass(toolkit.ThreadPoolClosedError, RuntimeError)
    assert issubclass(toolkit.TimeoutError, TimeoutError)


def test_close_wakes_waiters_and_keeps_buffered_items(run):
    async def main():
        full = toolkit.Channel(maxsize=1)
        await full.send("kept")
        sender = asyncio.create_task(full.send("refused"))
        empty = toolkit.Channel()
        receiver = asyncio.create_task(empty.recv())
        await wait_all_tasks_blocked()
        full.close()
        full.close()
        empty.close()
        with pytest.raises(toolkit.ChannelClosedError, match="Channel is closed"):
            await sender
        with pytest.raises(toolkit.ChannelClosedError):
            await receiver
        assert full.is_closed
        with pytest.raises(toolkit.ChannelClosedError):
            await full.send("late")
        assert await full.recv() == "kept"
        with pytest.raises(toolkit.ChannelClosedError):
            await full.recv()

    run(main())


def test_async_for_ends_when_closed_and_drained(run):
    async def main():
        ch = toolkit.Channel()

        async def producer():
            for i in range(3):
                await ch.send(i)
                await asyncio.sleep(0.001)
            ch.close()

        task = asyncio.create_task(producer())
        assert [item async for item in ch] == [0, 1, 2]
        await task

    run(main())


def test_a_woken_receiver_keeps_its_item_from_bargers(run):
    async def main():
        ch = toolkit.Channel()
        receivers = [asyncio.create_task(ch.recv()) for _ in range(3)]
        await wait_all_tasks_blocked()
        assert len(ch._getters) == 3
        for i in (1, 2, 3):
            assert ch.try_send(i)
        with pytest.raises(toolkit.WouldBlock):
            ch.try_recv()
        assert await asyncio.gather(*receivers) == [1, 2, 3]

    run(main())


def test_a_freed_slot_goes_to_the_waiting_sender_not_a_barger(run):
    async def main():
        ch = toolkit.Channel(maxsize=1)
        await ch.send("initial")
        queued = asyncio.create_task(ch.send("queued"))
        await wait_all_tasks_blocked()
        assert ch.try_recv() == "initial"
        assert ch.try_send("barger") is False
        await queued
        assert await ch.recv() == "queued"

    run(main())


def test_a_cancelled_woken_receiver_passes_the_item_on(run):
    async def main():
        ch = toolkit.Channel()
        first = asyncio.create_task(ch.recv())
        second = asyncio.create_task(ch.recv())
        await wait_all_tasks_blocked()
        assert ch.try_send(None)  # granted to `first`, which has not run yet
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await asyncio.wait_for(second, 5) is None
        assert ch._waiting() == (0, 0, 0)

    run(main())


def test_a_cancelled_woken_sender_passes_the_slot_on(run):
    async def main():
        ch = toolkit.Channel(maxsize=1)
        await ch.send("a")
        first = asyncio.create_task(ch.send("b"))
        second = asyncio.create_task(ch.send("c"))
        await wait_all_tasks_blocked()
        assert ch.try_recv() == "a"  # the slot is promised to `first`
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, 5)
        assert ch.try_recv() == "c"
        assert ch.qsize() == 0

    run(main())


def test_a_cancellation_storm_leaves_no_waiter(run):
    async def main():
        ch = toolkit.Channel()
        tasks = [asyncio.create_task(ch.recv()) for _ in range(300)]
        await wait_all_tasks_blocked()
        assert len(ch._getters) == 300
        for t in tasks:
            t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        assert len(ch._getters) == 0
        await ch.send("after")
        assert await ch.recv() == "after"

    run(main())


def test_timeouts(run):
    async def main():
        ch = toolkit.Channel(maxsize=1)
        with pytest.raises(toolkit.TimeoutError, match="recv timed out"):
            await ch.recv(timeout=0.01)
        await ch.send(1, timeout=0)
        with pytest.raises(asyncio.TimeoutError):
            await ch.send(2, timeout=0.01)
        assert await ch.recv(timeout=0) == 1
        assert ch._waiting() == (0, 0, 0)

    run(main())


def test_split_views(run):
    async def main():
        tx, rx = toolkit.Channel(maxsize=3).split()
        assert repr(tx) == "<SendChannel is_closed=False>"
        assert repr(rx) == "<ReceiveChannel is_closed=False>"
        await tx.send("a")
        assert tx.try_send("b")
        tx.send_sync("c")
        assert tx.full() and tx.maxsize == 3 and rx.qsize() == 3
        assert rx.try_recv() == "a"
        assert await rx.recv() == "b"
        assert rx.recv_sync() == "c"
        async with tx:
            await tx.send("d")
        assert tx.is_closed and rx.is_closed
        assert [x async for x in rx] == ["d"]

    run(main())


def test_plain_threads_send_and_receive_blocking():
    ch = toolkit.Channel(maxsize=2)
    out: list[int] = []
    consumer = threading.Thread(target=lambda: out.extend(ch.recv_sync(timeout=10) for _ in range(100)))
    consumer.start()
    for i in range(100):
        ch.send_sync(i, timeout=10)
    consumer.join(10)
    assert out == list(range(100))
    ch.send_sync("x")
    ch.send_sync("y")
    with pytest.raises(toolkit.TimeoutError, match="send_sync timed out"):
        ch.send_sync("z", timeout=0.01)
    assert [ch.recv_sync(), ch.recv_sync()] == ["x", "y"]
    with pytest.raises(toolkit.TimeoutError, match="recv_sync timed out"):
        ch.recv_sync(timeout=0.01)
    ch.close()
    with pytest.raises(toolkit.ChannelClosedError):
        ch.send_sync(1)
    with pytest.raises(toolkit.ChannelClosedError):
        ch.recv_sync()


@pytest.mark.parametrize("other_loop", sorted(LOOPS))
def test_ping_pong_between_loops_in_two_threads(run, other_loop):
    """A task on this loop and one on a loop in another thread, each
    waiting for the other (every wake-up crosses threads)."""
    n = 300
    ping, pong = toolkit.Channel(1), toolkit.Channel(1)

    async def echo():
        for _ in range(n):
            await pong.send(await ping.recv() + 1)

    def serve_echo():
        with asyncio.Runner(loop_factory=LOOPS[other_loop]) as runner:
            runner.run(echo())

    thread = threading.Thread(target=serve_echo)
    thread.start()

    async def main():
        for i in range(n):
            await ping.send(i)
            assert await pong.recv() == i + 1

    try:
        run(main())
    finally:
        thread.join(10)
    assert not thread.is_alive()


def test_loop_and_plain_thread_ping_pong(run):
    n = 300
    ping, pong = toolkit.Channel(), toolkit.Channel()

    def echo():
        for _ in range(n):
            pong.send_sync(ping.recv_sync(timeout=10) + 1)

    thread = threading.Thread(target=echo)
    thread.start()

    async def main():
        for i in range(n):
            await ping.send(i)
            assert await pong.recv(timeout=10) == i + 1

    run(main())
    thread.join(10)


def test_sends_from_pool_loops_reach_receivers_on_pool_loops():
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=4) as pool:
            ch = toolkit.Channel(maxsize=10)
            got: list[int] = []

            async def consumer():
                got.append(await ch.recv())

            futures = [pool.submit(ch.send, i) for i in range(200)]
            futures += [pool.submit(consumer) for _ in range(200)]
            await asyncio.gather(*futures)
            assert sorted(got) == list(range(200))

    ferroloop.run(main())


def test_reprs_and_names():
    ch = toolkit.Channel()
    assert repr(ch) == "<Channel is_closed=False>"
    assert repr(ch.recv_op()) == "<recv_op()>"
    assert repr(ch.send_op(1)) == "<send_op(1)>"
    assert ch.recv_op().channel is ch and ch.send_op(1).is_send
    op = ch.recv()
    assert "Channel.recv" in repr(op)
    op.close()
    assert ferroloop.Channel is toolkit.Channel and ferroloop.select is toolkit.select
    # Every toolkit name through the top level too (`import ferroloop as multiloop`).
    assert all(getattr(ferroloop, name) is getattr(toolkit, name) for name in toolkit.__all__ if name != "__version__")
    with pytest.raises(AttributeError):
        ferroloop.no_such_name


def test_a_loop_that_stops_right_after_waking_a_thread_still_wakes_it():
    """ferroloop defers waking another thread to its next poll (the woken
    thread would only wait for the GIL until then); a loop that stops
    before polling again must wake it on the way out."""
    ch = toolkit.Channel()
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(ch.recv_sync(timeout=10)))
    thread.start()
    while ch._waiting()[0] == 0:
        threading.Event().wait(0.001)
    loop = ferroloop.new_event_loop()
    try:
        loop.run_until_complete(ch.send("sent just before the loop stopped"))
        thread.join(10)
        assert got == ["sent just before the loop stopped"]
    finally:
        loop.close()
