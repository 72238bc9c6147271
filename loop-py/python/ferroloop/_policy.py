"""Ways in: ``new_event_loop``, ``run``, ``EventLoopPolicy``, ``install``."""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Any, Coroutine, TypeVar

from ._loop import Loop

_T = TypeVar("_T")

with warnings.catch_warnings():
    # asyncio deprecates the policy system from 3.14 on; the class itself
    # still works and is what `install()` needs.
    warnings.simplefilter("ignore", DeprecationWarning)
    _DefaultPolicy: Any = asyncio.DefaultEventLoopPolicy


def new_event_loop(*, backend: str | None = None) -> Loop:
    """A new ferroloop loop (``asyncio.Runner(loop_factory=...)``,
    ``uvicorn --loop ferroloop:new_event_loop``). ``backend``: ``"auto"``,
    ``"io_uring"`` or ``"epoll"``; None reads ``FERROLOOP_BACKEND``
    (``auto`` when unset)."""
    return Loop(backend=backend)


def run(main: Coroutine[Any, Any, _T], *, debug: bool | None = None, backend: str | None = None) -> _T:
    """Like ``asyncio.run(main)``, on a ferroloop loop (``backend`` as in
    ``new_event_loop``)."""
    if asyncio.events._get_running_loop() is not None:
        # Fail before a Runner exists: its cleanup would mask this error.
        raise RuntimeError("ferroloop.run() cannot be called from a running event loop")
    with asyncio.Runner(debug=debug, loop_factory=lambda: new_event_loop(backend=backend)) as runner:
        return runner.run(main)


class EventLoopPolicy(_DefaultPolicy):  # type: ignore[misc]
    """asyncio's default policy, building ferroloop loops."""

    def new_event_loop(self) -> Loop:
        return new_event_loop()


def install() -> None:
    """Make ferroloop the loop of ``asyncio.run`` and ``asyncio.new_event_loop``
    (through the event loop policy; prefer ``ferroloop.run`` on 3.14+)."""
    if sys.version_info >= (3, 14):
        warnings.warn(
            "ferroloop.install() uses asyncio's event loop policy system, deprecated "
            "since Python 3.14; use ferroloop.run(main) or "
            "asyncio.Runner(loop_factory=ferroloop.new_event_loop) instead",
            DeprecationWarning,
            stacklevel=2,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_event_loop_policy(EventLoopPolicy())
