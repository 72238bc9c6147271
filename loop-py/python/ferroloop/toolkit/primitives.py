"""Channels, ``select``, wait groups and once-only initialisation.

The state and every wait are native (``ferroloop._native``): a
:class:`Channel` is safe to use from tasks on any number of loops and from
plain threads at once; its ``send``/``recv`` are native awaitables. These
classes add multiloop's names, reprs and the few helpers that only arrange
calls (``split``, ``holding``, ``wrap``, ``track``).
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from contextlib import asynccontextmanager
from typing import Any

from .. import _native
from ._timeouts import within
from .exceptions import ChannelClosedError

Event = _native.Event

__all__ = [
    "AsyncOnce",
    "ChannelClosedError",
    "AsyncWaitGroup",
    "Channel",
    "ReceiveChannel",
    "SendChannel",
    "select",
    "select_channel",
]

select = _native.select


class _Waiting:
    """``len()`` of one kind of waiter (multiloop's ``_getters``, ...)."""

    __slots__ = ("_channel", "_which")

    def __init__(self, channel: Channel, which: int) -> None:
        self._channel = channel
        self._which = which

    def __len__(self) -> int:
        return self._channel._waiting()[self._which]


class Channel(_native.ChannelCore):
    """A FIFO channel between tasks on any loops and plain threads.

    ``maxsize=0`` (the default) is unbounded; otherwise ``send`` waits while
    ``maxsize`` items are buffered. ``close()`` makes sends fail and lets
    receivers drain what is buffered before they fail too
    (:class:`ChannelClosedError`); ``async for item in channel`` ends there.
    Waiters are served first come, first served, and an item handed to a
    receiver that is cancelled before it runs goes to the next one: nothing
    is lost or received twice.
    """

    def __init__(self, maxsize: int = 0) -> None:
        pass  # the native base took maxsize

    def __repr__(self) -> str:
        return f"<Channel is_closed={self.is_closed}>"

    def split(self) -> tuple[SendChannel, ReceiveChannel]:
        """A send-only and a receive-only view of this channel."""
        return SendChannel(self), ReceiveChannel(self)

    @property
    def _getters(self) -> _Waiting:
        return _Waiting(self, 0)

    @property
    def _putters(self) -> _Waiting:
        return _Waiting(self, 1)

    @property
    def _notifiers(self) -> _Waiting:
        return _Waiting(self, 2)


class SendChannel:
    """A send-only view of a :class:`Channel` (Go's ``chan<- T``)."""

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel) -> None:
        self._ch = ch

    def __repr__(self) -> str:
        return f"<SendChannel is_closed={self.is_closed}>"

    def send(self, item: Any, timeout: float | None = None) -> Awaitable[None]:
        return self._ch.send(item, timeout)

    def send_sync(self, item: Any, timeout: float | None = None) -> None:
        self._ch.send_sync(item, timeout)

    def try_send(self, item: Any) -> bool:
        return self._ch.try_send(item)

    def send_op(self, item: Any) -> Any:
        return self._ch.send_op(item)

    def close(self) -> None:
        self._ch.close()

    @property
    def is_closed(self) -> bool:
        return self._ch.is_closed

    @property
    def maxsize(self) -> int:
        return self._ch.maxsize

    def full(self) -> bool:
        return self._ch.full()

    async def __aenter__(self) -> SendChannel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


class ReceiveChannel:
    """A receive-only view of a :class:`Channel` (Go's ``<-chan T``)."""

    __slots__ = ("_ch",)

    def __init__(self, ch: Channel) -> None:
        self._ch = ch

    def __repr__(self) -> str:
        return f"<ReceiveChannel is_closed={self.is_closed}>"

    def recv(self, timeout: float | None = None) -> Awaitable[Any]:
        return self._ch.recv(timeout)

    def recv_sync(self, timeout: float | None = None) -> Any:
        return self._ch.recv_sync(timeout)

    def try_recv(self) -> Any:
        return self._ch.try_recv()

    def recv_op(self) -> Any:
        return self._ch.recv_op()

    def close(self) -> None:
        self._ch.close()

    @property
    def is_closed(self) -> bool:
        return self._ch.is_closed

    def empty(self) -> bool:
        return self._ch.empty()

    def qsize(self) -> int:
        return self._ch.qsize()

    def __aiter__(self) -> ReceiveChannel:
        return self

    def __anext__(self) -> Awaitable[Any]:
        return self._ch.__anext__()

    async def __aenter__(self) -> ReceiveChannel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


_UNSET: Any = object()


async def select_channel(
    *channels: Channel | ReceiveChannel, timeout: float | None = None, default: Any = _UNSET
) -> Any:
    """Receive from whichever channel is ready first: ``(channel, value)``.

    Several ready at once: one of them at random. With ``default`` (any
    value) it does not wait: ``default`` when none is ready. Closed, drained
    channels are ignored while another is open; when all are,
    :class:`ChannelClosedError`. ``timeout``: :class:`TimeoutError` after
    that many seconds.
    """
    if not channels:
        raise ValueError("select_channel requires at least one channel")
    chans = tuple(c._ch if isinstance(c, ReceiveChannel) else c for c in channels)
    op = _native._select_recv(chans) if default is _UNSET else _native._select_recv(chans, default)
    if timeout is None:
        return await op
    return await within(op, timeout, "select_channel timed out")


class _Tracked(Coroutine[Any, Any, Any]):
    """``AsyncWaitGroup.track``'s coroutine: the wait group's ``done()``
    when it ends, however it ends (or when closed unstarted)."""

    __slots__ = ("_steps", "_started", "_target", "_wg")

    def __init__(self, target: Any, wg: AsyncWaitGroup) -> None:
        self._target = target
        self._wg = wg
        self._started = False
        self._steps: Generator[Any, None, Any] | None = None

    def _gen(self) -> Generator[Any, None, Any]:
        if self._steps is None:
            self._steps = self._run().__await__()
        return self._steps

    async def _run(self) -> Any:
        try:
            target = self._target
            if asyncio.iscoroutine(target) or asyncio.isfuture(target):
                return await target
            if callable(target):
                result = target()
                if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                    return await result
                return result
            return target
        finally:
            self._wg.done()

    def send(self, value: Any) -> Any:
        self._started = True
        return self._gen().send(value)

    def throw(self, *args: Any) -> Any:
        self._started = True
        return self._gen().throw(*args)

    def close(self) -> None:
        if not self._started:
            self._started = True
            self._wg.done()
            if asyncio.iscoroutine(self._target):
                self._target.close()
        elif self._steps is not None:
            self._steps.close()

    def __await__(self) -> Generator[Any, None, Any]:
        self._started = True
        return self._gen()

    def __del__(self) -> None:
        if not self._started:
            # Not done() here: a finalizer may run on any thread, anywhere.
            warnings.warn(
                "a coroutine from AsyncWaitGroup.track() was never awaited; "
                "its done() never came",
                RuntimeWarning,
                stacklevel=2,
            )
            if asyncio.iscoroutine(self._target):
                self._target.close()


class AsyncWaitGroup(_native.WaitGroupCore):
    """Go's ``sync.WaitGroup`` for tasks on any loops and threads:
    ``add(n)`` before starting work, ``done()`` as each piece ends (from
    any thread or loop), ``await wait()`` until the count is zero. Every
    positive ``add`` must happen before the ``wait`` it is meant for."""

    def __repr__(self) -> str:
        return f"<AsyncWaitGroup count={self._count}>"

    @asynccontextmanager
    async def holding(self) -> AsyncGenerator[None]:
        """``add(1)`` on entry, ``done()`` on exit, however it exits."""
        self.add(1)
        try:
            yield
        finally:
            self.done()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
        """A coroutine function running ``fn`` between ``add(1)`` and
        ``done()`` (for ``TaskGroup.start_soon`` or ``pool.submit``)."""
        if not callable(fn):
            raise TypeError(f"Expected callable, got {type(fn).__name__}")

        async def tracked(*args: Any, **kwargs: Any) -> Any:
            self.add(1)
            try:
                result = fn(*args, **kwargs)
                if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                    return await result
                return result
            finally:
                self.done()

        return tracked

    def track(self, coro: Any) -> Coroutine[Any, Any, Any]:
        """``add(1)`` now; the returned coroutine runs ``coro`` (a coroutine,
        future or callable) and calls ``done()`` when it ends."""
        if not (asyncio.iscoroutine(coro) or asyncio.isfuture(coro) or callable(coro)):
            raise TypeError(f"Expected coroutine, Future, or callable, got {type(coro).__name__}")
        self.add(1)
        return _Tracked(coro, self)


class AsyncOnce:
    """Go's ``sync.Once`` across loops: ``await once.do(fn, ...)`` runs
    ``fn`` the first time only; every caller gets its result (or its
    exception). A cancelled first run gives later callers
    ``RuntimeError("AsyncOnce execution was cancelled")``."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._running = False
        self._done = False
        self._result: Any = None
        self._exc: BaseException | None = None
        self._finished = Event()

    def __repr__(self) -> str:
        return f"<AsyncOnce done={self._done}>"

    def _outcome(self) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._result

    async def do(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self._guard:
            if self._done:
                return self._outcome()
            leader = not self._running
            self._running = True
        if not leader:
            await self._finished.wait()
            return self._outcome()
        try:
            result = fn(*args, **kwargs)
            if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                result = await result
            self._result = result
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self._exc = RuntimeError("AsyncOnce execution was cancelled")
                self._exc.__cause__ = exc
            else:
                self._exc = exc
            raise
        finally:
            with self._guard:
                self._done = True
            self._finished.set()
        return result
