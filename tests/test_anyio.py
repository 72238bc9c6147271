"""anyio (asyncio backend) on each loop: a third-party library without networking."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from _helpers import PROMPT, loop_class


@pytest.fixture
def run(loop_impl):
    """Run ``func(*args)`` with anyio's asyncio backend on a loop of ``loop_impl``."""

    def run(func, *args):
        return anyio.run(
            func,
            *args,
            backend="asyncio",
            backend_options={"loop_factory": loop_impl.new_event_loop},
        )

    return run


def test_runs_on_the_requested_loop(run, loop_impl):
    async def main():
        await anyio.sleep(0)
        return type(asyncio.get_running_loop()), anyio.current_time()

    cls, now = run(main)
    assert cls is loop_class(loop_impl)
    assert isinstance(now, float)


def test_task_group_runs_children_concurrently(run):
    async def main():
        results = {}

        async def child(name, delay):
            await anyio.sleep(delay)
            results[name] = anyio.current_time()

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(child, i, 0.05)
        return results, anyio.current_time() - start

    results, elapsed = run(main)
    assert sorted(results) == list(range(10))
    assert elapsed < 0.05 * 10  # concurrent, not one after another


def test_task_group_failure_cancels_siblings(run):
    cancelled = []

    async def main():
        async def sibling():
            try:
                await anyio.sleep(3600)
            except anyio.get_cancelled_exc_class():
                cancelled.append(True)
                raise

        async def failing():
            await anyio.sleep(0.01)
            raise ValueError("child failed")

        async with anyio.create_task_group() as tg:
            tg.start_soon(sibling)
            tg.start_soon(failing)

    with pytest.raises(ExceptionGroup) as info:
        run(main)
    assert info.group_contains(ValueError, match="child failed")
    assert cancelled == [True]


def test_task_group_start_waits_for_started(run):
    async def main():
        async def service(*, task_status=anyio.TASK_STATUS_IGNORED):
            await anyio.sleep(0.01)
            task_status.started("listening")
            await anyio.sleep(3600)

        async with anyio.create_task_group() as tg:
            value = await tg.start(service)
            tg.cancel_scope.cancel()
        return value

    assert run(main) == "listening"


def test_move_on_after(run):
    async def main():
        start = anyio.current_time()
        with anyio.move_on_after(0.02) as scope:
            await anyio.sleep(3600)
        return scope.cancelled_caught, anyio.current_time() - start

    caught, elapsed = run(main)
    assert caught
    assert 0.02 <= elapsed + 1e-3 and elapsed < PROMPT


def test_fail_after(run):
    async def main():
        with anyio.fail_after(0.02):
            await anyio.sleep(3600)

    with pytest.raises(TimeoutError):
        run(main)


def test_cancel_scope_cancelled_from_another_task(run):
    async def main():
        scope = anyio.CancelScope()
        reached = []

        async def worker():
            with scope:
                await anyio.sleep(3600)
                reached.append("not cancelled")

        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await anyio.sleep(0.01)
            scope.cancel()
        return scope.cancel_called, reached

    assert run(main) == (True, [])


def test_shielded_scope(run):
    async def main():
        done = []
        with anyio.CancelScope() as outer:
            outer.cancel()
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)
                done.append("shielded work")
            await anyio.sleep(3600)
        return done, outer.cancelled_caught

    assert run(main) == (["shielded work"], True)


def test_to_thread_run_sync(run):
    async def main():
        ident = await anyio.to_thread.run_sync(threading.get_ident)
        value = await anyio.to_thread.run_sync(lambda a, b: a * b, 6, 7)
        return ident, value

    ident, value = run(main)
    assert ident != threading.get_ident()
    assert value == 42


def test_from_thread_run_back_on_the_loop(run):
    async def on_loop(x):
        await anyio.sleep(0)
        return threading.get_ident(), x + 1

    def in_thread():
        return anyio.from_thread.run(on_loop, 1)

    async def main():
        loop_ident = threading.get_ident()
        ident, value = await anyio.to_thread.run_sync(in_thread)
        return loop_ident == ident, value

    assert run(main) == (True, 2)


def test_to_thread_is_cancellable(run):
    async def main():
        with anyio.move_on_after(0.02) as scope:
            await anyio.to_thread.run_sync(time.sleep, 0.2, abandon_on_cancel=True)
        return scope.cancelled_caught

    assert run(main) is True


def test_event(run):
    async def main():
        event = anyio.Event()
        order = []

        async def waiter():
            await event.wait()
            order.append("woken")

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.sleep(0.01)
            order.append("set")
            event.set()
        return order

    assert run(main) == ["set", "woken"]


def test_lock_serializes(run):
    async def main():
        lock = anyio.Lock()
        inside = 0
        peak = 0

        async def worker():
            nonlocal inside, peak
            async with lock:
                inside += 1
                peak = max(peak, inside)
                await anyio.sleep(0.001)
                inside -= 1

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(worker)
        return peak

    assert run(main) == 1


def test_semaphore_bounds_concurrency(run):
    async def main():
        semaphore = anyio.Semaphore(3)
        inside = 0
        peak = 0

        async def worker():
            nonlocal inside, peak
            async with semaphore:
                inside += 1
                peak = max(peak, inside)
                await anyio.sleep(0.005)
                inside -= 1

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(worker)
        return peak

    assert run(main) == 3


def test_condition(run):
    async def main():
        condition = anyio.Condition()
        items = []
        consumed = []

        async def consumer():
            async with condition:
                while not items:
                    await condition.wait()
                consumed.append(items.pop())

        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.01)
            async with condition:
                items.append("item")
                condition.notify()
        return consumed, items

    assert run(main) == (["item"], [])


def test_memory_object_stream(run):
    async def main():
        send, receive = anyio.create_memory_object_stream(max_buffer_size=2)
        received = []

        async def producer():
            async with send:
                for i in range(100):
                    await send.send(i)

        async def consumer():
            async with receive:
                async for item in receive:
                    received.append(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(producer)
            tg.start_soon(consumer)
        return received

    assert run(main) == list(range(100))
