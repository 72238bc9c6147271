"""add_signal_handler, remove_signal_handler, and Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from _helpers import PROMPT, run_child, run_until, spawn_child


@pytest.fixture
def sig_loop(loop):
    """The ``loop`` fixture; SIGUSR1/SIGUSR2 dispositions are restored after."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGUSR2)}
    yield loop
    loop.close()
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def noop(*args):
    pass


async def coro_handler():
    pass


def test_signal_runs_the_handler_with_its_arguments(sig_loop):
    calls = []
    sig_loop.add_signal_handler(signal.SIGUSR1, lambda *a: calls.append(a), "x", 2)
    sig_loop.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
    run_until(sig_loop, lambda: calls)
    assert calls == [("x", 2)]


def test_each_delivery_runs_the_handler(sig_loop):
    calls = []

    def handler():
        calls.append(None)
        if len(calls) < 3:
            os.kill(os.getpid(), signal.SIGUSR1)

    sig_loop.add_signal_handler(signal.SIGUSR1, handler)
    sig_loop.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
    run_until(sig_loop, lambda: len(calls) == 3)


def test_signal_wakes_a_blocked_loop(sig_loop):
    sig_loop.add_signal_handler(signal.SIGUSR1, sig_loop.stop)

    def other_thread():
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGUSR1)

    thread = threading.Thread(target=other_thread, daemon=True)
    thread.start()
    start = time.monotonic()
    sig_loop.run_forever()
    thread.join(PROMPT)
    assert time.monotonic() - start < PROMPT


def test_adding_again_replaces_the_handler(sig_loop):
    calls = []
    sig_loop.add_signal_handler(signal.SIGUSR1, calls.append, "old")
    sig_loop.add_signal_handler(signal.SIGUSR1, calls.append, "new")
    sig_loop.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
    run_until(sig_loop, lambda: calls)
    assert calls == ["new"]


def test_two_signals_have_separate_handlers(sig_loop):
    calls = []
    sig_loop.add_signal_handler(signal.SIGUSR1, calls.append, "usr1")
    sig_loop.add_signal_handler(signal.SIGUSR2, calls.append, "usr2")
    sig_loop.call_soon(os.kill, os.getpid(), signal.SIGUSR2)
    run_until(sig_loop, lambda: calls)
    sig_loop.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
    run_until(sig_loop, lambda: len(calls) == 2)
    assert calls == ["usr2", "usr1"]


def test_remove_signal_handler(sig_loop):
    assert sig_loop.remove_signal_handler(signal.SIGUSR1) is False
    sig_loop.add_signal_handler(signal.SIGUSR1, noop)
    assert signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, signal.SIG_IGN)
    assert sig_loop.remove_signal_handler(signal.SIGUSR1) is True
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
    assert sig_loop.remove_signal_handler(signal.SIGUSR1) is False


def test_removing_the_sigint_handler_restores_the_default(sig_loop):
    saved = signal.getsignal(signal.SIGINT)
    try:
        sig_loop.add_signal_handler(signal.SIGINT, noop)
        assert sig_loop.remove_signal_handler(signal.SIGINT) is True
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, saved)


def test_close_removes_the_signal_handlers(sig_loop):
    sig_loop.add_signal_handler(signal.SIGUSR1, noop)
    sig_loop.close()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


# --------------------------------------------------------------------------
# Errors


def test_add_from_a_non_main_thread_raises(sig_loop):
    errors = []

    def other_thread():
        try:
            sig_loop.add_signal_handler(signal.SIGUSR1, noop)
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(PROMPT)
    assert len(errors) == 1
    assert "main thread" in errors[0]
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


@pytest.mark.parametrize("method", ["add_signal_handler", "remove_signal_handler"])
@pytest.mark.parametrize("sig", [0, 1000])
def test_invalid_signal_number(sig_loop, method, sig):
    args = (noop,) if method.startswith("add") else ()
    with pytest.raises(ValueError, match=rf"^invalid signal number {sig}$"):
        getattr(sig_loop, method)(sig, *args)


@pytest.mark.parametrize("method", ["add_signal_handler", "remove_signal_handler"])
def test_signal_not_an_int(sig_loop, method):
    args = (noop,) if method.startswith("add") else ()
    with pytest.raises(TypeError, match=r"^sig must be an int, not 'SIGUSR1'$"):
        getattr(sig_loop, method)("SIGUSR1", *args)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP])
def test_uncatchable_signal(sig_loop, sig):
    with pytest.raises(RuntimeError, match=rf"^sig {int(sig)} cannot be caught$"):
        sig_loop.add_signal_handler(sig, noop)


def test_coroutine_function_handler_is_rejected(sig_loop):
    with pytest.raises(
        TypeError, match=r"^coroutines cannot be used with add_signal_handler\(\)$"
    ):
        sig_loop.add_signal_handler(signal.SIGUSR1, coro_handler)


def test_coroutine_handler_is_rejected(sig_loop):
    coro = coro_handler()
    try:
        with pytest.raises(
            TypeError, match=r"^coroutines cannot be used with add_signal_handler\(\)$"
        ):
            sig_loop.add_signal_handler(signal.SIGUSR1, coro)
    finally:
        coro.close()


def test_add_on_a_closed_loop_raises(sig_loop):
    sig_loop.close()
    with pytest.raises(RuntimeError, match=r"^Event loop is closed$"):
        sig_loop.add_signal_handler(signal.SIGUSR1, noop)


# --------------------------------------------------------------------------
# Ctrl-C, in a child process


def interrupt_child(impl, source):
    """Run ``source`` in a child; once it prints "ready", send it SIGINT.

    Returns (stdout lines, seconds from SIGINT to exit).
    """
    child = spawn_child(impl, source)
    try:
        line = child.stdout.readline()
        assert line == "ready\n", f"child said {line!r}; stderr:\n{child.stderr.read()}"
        time.sleep(0.3)  # let it block in the poll
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = child.communicate(timeout=PROMPT * 2)
        elapsed = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, f"exit {child.returncode}; stderr:\n{err}"
    return out.splitlines(), elapsed


def test_ctrl_c_stops_a_blocked_run_forever(loop_impl):
    lines, elapsed = interrupt_child(
        loop_impl,
        """
        loop = impl.new_event_loop()
        loop.call_soon(lambda: print("ready", flush=True))  # then nothing is scheduled
        try:
            loop.run_forever()
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
            print("running:", loop.is_running())
        loop.close()
        """,
    )
    assert lines == ["KeyboardInterrupt", "running: False"]
    assert elapsed < PROMPT


def test_ctrl_c_stops_run_of_a_long_sleep(loop_impl):
    lines, elapsed = interrupt_child(
        loop_impl,
        """
        async def main():
            print("ready", flush=True)
            await asyncio.sleep(3600)

        try:
            impl.run(main())
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        """,
    )
    assert lines == ["KeyboardInterrupt"]
    assert elapsed < PROMPT


def test_interrupt_main_from_a_c_callback_stops_an_idle_loop(loop_impl):
    # `_thread.interrupt_main` trips SIGINT without a real signal, and as a C
    # callback no bytecode follows it to run the handler: the loop itself
    # must, before blocking with nothing else scheduled.
    result = run_child(
        loop_impl,
        """
        import _thread
        loop = impl.new_event_loop()
        loop.call_later(0.01, _thread.interrupt_main)
        try:
            loop.run_forever()
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
            print("running:", loop.is_running())
        loop.close()
        """,
        timeout=PROMPT * 2,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["KeyboardInterrupt", "running: False"]
