"""create_future, create_task and the task factory."""

from __future__ import annotations

import asyncio
import contextvars
import re
import sys
import warnings

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


def test_task_and_future_of_a_loop_that_is_not_the_running_one(loop, loop_impl):
    """Made on the loop asked, not on the thread's running loop (which
    asyncio's `Future` and `Task` take when not given one)."""
    other = loop_impl.new_event_loop()
    try:

        async def main():
            running = asyncio.get_running_loop()
            made = [
                other.create_future(),
                other.create_task(double(1)),
                running.create_future(),
                running.create_task(double(2)),
            ]
            await made[3]
            return made

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            made = loop.run_until_complete(main())
            idle = [other.create_future(), other.create_task(double(3))]
        assert [m.get_loop() for m in made] == [other, other, loop, loop]
        assert [m.get_loop() for m in idle] == [other, other]
        assert other.run_until_complete(asyncio.gather(made[1], idle[1])) == [2, 6]
    finally:
        other.close()


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


# What BaseEventLoop.create_task() passes a custom task factory. Up to
# 3.13.2, and again from 3.13.4 on (gh-133745 restored that contract for
# 3.13): factory(loop, coro), or factory(loop, coro, context=ctx) when given
# a context, and create_task() names the task afterwards. 3.13.3 (gh-128308,
# backported by mistake) and 3.14 pass create_task()'s keyword arguments,
# name= included, on to the factory.
FACTORY_GETS_NAME = sys.version_info[:3] == (3, 13, 3) or sys.version_info >= (3, 14)


def factory_kwargs(*, name=None, context=None) -> dict:
    kwargs = {}
    if name is not None and FACTORY_GETS_NAME:
        kwargs["name"] = name
    if context is not None:
        kwargs["context"] = context
    return kwargs


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
    assert created == [(loop, task, factory_kwargs(name="factory-made"))]
    assert task.get_name() == "factory-made"

    # With a context the factory is given it as a keyword argument.
    ctx = contextvars.copy_context()
    task = loop.create_task(double(2), context=ctx)
    assert loop.run_until_complete(task) == 4
    assert created[-1] == (loop, task, factory_kwargs(context=ctx))
    task = loop.create_task(double(2), name="with-context", context=ctx)
    loop.run_until_complete(task)
    assert created[-1] == (loop, task, factory_kwargs(name="with-context", context=ctx))
    assert task.get_name() == "with-context"

    # Coroutines wrapped by asyncio itself go through the factory too.
    loop.run_until_complete(double(3))
    assert len(created) == 4
    assert created[-1][2] == {}

    loop.set_task_factory(None)
    assert loop.get_task_factory() is None
    loop.run_until_complete(loop.create_task(double(4)))
    assert len(created) == 4


def test_task_factory_name_of_an_unnamed_task(loop):
    """create_task() without a name leaves the name the factory's task
    chose, except on 3.13.0-3.13.2: those call task.set_name(name) even when
    name is None, so the task is called "None" (CPython gh-130033, gone in
    3.13.3). ferroloop follows the running version, bug included."""

    def factory(loop_arg, coro, **kwargs):
        task = asyncio.Task(coro, loop=loop_arg, **kwargs)
        task.set_name("named-by-the-factory")
        return task

    loop.set_task_factory(factory)
    task = loop.create_task(double(1))
    loop.run_until_complete(task)
    expected = "None" if (3, 13) <= sys.version_info < (3, 13, 3) else "named-by-the-factory"
    assert task.get_name() == expected
