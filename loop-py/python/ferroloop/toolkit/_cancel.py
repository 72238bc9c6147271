"""Cancel scopes and deadlines (multiloop's, on asyncio's own cancellation).

A :class:`CancelScope` belongs to the task that enters it; the scopes a
task is inside form a stack in a context variable. ``cancel()`` (from any
thread: delivered through the task loop's ``call_soon_threadsafe``)
cancels that task; how the cancellation leaves the ``async with`` block
depends on the scope's kind, as in multiloop:

- a plain ``CancelScope()``: ``CancelledError`` goes on out of the block;
- :func:`move_on_after`/:func:`move_on_at`: swallowed at the block's end;
- :func:`fail_after`/:func:`fail_at`: turned into the toolkit's
  ``TimeoutError``.

A scope takes back exactly the cancellations it made (``Task.uncancel``),
never someone else's. ``shield=True`` sets aside the cancellations already
requested when it is entered and requests them again when it exits; one
that arrives inside a shield is not held back (multiloop's semantics).
These are single-loop objects (their task runs on one loop) and so plain
Python over asyncio.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from typing import Any

from .exceptions import TimeoutError

__all__ = [
    "CancelScope",
    "checkpoint",
    "current_effective_deadline",
    "fail_after",
    "fail_at",
    "move_on_after",
    "move_on_at",
]

_INF = float("inf")
_scopes: contextvars.ContextVar[tuple[CancelScope, ...]] = contextvars.ContextVar(
    "ferroloop_cancel_scopes", default=()
)


def _check_deadline(value: float) -> float:
    if not (math.isfinite(value) or value == _INF):
        raise ValueError("deadline must be a finite number or float('inf')")
    return value


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class CancelScope:
    """A region of one task that can be cancelled as a whole, by a call or
    by a deadline (absolute, on the loop's clock)."""

    def __init__(self, deadline: float = _INF, shield: bool = False) -> None:
        self._guard = threading.Lock()
        self._deadline = _check_deadline(deadline)
        self._shield = shield
        self._cancel_called = False
        # The kind (see the module docs). multiloop's `cancelled_caught`
        # reports the first: True for every move_on_* scope.
        self._swallows = False
        self._to_timeout = False
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._set_aside = 0
        self._injected = False

    def __repr__(self) -> str:
        return f"<CancelScope cancel_called={self.cancel_called} deadline={self._deadline}>"

    @property
    def cancel_called(self) -> bool:
        with self._guard:
            return self._cancel_called

    @property
    def cancelled_caught(self) -> bool:
        """True for a scope that swallows its cancellation (``move_on_*``)."""
        return self._swallows

    @property
    def deadline(self) -> float:
        with self._guard:
            return self._deadline

    @deadline.setter
    def deadline(self, value: float) -> None:
        value = _check_deadline(value)
        with self._guard:
            self._deadline = value
            task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            self._on_loop(loop, self._rearm)

    @property
    def shield(self) -> bool:
        with self._guard:
            return self._shield

    @shield.setter
    def shield(self, value: bool) -> None:
        with self._guard:
            if self._shield == value:
                return
            self._shield = value
            task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            self._on_loop(loop, lambda: self._apply_shield(task, value))

    @staticmethod
    def _on_loop(loop: asyncio.AbstractEventLoop, fn: Any) -> None:
        """Run ``fn`` on ``loop``'s thread: now if this is it."""
        if _running_loop() is loop:
            fn()
            return
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:
            pass  # closed: its tasks are gone

    def _rearm(self) -> None:
        """(Loop thread.) Schedule the deadline anew."""
        with self._guard:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            loop, deadline, called = self._loop, self._deadline, self._cancel_called
        if loop is None or called or deadline == _INF:
            return
        delay = deadline - loop.time()
        if delay <= 0:
            self.cancel()
            return
        with self._guard:
            if self._loop is loop:
                self._timer = loop.call_later(delay, self._expire)

    def _apply_shield(self, task: asyncio.Task[Any], on: bool) -> None:
        with self._guard:
            if self._task is not task or task.done():
                return
        if on:
            count = task.cancelling()
            for _ in range(count):
                task.uncancel()
            with self._guard:
                self._set_aside += count
        else:
            self._restore(task)

    def _expire(self) -> None:
        self._timer = None
        self.cancel()

    def cancel(self) -> None:
        """Cancel the scope (idempotent; from any thread)."""
        with self._guard:
            if self._cancel_called:
                return
            self._cancel_called = True
            task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            self._on_loop(loop, lambda: self._deliver(task))

    def _mark_cancelled(self) -> None:
        """Set ``cancel_called`` without cancelling the task (a task group
        ending after a child failed: its host is not interrupted)."""
        with self._guard:
            self._cancel_called = True

    def _deliver(self, task: asyncio.Task[Any]) -> None:
        with self._guard:
            if self._task is not task or task.done():
                return
            if task.cancel():
                self._injected = True

    def _effectively_cancelled(self) -> bool:
        if self.cancel_called:
            return True
        if self._shield:
            return False
        stack = _scopes.get()
        if self not in stack:
            return False
        for scope in reversed(stack[: stack.index(self)]):
            if scope.cancel_called:
                return True
            if scope._shield:
                return False
        return False

    def _restore(self, task: asyncio.Task[Any] | None) -> None:
        """Request again the cancellations a shield set aside."""
        with self._guard:
            count, self._set_aside = self._set_aside, 0
        if task is not None:
            for _ in range(count):
                task.cancel()

    def _leave_stack(self) -> None:
        stack = _scopes.get()
        _scopes.set(tuple(s for s in stack if s is not self))

    def _undo_enter(self) -> None:
        self._leave_stack()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with self._guard:
            self._task = None
            self._loop = None

    def _refuse_entry(self, host: asyncio.Task[Any]) -> BaseException:
        """Entered already cancelled: what to raise (the entry is undone)."""
        self._restore(host)
        self._undo_enter()
        return TimeoutError() if self._to_timeout else asyncio.CancelledError()

    async def __aenter__(self) -> CancelScope:
        host = asyncio.current_task()
        if host is None:
            raise RuntimeError("CancelScope must be used inside an active asyncio task")
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._task is not None and self._task is not host:
                raise RuntimeError("CancelScope cannot be shared across tasks: already entered by another task")
            self._task, self._loop, self._injected = host, loop, False
        if self._shield:
            self._apply_shield(host, True)
        _scopes.set((*_scopes.get(), self))
        if self._deadline != _INF:
            delay = self._deadline - loop.time()
            if delay <= 0:
                with self._guard:
                    self._cancel_called = True
            else:
                self._timer = loop.call_later(delay, self._expire)
        if not self._effectively_cancelled():
            return self
        if self.cancel_called and self._swallows:
            # Cancelled at its first await, swallowed at the exit.
            if host.cancel():
                with self._guard:
                    self._injected = True
            return self
        if not (self.cancel_called and self._to_timeout) and not self._shield:
            for _ in range(host.cancelling()):
                host.uncancel()
        raise self._refuse_entry(host) from None

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool | None:
        with self._guard:
            task, injected = self._task, self._injected
            self._task = self._loop = None
            self._injected = False
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._shield:
                self._restore(task)
            cancelled = exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
            ours = self.cancel_called

            def take_back() -> None:
                if task is not None and injected and task.cancelling() > 0:
                    task.uncancel()

            if cancelled and ours and self._to_timeout:
                take_back()
                raise TimeoutError() from exc
            if ours and self._swallows:
                take_back()
                return True if cancelled else None
            if ours and not cancelled:
                take_back()
            return None
        finally:
            self._leave_stack()


def fail_after(seconds: float) -> CancelScope:
    """A scope whose block gets ``TimeoutError`` after ``seconds``."""
    return fail_at(asyncio.get_running_loop().time() + seconds)


def fail_at(deadline: float) -> CancelScope:
    """A scope whose block gets ``TimeoutError`` at ``deadline`` (loop clock)."""
    scope = CancelScope(deadline=deadline)
    scope._to_timeout = True
    return scope


def move_on_after(seconds: float) -> CancelScope:
    """A scope whose block is silently left after ``seconds``."""
    return move_on_at(asyncio.get_running_loop().time() + seconds)


def move_on_at(deadline: float) -> CancelScope:
    """A scope whose block is silently left at ``deadline`` (loop clock)."""
    scope = CancelScope(deadline=deadline)
    scope._swallows = True
    return scope


def _raise_if_cancelled() -> None:
    stack = _scopes.get()
    if stack and stack[-1]._effectively_cancelled():
        task = asyncio.current_task()
        if task is not None:
            for _ in range(task.cancelling()):
                task.uncancel()
        raise asyncio.CancelledError


async def checkpoint() -> None:
    """Let others run; raise ``CancelledError`` if the innermost scope (or
    an unshielded one around it) is cancelled. The raise takes the task's
    pending cancellations with it, so it is delivered once."""
    _raise_if_cancelled()
    await asyncio.sleep(0)
    _raise_if_cancelled()


def current_effective_deadline() -> float:
    """The nearest deadline of the scopes around the caller, up to the
    first shield (``inf``: none)."""
    nearest = _INF
    for scope in reversed(_scopes.get()):
        nearest = min(nearest, scope._deadline)
        if scope._shield:
            break
    return nearest
