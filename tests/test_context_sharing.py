"""Implicit contexts under a deep ready queue.

With many handles waiting, ferroloop's `call_soon*`, `call_later` and
`call_at` hand every handle whose
context variables are unchanged one shared snapshot and runs each callback
in a private copy of it (`loop-py/src/shared_context.rs`). What a callback
sees must stay asyncio's: the variables as they were at `call_soon`, never
a variable another callback set, and `get_context()` / `_context` the very
context the callback then runs in. Each test first queues more handles
than the depth at which sharing starts, and runs on both loops.
"""

from __future__ import annotations

import contextvars
import gc
import sys
import threading
import weakref

from _helpers import ferroloop_test_hooks

VAR = contextvars.ContextVar("VAR", default="unset")
DEEP = 600  # well past the depth at which sharing starts (128)


def _fill(loop) -> None:
    for _ in range(DEEP):
        loop.call_soon(lambda: None)


def _contexts() -> int:
    """`Context` objects the collector tracks."""
    return sum(type(o) is contextvars.Context for o in gc.get_objects())


def _run_all(loop) -> None:
    # Two rounds: callbacks scheduled by the last round's callbacks run too.
    for _ in range(3):
        loop.call_soon(loop.stop)
        loop.run_forever()


def test_the_private_layouts_sharing_reads_hold_on_this_python():
    """Module init checks the two words of CPython's private structs that
    sharing reads (a Context's variables, the thread's current context) and
    turns off what does not hold; on every tested version both must hold,
    or a layout moved and the fast path is silently gone. (3.14 and later
    have no thread-state offset yet: they copy the current context.)"""
    assert ferroloop_test_hooks().context_layouts() == (True, sys.version_info < (3, 14))


def test_a_variable_set_by_one_callback_is_not_seen_by_the_next(loop):
    seen: list[str] = []

    def setter() -> None:
        seen.append(VAR.get())
        VAR.set("set-by-callback")

    def reader() -> None:
        seen.append(VAR.get())

    _fill(loop)
    for _ in range(5):
        loop.call_soon(setter)
        loop.call_soon(reader)
    _run_all(loop)
    assert seen == ["unset"] * 10


def test_callbacks_see_the_variables_as_they_were_at_call_soon(loop):
    seen: list[str] = []

    def burst() -> None:
        _fill(loop)
        for value in ("first", "second", "third"):
            VAR.set(value)
            for _ in range(3):
                loop.call_soon(lambda: seen.append(VAR.get()))
        VAR.set("after")

    loop.call_soon(burst, context=contextvars.Context())
    _run_all(loop)
    assert seen == ["first"] * 3 + ["second"] * 3 + ["third"] * 3


def test_the_context_handed_out_is_the_one_the_callback_runs_in(loop):
    seen: list[str] = []
    _fill(loop)
    mine = loop.call_soon(lambda: seen.append(VAR.get()))
    other = loop.call_soon(lambda: seen.append(VAR.get()))
    ctx = mine._context
    assert isinstance(ctx, contextvars.Context)
    assert mine._context is ctx, "asked twice, the same context"
    ctx.run(VAR.set, "through-the-handle")
    _run_all(loop)
    assert seen == ["through-the-handle", "unset"], "only its own callback sees it"
    assert other._context is not ctx


def test_a_callback_that_keeps_its_context_does_not_share_it(loop):
    kept: list[contextvars.Context] = []

    def keep() -> None:
        VAR.set("kept")
        kept.append(contextvars.copy_context())

    _fill(loop)
    for _ in range(3):
        loop.call_soon(keep)
    seen: list[str] = []
    loop.call_soon(lambda: seen.append(VAR.get()))
    _run_all(loop)
    assert [c[VAR] for c in kept] == ["kept"] * 3
    assert seen == ["unset"]


def test_a_token_kept_by_one_callback_is_refused_in_the_next(loop):
    """Setting a variable to the value it has leaves the mapping as it was,
    but the `Token` kept holds the callback's context: the next callback
    must run in another one (ferroloop reuses a copy only when nothing
    holds it), where resetting with that token fails as in asyncio."""
    tokens: list[contextvars.Token[str]] = []
    outcomes: list[str] = []

    def keep() -> None:
        tokens.append(VAR.set(VAR.get()))

    def use() -> None:
        try:
            VAR.reset(tokens[-1])
        except ValueError:
            outcomes.append("refused")
        else:
            outcomes.append("reset")

    def burst() -> None:
        VAR.set("x")
        _fill(loop)
        for _ in range(3):
            loop.call_soon(keep)
            loop.call_soon(use)

    loop.call_soon(burst, context=contextvars.Context())
    _run_all(loop)
    assert outcomes == ["refused"] * 3


def test_a_variable_set_and_reset_by_one_callback_is_not_seen_by_the_next(loop):
    seen: list[str] = []

    def set_and_reset() -> None:
        seen.append(VAR.get())
        VAR.reset(VAR.set("inside"))
        VAR.set("left-set")

    _fill(loop)
    for _ in range(5):
        loop.call_soon(set_and_reset)
    _run_all(loop)
    assert seen == ["unset"] * 5


def test_a_thread_that_never_used_contexts_shares_too(loop):
    """A new thread has no current context until one is asked for: the
    first copy makes it, the rest are read in place."""
    seen: list[str] = []

    def produce() -> None:
        for _ in range(DEEP):
            loop.call_soon_threadsafe(lambda: seen.append(VAR.get()))
        loop.call_soon_threadsafe(loop.stop)

    worker = threading.Thread(target=produce)
    worker.start()
    loop.run_forever()
    worker.join()
    assert seen == ["unset"] * DEEP


def test_threadsafe_handles_share_and_stay_private(loop):
    seen: list[str] = []

    def produce() -> None:
        VAR.set("producer")
        for i in range(DEEP):
            loop.call_soon_threadsafe(lambda i=i: seen.append(VAR.get()) or VAR.set(f"cb{i}"))
        loop.call_soon_threadsafe(loop.stop)

    worker = threading.Thread(target=produce)
    worker.start()
    loop.run_forever()
    worker.join()
    _run_all(loop)
    assert seen == ["producer"] * DEEP


def test_the_loop_does_not_keep_a_context_value_alive(loop):
    class Value:
        pass

    value = Value()
    ref = weakref.ref(value)
    token = VAR.set(value)
    try:
        _fill(loop)
        loop.call_soon(lambda: None)
    finally:
        VAR.reset(token)
    del token
    _run_all(loop)
    del value
    gc.collect()
    assert ref() is None


def test_a_deep_queue_holds_few_contexts_on_ferroloop(loop, loop_impl):
    """The point of sharing: 2,000 queued callbacks in one unchanged context
    keep a handful of `Context` objects alive, not 2,000 (on every tested
    Python: the layout check at import found `PyContext` as expected)."""
    if loop_impl.__name__ != "ferroloop":
        return

    gc.collect()
    before = _contexts()
    for _ in range(2000):
        loop.call_soon(lambda: None)
    queued = _contexts() - before
    _run_all(loop)
    assert queued <= 200, f"{queued} contexts for 2,000 queued callbacks"


def test_timers_share_and_stay_private(loop):
    """Timers count as waiting handles and take the snapshot too: each
    callback still sees the variables as they were at `call_later`, none
    sees another's, and a timer's `get_context()` is what it runs in."""
    seen: list[tuple[int, str]] = []

    def fire(i: int) -> None:
        seen.append((i, VAR.get()))
        VAR.set(f"set-by-{i}")

    def schedule() -> None:
        for i in range(DEEP):
            loop.call_later(0.001, fire, i)
        # Past the sharing depth: a handle's context is its own all the
        # same (ferroloop makes the copy private when asked), so setting
        # through it reaches only this timer's callback.
        mine = loop.call_later(0.001, fire, -1)
        mine._context.run(VAR.set, "through-the-handle")
        VAR.set("changed")
        loop.call_later(0.001, fire, DEEP)
        VAR.set("unchanged-again")

    loop.call_soon(schedule, context=contextvars.Context())
    loop.call_later(0.05, loop.stop)
    loop.run_forever()
    values = dict(seen)
    assert len(values) == DEEP + 2
    assert values[-1] == "through-the-handle"
    assert values[DEEP] == "changed"
    assert all(values[i] == "unset" for i in range(DEEP)), "a callback saw another's variable"


def test_a_cancelled_timer_burst_holds_few_contexts_on_ferroloop(loop, loop_impl):
    """2,000 pending timers in one unchanged context keep a handful of
    `Context` objects alive, and cancelling them frees the snapshot."""
    if loop_impl.__name__ != "ferroloop":
        return

    gc.collect()
    before = _contexts()
    handles = [loop.call_later(3600, lambda: None) for _ in range(2000)]
    queued = _contexts() - before
    assert queued <= 200, f"{queued} contexts for 2,000 pending timers"
    for handle in handles:
        handle.cancel()
    del handles
    _run_all(loop)
    gc.collect()
    assert _contexts() - before <= 5, "cancelled timers left their contexts alive"
