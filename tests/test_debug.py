"""Debug mode: get/set_debug, how it is turned on, slow callbacks, Handle reprs."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import time

import pytest

from _helpers import assert_child_ok, run_child, run_once

PRINT_DEBUG = """
loop = impl.new_event_loop()
print(loop.get_debug())
loop.close()

async def main():
    return asyncio.get_running_loop().get_debug()

print(impl.run(main()))
"""


def slow_callback():
    time.sleep(0.06)


def named_callback():
    pass


def slow_warnings(caplog):
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "asyncio" and r.levelno == logging.WARNING
        and r.getMessage().startswith("Executing ")
    ]


def test_set_debug(loop):
    loop.set_debug(True)
    assert loop.get_debug() is True
    loop.set_debug(False)
    assert loop.get_debug() is False


def test_set_debug_while_running(loop):
    seen = []

    async def main():
        loop.set_debug(True)
        await asyncio.sleep(0)
        seen.append(loop.get_debug())

    loop.run_until_complete(main())
    assert seen == [True]


@pytest.mark.parametrize(
    ("env", "python_args", "expected"),
    [
        pytest.param({}, (), "False", id="default"),
        pytest.param({"PYTHONASYNCIODEBUG": "1"}, (), "True", id="env-var"),
        pytest.param({}, ("-X", "dev"), "True", id="dev-mode"),
    ],
)
def test_debug_mode_from_the_environment(loop_impl, env, python_args, expected):
    proc = run_child(loop_impl, PRINT_DEBUG, env=env, python_args=python_args)
    assert assert_child_ok(proc) == [expected, expected]


def test_slow_callback_duration_default(loop):
    assert loop.slow_callback_duration == 0.1


def test_slow_callback_is_logged_in_debug_mode(loop, caplog):
    loop.set_debug(True)
    loop.slow_callback_duration = 0.05
    loop.call_soon(slow_callback)
    run_once(loop)
    [message] = slow_warnings(caplog)
    assert re.fullmatch(r"Executing <Handle slow_callback\(\).*> took \d+\.\d{3} seconds", message)
    seconds = float(message.rsplit(" ", 2)[1])
    assert seconds >= 0.05


def test_slow_task_step_is_logged_in_debug_mode(loop, caplog):
    loop.set_debug(True)
    loop.slow_callback_duration = 0.05

    async def slow_step():
        time.sleep(0.06)

    loop.run_until_complete(slow_step())
    messages = slow_warnings(caplog)
    assert any(re.match(r"Executing <Task .*slow_step.* took \d+\.\d{3} seconds", m)
               for m in messages), messages


def test_fast_callback_is_not_logged(loop, caplog):
    loop.set_debug(True)
    loop.call_soon(named_callback)
    run_once(loop)
    assert slow_warnings(caplog) == []


def test_slow_callback_is_not_logged_without_debug(loop, caplog):
    loop.slow_callback_duration = 0.01
    loop.call_soon(slow_callback)
    run_once(loop)
    assert slow_warnings(caplog) == []


def test_debug_handle_repr_says_where_it_was_created(loop):
    loop.set_debug(True)
    line = sys._getframe().f_lineno + 1
    handle = loop.call_soon(named_callback)
    text = repr(handle)
    assert "named_callback" in text
    assert f"created at {__file__}:{line}" in text


def test_debug_cancelled_handle_repr_keeps_the_callback(loop):
    loop.set_debug(True)
    handle = loop.call_soon(named_callback)
    timer = loop.call_later(10, named_callback)
    handle.cancel()
    timer.cancel()
    for h in (handle, timer):
        text = repr(h)
        assert "cancelled" in text
        assert "named_callback" in text
        assert f"created at {__file__}:" in text


def test_debug_tracks_coroutine_origins_while_running(loop):
    before = sys.get_coroutine_origin_tracking_depth()
    loop.set_debug(True)
    seen = []
    loop.call_soon(lambda: seen.append(sys.get_coroutine_origin_tracking_depth()))
    run_once(loop)
    assert seen[0] > 0
    assert sys.get_coroutine_origin_tracking_depth() == before
