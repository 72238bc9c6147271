"""The package's public entry points: new_event_loop, run, Runner, policy, install."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import warnings

import pytest

from _helpers import child_env, ferroloop_only, get_event_loop_policy, loop_class, set_event_loop_policy

py314 = sys.version_info >= (3, 14)


@pytest.fixture
def restore_policy():
    saved = get_event_loop_policy()
    yield
    set_event_loop_policy(saved)


def test_new_event_loop_builds_an_abstract_event_loop(loop_impl):
    loop = loop_impl.new_event_loop()
    try:
        assert isinstance(loop, asyncio.AbstractEventLoop)
        assert not loop.is_running()
        assert not loop.is_closed()
    finally:
        loop.close()
    assert loop.is_closed()


def test_new_event_loop_returns_a_new_loop_each_time(loop_impl):
    first, second = loop_impl.new_event_loop(), loop_impl.new_event_loop()
    try:
        assert first is not second
    finally:
        first.close()
        second.close()


def test_run_returns_the_coroutine_result_on_its_own_loop(loop_impl):
    cls = loop_class(loop_impl)

    async def main(x):
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0)
        return x * 2, type(loop)

    assert loop_impl.run(main(21)) == (42, cls)


def test_run_propagates_the_exception(loop_impl):
    async def main():
        await asyncio.sleep(0)
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError, match="boom"):
        loop_impl.run(main())


@pytest.mark.parametrize("debug", [True, False])
def test_run_debug_argument(loop_impl, debug):
    async def main():
        return asyncio.get_running_loop().get_debug()

    assert loop_impl.run(main(), debug=debug) is debug


def test_run_closes_the_loop_and_cancels_leftover_tasks(loop_impl):
    seen = {}

    async def forever():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise

    async def main():
        seen["loop"] = asyncio.get_running_loop()
        seen["task"] = asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)

    loop_impl.run(main())
    assert seen["loop"].is_closed()
    assert seen["cancelled"]
    assert seen["task"].cancelled()


def test_run_shuts_down_async_generators(loop_impl):
    finalized = []
    alive = []

    async def agen():
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)
            finalized.append(True)

    async def main():
        gen = agen()
        assert await gen.__anext__() == 1
        alive.append(gen)  # unfinished and alive when main() returns

    loop_impl.run(main())
    assert finalized == [True]


def test_run_rejects_a_non_coroutine(loop_impl):
    # As asyncio.run does on this version: ValueError("a coroutine was
    # expected") before 3.14, TypeError (awaitables are accepted) since.
    with pytest.raises((ValueError, TypeError)) as reference:
        asyncio.run(asyncio.sleep)
    with pytest.raises(type(reference.value), match=re.escape(str(reference.value))):
        loop_impl.run(asyncio.sleep)


def test_run_inside_a_running_loop_raises(loop_impl):
    async def inner():
        return 1

    async def main():
        coro = inner()
        try:
            with pytest.raises(
                RuntimeError, match="cannot be called from a running event loop"
            ):
                loop_impl.run(coro)
        finally:
            coro.close()

    loop_impl.run(main())


def test_runner_with_loop_factory(loop_impl):
    cls = loop_class(loop_impl)

    async def main(x):
        await asyncio.sleep(0.001)
        return x, type(asyncio.get_running_loop())

    with asyncio.Runner(loop_factory=loop_impl.new_event_loop) as runner:
        loop = runner.get_loop()
        assert type(loop) is cls
        assert runner.run(main(1)) == (1, cls)
        # A runner runs many coroutines on the same loop.
        assert runner.run(main(2)) == (2, cls)
        assert runner.get_loop() is loop
    assert loop.is_closed()


@ferroloop_only
def test_version_is_a_release_string(loop_impl):
    assert isinstance(loop_impl.__version__, str)
    assert re.match(r"^\d+\.\d+(\.\d+)?", loop_impl.__version__)


@ferroloop_only
def test_loop_class_is_an_abstract_event_loop(loop_impl):
    assert issubclass(loop_impl.Loop, asyncio.AbstractEventLoop)
    loop = loop_impl.new_event_loop()
    try:
        assert isinstance(loop, loop_impl.Loop)
    finally:
        loop.close()


@ferroloop_only
def test_loop_class_is_directly_constructible(loop_impl):
    loop = loop_impl.Loop()
    try:
        assert loop.run_until_complete(asyncio.sleep(0, result=5)) == 5
    finally:
        loop.close()


@ferroloop_only
def test_event_loop_policy_builds_ferroloop_loops(loop_impl):
    with warnings.catch_warnings():
        # The name is deprecated from 3.14 on (the class is not).
        warnings.simplefilter("ignore", DeprecationWarning)
        default_policy = asyncio.DefaultEventLoopPolicy
    assert issubclass(loop_impl.EventLoopPolicy, default_policy)
    loop = loop_impl.EventLoopPolicy().new_event_loop()
    try:
        assert isinstance(loop, loop_impl.Loop)
    finally:
        loop.close()


@pytest.fixture
def install_not_warned_yet(loop_impl, monkeypatch):
    """install() warns once per process: make this test the first."""
    monkeypatch.setattr(loop_impl._policy, "_install_warned", False)


@ferroloop_only
def test_install_sets_the_global_policy(loop_impl, restore_policy, install_not_warned_yet):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop_impl.install()
    assert isinstance(get_event_loop_policy(), loop_impl.EventLoopPolicy)

    loop = asyncio.new_event_loop()
    try:
        assert isinstance(loop, loop_impl.Loop)
    finally:
        loop.close()

    async def main():
        return asyncio.get_running_loop()

    assert isinstance(asyncio.run(main()), loop_impl.Loop)


@ferroloop_only
@pytest.mark.skipif(not py314, reason="asyncio deprecates the policy system from 3.14 on")
def test_install_warns_once_and_points_to_run_and_loop_factory(loop_impl, restore_policy, install_not_warned_yet):
    with pytest.warns(DeprecationWarning) as first:
        loop_impl.install()
    assert len(first) == 1
    message = str(first[0].message)
    assert "ferroloop.run(" in message and "loop_factory=ferroloop.new_event_loop" in message
    # Reported at the caller's line, not inside ferroloop.
    assert first[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loop_impl.install()  # the second call is silent
    assert isinstance(get_event_loop_policy(), loop_impl.EventLoopPolicy)


@ferroloop_only
@pytest.mark.skipif(py314, reason="the policy system is deprecated from 3.14 on (the test above)")
def test_install_does_not_warn_before_3_14(loop_impl, restore_policy, install_not_warned_yet):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loop_impl.install()
    assert isinstance(get_event_loop_policy(), loop_impl.EventLoopPolicy)


@ferroloop_only
def test_importing_ferroloop_never_warns(loop_impl):
    code = (
        "import ferroloop, ferroloop.server, ferroloop.logging, ferroloop.gunicorn\n"
        "policy = ferroloop.EventLoopPolicy()\n"
        "assert ferroloop.run(__import__('asyncio').sleep(0, result=7)) == 7\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_import_ferroloop_leaves_the_server_and_toolkit_unloaded():
    """A program that only runs the loop does not pay for the server's
    modules (logging.config, json, the metrics renderer) or the toolkit's;
    their names load them on first use."""
    code = (
        "import sys, ferroloop\n"
        "assert 'ferroloop.server' not in sys.modules, 'server loaded'\n"
        "assert 'ferroloop.toolkit' not in sys.modules, 'toolkit loaded'\n"
        "assert 'logging.config' not in sys.modules, 'logging.config loaded'\n"
        "assert ferroloop.Config.__name__ == 'Config' and callable(ferroloop.serve)\n"
        "assert 'ferroloop.server' in sys.modules\n"
        "from ferroloop import ClientDisconnected, Server, ServerStats\n"
        "assert ferroloop.Channel is not None\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
