"""Time limits for the native awaitables (``recv(timeout=...)`` and the like)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable
from typing import TypeVar

from .exceptions import TimeoutError

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float, message: str) -> T:
    """``await awaitable``, at most ``timeout`` seconds: the toolkit's
    ``TimeoutError(message)`` after that. An awaitable that is ready at once
    completes even with ``timeout=0``."""
    try:
        async with asyncio.timeout(timeout):
            return await awaitable
    except TimeoutError:
        raise
    except builtins.TimeoutError:
        raise TimeoutError(message) from None
