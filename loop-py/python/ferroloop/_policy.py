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


#: install() has warned in this process (it warns once).
_install_warned = False


def install() -> None:
    """Make ferroloop the loop of ``asyncio.run`` and ``asyncio.new_event_loop``
    through asyncio's event loop policy. From Python 3.14 on, where asyncio
    deprecates the policy system, the first call warns (DeprecationWarning)
    and points to ``ferroloop.run`` and ``loop_factory``; importing
    ferroloop never warns."""
    global _install_warned
    if sys.version_info >= (3, 14) and not _install_warned:
        _install_warned = True
        warnings.warn(
            "ferroloop.install() uses asyncio's event loop policy system, deprecated "
            "since Python 3.14; use ferroloop.run(main()), or "
            "asyncio.run(main(), loop_factory=ferroloop.new_event_loop) "
            "(asyncio.Runner takes the same loop_factory)",
            DeprecationWarning,
            stacklevel=2,
        )
    set_policy = getattr(asyncio.events, "_set_event_loop_policy", None)
    if set_policy is not None:
        # 3.14+: the setter without the deprecation warning (asyncio's own
        # code uses it); warnings.catch_warnings would change the
        # process-wide filters, which other threads see meanwhile.
        set_policy(EventLoopPolicy())
        return
    asyncio.set_event_loop_policy(EventLoopPolicy())
