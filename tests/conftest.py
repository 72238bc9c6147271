"""Fixtures running each behavioural test on asyncio (the reference) and ferroloop.

A test asks for ``loop`` (a fresh loop of the implementation under test) or for
``loop_impl`` (the implementation module, for tests that build their own loops
or start child processes). Both are parametrized with the ids ``asyncio`` and
``ferroloop``.

Like uvloop's _testbase, a test fails on any call to the ``loop`` fixture's
exception handler that it did not consume through ``loop_errors.take()``.
"""

from __future__ import annotations

import asyncio
import gc

import pytest

from _helpers import IMPLS, ExceptionRecorder, ServerProcess, import_impl


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "once: tests ferroloop's own code at length, not the interpreter (tens of seconds); "
        "`cargo xtask test` runs it on the first Python version only",
    )


@pytest.fixture(params=IMPLS)
def loop_impl(request):
    """The loop implementation module: ``asyncio`` or ``ferroloop``."""
    return import_impl(request.param)


@pytest.fixture
def loop_errors():
    """Records the calls to the ``loop`` fixture's exception handler."""
    return ExceptionRecorder()


@pytest.fixture
def loop(loop_impl, loop_errors):
    """A fresh, not running loop whose exception handler is ``loop_errors``."""
    loop = loop_impl.new_event_loop()
    loop.set_exception_handler(loop_errors)
    yield loop
    if not loop.is_closed():
        loop.close()
    # Objects dying with the loop (pending tasks, unretrieved exceptions)
    # report to the handler when collected.
    gc.collect()
    assert asyncio._get_running_loop() is None, "test left a running loop set"
    if loop_errors.records:
        pytest.fail(
            "unexpected calls to the loop's exception handler during teardown:\n"
            + ExceptionRecorder.describe(loop_errors.records),
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    # Reached only when the test body passed.
    recorder = item.funcargs.get("loop_errors")
    if recorder is not None and recorder.records:
        # take(): report them here, not once more at teardown.
        pytest.fail(
            "unexpected calls to the loop's exception handler:\n"
            + ExceptionRecorder.describe(recorder.take()),
            pytrace=False,
        )
    return result


#: How many servers had started before a test (see `pytest_runtest_makereport`).
_servers_before = pytest.StashKey[int]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[_servers_before] = len(ServerProcess.started)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and _servers_before in item.stash:
        # The servers' side of a failure (a refused or reset connection
        # says little on its own).
        for server in ServerProcess.started[item.stash[_servers_before]:]:
            report.sections.append((f"server pid {server.pid}: {' '.join(map(str, server.argv[1:]))[:100]}", server.output()))
    return report
