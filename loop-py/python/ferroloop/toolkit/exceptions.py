"""The toolkit's exceptions, with multiloop's names and bases.

Every one derives from :class:`MultiloopError`, so ``except MultiloopError``
catches them all; :class:`TimeoutError` is also the builtin ``TimeoutError``
(``asyncio.TimeoutError``) and :class:`ThreadPoolClosedError` also a
``RuntimeError``, so code written for either keeps working.
"""

from __future__ import annotations

import asyncio

__all__ = [
    "ChannelClosedError",
    "MultiloopError",
    "ThreadPoolClosedError",
    "TimeoutError",
    "WouldBlock",
]


class MultiloopError(Exception):
    """Base class of the toolkit's errors."""


class WouldBlock(MultiloopError):  # noqa: N818 (multiloop's name)
    """A non-blocking operation (``try_recv``) cannot proceed now."""


class ChannelClosedError(MultiloopError):
    """The channel is closed (and, for a receive, drained)."""


class ThreadPoolClosedError(MultiloopError, RuntimeError):
    """The pool is not running: not started, closed, or aborted."""


class TimeoutError(MultiloopError, asyncio.TimeoutError):  # noqa: A001 (multiloop's name)
    """A toolkit operation ran out of time."""
