"""Async generator hooks, finalization and shutdown_asyncgens."""

from __future__ import annotations

import asyncio
import gc
import sys

import pytest

from _helpers import run_once, run_until


def make_agen(log, name="agen"):
    async def agen():
        try:
            log.append(f"{name} started")
            yield 1
            yield 2
        finally:
            # An await in finally: the generator must be closed by a task.
            await asyncio.sleep(0)
            log.append(f"{name} finalized")

    return agen()


def test_hooks_are_installed_only_while_running(loop):
    before = sys.get_asyncgen_hooks()
    seen = []
    loop.call_soon(lambda: seen.append(sys.get_asyncgen_hooks()))
    run_once(loop)
    firstiter, finalizer = seen[0]
    assert firstiter is not None and finalizer is not None
    assert sys.get_asyncgen_hooks() == before


def test_hooks_are_restored_after_an_exception(loop):
    before = sys.get_asyncgen_hooks()

    def interrupt():
        raise KeyboardInterrupt

    loop.call_soon(interrupt)
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()
    assert sys.get_asyncgen_hooks() == before


def test_shutdown_asyncgens_finalizes_unfinished_generators(loop):
    log = []
    alive = []

    async def main():
        for name in ("first", "second"):
            gen = make_agen(log, name)
            assert await gen.__anext__() == 1
            alive.append(gen)

    loop.run_until_complete(main())
    assert log == ["first started", "second started"]
    loop.run_until_complete(loop.shutdown_asyncgens())
    assert sorted(log[2:]) == ["first finalized", "second finalized"]


def test_shutdown_asyncgens_without_generators(loop):
    assert loop.run_until_complete(loop.shutdown_asyncgens()) is None


def test_garbage_collected_generator_is_finalized_by_the_loop(loop):
    log = []

    async def main():
        gen = make_agen(log)
        await gen.__anext__()
        del gen
        gc.collect()
        # The finalizer hook scheduled aclose() as a task.
        while "agen finalized" not in log:
            await asyncio.sleep(0.001)

    loop.run_until_complete(asyncio.wait_for(main(), 5))
    assert log == ["agen started", "agen finalized"]


def test_generator_collected_after_the_loop_stopped_is_finalized_on_next_run(loop):
    log = []
    holder = []

    async def start():
        gen = make_agen(log)
        await gen.__anext__()
        holder.append(gen)

    loop.run_until_complete(start())
    holder.clear()
    gc.collect()
    run_until(loop, lambda: "agen finalized" in log)
    assert log == ["agen started", "agen finalized"]


def test_error_while_closing_a_generator_goes_to_the_handler(loop, loop_errors):
    alive = []

    async def broken():
        try:
            yield 1
        finally:
            raise ValueError("cannot close")

    async def main():
        gen = broken()
        await gen.__anext__()
        alive.append(gen)

    loop.run_until_complete(main())
    loop.run_until_complete(loop.shutdown_asyncgens())
    [context] = loop_errors.take()
    assert context["message"].startswith(
        "an error occurred during closing of asynchronous generator"
    )
    assert isinstance(context["exception"], ValueError)
    assert context["asyncgen"] is alive[0]


def test_generator_started_after_shutdown_warns(loop):
    loop.run_until_complete(loop.shutdown_asyncgens())
    log = []

    async def main():
        gen = make_agen(log)
        await gen.__anext__()
        await gen.aclose()

    with pytest.warns(ResourceWarning, match="was scheduled after loop.shutdown_asyncgens"):
        loop.run_until_complete(main())
    assert log == ["agen started", "agen finalized"]
