"""The exceptions asyncio raises for misuse, with the same types and messages."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import socket
import sys

import pytest

from _helpers import ferroloop_only, ferroloop_test_hooks, run_once

CLOSED = r"^Event loop is closed$"
ALREADY_RUNNING = r"^This event loop is already running$"
ANOTHER_RUNNING = r"^Cannot run the event loop while another loop is running$"


def noop(*args):
    pass


async def coro_func():
    pass


# --------------------------------------------------------------------------
# A closed loop


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param(lambda loop: loop.call_soon(noop), id="call_soon"),
        pytest.param(lambda loop: loop.call_later(1, noop), id="call_later"),
        pytest.param(lambda loop: loop.call_at(loop.time() + 1, noop), id="call_at"),
        pytest.param(lambda loop: loop.call_soon_threadsafe(noop), id="call_soon_threadsafe"),
        pytest.param(lambda loop: loop.run_forever(), id="run_forever"),
        pytest.param(lambda loop: loop.run_in_executor(None, noop), id="run_in_executor"),
    ],
)
def test_closed_loop_raises(loop, schedule):
    loop.close()
    with pytest.raises(RuntimeError, match=CLOSED):
        schedule(loop)


def test_closed_loop_create_task_raises(loop):
    loop.close()
    coro = coro_func()
    try:
        with pytest.raises(RuntimeError, match=CLOSED):
            loop.create_task(coro)
    finally:
        coro.close()


def test_closed_loop_run_until_complete_raises(loop):
    loop.close()
    coro = coro_func()
    try:
        with pytest.raises(RuntimeError, match=CLOSED):
            loop.run_until_complete(coro)
    finally:
        coro.close()


def test_closed_loop_add_reader_and_writer_raise(loop):
    a, b = socket.socketpair()
    with a, b:
        loop.close()
        with pytest.raises(RuntimeError, match=CLOSED):
            loop.add_reader(a, noop)
        with pytest.raises(RuntimeError, match=CLOSED):
            loop.add_writer(a, noop)
        # Removing from a closed loop is not an error.
        assert loop.remove_reader(a) is False
        assert loop.remove_writer(a) is False


# --------------------------------------------------------------------------
# Running twice, nesting, closing while running


def test_run_forever_while_running_raises(loop):
    errors = []

    def nested():
        with pytest.raises(RuntimeError, match=ALREADY_RUNNING) as info:
            loop.run_forever()
        errors.append(info.value)

    loop.call_soon(nested)
    run_once(loop)
    assert len(errors) == 1


def test_run_until_complete_while_running_raises(loop):
    async def main():
        fut = loop.create_future()
        with pytest.raises(RuntimeError, match=ALREADY_RUNNING):
            loop.run_until_complete(fut)
        return "checked"

    assert loop.run_until_complete(main()) == "checked"


def test_running_a_loop_while_another_runs_in_the_thread_raises(loop, loop_impl, request):
    if loop_impl is asyncio and (3, 13) <= sys.version_info < (3, 13, 3):
        # 3.13.0 split run_forever() into _run_forever_setup() and
        # _run_forever_cleanup() (gh-110771) and runs the cleanup even when
        # the setup refused to start: the refused run_forever() unsets the
        # thread's running loop (then run_until_complete() runs the other
        # loop inside this one). Fixed in 3.13.3.
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="CPython gh-130145: a refused run_forever() unsets the running loop (3.13.0-3.13.2)"))
    other = loop_impl.new_event_loop()
    try:

        async def main():
            with pytest.raises(RuntimeError, match=ANOTHER_RUNNING):
                other.run_forever()
            # The refused call left the running loop alone.
            assert asyncio.get_running_loop() is loop
            assert loop.is_running() and not other.is_running()
            coro = coro_func()
            try:
                with pytest.raises(RuntimeError, match=ANOTHER_RUNNING):
                    other.run_until_complete(coro)
            finally:
                coro.close()
            return "checked"

        assert loop.run_until_complete(main()) == "checked"
        assert not other.is_running()
        # The other loop is still usable once the first one stopped.
        assert other.run_until_complete(asyncio.sleep(0, result=1)) == 1
    finally:
        other.close()


def test_close_while_running_raises(loop):
    async def main():
        with pytest.raises(RuntimeError, match=r"^Cannot close a running event loop$"):
            loop.close()
        await asyncio.sleep(0)
        return loop.is_closed()

    assert loop.run_until_complete(main()) is False


# --------------------------------------------------------------------------
# Callback validation. asyncio checks callbacks eagerly only in debug mode.


@pytest.fixture
def debug_loop(loop):
    loop.set_debug(True)
    return loop


SCHEDULERS = [
    pytest.param(lambda loop, cb: loop.call_soon(cb), "call_soon", id="call_soon"),
    pytest.param(
        lambda loop, cb: loop.call_soon_threadsafe(cb),
        "call_soon_threadsafe",
        id="call_soon_threadsafe",
    ),
    pytest.param(lambda loop, cb: loop.call_later(1, cb), "call_(at|later)", id="call_later"),
    pytest.param(lambda loop, cb: loop.call_at(loop.time() + 1, cb), "call_at", id="call_at"),
]


@pytest.mark.parametrize(("schedule", "method"), SCHEDULERS)
def test_debug_non_callable_callback_raises_type_error(debug_loop, schedule, method):
    with pytest.raises(
        TypeError, match=rf"^a callable object was expected by {method}\(\), got 42$"
    ):
        schedule(debug_loop, 42)


@pytest.mark.parametrize(("schedule", "method"), SCHEDULERS)
def test_debug_coroutine_function_callback_raises_type_error(debug_loop, schedule, method):
    with pytest.raises(TypeError, match=rf"^coroutines cannot be used with {method}\(\)$"):
        schedule(debug_loop, coro_func)


@pytest.mark.parametrize(("schedule", "method"), SCHEDULERS)
def test_debug_coroutine_callback_raises_type_error(debug_loop, schedule, method):
    coro = coro_func()
    try:
        with pytest.raises(TypeError, match=rf"^coroutines cannot be used with {method}\(\)$"):
            schedule(debug_loop, coro)
    finally:
        coro.close()


def test_debug_run_in_executor_rejects_a_coroutine_function(debug_loop):
    with pytest.raises(
        TypeError, match=r"^coroutines cannot be used with run_in_executor\(\)$"
    ):
        debug_loop.run_in_executor(None, coro_func)


def test_non_callable_callback_never_breaks_the_loop(loop, loop_errors):
    # Without debug mode asyncio accepts the callback and reports the
    # TypeError to the exception handler when it runs; rejecting it up front
    # is also fine. Either way the loop goes on.
    calls = []
    try:
        loop.call_soon(42)
    except TypeError:
        pass
    loop.call_soon(calls.append, "after")
    run_once(loop)
    assert calls == ["after"]
    for context in loop_errors.take():
        assert isinstance(context["exception"], TypeError)


# --------------------------------------------------------------------------
# Bad arguments for timers and hooks


def test_call_later_none_delay(loop):
    with pytest.raises(TypeError, match=r"^delay must not be None$"):
        loop.call_later(None, noop)


def test_call_at_none_when(loop):
    with pytest.raises(TypeError, match=r"^when cannot be None$"):
        loop.call_at(None, noop)


def test_call_later_non_number_delay(loop):
    with pytest.raises(TypeError):
        loop.call_later("1", noop)


def test_call_at_non_number_when(loop):
    # asyncio fails once the deadline is compared with a number; failing when
    # the timer is scheduled is fine too. It must not go unnoticed.
    with pytest.raises(TypeError):
        loop.call_at("soon", noop)
        run_once(loop)


def test_set_task_factory_rejects_a_non_callable(loop):
    with pytest.raises(TypeError, match=r"^task factory must be a callable or None$"):
        loop.set_task_factory(42)


def test_set_exception_handler_rejects_a_non_callable(loop):
    with pytest.raises(
        TypeError, match=r"^A callable object or None is expected, got 42$"
    ):
        loop.set_exception_handler(42)


def test_set_default_executor_rejects_a_non_thread_pool(loop):
    executor = concurrent.futures.Executor()
    with pytest.raises(
        TypeError, match=r"^executor must be ThreadPoolExecutor instance$"
    ):
        loop.set_default_executor(executor)


def test_create_task_rejects_a_non_coroutine(loop):
    with pytest.raises(TypeError, match=re.escape("a coroutine was expected, got 42")):
        loop.create_task(42)


@ferroloop_only
def test_rust_panic_in_a_callback_reaches_the_handler_as_runtime_error(loop, loop_errors):
    hooks = ferroloop_test_hooks()

    ran = []
    loop.call_soon(hooks.panic, "boom from a test")
    loop.call_soon(ran.append, "after")
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert ran == ["after"], "the loop went on after the panic"
    (record,) = loop_errors.take()
    exc = record["exception"]
    assert type(exc) is RuntimeError
    assert "boom from a test" in str(exc)
