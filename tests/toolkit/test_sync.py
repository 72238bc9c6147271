"""The synchronisation primitives, used by tasks on several loops at once
(loops in threads, through a pool) and on one loop of each kind."""

from __future__ import annotations

import asyncio
import threading

import pytest

import ferroloop
from ferroloop import toolkit
from ferroloop.toolkit.testing import wait_all_tasks_blocked


def in_pool(main, threads: int = 4):
    """Run ``main(pool)`` on a ferroloop loop with a pool of ``threads``."""

    async def outer():
        async with toolkit.EventLoopThreadPool(num_threads=threads) as pool:
            return await main(pool)

    return ferroloop.run(outer())


def test_lock_excludes_across_loops():
    lock = toolkit.Lock()
    inside = 0
    most = 0

    async def critical():
        nonlocal inside, most
        async with lock:
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.001)
            inside -= 1

    async def main(pool):
        await asyncio.gather(*(pool.submit(critical) for _ in range(40)))

    in_pool(main)
    assert most == 1 and not lock.locked


def test_lock_owner_rules(run):
    async def main():
        lock = toolkit.Lock()
        assert lock.try_acquire() and lock.locked and lock.owner is asyncio.current_task()
        with pytest.raises(RuntimeError, match="not reentrant"):
            await lock.acquire()

        async def stranger():
            with pytest.raises(RuntimeError, match="does not own"):
                lock.release()
            return lock.try_acquire()

        assert await asyncio.create_task(stranger()) is False
        lock.release()
        assert not lock.locked

        async def dies_holding():
            await lock.acquire()

        await asyncio.create_task(dies_holding())
        assert lock.locked
        await lock.acquire()  # a dead owner's lock is taken back
        lock.release()

    run(main())


def test_semaphore_bounds_concurrency_and_cancellation_keeps_permits(run):
    async def main():
        sem = toolkit.Semaphore(2)
        assert sem.value == 2 and sem.max_value == 2
        await sem.acquire()
        assert sem.try_acquire() and sem.value == 0 and not sem.try_acquire()
        waiters = [asyncio.create_task(sem.acquire()) for _ in range(3)]
        await wait_all_tasks_blocked()
        sem.release()  # granted to waiters[0], which is then cancelled
        waiters[0].cancel()
        await asyncio.gather(waiters[0], return_exceptions=True)
        await asyncio.wait_for(waiters[1], 5)  # the permit went on
        sem.release()
        await asyncio.wait_for(waiters[2], 5)
        sem.release()
        sem.release()
        assert sem.value == 2
        with pytest.raises(ValueError, match="released too many times"):
            sem.release()
        with pytest.raises(ValueError):
            toolkit.Semaphore(-1)

    run(main())


def test_capacity_limiter_tokens(run):
    async def main():
        limiter = toolkit.CapacityLimiter(2.5)
        assert limiter.total_capacity == 2 and limiter.available_capacity == 2
        async with limiter:
            assert limiter.borrowed_tokens == 1.0 and limiter.available_tokens == 1.5
            assert limiter.snapshot() == (2.5, 1.5, 1.0)
            assert limiter.try_acquire() and not limiter.try_acquire()
            waiter = asyncio.create_task(limiter.acquire())
            await wait_all_tasks_blocked()
            limiter.total_tokens = 3
            await asyncio.wait_for(waiter, 5)
            limiter.release()
            limiter.release()
        assert limiter.borrowed_tokens == 0
        with pytest.raises(ValueError, match="released too many times"):
            limiter.release()
        with pytest.raises(ValueError):
            toolkit.CapacityLimiter(0)

    run(main())


def test_event_wakes_waiters_on_every_loop():
    event = toolkit.Event()
    started = toolkit.AsyncWaitGroup()

    async def waiter():
        started.done()
        await event.wait()
        return threading.get_ident()

    async def main(pool):
        started.add(8)
        futures = [pool.submit(waiter, pin_to=i % 4) for i in range(8)]
        await started.wait()
        assert not event.is_set()
        threading.Thread(target=event.set).start()
        idents = await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert len(set(idents)) == 4
        assert event.is_set()
        await event.wait()  # at once

    in_pool(main)
    assert repr(event) == "<Event is_set=True>"


def test_wait_group_counts_done_from_any_thread(run):
    async def main():
        wg = toolkit.AsyncWaitGroup()
        await asyncio.wait_for(wg.wait(), 1)  # zero: at once
        wg.add(3)
        threads = [threading.Thread(target=wg.done) for _ in range(3)]
        waiting = asyncio.create_task(wg.wait())
        await wait_all_tasks_blocked()
        assert not waiting.done()
        for t in threads:
            t.start()
        await asyncio.wait_for(waiting, 10)
        with pytest.raises(RuntimeError):
            wg.done()
        with pytest.raises(RuntimeError):
            wg.add(-1)
        async with wg.holding():
            assert wg._count == 1
        assert wg._count == 0
        tracked = wg.wrap(lambda x: x * 2)
        assert await tracked(4) == 8 and wg._count == 0

        async def job():
            return "done"

        coro = wg.track(job())
        assert wg._count == 1
        assert await coro == "done" and wg._count == 0
        wg.track(job()).close()
        assert wg._count == 0
        with pytest.raises(TypeError):
            wg.track(42)
        assert "AsyncWaitGroup" in repr(wg)

    run(main())


def test_condition_notify_across_loops():
    cond = toolkit.Condition()
    items: list[int] = []
    ready = toolkit.AsyncWaitGroup()

    async def consumer():
        async with cond:
            ready.done()
            await cond.wait_for(lambda: items)
            return items.pop()

    async def main(pool):
        ready.add(3)
        futures = [pool.submit(consumer, pin_to=i) for i in range(3)]
        await ready.wait()
        await wait_all_tasks_blocked()
        for i in range(3):
            async with cond:
                items.append(i)
                cond.notify()
        assert sorted(await asyncio.wait_for(asyncio.gather(*futures), 10)) == [0, 1, 2]
        with pytest.raises(RuntimeError, match="un-acquired"):
            await cond.wait()

    in_pool(main)


def test_condition_notification_passes_on_from_a_cancelled_waiter(run):
    async def main():
        cond = toolkit.Condition()
        woken: list[str] = []

        async def waiter(name):
            async with cond:
                await cond.wait()
                woken.append(name)

        a = asyncio.create_task(waiter("a"))
        b = asyncio.create_task(waiter("b"))
        await wait_all_tasks_blocked()
        cond.notify(1)  # to a, which is cancelled before it runs
        a.cancel()
        await asyncio.gather(a, return_exceptions=True)
        await asyncio.wait_for(b, 5)
        assert woken == ["b"]
        cond.notify_all()

    run(main())


def test_barrier_rounds_and_breaking(run):
    async def main():
        barrier = toolkit.Barrier(3)
        results = await asyncio.gather(*(barrier.wait() for _ in range(3)))
        assert sorted(r.index for r in results) == [0, 1, 2]
        assert sum(r.is_leader for r in results) == 1 and barrier.n_waiting == 0
        first = asyncio.create_task(barrier.wait())
        second = asyncio.create_task(barrier.wait())
        await wait_all_tasks_blocked()
        assert barrier.n_waiting == 2
        first.cancel()
        with pytest.raises(RuntimeError, match="broken"):
            await second
        assert barrier.broken
        with pytest.raises(RuntimeError, match="broken"):
            await barrier.wait()
        barrier.reset()
        assert not barrier.broken
        waiting = asyncio.create_task(barrier.wait())
        await wait_all_tasks_blocked()
        barrier.abort()
        with pytest.raises(RuntimeError, match="aborted"):
            await waiting
        with pytest.raises(ValueError):
            toolkit.Barrier(0)

    run(main())


def test_barrier_across_loops():
    barrier = toolkit.Barrier(4)

    async def party():
        return (await barrier.wait()).index

    async def main(pool):
        return await asyncio.wait_for(asyncio.gather(*(pool.submit(party, pin_to=i) for i in range(4))), 10)

    assert sorted(in_pool(main)) == [0, 1, 2, 3]


def test_rwmutex_readers_share_writers_exclude():
    rw = toolkit.AsyncRWMutex()
    state = {"readers": 0, "writers": 0, "most_readers": 0, "bad": 0}
    guard = threading.Lock()

    async def reader():
        async with rw.reader():
            with guard:
                state["readers"] += 1
                state["most_readers"] = max(state["most_readers"], state["readers"])
                state["bad"] += state["writers"] > 0
            await asyncio.sleep(0.002)
            with guard:
                state["readers"] -= 1

    async def writer():
        async with rw.writer():
            with guard:
                state["writers"] += 1
                state["bad"] += state["writers"] > 1 or state["readers"] > 0
            await asyncio.sleep(0.001)
            with guard:
                state["writers"] -= 1

    async def main(pool):
        jobs = [pool.submit(reader if i % 4 else writer) for i in range(40)]
        await asyncio.wait_for(asyncio.gather(*jobs), 20)

    in_pool(main)
    assert state["bad"] == 0 and state["most_readers"] > 1
    assert "AsyncRWMutex" in repr(rw)


def test_rwmutex_rules(run):
    async def main():
        rw = toolkit.AsyncRWMutex()
        async with rw.reader():
            async with rw.reader():  # re-entrant
                pass
            with pytest.raises(RuntimeError):
                async with rw.writer():
                    pass
        async with rw.writer():
            with pytest.raises(RuntimeError):
                async with rw.writer():
                    pass
            blocked = asyncio.create_task(rw.reader().__aenter__())
            await wait_all_tasks_blocked()
            assert not blocked.done()
            blocked.cancel()  # a waiting reader leaves cleanly
            await asyncio.gather(blocked, return_exceptions=True)
        async with rw.writer():
            pass

    run(main())


def test_once_runs_once_across_loops():
    once = toolkit.AsyncOnce()
    calls = []

    async def init():
        calls.append(threading.get_ident())
        await asyncio.sleep(0.01)
        return "ready"

    async def main(pool):
        results = await asyncio.gather(*(pool.submit(once.do, init) for _ in range(8)))
        assert results == ["ready"] * 8
        assert await once.do(init) == "ready"

    in_pool(main)
    assert len(calls) == 1 and "AsyncOnce" in repr(once)


def test_once_failures(run):
    async def main():
        once = toolkit.AsyncOnce()
        with pytest.raises(KeyError):
            await once.do(lambda: {}["x"])
        with pytest.raises(KeyError):
            await once.do(lambda: 1)
        cancelled = toolkit.AsyncOnce()
        leader = asyncio.create_task(cancelled.do(asyncio.sleep, 10))
        follower = asyncio.create_task(cancelled.do(asyncio.sleep, 10))
        await wait_all_tasks_blocked()
        leader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leader
        with pytest.raises(RuntimeError, match="AsyncOnce execution was cancelled"):
            await follower

    run(main())
