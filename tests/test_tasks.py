"""create_future, create_task and the task factory."""

from __future__ import annotations

import asyncio
import contextvars
import re

import pytest

from _helpers import run_once

var = contextvars.ContextVar("var", default="unset")


async def double(x):
    await asyncio.sleep(0)
    return x * 2


def test_create_future(loop):
    fut = loop.create_future()
    assert asyncio.isfuture(fut)
    assert fut.get_loop() is loop
    assert not fut.done()
    loop.call_soon(fut.set_result, "value")
    assert loop.run_until_complete(fut) == "value"


def test_future_done_callbacks_are_scheduled_not_called_inline(loop):
    calls = []
    fut = loop.create_future()
    fut.add_done_callback(lambda f: calls.append(f.result()))
    fut.set_result(7)
    assert calls == []
    run_once(loop)
    assert calls == [7]


def test_create_task_runs_the_coroutine(loop):
    task = loop.create_task(double(21))
    assert isinstance(task, asyncio.Task)
    assert task.get_loop() is loop
    assert loop.run_until_complete(task) == 42


def test_create_task_name(loop):
    named = loop.create_task(double(1), name="my-task")
    unnamed = loop.create_task(double(2))
    assert named.get_name() == "my-task"
    assert re.fullmatch(r"Task-\d+", unnamed.get_name())
    loop.run_until_complete(asyncio.gather(named, unnamed))


def test_create_task_context(loop):
    ctx = contextvars.copy_context()
    ctx.run(var.set, "from ctx")

    async def read():
        await asyncio.sleep(0)
        value = var.get()
        var.set("written by task")
        return value

    assert loop.run_until_complete(loop.create_task(read(), context=ctx)) == "from ctx"
    assert ctx[var] == "written by task"
    assert var.get() == "unset"


def test_current_task_and_all_tasks(loop):
    async def main():
        me = asyncio.current_task()
        other = asyncio.get_running_loop().create_task(asyncio.sleep(0.01))
        tasks = asyncio.all_tasks()
        await other
        return me, other, tasks

    task = loop.create_task(main())
    me, other, tasks = loop.run_until_complete(task)
    assert me is task
    assert {task, other} <= tasks


def test_task_cancel(loop):
    started = []

    async def forever():
        started.append(True)
        await asyncio.sleep(3600)

    task = loop.create_task(forever())
    loop.call_later(0.01, task.cancel)
    with pytest.raises(asyncio.CancelledError):
        loop.run_until_complete(task)
    assert started == [True]
    assert task.cancelled()


def test_many_tasks(loop):
    async def main():
        return await asyncio.gather(*(double(i) for i in range(1000)))

    assert loop.run_until_complete(main()) == [i * 2 for i in range(1000)]


def test_task_factory(loop):
    created = []

    def factory(loop_arg, coro, **kwargs):
        task = asyncio.Task(coro, loop=loop_arg, **kwargs)
        created.append((loop_arg, task, kwargs))
        return task

    assert loop.get_task_factory() is None
    loop.set_task_factory(factory)
    assert loop.get_task_factory() is factory

    task = loop.create_task(double(1), name="factory-made")
    assert loop.run_until_complete(task) == 2
    assert created == [(loop, task, {})]
    assert task.get_name() == "factory-made"

    # With a context the factory is given it as a keyword argument.
    ctx = contextvars.copy_context()
    task = loop.create_task(double(2), context=ctx)
    assert loop.run_until_complete(task) == 4
    assert created[-1] == (loop, task, {"context": ctx})

    # Coroutines wrapped by asyncio itself go through the factory too.
    loop.run_until_complete(double(3))
    assert len(created) == 3

    loop.set_task_factory(None)
    assert loop.get_task_factory() is None
    loop.run_until_complete(loop.create_task(double(4)))
    assert len(created) == 3
