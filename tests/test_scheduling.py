"""call_soon, the iteration ("tick") structure, Handles and contexts."""

from __future__ import annotations

import asyncio
import contextvars
import socket

import pytest

from _helpers import run_once

var = contextvars.ContextVar("var", default="unset")


def named_callback(*args):
    pass


def test_call_soon_passes_arguments(loop):
    calls = []
    loop.call_soon(lambda *a: calls.append(a), 1, "two", None)
    run_once(loop)
    assert calls == [(1, "two", None)]


def test_call_soon_is_fifo(loop):
    calls = []
    for i in range(1000):
        loop.call_soon(calls.append, i)
    run_once(loop)
    assert calls == list(range(1000))


def test_call_soon_and_call_soon_threadsafe_share_one_fifo(loop):
    calls = []
    for i in range(200):
        schedule = loop.call_soon if i % 3 else loop.call_soon_threadsafe
        schedule(calls.append, i)
    run_once(loop)
    assert calls == list(range(200))


def test_callbacks_scheduled_during_a_tick_run_next_tick(loop):
    calls = []

    def first():
        calls.append("first")
        loop.call_soon(calls.append, "scheduled by first")

    loop.call_soon(first)
    loop.call_soon(calls.append, "second")
    run_once(loop)
    assert calls == ["first", "second"]
    run_once(loop)
    assert calls == ["first", "second", "scheduled by first"]


def test_a_callback_rescheduling_itself_does_not_starve_the_loop(loop):
    spins = []

    def spin():
        spins.append(None)
        loop.call_soon(spin)

    loop.call_soon(spin)
    loop.call_later(0.02, loop.stop)
    loop.run_forever()
    assert len(spins) > 1


def test_io_callbacks_run_before_timers_then_the_next_tick(loop):
    # One tick: callbacks ready at its start, then I/O callbacks, then due
    # timers; anything they schedule runs in the following tick.
    calls = []
    a, b = socket.socketpair()
    with a, b:
        b.send(b"x")

        def on_readable():
            a.recv(1)
            loop.remove_reader(a)
            calls.append("io")
            loop.call_soon(calls.append, "soon from io")

        def on_timer():
            calls.append("timer")

        def on_soon():
            calls.append("soon")
            loop.call_soon(calls.append, "soon from soon")

        loop.call_soon(on_soon)
        loop.add_reader(a, on_readable)
        loop.call_at(loop.time() - 1, on_timer)
        run_once(loop)
        assert calls == ["soon", "io", "timer"]
        run_once(loop)
        assert calls == ["soon", "io", "timer", "soon from soon", "soon from io"]


# --------------------------------------------------------------------------
# Handles


def test_cancelled_handle_does_not_run(loop):
    calls = []
    handle = loop.call_soon(calls.append, "cancelled")
    loop.call_soon(calls.append, "kept")
    assert not handle.cancelled()
    handle.cancel()
    assert handle.cancelled()
    handle.cancel()  # a second cancel is harmless
    assert handle.cancelled()
    run_once(loop)
    assert calls == ["kept"]


def test_handle_cancelled_by_an_earlier_callback_of_the_same_tick(loop):
    calls = []
    later = None

    def cancel_later():
        later.cancel()

    loop.call_soon(cancel_later)
    later = loop.call_soon(calls.append, "should not run")
    run_once(loop)
    assert calls == []


def test_cancelling_a_handle_after_it_ran(loop):
    calls = []
    handle = loop.call_soon(calls.append, 1)
    run_once(loop)
    handle.cancel()
    assert handle.cancelled()
    assert calls == [1]


def test_handle_repr_names_the_callback(loop):
    handle = loop.call_soon(named_callback, 1)
    assert "named_callback" in repr(handle)
    handle.cancel()
    assert "cancelled" in repr(handle)


def test_handle_get_context(loop, loop_impl):
    ctx = contextvars.copy_context()
    handle = loop.call_soon(named_callback, context=ctx)
    timer = loop.call_later(1, named_callback, context=ctx)
    if not hasattr(handle, "get_context"):
        assert loop_impl is asyncio, "Handle.get_context() is missing"
        pytest.skip("Handle.get_context() is new in CPython 3.12")
    assert handle.get_context() is ctx
    assert timer.get_context() is ctx
    default = loop.call_soon(named_callback)
    assert isinstance(default.get_context(), contextvars.Context)
    assert default.get_context() is not ctx


# --------------------------------------------------------------------------
# Contexts


def test_callback_runs_in_a_copy_of_the_scheduling_context(loop):
    seen = []
    token = var.set("at schedule time")
    try:
        loop.call_soon(lambda: seen.append(var.get()))
    finally:
        var.reset(token)
    run_once(loop)
    assert seen == ["at schedule time"]
    assert var.get() == "unset"


def test_callback_context_changes_do_not_leak(loop):
    seen = []

    def writer():
        var.set("written")
        seen.append(var.get())

    loop.call_soon(writer)
    loop.call_soon(lambda: seen.append(var.get()))
    run_once(loop)
    assert seen == ["written", "unset"]
    assert var.get() == "unset"


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param(lambda loop, cb, ctx: loop.call_soon(cb, context=ctx), id="call_soon"),
        pytest.param(
            lambda loop, cb, ctx: loop.call_soon_threadsafe(cb, context=ctx),
            id="call_soon_threadsafe",
        ),
        pytest.param(
            lambda loop, cb, ctx: loop.call_later(0.001, cb, context=ctx), id="call_later"
        ),
        pytest.param(
            lambda loop, cb, ctx: loop.call_at(loop.time(), cb, context=ctx), id="call_at"
        ),
    ],
)
def test_callback_runs_in_the_given_context(loop, schedule):
    ctx = contextvars.copy_context()
    ctx.run(var.set, "given")
    seen = []

    def callback():
        seen.append(var.get())
        var.set("changed by callback")

    schedule(loop, callback, ctx)
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    assert seen == ["given"]
    # The callback ran in ctx itself, not in a copy.
    assert ctx[var] == "changed by callback"
    assert var.get() == "unset"


def test_task_runs_in_its_context(loop):
    ctx = contextvars.copy_context()
    ctx.run(var.set, "task context")

    async def main():
        await asyncio.sleep(0)
        return var.get()

    task = loop.create_task(main(), context=ctx)
    assert loop.run_until_complete(task) == "task context"


def test_context_is_restored_between_callbacks(loop):
    ctx = contextvars.copy_context()
    ctx.run(var.set, "inside")
    seen = []
    loop.call_soon(lambda: seen.append(var.get()), context=ctx)
    loop.call_soon(lambda: seen.append(var.get()))
    loop.call_soon(lambda: seen.append(var in contextvars.copy_context()))
    run_once(loop)
    assert seen == ["inside", "unset", False]
