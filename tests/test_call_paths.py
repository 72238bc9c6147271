"""The ways asyncio's own C code and Python code reach the loop's hot
methods: keyword spellings of ``call_soon``/``create_task``, the handle a
callback runs from, and (3.11) ``call_soon`` bound on the running loop.

Each behaviour is checked on both loops; the ferroloop-only tests pin the
fast paths' edges (what they must leave alone).
"""

from __future__ import annotations

import asyncio
import contextvars
import sys

import pytest

from _helpers import run_once

var = contextvars.ContextVar("var", default="unset")

# A "context" keyword that is not the interned string, as asyncio's C Task
# and Future pass it (their keyword-names tuple is built at module init).
COMPUTED_CONTEXT = "".join(["con", "text"])


def test_call_soon_context_keyword_spelt_any_way(loop):
    seen = []
    for value in ("a", "b"):
        ctx = contextvars.copy_context()
        ctx.run(var.set, value)
        loop.call_soon(lambda: seen.append(var.get()), **{COMPUTED_CONTEXT: ctx})
    ctx = contextvars.copy_context()
    ctx.run(var.set, "c")
    loop.call_soon(lambda: seen.append(var.get()), context=ctx)
    run_once(loop)
    assert seen == ["a", "b", "c"]


def test_task_steps_keep_their_context_after_other_context_keywords(loop):
    # A caller with its own keyword tuple between task steps must not
    # disturb how the C Task's steps find their context.
    async def child(value):
        var.set(value)
        for _ in range(3):
            other = contextvars.Context()
            loop.call_soon(lambda: None, **{COMPUTED_CONTEXT: other})
            await asyncio.sleep(0)
            assert var.get() == value
        return value

    async def main():
        return await asyncio.gather(*(child(i) for i in range(5)))

    assert loop.run_until_complete(main()) == list(range(5))
    assert var.get() == "unset"


def test_create_task_keywords(loop):
    async def coro():
        return var.get()

    ctx = contextvars.copy_context()
    ctx.run(var.set, "in ctx")

    async def main():
        by_keyword = loop.create_task(coro=coro())
        named = loop.create_task(coro(), name="named")
        in_context = loop.create_task(coro(), context=ctx)
        spelt = loop.create_task(coro(), **{COMPUTED_CONTEXT: ctx, "".join(["na", "me"]): "spelt"})
        assert named.get_name() == "named"
        assert spelt.get_name() == "spelt"
        return await asyncio.gather(by_keyword, named, in_context, spelt)

    assert loop.run_until_complete(main()) == ["unset", "unset", "in ctx", "in ctx"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda loop, c: loop.create_task(), r"missing 1 required positional argument: 'coro'"),
        (lambda loop, c: loop.create_task(c, None), r"takes 2 positional arguments but 3 were given"),
        (lambda loop, c: loop.create_task(c, foo=1), r"got an unexpected keyword argument 'foo'"),
        (lambda loop, c: loop.create_task(c, coro=c), r"got multiple values for argument 'coro'"),
    ],
)
def test_create_task_argument_errors(loop, call, message):
    async def coro():
        pass

    c = coro()
    with pytest.raises(TypeError, match=message):
        call(loop, c)
    c.close()


def test_failing_callback_report_shows_its_handle(loop, loop_errors):
    # Nobody holds the handle: ferroloop runs it without copying its
    # references, and must put them back for the report.
    def failing(arg):
        raise ValueError(arg)

    loop.call_soon(failing, "boom")
    run_once(loop)
    (record,) = loop_errors.take()
    assert isinstance(record["exception"], ValueError)
    assert "failing" in record["message"]
    assert "failing" in repr(record["handle"])


def test_handle_held_during_its_run_keeps_its_callback(loop):
    seen = []

    def callback():
        seen.append(repr(handle))

    handle = loop.call_soon(callback)
    run_once(loop)
    assert "callback" in seen[0]
    assert "callback" in repr(handle)


bind_only_on_311 = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="call_soon is bound on the running loop on 3.11 only"
)


@bind_only_on_311
def test_call_soon_bound_only_while_running(loop_impl):
    if loop_impl is asyncio:
        pytest.skip("ferroloop's fast path")
    loop = loop_impl.new_event_loop()
    try:
        seen = []

        async def main():
            seen.append(loop.__dict__.get("call_soon"))
            await asyncio.sleep(0)

        loop.run_until_complete(main())
        (bound,) = seen
        assert bound is not None and bound.__self__ is loop
        assert "call_soon" not in loop.__dict__
    finally:
        loop.close()


def test_call_soon_set_on_the_instance_is_used_and_kept(loop_impl):
    loop = loop_impl.new_event_loop()
    try:
        calls = []
        original = loop.call_soon

        def spy(*args, **kwargs):
            calls.append(args[0])
            return original(*args, **kwargs)

        loop.call_soon = spy

        async def main():
            await asyncio.sleep(0)

        loop.run_until_complete(main())
        # asyncio's C Task scheduled its steps through the instance's spy.
        assert len(calls) >= 2
        assert loop.__dict__["call_soon"] is spy
    finally:
        loop.close()


def test_call_soon_overridden_by_a_subclass_is_used(loop_impl):
    calls = []
    base = type(loop_impl.new_event_loop())

    class Counting(base):
        def call_soon(self, *args, **kwargs):
            calls.append(args[0])
            return super().call_soon(*args, **kwargs)

    loop = Counting()
    try:

        async def main():
            await asyncio.sleep(0)

        loop.run_until_complete(main())
        assert len(calls) >= 2
        assert "call_soon" not in loop.__dict__
    finally:
        loop.close()
