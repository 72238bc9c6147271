"""Locks, semaphores, events, conditions and barriers for tasks on any loops.

Waiting and waking are native: the permit pool under :class:`Lock`,
:class:`Semaphore` and :class:`CapacityLimiter` (FIFO, a permit granted to a
waiter that is then cancelled goes to the next one), and :class:`Event`,
which wakes a waiter on any loop from any thread. :class:`Condition` and
:class:`Barrier` keep their small state machines here, under a
``threading.Lock`` (a real lock, also without the GIL), and wait on native
events: no asyncio object is ever touched from another thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from .. import _native

__all__ = [
    "Barrier",
    "BarrierWaitResult",
    "CapacityLimiter",
    "Condition",
    "Event",
    "Lock",
    "Semaphore",
]

Event = _native.Event


def _current_task(what: str) -> asyncio.Task[Any]:
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    if task is None:
        raise RuntimeError(f"{what}() must be called from an active asyncio task")
    return task


class Lock:
    """A fair (FIFO) mutex for tasks on any loops and threads. Owned by the
    task that acquired it: only that task may release it; a lock whose
    owner finished without releasing it is taken back on the next acquire."""

    __slots__ = ("_guard", "_owner", "_permits")

    def __init__(self) -> None:
        self._permits = _native.PermitsCore(1, "Lock is not acquired")
        self._guard = threading.Lock()
        self._owner: asyncio.Task[Any] | None = None

    def __repr__(self) -> str:
        return f"<Lock locked={self.locked}>"

    @property
    def locked(self) -> bool:
        return self._permits._snapshot()[1] > 0

    @property
    def owner(self) -> asyncio.Task[Any] | None:
        with self._guard:
            return self._owner

    def _before_acquire(self, task: asyncio.Task[Any]) -> None:
        with self._guard:
            owner = self._owner
            if owner is task:
                raise RuntimeError("Lock is not reentrant: already held by the current task")
            if owner is None or not owner.done():
                return
            self._owner = None
        self._permits._release()

    async def acquire(self) -> None:
        task = _current_task("acquire")
        self._before_acquire(task)
        await self._permits._acquire()
        with self._guard:
            self._owner = task

    def try_acquire(self) -> bool:
        task = _current_task("try_acquire")
        self._before_acquire(task)
        if not self._permits._try_acquire():
            return False
        with self._guard:
            self._owner = task
        return True

    def release(self) -> None:
        task = _current_task("release")
        with self._guard:
            if self._owner is not task:
                raise RuntimeError("Lock.release() called by a task that does not own the lock")
            self._owner = None
        self._permits._release()

    async def __aenter__(self) -> Lock:
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()


class _Permits(_native.PermitsCore):
    """What Semaphore and CapacityLimiter share: FIFO permits, native."""

    def acquire(self) -> Any:
        """Take a permit, waiting in line for one (awaitable)."""
        return self._acquire()

    def try_acquire(self) -> bool:
        return self._try_acquire()

    def release(self) -> None:
        self._release()

    async def __aenter__(self) -> Any:
        await self._acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()


class Semaphore(_Permits):
    """A counting semaphore for tasks on any loops, FIFO; ``max_value``
    permits, released at most as often as acquired (else ValueError)."""

    def __new__(cls, max_value: int) -> Semaphore:
        if max_value < 0:
            raise ValueError("max_value must be >= 0")
        return super().__new__(cls, max_value, "Semaphore released too many times")

    def __init__(self, max_value: int) -> None:
        self._max_value = max_value

    def __repr__(self) -> str:
        return f"<Semaphore value={self.value}, max_value={self._max_value}, waiters={self._waiting()}>"

    @property
    def value(self) -> int:
        total, held = self._snapshot()
        return int(total) - held

    @property
    def max_value(self) -> int:
        return self._max_value


class CapacityLimiter(_Permits):
    """A limit of ``int(total_tokens)`` concurrent borrowers across loops;
    ``total_tokens`` can be changed at any time (waiters get new tokens at
    once)."""

    def __new__(cls, total_tokens: float) -> CapacityLimiter:
        if total_tokens <= 0:
            raise ValueError("total_tokens must be positive")
        return super().__new__(cls, float(total_tokens), "CapacityLimiter released too many times")

    def __init__(self, total_tokens: float) -> None:
        pass

    def __repr__(self) -> str:
        total, available, borrowed = self.snapshot()
        return f"<CapacityLimiter total_tokens={total}, available={available}, borrowed={borrowed}>"

    @property
    def total_tokens(self) -> float:
        return self._snapshot()[0]

    @total_tokens.setter
    def total_tokens(self, value: float) -> None:
        if value <= 0:
            raise ValueError("total_tokens must be positive")
        self._set_total(float(value))

    @property
    def total_capacity(self) -> int:
        return int(self._snapshot()[0])

    @property
    def available_capacity(self) -> int:
        total, held = self._snapshot()
        return max(0, int(total) - held)

    @property
    def available_tokens(self) -> float:
        total, held = self._snapshot()
        return total - held

    @property
    def borrowed_tokens(self) -> float:
        return float(self._snapshot()[1])

    def snapshot(self) -> tuple[float, float, float]:
        """``(total_tokens, available_tokens, borrowed_tokens)``, read together."""
        total, held = self._snapshot()
        return (total, total - held, float(held))


class Condition:
    """A condition variable over a :class:`Lock`, for tasks on any loops.
    ``notify()`` does not need the lock held; a notified waiter that is
    cancelled passes the notification on."""

    def __init__(self, lock: Lock | None = None) -> None:
        self._lock = lock if lock is not None else Lock()
        self._guard = threading.Lock()
        self._waiters: dict[Any, None] = {}

    async def acquire(self) -> None:
        await self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    async def __aenter__(self) -> Condition:
        await self._lock.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()

    async def wait(self) -> None:
        """Release the lock, wait for a notification, take the lock again
        (also when cancelled, before the cancellation goes on)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is None or self._lock.owner is not task:
            raise RuntimeError("cannot wait on un-acquired lock")
        token = Event()
        with self._guard:
            self._waiters[token] = None
        try:
            self._lock.release()
        except BaseException:
            self._discard(token)
            raise
        try:
            await token.wait()
        except BaseException:
            if not self._discard(token):
                self._pass_on()
            await self._reacquire()
            raise
        try:
            await self._reacquire()
        except BaseException:
            self._pass_on()
            raise

    async def wait_for(self, predicate: Callable[[], Any]) -> Any:
        while True:
            result = predicate()
            if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                result = await result
            if result:
                return result
            await self.wait()

    def notify(self, n: int = 1) -> None:
        """Wake up to ``n`` waiters."""
        if n <= 0:
            return
        with self._guard:
            tokens = []
            while self._waiters and len(tokens) < n:
                token = next(iter(self._waiters))
                del self._waiters[token]
                tokens.append(token)
        for token in tokens:
            token.set()

    def notify_all(self) -> None:
        with self._guard:
            n = len(self._waiters)
        self.notify(n)

    def _discard(self, token: Any) -> bool:
        with self._guard:
            return self._waiters.pop(token, _GONE) is not _GONE

    def _pass_on(self) -> None:
        self.notify(1)

    async def _reacquire(self) -> None:
        cancelled = False
        while True:
            try:
                await self._lock.acquire()
                break
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError


_GONE: Any = object()


class BarrierWaitResult:
    """What :meth:`Barrier.wait` returns: the arrival index (0: the party
    that completed the round, the leader)."""

    __slots__ = ("index", "parties")

    def __init__(self, parties: int, index: int = 0) -> None:
        self.parties = parties
        self.index = index

    @property
    def is_leader(self) -> bool:
        return self.index == 0

    def __repr__(self) -> str:
        return f"<BarrierWaitResult parties={self.parties} index={self.index}>"


class Barrier:
    """``parties`` tasks (on any loops) wait until all have arrived, then
    all go on; it resets for the next round. A party cancelled while
    waiting breaks the round (every waiter gets RuntimeError) until
    :meth:`reset`."""

    def __init__(self, parties: int) -> None:
        if parties <= 0:
            raise ValueError("parties must be >= 1")
        self._parties = parties
        self._guard = threading.Lock()
        self._generation = 0
        self._waiting: list[tuple[Any, list[int | None]]] = []
        self._broken = False
        self._aborted = False

    @property
    def parties(self) -> int:
        return self._parties

    @property
    def broken(self) -> bool:
        with self._guard:
            return self._broken or self._aborted

    @property
    def n_waiting(self) -> int:
        with self._guard:
            return len(self._waiting)

    def _release_all(self, index: int | None) -> list[Any]:
        """Take every waiter, marking its slot with ``index`` (under the guard)."""
        tokens = []
        for token, slot in self._waiting:
            slot[0] = index
            tokens.append(token)
        self._waiting.clear()
        return tokens

    async def wait(self) -> BarrierWaitResult:
        with self._guard:
            if self._aborted:
                raise RuntimeError("barrier has been aborted")
            if self._broken:
                raise RuntimeError("barrier is broken")
            if len(self._waiting) + 1 == self._parties:
                tokens = []
                for index, (token, slot) in enumerate(self._waiting, start=1):
                    slot[0] = index
                    tokens.append(token)
                self._waiting.clear()
                self._generation += 1
            else:
                tokens = None
                token, slot = Event(), [None]
                self._waiting.append((token, slot))
                generation = self._generation
        if tokens is not None:
            for t in tokens:
                t.set()
            return BarrierWaitResult(self._parties, 0)
        try:
            await token.wait()
        except BaseException:
            with self._guard:
                broken = []
                if generation == self._generation:
                    self._broken = True
                    broken = self._release_all(-1)
                    self._generation += 1
            for t in broken:
                t.set()
            raise
        with self._guard:
            if self._aborted and generation == self._generation:
                raise RuntimeError("barrier has been aborted")
        if slot[0] == -1:
            raise RuntimeError("barrier broken by concurrent cancellation")
        if slot[0] is None:
            raise RuntimeError("barrier was reset while waiting")
        return BarrierWaitResult(self._parties, slot[0])

    def abort(self) -> None:
        """Break the barrier for good (until reset): every waiter and every
        later ``wait`` gets RuntimeError."""
        with self._guard:
            self._aborted = self._broken = True
            tokens = self._release_all(None)
        for t in tokens:
            t.set()

    def reset(self) -> None:
        """Back to a fresh round; current waiters get RuntimeError."""
        with self._guard:
            tokens = self._release_all(None)
            self._generation += 1
            self._aborted = self._broken = False
        for t in tokens:
            t.set()
