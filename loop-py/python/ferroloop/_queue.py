"""ferroloop.Queue, LifoQueue, PriorityQueue: asyncio's queues in Rust.

They work on any asyncio loop (stdlib, uvloop, ferroloop): a waiting get or
put creates its future with the running loop's ``create_future()``. The
state and every method are native (``_native.QueueCore``); these classes
only give them asyncio's names and ``__init__(maxsize=0)``.
"""

from __future__ import annotations

import asyncio

from . import _native

__all__ = ["LifoQueue", "PriorityQueue", "Queue", "QueueShutDown"]

if hasattr(asyncio, "QueueShutDown"):  # 3.13+: asyncio's own class
    QueueShutDown = asyncio.QueueShutDown
else:

    class QueueShutDown(Exception):  # type: ignore[no-redef]
        """Raised when putting on to or getting from a shut-down Queue."""

        __module__ = "ferroloop"


# The orders _native.QueueCore._setup knows.
_FIFO, _LIFO, _PRIORITY = 0, 1, 2

# The typed API is in _queue.pyi.


class Queue(_native.QueueCore):
    """A queue, useful for coordinating producer and consumer coroutines
    (asyncio.Queue's API). If maxsize is less than or equal to zero, the
    queue size is infinite; else ``await put()`` waits while it is full."""

    _kind = _FIFO

    def __init__(self, maxsize: int = 0) -> None:
        self._setup(maxsize, self._kind)


class LifoQueue(Queue):
    """A queue that retrieves most recently added entries first."""

    _kind = _LIFO


class PriorityQueue(Queue):
    """A queue that retrieves entries in priority order (lowest first),
    as heapq orders them (entries are typically ``(priority, data)``)."""

    _kind = _PRIORITY
