"""get/set_exception_handler, call_exception_handler, default_exception_handler,
and how callback errors reach them."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from _helpers import run_once


def failing_callback(arg):
    raise ZeroDivisionError(arg)


@pytest.fixture
def default_handler_loop(loop):
    """The ``loop`` fixture with asyncio's default exception handler back."""
    loop.set_exception_handler(None)
    return loop


def asyncio_errors(caplog):
    return [r for r in caplog.records if r.name == "asyncio" and r.levelno == logging.ERROR]


def test_get_and_set_exception_handler(loop, loop_errors):
    assert loop.get_exception_handler() is loop_errors

    def handler(loop, context):
        pass

    loop.set_exception_handler(handler)
    assert loop.get_exception_handler() is handler
    loop.set_exception_handler(None)
    assert loop.get_exception_handler() is None


def test_call_exception_handler_calls_the_custom_handler(loop):
    calls = []
    loop.set_exception_handler(lambda lp, ctx: calls.append((lp, ctx)))
    context = {"message": "something", "exception": ValueError("x"), "extra": 1}
    loop.call_exception_handler(context)
    assert len(calls) == 1
    got_loop, got_context = calls[0]
    assert got_loop is loop
    assert got_context["message"] == "something"
    assert got_context["exception"] is context["exception"]
    assert got_context["extra"] == 1


def test_callback_exception_goes_to_the_handler(loop, loop_errors):
    calls = []
    handle = loop.call_soon(failing_callback, "boom")
    loop.call_soon(calls.append, "next callback still runs")
    run_once(loop)
    assert calls == ["next callback still runs"]
    [context] = loop_errors.take()
    assert context["message"].startswith("Exception in callback ")
    assert "failing_callback" in context["message"]
    assert isinstance(context["exception"], ZeroDivisionError)
    assert context["exception"].args == ("boom",)
    assert context["handle"] is handle
    assert context["loop"] is loop


def test_timer_callback_exception_goes_to_the_handler(loop, loop_errors):
    handle = loop.call_later(0.001, failing_callback, "late")
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    [context] = loop_errors.take()
    assert "failing_callback" in context["message"]
    assert isinstance(context["exception"], ZeroDivisionError)
    assert context["handle"] is handle


def test_loop_keeps_running_after_many_callback_errors(loop, loop_errors):
    for i in range(100):
        loop.call_soon(failing_callback, i)
    result = loop.run_until_complete(asyncio.sleep(0.001, result="alive"))
    assert result == "alive"
    records = loop_errors.take()
    assert [ctx["exception"].args[0] for ctx in records] == list(range(100))


def test_unretrieved_task_exception_is_reported(loop, loop_errors):
    async def fail():
        raise KeyError("lost")

    task = loop.create_task(fail())
    loop.run_until_complete(asyncio.sleep(0.001))
    assert task.done()
    del task
    gc.collect()
    [context] = loop_errors.take()
    assert context["message"] == "Task exception was never retrieved"
    assert isinstance(context["exception"], KeyError)
    assert "future" in context


def test_default_exception_handler_logs_an_error(default_handler_loop, caplog):
    exc = ValueError("bad value")
    default_handler_loop.default_exception_handler(
        {"message": "it went wrong", "exception": exc, "custom_key": 12345}
    )
    [record] = asyncio_errors(caplog)
    text = record.getMessage()
    assert text.startswith("it went wrong")
    assert "custom_key: 12345" in text
    assert record.exc_info[1] is exc


def test_default_exception_handler_without_message(default_handler_loop, caplog):
    default_handler_loop.default_exception_handler({})
    [record] = asyncio_errors(caplog)
    assert record.getMessage() == "Unhandled exception in event loop"
    assert not record.exc_info


def test_call_exception_handler_uses_the_default_handler(default_handler_loop, caplog):
    default_handler_loop.call_exception_handler({"message": "reported"})
    [record] = asyncio_errors(caplog)
    assert record.getMessage() == "reported"


def test_callback_exception_is_logged_by_the_default_handler(default_handler_loop, caplog):
    default_handler_loop.call_soon(failing_callback, "logged")
    run_once(default_handler_loop)
    [record] = asyncio_errors(caplog)
    assert record.getMessage().startswith("Exception in callback ")
    assert "failing_callback" in record.getMessage()
    assert isinstance(record.exc_info[1], ZeroDivisionError)


def test_failing_custom_handler_falls_back_to_the_default(loop, caplog):
    def bad_handler(loop, context):
        raise RuntimeError("handler broke")

    loop.set_exception_handler(bad_handler)
    loop.call_soon(failing_callback, "x")
    loop.call_soon(loop.stop)
    loop.run_forever()
    [record] = asyncio_errors(caplog)
    assert record.getMessage().startswith("Unhandled error in exception handler")
    assert isinstance(record.exc_info[1], RuntimeError)


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_base_exception_in_the_handler_propagates(loop, exc_type):
    def handler(loop, context):
        raise exc_type

    loop.set_exception_handler(handler)
    with pytest.raises(exc_type):
        loop.call_exception_handler({"message": "x"})
