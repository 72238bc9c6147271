"""What changed in asyncio between 3.11, 3.12 and 3.13, on both loops.

Each test runs on the stdlib loop (the reference) and on ferroloop, and
asserts what the running interpreter's asyncio does; a feature a version
lacks is tested for being absent there (asyncio raising, ferroloop too).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import sys
import weakref

import pytest

from _helpers import run_child

py312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio 3.12+ feature")
py313 = pytest.mark.skipif(sys.version_info < (3, 13), reason="asyncio 3.13+ feature")


async def _value(x):
    return x


# -- eager tasks (3.12) ---------------------------------------------------------


@py312
def test_eager_task_factory_runs_the_coroutine_at_creation(loop):
    steps = []

    async def child():
        steps.append("child started")
        await asyncio.sleep(0)
        steps.append("child resumed")
        return 7

    async def main():
        loop.set_task_factory(asyncio.eager_task_factory)
        task = asyncio.create_task(child())
        steps.append("created")
        assert isinstance(task, asyncio.Task)
        assert asyncio.current_task() is not task
        return await task

    assert loop.run_until_complete(main()) == 7
    assert steps == ["child started", "created", "child resumed"]


@py312
def test_eager_task_that_finishes_synchronously_is_done_at_once(loop):
    async def main():
        loop.set_task_factory(asyncio.eager_task_factory)
        task = loop.create_task(_value(3), name="eager")
        assert task.done() and task.result() == 3
        assert task.get_name() == "eager"
        assert task not in asyncio.all_tasks()
        return "ok"

    assert loop.run_until_complete(main()) == "ok"


@py312
def test_create_eager_task_factory_with_a_custom_task_class(loop):
    class MyTask(asyncio.Task):
        pass

    async def main():
        loop.set_task_factory(asyncio.create_eager_task_factory(MyTask))
        ctx = contextvars.copy_context()
        task = loop.create_task(_value(5), context=ctx)
        assert type(task) is MyTask and task.done()
        assert task.get_context() is ctx
        return await task

    assert loop.run_until_complete(main()) == 5


# -- task factories: what each version passes -------------------------------------


def test_task_factory_gets_what_the_running_version_passes(loop):
    seen = []

    def factory(loop_arg, coro, **kwargs):
        seen.append(sorted(kwargs))
        return asyncio.Task(coro, loop=loop_arg, **kwargs)

    loop.set_task_factory(factory)
    task = loop.create_task(_value(1), name="n")
    loop.run_until_complete(task)
    ctx = contextvars.copy_context()
    loop.run_until_complete(loop.create_task(_value(2), context=ctx))
    if sys.version_info >= (3, 14):
        # 3.14 passes every keyword on to the factory, name= included.
        assert seen == [["name"], ["context"]]
    else:
        # 3.11 to 3.13.0 pass context= only when given and set the name afterwards.
        assert seen == [[], ["context"]]
    assert task.get_name() == "n"


def test_create_task_refuses_unknown_keywords(loop):
    coro = _value(1)
    try:
        with pytest.raises(TypeError):
            loop.create_task(coro, no_such_keyword=True)
    finally:
        coro.close()


def test_create_task_takes_eager_start_from_3_14_on(loop):
    steps = []

    async def child():
        steps.append("child ran")
        return 4

    async def main():
        coro = child()
        if sys.version_info < (3, 14):
            try:
                with pytest.raises(TypeError):
                    loop.create_task(coro, eager_start=True)
            finally:
                coro.close()
            return None
        # 3.14 passes create_task's keywords on to Task, which takes eager_start.
        task = loop.create_task(coro, eager_start=True)
        steps.append("created")
        assert task.done()
        return await task

    result = loop.run_until_complete(main())
    if sys.version_info >= (3, 14):
        assert result == 4 and steps == ["child ran", "created"]
    else:
        assert result is None and steps == []


# -- the exception handler's context (3.12) -----------------------------------------


@pytest.mark.parametrize("where", ["callback", "task"])
def test_exception_handler_runs_in_the_failing_context(loop, where):
    name = contextvars.ContextVar("name", default="outer")
    seen = []

    def handler(loop_arg, context):
        seen.append(name.get())

    def callback():
        name.set("inner")
        1 / 0

    async def task():
        name.set("inner")
        1 / 0

    loop.set_exception_handler(handler)

    async def main():
        if where == "callback":
            loop.call_soon(callback)
        else:
            t = loop.create_task(task())
            await asyncio.sleep(0)
            del t
            gc.collect()
        await asyncio.sleep(0)

    loop.run_until_complete(main())
    expected = "inner" if sys.version_info >= (3, 12) else "outer"
    assert seen == [expected]


# -- Server.close_clients / abort_clients (3.13) --------------------------------------


@py313
@pytest.mark.parametrize("method", ["close_clients", "abort_clients"])
def test_server_closes_or_aborts_its_clients(loop, method):
    async def handle(reader, writer):
        await reader.read()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await asyncio.sleep(0.05)
        server.close()
        getattr(server, method)()
        for reader, writer in clients:
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
        await asyncio.wait_for(server.wait_closed(), 5)
        return "closed"

    assert loop.run_until_complete(main()) == "closed"


def test_server_close_clients_exists_only_from_313(loop):
    async def main():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        async with server:
            return hasattr(server, "close_clients")

    assert loop.run_until_complete(main()) == (sys.version_info >= (3, 13))


# -- Queue.shutdown and as_completed iteration (3.13) ------------------------------------


@py313
def test_queue_shutdown_wakes_getters(loop):
    async def main():
        queue = asyncio.Queue()
        getter = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)
        queue.shutdown()
        with pytest.raises(asyncio.QueueShutDown):
            await getter
        with pytest.raises(asyncio.QueueShutDown):
            queue.put_nowait(1)
        return "shut"

    assert loop.run_until_complete(main()) == "shut"


@py313
def test_as_completed_async_iteration_yields_the_original_tasks(loop):
    async def main():
        tasks = [asyncio.ensure_future(asyncio.sleep(d / 100, result=d)) for d in (3, 1, 2)]
        order = []
        async for done in asyncio.as_completed(tasks):
            assert done in tasks
            order.append(await done)
        return order

    assert loop.run_until_complete(main()) == [1, 2, 3]


# -- shutdown_default_executor(timeout) (3.12) ----------------------------------------------


@py312
def test_shutdown_default_executor_timeout(loop):
    # 3.13 stops waiting after the timeout and warns; 3.12 bounds only the
    # join of its helper thread, after waiting for the executor.
    import threading

    release = threading.Event()

    async def main():
        loop.run_in_executor(None, release.wait, 0.5)
        await asyncio.sleep(0.01)
        started = loop.time()
        if sys.version_info >= (3, 13):
            with pytest.warns(RuntimeWarning, match="did not finishing joining its threads within 0.05 seconds"):
                await loop.shutdown_default_executor(timeout=0.05)
            assert loop.time() - started < 0.4
        else:
            await loop.shutdown_default_executor(timeout=0.05)
            assert loop.time() - started >= 0.3

    try:
        loop.run_until_complete(main())
    finally:
        release.set()


def test_shutdown_default_executor_timeout_keyword_follows_the_version(loop):
    async def main():
        if sys.version_info >= (3, 12):
            await loop.shutdown_default_executor(timeout=1)
            return "accepted"
        with pytest.raises(TypeError):
            loop.shutdown_default_executor(timeout=1)
        return "refused"

    assert loop.run_until_complete(main()) == ("accepted" if sys.version_info >= (3, 12) else "refused")


# -- handles: weak references, get_context -----------------------------------------------


def test_handles_support_weak_references(loop):
    ran = []
    handle = loop.call_soon(ran.append, 1)
    timer = loop.call_later(0, ran.append, 2)
    refs = [weakref.ref(handle), weakref.ref(timer)]
    assert [r() for r in refs] == [handle, timer]
    loop.run_until_complete(asyncio.sleep(0.01))
    assert ran == [1, 2]
    del handle, timer
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_a_weakly_referenced_handle_is_never_reused(loop):
    # Only a weak reference is left once the loop lets go of the handle:
    # it must die (as asyncio's would), not come back as another callback.
    ran = []
    ref = weakref.ref(loop.call_soon(ran.append, "first"))
    loop.run_until_complete(asyncio.sleep(0))
    later = [loop.call_soon(ran.append, i) for i in range(100)]
    loop.run_until_complete(asyncio.sleep(0))
    gc.collect()
    assert ref() is None or ref() not in later
    assert ran == ["first", *range(100)]


@py312
def test_handle_get_context(loop):
    ctx = contextvars.copy_context()
    handle = loop.call_soon(lambda: None, context=ctx)
    assert handle.get_context() is ctx
    loop.run_until_complete(asyncio.sleep(0))


# -- debug mode, decided as asyncio decides it -------------------------------------------


def test_debug_follows_the_is_debug_mode_hook(loop_impl, monkeypatch):
    monkeypatch.setattr(asyncio.coroutines, "_is_debug_mode", lambda: True)
    loop = loop_impl.new_event_loop()
    try:
        assert loop.get_debug() is True
    finally:
        loop.close()


@pytest.mark.parametrize(
    ("python_args", "env", "expected"),
    [
        ((), {}, False),
        ((), {"PYTHONASYNCIODEBUG": "1"}, True),
        (("-X", "dev"), {}, True),
        (("-E",), {"PYTHONASYNCIODEBUG": "1"}, False),
    ],
)
def test_debug_from_the_environment_and_flags(loop_impl, python_args, env, expected):
    out = run_child(
        loop_impl,
        """
        loop = impl.new_event_loop()
        print(loop.get_debug())
        loop.close()
        """,
        python_args=python_args,
        env=env,
    )
    assert out.stdout.strip() == str(expected), out.stderr


def test_run_debug_argument(loop_impl):
    async def main():
        return asyncio.get_running_loop().get_debug()

    assert loop_impl.run(main(), debug=True) is True
    assert loop_impl.run(main(), debug=False) is False
