"""The record types shared by the runner and its children, and the event
stream between them.

A child runs one test module and appends one JSON object per line to an
events file; the parent tails that file. A file (rather than a pipe) survives
the child being killed mid-test, and the last ``start`` line in it names the
test that hung or crashed.
"""

from __future__ import annotations

import dataclasses
import json
import signal
from pathlib import Path
from typing import Any, Literal, TextIO

PACKAGE = "test.test_asyncio"

# The signal on which a child dumps every thread's stack to its traceback
# file; the parent sends it to a test that overran its time, then kills it.
DUMP_SIGNAL = signal.SIGUSR2

Outcome = Literal["pass", "fail", "error", "skip", "timeout", "out-of-scope"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "error", "skip", "timeout", "out-of-scope")
# Outcomes that count against the loop (and must be listed as expected failures).
FAILING: frozenset[str] = frozenset({"fail", "error", "timeout"})


def short_id(unittest_id: str) -> str:
    """``test.test_asyncio.test_events.X.test_y`` -> ``test_events.X.test_y``."""
    return unittest_id.removeprefix(PACKAGE + ".")


def module_of(test_id: str) -> str:
    return test_id.split(".", 1)[0]


@dataclasses.dataclass
class TestRecord:
    """The outcome of one test (or of a failing class/module fixture)."""

    id: str
    outcome: Outcome
    # One line, for tables and --list-failures.
    summary: str = ""
    # Full traceback(s), for --json and debugging.
    detail: str = ""
    duration: float = 0.0
    # For out-of-scope tests that did run: the outcome they had.
    ran: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v or k == "outcome"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestRecord:
        return cls(**data)


class EventWriter:
    """Child side: appends events, flushed line by line so that a kill loses nothing."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO = path.open("a", encoding="utf-8")

    def emit(self, kind: str, **fields: Any) -> None:
        self._file.write(json.dumps({"kind": kind, **fields}) + "\n")
        self._file.flush()


class EventReader:
    """Parent side: returns the complete lines appended since the last call."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0

    def read(self) -> list[dict[str, Any]]:
        try:
            with self._path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n") + 1  # a partly written last line waits for the next call
        self._offset += end
        return [json.loads(line) for line in chunk[:end].splitlines() if line]
