"""Parent side: runs one test module in child processes, surviving hangs and crashes.

The watchdog lives here, outside the child, so it works even when the child
is wedged in native code holding the GIL. When a child shows no progress for
the per-test timeout, it is asked for a stack dump (faulthandler, on
``wire.DUMP_SIGNAL``), then its whole process group is killed. The test that
was running is recorded as ``timeout`` (or ``error`` for a crash), and a new
child runs the rest of the module, skipping every test already recorded.
Each attempt records at least one more test, so the module always finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from wire import DUMP_SIGNAL, EventReader, Outcome, TestRecord

CHILD = Path(__file__).with_name("child.py")
# How long a child gets to write its stack dump before it is killed.
DUMP_GRACE = 1.0


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


class ModuleJob:
    """One test module; call :meth:`start`, then :meth:`poll` until it returns True."""

    def __init__(self, module: str, loop: str, work_dir: Path, timeout: float, out_of_scope: bool = False) -> None:
        self.module = module
        # Runs only the scope.toml-listed tests, for information (child --out-of-scope).
        self.out_of_scope = out_of_scope
        self._loop = loop
        self._dir = work_dir / (f"{module}.out-of-scope" if out_of_scope else module)
        self._timeout = timeout
        self.records: dict[str, TestRecord] = {}
        self.fixture_errors: list[TestRecord] = []
        self.notes: list[str] = []
        self.skipped_reason: str | None = None
        self.attempts = 0
        self.started_at = 0.0
        self.elapsed = 0.0
        self._plan: list[str] | None = None
        self._running: str | None = None
        self._finished = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: EventReader | None = None
        self._last_progress = 0.0
        self._dump_requested_at: float | None = None

    def _attempt_path(self, attempt: int, suffix: str) -> Path:
        return self._dir / f"attempt-{attempt}.{suffix}"

    def start(self) -> None:
        if not self.attempts:
            self.started_at = time.monotonic()
        self.attempts += 1
        self._dir.mkdir(parents=True, exist_ok=True)
        cwd = self._dir / "cwd"  # the suite writes scratch files (support.TESTFN) to the cwd
        cwd.mkdir(exist_ok=True)
        events = self._attempt_path(self.attempts, "events")
        skip = self._attempt_path(self.attempts, "skip")
        skip.write_text(json.dumps(sorted(self.records)))
        events.write_bytes(b"")  # the child appends: a reused --work-dir must not replay old events
        self._running = None
        self._finished = False
        self._dump_requested_at = None
        self._reader = EventReader(events)
        with self._attempt_path(self.attempts, "log").open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    str(CHILD),
                    "--loop",
                    self._loop,
                    "--module",
                    self.module,
                    "--events",
                    str(events),
                    "--traceback",
                    str(self._attempt_path(self.attempts, "traceback")),
                    "--skip",
                    str(skip),
                    *(["--out-of-scope"] if self.out_of_scope else []),
                ],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # one process group: the test's own children die with it
            )
        self._last_progress = time.monotonic()

    def poll(self) -> bool:
        """Advance; True once the module is complete."""
        proc, reader = self._proc, self._reader
        assert proc is not None and reader is not None
        now = time.monotonic()
        if self._consume(reader.read()):
            self._last_progress = now
        if proc.poll() is not None:
            self._consume(reader.read())
            self._kill_group()
            if self._finished:
                if proc.returncode != 0:
                    what = f"child {_describe_exit(proc.returncode)} after the module finished"
                    self._fixture_error("interpreter exit", what)
                return self._done()
            return self._after_failure("error", f"child process {_describe_exit(proc.returncode)}")
        if self._dump_requested_at is None:
            if now - self._last_progress > self._timeout:
                self._dump_requested_at = now
                with contextlib.suppress(ProcessLookupError):  # it just exited: the next poll sees that
                    os.kill(proc.pid, DUMP_SIGNAL)
        elif now - self._dump_requested_at > DUMP_GRACE:
            self._kill_group()
            proc.wait()
            self._consume(reader.read())
            return self._after_failure("timeout", f"no progress for {self._timeout:g} s")
        return False

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._kill_group()
            self._proc.wait()

    def _kill_group(self) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def _consume(self, events: list[dict[str, Any]]) -> bool:
        for event in events:
            kind = event["kind"]
            if kind == "start":
                self._running = event["id"]
            elif kind == "result":
                record = TestRecord.from_json(event["record"])
                self.records[record.id] = record
                if record.id == self._running:
                    self._running = None
            elif kind == "loaded":
                self._plan = event["plan"] if self._plan is None else self._plan
                if self.attempts == 1:
                    self.notes += event["notes"]
            elif kind == "fixture":
                self.fixture_errors.append(TestRecord.from_json(event["record"]))
            elif kind == "module_skipped":
                self.skipped_reason = event["reason"]
            elif kind == "finished":
                self._finished = True
        return bool(events)

    def _traceback(self) -> str:
        path = self._attempt_path(self.attempts, "traceback")
        return path.read_text(errors="replace") if path.exists() else ""

    def _after_failure(self, outcome: Outcome, what: str) -> bool:
        """Blame the hang or crash on a test, then restart the child if tests remain."""
        detail = self._traceback()
        if self._finished:
            self._fixture_error("interpreter exit", f"{what} after the module finished", detail)
            return self._done()
        if self._running is not None:
            self.records[self._running] = TestRecord(self._running, outcome, what, detail)
        elif self._plan is None:
            self._fixture_error("load", f"{what} while importing or loading the module", detail)
            return self._done()
        else:
            remaining = [t for t in self._plan if t not in self.records]
            if not remaining:
                self._fixture_error("teardown", f"{what} after its last test", detail)
                return self._done()
            self.records[remaining[0]] = TestRecord(
                remaining[0], outcome, f"{what} before this test started (a class or module fixture?)", detail
            )
        if any(t not in self.records for t in self._plan or ()):
            self.start()
            return False
        return self._done()

    def _fixture_error(self, where: str, summary: str, detail: str = "") -> None:
        self.fixture_errors.append(TestRecord(f"{self.module}.<{where}>", "error", summary, detail))

    def _done(self) -> bool:
        self.elapsed = time.monotonic() - self.started_at
        return True
