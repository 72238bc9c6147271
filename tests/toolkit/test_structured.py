"""TaskGroup, CancelScope and the deadline helpers, AsyncContext."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ferroloop import toolkit
from ferroloop.toolkit import TaskStatus
from ferroloop.toolkit._taskgroup import _TaskStatus


async def value_after(value, delay=0.0):
    await asyncio.sleep(delay)
    return value


async def fail_after_a_while(message, delay=0.0):
    await asyncio.sleep(delay)
    raise ValueError(message)


def test_children_finish_before_the_block_ends(run):
    async def main():
        async with toolkit.TaskGroup() as tg:
            handles = [tg.start_soon(value_after, i, 0.001 * i) for i in range(3)]
            with pytest.raises(RuntimeError, match="not finished"):
                _ = handles[2].result
        assert [await h for h in handles] == [0, 1, 2]
        assert [h.result for h in handles] == [0, 1, 2]
        assert all(h.status is _TaskStatus.FINISHED and h.exception is None for h in handles)

    run(main())


def test_a_failure_cancels_the_siblings_and_is_raised_alone(run):
    async def main():
        with pytest.raises(ValueError, match="boom"):
            async with toolkit.TaskGroup() as tg:
                failing = tg.start_soon(fail_after_a_while, "boom")
                slow = tg.start_soon(value_after, "slow", 5)
        assert isinstance(failing.exception, ValueError)
        assert isinstance(slow.exception, asyncio.CancelledError)
        with pytest.raises(RuntimeError, match="reus"):
            async with tg:
                pass

    run(main())


def test_several_failures_come_as_a_group(run):
    async def main():
        with pytest.raises(BaseExceptionGroup, match="taskgroup crashed") as info:
            async with toolkit.TaskGroup() as tg:
                tg.start_soon(fail_after_a_while, "e1")
                tg.start_soon(fail_after_a_while, "e2")
        assert {str(e) for e in info.value.exceptions} == {"e1", "e2"}
        with pytest.raises(BaseExceptionGroup) as info:
            async with toolkit.TaskGroup() as tg:
                tg.start_soon(fail_after_a_while, "child")
                await asyncio.sleep(0.01)
                raise KeyError("body")
        assert {type(e) for e in info.value.exceptions} == {KeyError, ValueError}

    run(main())


def test_start_waits_for_started(run):
    async def main():
        async def server(task_status: TaskStatus, port):
            await asyncio.sleep(0.01)
            task_status.started()
            await asyncio.sleep(0.01)
            return port

        async with toolkit.TaskGroup() as tg:
            handle = await tg.start(server, 8080)
            assert handle.status is _TaskStatus.STARTED
        assert handle.result == 8080

        async def never_starts(task_status):
            return None

        with pytest.raises(RuntimeError, match="started"):
            async with toolkit.TaskGroup() as tg:
                await tg.start(never_starts)

        async def fails_first(task_status):
            raise ValueError("before started")

        with pytest.raises(ValueError, match="before started") as info:
            async with toolkit.TaskGroup() as tg:
                await tg.start(fails_first)
        assert not isinstance(info.value, BaseExceptionGroup)

    run(main())


def test_cancel_all_and_host_cancellation(run):
    async def main():
        async with toolkit.TaskGroup() as tg:
            tg.start_soon(asyncio.sleep, 30)
            tg.start_soon(asyncio.sleep, 30)
            await asyncio.sleep(0.01)
            tg.cancel_all()  # not an error

        stopped = []

        async def stuck():
            try:
                await asyncio.Event().wait()
            finally:
                stopped.append(1)

        async def body():
            async with toolkit.TaskGroup() as tg:
                tg.start_soon(stuck)
                await asyncio.Event().wait()

        task = asyncio.create_task(body())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        assert stopped == [1]
        tg = toolkit.TaskGroup()
        async with tg:
            pass
        with pytest.raises(RuntimeError, match="not active"):
            tg.start_soon(value_after, 1)

    run(main())


def test_max_concurrency_and_a_pool_backed_group(run):
    async def main():
        running = most = 0
        lock = threading.Lock()

        async def counted():
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            await asyncio.sleep(0.005)
            with lock:
                running -= 1
            return threading.get_ident()

        async with toolkit.TaskGroup(max_concurrency=2) as tg:
            for _ in range(6):
                tg.start_soon(counted)
        assert most <= 2
        with pytest.raises(ValueError):
            toolkit.TaskGroup(max_concurrency=0)
        async with toolkit.EventLoopThreadPool(num_threads=2) as pool:
            async with toolkit.TaskGroup(pool=pool) as tg:
                handles = [tg.start_soon(counted) for _ in range(6)]
            assert threading.get_ident() not in {h.result for h in handles}
            with pytest.raises(ValueError, match="remote"):
                async with toolkit.TaskGroup(pool=pool) as tg:
                    tg.start_soon(fail_after_a_while, "remote")
                    slow = tg.start_soon(value_after, 1, 10)
            assert isinstance(slow.exception, asyncio.CancelledError)

    run(main())


def test_fail_after_and_move_on_after(run):
    async def main():
        with pytest.raises(toolkit.TimeoutError):
            async with toolkit.fail_after(0.01):
                await asyncio.sleep(5)
        with pytest.raises(TimeoutError):  # the builtin, too
            async with toolkit.fail_at(asyncio.get_running_loop().time() + 0.01):
                await asyncio.sleep(5)
        async with toolkit.fail_after(5):
            await asyncio.sleep(0)
        async with toolkit.move_on_after(0.01) as scope:
            await asyncio.sleep(5)
        assert scope.cancelled_caught and scope.cancel_called
        async with toolkit.move_on_at(asyncio.get_running_loop().time() - 1) as scope:
            await asyncio.sleep(5)
        assert scope.cancel_called
        # The task is not left cancelled afterwards.
        await asyncio.sleep(0.001)
        assert asyncio.current_task().cancelling() == 0

    run(main())


def test_cancel_scope_from_another_thread(run):
    async def main():
        scope = toolkit.CancelScope()
        threading.Timer(0.01, scope.cancel).start()
        with pytest.raises(asyncio.CancelledError):
            async with scope:
                await asyncio.sleep(5)
        assert scope.cancel_called
        asyncio.current_task().uncancel()

    run(main())


def test_deadlines_shields_and_checkpoint(run):
    async def main():
        assert toolkit.current_effective_deadline() == float("inf")
        async with toolkit.fail_after(10) as outer:
            assert toolkit.current_effective_deadline() == outer.deadline
            async with toolkit.CancelScope(shield=True):
                assert toolkit.current_effective_deadline() == float("inf")
            await toolkit.checkpoint()
        scope = toolkit.CancelScope()
        with pytest.raises(asyncio.CancelledError):
            async with scope:
                asyncio.get_running_loop().call_soon(scope.cancel)
                await toolkit.checkpoint()
        asyncio.current_task().uncancel()
        with pytest.raises(ValueError):
            toolkit.CancelScope(deadline=float("nan"))

    run(main())


def test_async_context_cancels_its_jobs_and_children(run):
    async def main():
        async with toolkit.EventLoopThreadPool(num_threads=2) as pool:
            root = toolkit.AsyncContext()
            child = toolkit.AsyncContext(parent=root)
            assert child.parent is root and root.parent is None

            async def slow():
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    return "cancelled"

            future = child.submit(pool, slow)
            await asyncio.sleep(0.02)
            root.cancel()
            assert child.is_cancelled and root.is_cancelled
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(future, 5)
            late = child.submit(pool, slow)
            assert late.cancelled()
            ctx = toolkit.AsyncContext()
            for _ in range(50):
                await ctx.submit(pool, value_after, 1)
            assert not ctx._futures
            async with ctx:
                pass
            assert ctx.is_cancelled and "AsyncContext" in repr(ctx)

    run(main())
