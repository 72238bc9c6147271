"""Which tests count towards the conformance rate.

Two sources, both recorded with a reason:

* ``scope.toml``: explicit entries, keyed by a test-id prefix (a module, a
  class or a single test). These tests are listed but never run.
* Automatic detection (child side): a test that runs or schedules work on a
  stdlib event loop it built itself, instead of the loop under test, is out
  of scope. This catches the fake-clock ``test_utils.TestLoop`` and bare
  ``BaseEventLoop`` fakes wherever they appear, and is the safety net that
  keeps a stdlib-loop test from counting as a ferroloop pass when a CPython
  version adds a class this runner does not substitute.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import tomllib
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SCOPE_FILE = Path(__file__).with_name("scope.toml")


class ScopeRules:
    """The explicit out-of-scope entries of ``scope.toml``."""

    def __init__(self, entries: dict[str, str]) -> None:
        self.entries = entries

    @classmethod
    def load(cls, path: Path = SCOPE_FILE) -> ScopeRules:
        with path.open("rb") as f:
            table = tomllib.load(f).get("out-of-scope", {})
        for key, reason in table.items():
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"{path}: entry {key!r} needs a non-empty reason string")
        return cls(table)

    def reason_for(self, test_id: str) -> str | None:
        """The reason if ``test_id`` or one of its dotted prefixes is listed."""
        parts = test_id.split(".")
        for n in range(len(parts), 0, -1):
            reason = self.entries.get(".".join(parts[:n]))
            if reason is not None:
                return reason
        return None

    def unused(self, module: str, test_ids: set[str]) -> list[str]:
        """Entries under ``module`` that match none of its tests (renamed upstream?)."""
        return [
            key
            for key in self.entries
            if key.split(".", 1)[0] == module and not any(t == key or t.startswith(key + ".") for t in test_ids)
        ]


class ForeignLoopDetector:
    """Marks the running test out of scope when it uses a stdlib loop it built.

    Every ``BaseEventLoop`` constructed outside :meth:`building_loop_under_test`
    is "foreign". Its scheduling and running methods are wrapped *on that
    instance only*, so the loop under test is never touched (the suite checks
    call-site frames of ``call_soon``, which a class-level wrapper would shift).
    """

    _WATCHED = ("_run_once", "call_soon", "call_at", "add_reader", "add_writer")

    def __init__(self) -> None:
        self._building = threading.local()
        self._reason: str | None = None

    @contextlib.contextmanager
    def building_loop_under_test(self) -> Iterator[None]:
        depth = getattr(self._building, "depth", 0)
        self._building.depth = depth + 1
        try:
            yield
        finally:
            self._building.depth = depth

    def install(self) -> None:
        base = asyncio.base_events.BaseEventLoop
        original_init = base.__init__
        detector = self

        @functools.wraps(original_init)
        def __init__(loop: asyncio.base_events.BaseEventLoop, *args: Any, **kwargs: Any) -> None:
            original_init(loop, *args, **kwargs)
            if not getattr(detector._building, "depth", 0):
                detector._watch(loop)

        base.__init__ = __init__  # type: ignore[method-assign,assignment]

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        cls = type(loop)
        reason = (
            f"runs on {cls.__module__}.{cls.__qualname__}, a stdlib loop the test "
            "builds itself instead of the loop under test"
        )
        for name in self._WATCHED:
            method = getattr(loop, name, None)
            if method is not None:
                setattr(loop, name, self._marking(method, reason))

    def _marking(self, method: Callable[..., Any], reason: str) -> Callable[..., Any]:
        # Only a weak reference (and no functools.wraps, whose __wrapped__ is a
        # strong one): the wrapper lives on the loop and must not keep it alive,
        # or the loop's __del__ (unclosed-loop ResourceWarning) would move.
        weak_method = weakref.WeakMethod(method)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._reason = self._reason or reason
            bound = weak_method()
            assert bound is not None  # called through the loop, so the loop is alive
            return bound(*args, **kwargs)

        return wrapper

    def take_reason(self) -> str | None:
        """The out-of-scope reason collected since the last call, if any."""
        reason, self._reason = self._reason, None
        return reason
