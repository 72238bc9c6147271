"""Helpers for tests of code that uses the toolkit."""

from __future__ import annotations

import asyncio

__all__ = ["wait_all_tasks_blocked"]


def _ready(loop: asyncio.AbstractEventLoop) -> int:
    count = getattr(loop, "_ready_count", None)
    if count is not None:
        return count()
    return len(getattr(loop, "_ready", ()))


async def wait_all_tasks_blocked(rounds: int = 1000) -> None:
    """Let the loop run until nothing but the caller has work to do (every
    other task waits on something), or ``rounds`` passes of the loop."""
    loop = asyncio.get_running_loop()
    quiet = 0
    for _ in range(rounds):
        await asyncio.sleep(0)
        # Ready callbacks beyond our own wake-up mean someone can still run.
        quiet = quiet + 1 if _ready(loop) == 0 else 0
        if quiet >= 3:
            return
