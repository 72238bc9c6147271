"""EventLoopThreadPool: jobs on loops in threads, their outcomes back on the
caller's loop (each caller loop kind; worker loops of each kind too)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import traceback

import pytest
from toolkit_loops import LOOPS

from ferroloop import toolkit

request_id = contextvars.ContextVar("request_id", default="missing")


async def add(a, b, *, scale=1):
    await asyncio.sleep(0)
    return (a + b) * scale


def test_coroutine_functions_plain_functions_and_values(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=2) as pool:
            assert pool.is_running and pool.num_threads == 2
            assert await pool.submit(add, 3, 5) == 8
            assert await pool.submit(add, 1, 2, scale=10) == 30
            assert await pool.submit(add(2, 2)) == 4
            assert await pool.submit(lambda: 99) == 99
            assert await pool.submit(42) == 42
            assert await pool.submit(asyncio.sleep, 0.001) is None
            futures = pool.submit_many([add(i, i) for i in range(20)])
            assert await asyncio.gather(*futures) == [2 * i for i in range(20)]
            assert pool.submit_many([]) == []
        assert not pool.is_running

    run(main())


def test_jobs_run_on_the_worker_threads_and_pin_to_picks_one(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=3) as pool:
            idents = [await pool.submit(threading.get_ident, pin_to=i % 3) for i in range(6)]
            assert idents[:3] == idents[3:] and len(set(idents)) == 3
            assert threading.get_ident() not in idents
            loop1 = pool._get_loop(1)
            assert await pool.submit(threading.get_ident, pin_to=loop1) == idents[1]
            assert await pool.submit(asyncio.get_running_loop, pin_to=2) is pool._get_loop(2)
            with pytest.raises(ValueError, match="out of range"):
                pool.submit(print, pin_to=99)
            with pytest.raises(ValueError, match="not managed"):
                pool.submit(print, pin_to=asyncio.get_running_loop())
            with pytest.raises(TypeError, match="must be an AbstractEventLoop"):
                pool.submit(print, pin_to="zero")
            with pytest.raises(TypeError, match="cannot be an asyncio.Future"):
                pool.submit(asyncio.get_running_loop().create_future())
            coro = add(1, 2)
            with pytest.raises(TypeError, match="Cannot pass positional or keyword arguments"):
                pool.submit(coro, 1)
            coro.close()

    run(main())


def test_unpinned_jobs_spread_over_idle_workers(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=4) as pool:
            gate = toolkit.Event()

            async def held():
                await gate.wait()
                return threading.get_ident()

            futures = [pool.submit(held) for _ in range(8)]
            await asyncio.sleep(0)
            assert pool.get_metrics()["active_tasks"] == [2, 2, 2, 2]
            gate.set()
            assert len(set(await asyncio.gather(*futures))) == 4
            metrics = pool.get_metrics()
            assert metrics["completed_tasks"] == [2, 2, 2, 2] and metrics["active_tasks"] == [0] * 4
            assert metrics["thread_count"] == 4 and metrics["is_running"] is True

    run(main())


def test_remote_exceptions_keep_their_traceback(run):
    async def main():
        def fails_in_a_function():
            raise KeyError("sync")

        async def fails_in_a_coroutine():
            await asyncio.sleep(0)
            raise ValueError("remote failure")

        async with toolkit.EventLoopThreadPool(num_threads=1) as pool:
            with pytest.raises(ValueError, match="remote failure") as info:
                await pool.submit(fails_in_a_coroutine)
            frames = "".join(traceback.format_tb(info.value.__traceback__))
            assert "fails_in_a_coroutine" in frames
            with pytest.raises(KeyError) as info:
                await pool.submit(fails_in_a_function)
            assert "fails_in_a_function" in "".join(traceback.format_tb(info.value.__traceback__))

    run(main())


def test_contextvars_are_copied_to_the_job(run):
    async def main():
        async def read_and_change():
            seen = request_id.get()
            request_id.set("changed remotely")
            return seen

        async with toolkit.EventLoopThreadPool(num_threads=1) as pool:
            assert await pool.submit(request_id.get) == "missing"
            token = request_id.set("caller's")
            try:
                assert await pool.submit(read_and_change) == "caller's"
                assert await pool.submit(request_id.get) == "caller's"
                assert request_id.get() == "caller's", "the job changed the caller's context"
            finally:
                request_id.reset(token)

    run(main())


def test_cancelling_the_future_cancels_the_remote_task(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=2) as pool:
            started, stopped = toolkit.Event(), toolkit.Event()

            async def long_job():
                started.set()
                try:
                    await asyncio.sleep(30)
                finally:
                    stopped.set()

            future = pool.submit(long_job)
            await started.wait()
            future.cancel()
            await asyncio.wait_for(stopped.wait(), 10)
            # Awaited by a task that is then cancelled: the same.
            started2, stopped2 = toolkit.Event(), toolkit.Event()

            async def long_job2():
                started2.set()
                try:
                    await asyncio.sleep(30)
                finally:
                    stopped2.set()

            waiter = asyncio.create_task(asyncio.wait_for(pool.submit(long_job2), 30))
            await started2.wait()
            # The job may start before the task's first step: let the task
            # reach its await (a task cancelled before it starts never
            # awaits the future, so never cancels it).
            await asyncio.sleep(0)
            waiter.cancel()
            await asyncio.wait_for(stopped2.wait(), 10)
            # The job's finally ran; the worker loop counts the task done
            # once it has finished, a moment later on its own thread.
            for _ in range(500):
                if sum(pool.get_metrics()["active_tasks"]) == 0:
                    break
                await asyncio.sleep(0.01)
            assert sum(pool.get_metrics()["active_tasks"]) == 0

    run(main())


def test_cancel_scope_cancels_the_job(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=2) as pool:
            scope = toolkit.CancelScope()

            async def work():
                await asyncio.sleep(5)
                return 42

            future = pool.submit(work, cancel_scope=scope)
            scope.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(future, 5)

    run(main())


@pytest.mark.parametrize("workers", sorted(LOOPS))
def test_worker_loops_from_any_factory(run, workers):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=2, loop_factory=LOOPS[workers]) as pool:
            kinds = {type(await pool.submit(asyncio.get_running_loop, pin_to=i)).__module__ for i in range(2)}
            assert len(kinds) == 1
            assert await asyncio.gather(*(pool.submit(add, i, 1) for i in range(50))) == list(range(1, 51))
            ev = toolkit.Event()
            future = pool.submit(ev.wait)
            future.cancel()
            await asyncio.sleep(0.01)

    run(main())


def test_close_waits_then_cancels_and_abort_does_not_wait(run):
    async def main():
        pool = toolkit.EventLoopThreadPool(num_threads=2)
        await pool.start()
        quick = [pool.submit(add, i, 0) for i in range(40)]
        slow = pool.submit(asyncio.sleep, 30)
        await pool.close(timeout=0.2)
        assert await asyncio.gather(*quick) == list(range(40))
        await asyncio.sleep(0.01)
        assert slow.done() and isinstance(slow.exception(), asyncio.CancelledError)
        with pytest.raises(toolkit.ThreadPoolClosedError, match="ThreadPool is not running"):
            pool.submit(add, 1, 2)
        with pytest.raises(RuntimeError, match="restart"):
            await pool.start()
        with pytest.raises(RuntimeError, match="not running"):
            pool._get_loop(0)
        await pool.close()
        await pool.wait_closed()

        pool = toolkit.EventLoopThreadPool(num_threads=1)
        await pool.start()
        blocker = pool.submit(asyncio.sleep, 30)
        queued = [pool.submit(add, i, 0) for i in range(100)]
        await pool.abort()
        done, pending = await asyncio.wait([blocker, *queued], timeout=10)
        assert not pending
        for future in done:
            if future.cancelled():
                continue
            exc = future.exception()
            assert exc is None or isinstance(exc, (asyncio.CancelledError, toolkit.ThreadPoolClosedError)), exc
        await pool.wait_closed()
        assert not pool.is_running

    run(main())


def test_lifecycle_helpers(run):
    async def main():
        never = toolkit.EventLoopThreadPool(num_threads=1)
        await asyncio.wait_for(never.wait_closed(), 1)
        with pytest.raises(ValueError, match="must not be negative"):
            toolkit.EventLoopThreadPool(num_threads=-1)
        assert toolkit.PoolOptions().num_threads == 0 and toolkit.PoolOptions().loop_factory is None
        assert toolkit.EventLoopThreadPool(options=toolkit.PoolOptions(num_threads=5)).num_threads == 5
        pool = await toolkit.create_pool(num_threads=3)
        try:
            assert pool.is_running and pool.num_threads == 3
            await pool.start()  # idempotent
            assert "EventLoopThreadPool" in repr(pool) and "threads=3" in repr(pool)
        finally:
            await pool.close()
        assert await toolkit.run_in_pool(add, 1, 2, num_threads=1, scale=3) == 9
        with pytest.raises(ValueError):
            await toolkit.run_in_pool(lambda: int("x"), num_threads=1)

    run(main())


def test_submit_needs_a_running_loop():
    async def start():
        pool = toolkit.EventLoopThreadPool(num_threads=1)
        await pool.start()
        return pool

    loop = asyncio.new_event_loop()
    pool = loop.run_until_complete(start())
    try:
        with pytest.raises(RuntimeError, match="running asyncio event loop"):
            pool.submit(add, 1, 2)
    finally:
        loop.run_until_complete(pool.close())
        loop.close()
