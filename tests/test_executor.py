"""run_in_executor, set_default_executor, shutdown_default_executor."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time

import pytest

var = contextvars.ContextVar("var", default="unset")


def current_thread_name():
    return threading.current_thread().name


def test_run_in_executor_runs_in_another_thread(loop):
    async def main():
        return await loop.run_in_executor(None, lambda a, b: (a + b, threading.get_ident()), 1, 2)

    result, ident = loop.run_until_complete(main())
    assert result == 3
    assert ident != threading.get_ident()


def test_run_in_executor_propagates_the_exception(loop):
    def fail():
        raise KeyError("in thread")

    with pytest.raises(KeyError, match="in thread"):
        loop.run_until_complete(loop.run_in_executor(None, fail))


def test_run_in_executor_with_an_explicit_executor(loop):
    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="explicit") as executor:
        name = loop.run_until_complete(loop.run_in_executor(executor, current_thread_name))
    assert name.startswith("explicit")


def test_run_in_executor_many_jobs(loop):
    async def main():
        futures = [loop.run_in_executor(None, pow, i, 2) for i in range(100)]
        return await asyncio.gather(*futures)

    assert loop.run_until_complete(main()) == [i * i for i in range(100)]


def test_to_thread_carries_the_context(loop):
    async def main():
        var.set("from task")
        return await asyncio.to_thread(var.get)

    assert loop.run_until_complete(main()) == "from task"


def test_set_default_executor(loop):
    executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="default-mine")
    loop.set_default_executor(executor)
    try:
        name = loop.run_until_complete(loop.run_in_executor(None, current_thread_name))
        assert name.startswith("default-mine")
    finally:
        executor.shutdown(wait=True)


def test_shutdown_default_executor_waits_for_running_jobs(loop):
    executor = concurrent.futures.ThreadPoolExecutor()
    loop.set_default_executor(executor)
    finished = []

    def job():
        time.sleep(0.1)
        finished.append(True)

    async def main():
        loop.run_in_executor(None, job)
        await asyncio.sleep(0)
        await loop.shutdown_default_executor()
        return list(finished)

    assert loop.run_until_complete(main()) == [True]
    with pytest.raises(RuntimeError):
        executor.submit(job)


def test_run_in_default_executor_after_shutdown_raises(loop):
    loop.run_until_complete(loop.run_in_executor(None, time.time))
    loop.run_until_complete(loop.shutdown_default_executor())
    with pytest.raises(RuntimeError, match=r"^Executor shutdown has been called$"):
        loop.run_in_executor(None, time.time)
    # An explicit executor still works.
    with concurrent.futures.ThreadPoolExecutor() as executor:
        assert loop.run_until_complete(loop.run_in_executor(executor, pow, 2, 3)) == 8


def test_shutdown_default_executor_without_an_executor(loop):
    loop.run_until_complete(loop.shutdown_default_executor())
    with pytest.raises(RuntimeError, match=r"^Executor shutdown has been called$"):
        loop.run_in_executor(None, time.time)


def test_close_shuts_down_the_default_executor(loop):
    executor = concurrent.futures.ThreadPoolExecutor()
    loop.set_default_executor(executor)
    loop.run_until_complete(loop.run_in_executor(None, time.time))
    loop.close()
    with pytest.raises(RuntimeError, match="cannot schedule new futures after shutdown"):
        executor.submit(time.time)
    executor.shutdown(wait=True)
