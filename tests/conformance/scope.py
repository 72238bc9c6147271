"""Which tests count towards the conformance rate.

Two sources, both recorded with a reason:

* ``scope.toml``: explicit entries, keyed by a test-id prefix (a module, a
  class or a single test), optionally for some Python versions only. These
  tests are listed but not run (``--include-out-of-scope`` runs them apart,
  for information).
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
import inspect
import threading
import tomllib
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import versions

SCOPE_FILE = Path(__file__).with_name("scope.toml")
# The informational pass (--include-out-of-scope) only: a listed test that built
# no loop under test (helpers, mocks, its own stdlib loop) says nothing about it.
NO_LOOP_UNDER_TEST = "builds no loop under test"


class ScopeRules:
    """The explicit out-of-scope entries of ``scope.toml`` that apply to the running Python.

    An entry's value is its reason, or a table ``{ reason = "...", python = SPEC }``
    (see :mod:`versions`), or an array of such tables (one per version range).
    """

    def __init__(self, entries: dict[str, str], other_versions: int = 0) -> None:
        self.entries = entries
        # How many keys have entries for other Python versions only.
        self.other_versions = other_versions

    @classmethod
    def load(cls, path: Path = SCOPE_FILE, version: versions.Version = versions.RUNNING) -> ScopeRules:
        with path.open("rb") as f:
            table = tomllib.load(f).get("out-of-scope", {})
        entries, other_versions = {}, 0
        for key, value in table.items():
            candidates = [_variant(path, key, v) for v in versions.variants(value)]
            try:
                reason = versions.pick(key, candidates, version)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
            if reason is None:
                other_versions += 1
            else:
                entries[key] = reason
        return cls(entries, other_versions)

    def key_for(self, test_id: str) -> str | None:
        """The most specific entry listing ``test_id`` (itself or a dotted prefix)."""
        parts = test_id.split(".")
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in self.entries:
                return key
        return None

    def reason_for(self, test_id: str) -> str | None:
        """The reason if ``test_id`` or one of its dotted prefixes is listed."""
        key = self.key_for(test_id)
        return None if key is None else self.entries[key]

    def modules(self) -> set[str]:
        """Modules with at least one entry."""
        return {key.split(".", 1)[0] for key in self.entries}

    def unused(self, module: str, test_ids: set[str]) -> list[str]:
        """Entries under ``module`` that match none of its tests (renamed upstream?)."""
        return [
            key
            for key in self.entries
            if key.split(".", 1)[0] == module and not any(t == key or t.startswith(key + ".") for t in test_ids)
        ]


def _variant(path: Path, key: str, value: Any) -> tuple[versions.VersionSpec | None, str]:
    """(version spec or None, reason) of one entry; raises ValueError when malformed."""
    where = f"{path}: entry {key!r}"
    if isinstance(value, dict):
        if unknown := set(value) - {"reason", "python"}:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        reason = value.get("reason")
        try:
            spec = versions.parse(value["python"]) if "python" in value else None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    else:
        reason, spec = value, None
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"{where} needs a non-empty reason string")
    return spec, reason


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
        self._built = False

    @contextlib.contextmanager
    def building_loop_under_test(self) -> Iterator[None]:
        self._built = True
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
            # Looked up on the class and bound by hand: the loop's own
            # __getattribute__ may be the test's (3.14's test_futures
            # use-after-free tests make one that fails before the test body
            # has run), and must see only the test's own lookups.
            function = inspect.getattr_static(cls, name, None)
            if function is not None and hasattr(function, "__get__"):
                method = function.__get__(loop, cls)
                object.__setattr__(loop, name, self._marking(method, reason))

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

    def take_built(self) -> bool:
        """Whether a loop under test was built since the last call."""
        built, self._built = self._built, False
        return built
