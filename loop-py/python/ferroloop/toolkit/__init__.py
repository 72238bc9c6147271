"""ferroloop.toolkit: many loops in one process, multiloop's API.

    import ferroloop.toolkit as multiloop      # code written for multiloop

- :class:`EventLoopThreadPool`: event loops in threads; ``submit`` runs a
  function or coroutine on one and returns a future on the caller's loop.
- :class:`Channel` (with :func:`select_channel`, and Go's :func:`select`
  over ``ch.recv_op()`` / ``ch.send_op(x)``), :class:`AsyncWaitGroup`,
  :class:`Lock`, :class:`Semaphore`, :class:`CapacityLimiter`,
  :class:`Event`, :class:`Condition`, :class:`Barrier`,
  :class:`AsyncRWMutex`, :class:`AsyncOnce`: safe across loops and threads.
- :class:`TaskGroup`, :class:`CancelScope`, :func:`fail_after`,
  :func:`move_on_after`, :class:`AsyncContext`: structured concurrency.

Everything that crosses loops or threads is native (``ferroloop._native``)
and correct without the GIL's help; it runs on any asyncio loop, and fastest
on ferroloop's. See docs/toolkit.md.
"""

from __future__ import annotations

from .._native import __version__
from ._cancel import (
    CancelScope,
    checkpoint,
    current_effective_deadline,
    fail_after,
    fail_at,
    move_on_after,
    move_on_at,
)
from ._logging import get_logger, set_log_level
from ._sync import Barrier, BarrierWaitResult, CapacityLimiter, Condition, Event, Lock, Semaphore
from ._taskgroup import TaskGroup, TaskHandle, TaskStatus
from .context import AsyncContext
from .exceptions import (
    ChannelClosedError,
    MultiloopError,
    ThreadPoolClosedError,
    TimeoutError,
    WouldBlock,
)
from .pool import EventLoopThreadPool, PoolOptions, create_pool, run_in_pool
from .primitives import (
    AsyncOnce,
    AsyncWaitGroup,
    Channel,
    ReceiveChannel,
    SendChannel,
    select,
    select_channel,
)
from .rwlock import AsyncRWMutex

__all__ = [
    "AsyncContext",
    "AsyncOnce",
    "AsyncRWMutex",
    "AsyncWaitGroup",
    "Barrier",
    "BarrierWaitResult",
    "CancelScope",
    "CapacityLimiter",
    "Channel",
    "ChannelClosedError",
    "Condition",
    "Event",
    "EventLoopThreadPool",
    "Lock",
    "MultiloopError",
    "PoolOptions",
    "ReceiveChannel",
    "Semaphore",
    "SendChannel",
    "TaskGroup",
    "TaskHandle",
    "TaskStatus",
    "ThreadPoolClosedError",
    "TimeoutError",
    "WouldBlock",
    "__version__",
    "checkpoint",
    "create_pool",
    "current_effective_deadline",
    "fail_after",
    "fail_at",
    "get_logger",
    "move_on_after",
    "move_on_at",
    "run_in_pool",
    "select",
    "select_channel",
    "set_log_level",
]
