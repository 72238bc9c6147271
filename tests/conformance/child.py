"""Child process: runs one module of ``test.test_asyncio`` on the loop under test.

Started by ``run.py``; never run by hand except to debug the harness::

    python tests/conformance/child.py --loop asyncio --module test_events \\
        --events /tmp/ev.jsonl --traceback /tmp/tb.txt

Results go to the events file (see :mod:`wire`). Tests listed in the skip
file (already recorded by an earlier attempt that hung or crashed) are not run.
With ``--out-of-scope`` the child runs only the tests ``scope.toml`` lists
(the informational pass of ``run.py --include-out-of-scope``).
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import re
import time
import traceback
import unittest
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TextIO

import harness
import substitute
from scope import NO_LOOP_UNDER_TEST, ForeignLoopDetector, ScopeRules
from wire import DUMP_SIGNAL, PACKAGE, EventWriter, Outcome, TestRecord, short_id

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]
# Precedence when a test reports several outcomes (a failure, then a cleanup error).
_RANK: dict[Outcome, int] = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
_FIXTURE = re.compile(r"(\w+) \((.+)\)")


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _describe(err: ExcInfo) -> tuple[str, str]:
    """(one-line summary, full traceback) of an exception triple."""
    exc_type, exc, tb = err
    message = str(exc).strip().splitlines()
    summary = f"{exc_type.__name__}: {message[0]}" if message else exc_type.__name__
    return _one_line(summary), "".join(traceback.format_exception(exc_type, exc, tb))


class RecordingResult(unittest.TestResult):
    """Emits one ``result`` event per test, with at most one outcome.

    Class and module fixture problems arrive as pseudo-tests (unittest's
    ``_ErrorHolder``, described as ``"setUpClass (module.Class)"``): failed
    ``setUp*`` fixtures are remembered to explain the tests they prevented,
    failed ``tearDown*`` fixtures are emitted as ``fixture`` events.
    """

    def __init__(
        self,
        events: EventWriter,
        detector: ForeignLoopDetector,
        before_test: Callable[[str], None],
        require_loop_under_test: bool = False,
    ) -> None:
        super().__init__()
        self._events = events
        self._detector = detector
        self._before_test = before_test
        # Informational pass: a test that builds no loop under test says nothing about it.
        self._require_loop_under_test = require_loop_under_test
        self._record: TestRecord | None = None
        self._started = 0.0
        self.recorded: set[str] = set()
        # "module.Class" or "module" -> how its failed setUp* fixture ended.
        self.fixture_failures: dict[str, TestRecord] = {}

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self._begin(test)

    def _begin(self, test: unittest.TestCase) -> None:
        self._before_test(short_id(test.id()))
        self._detector.take_reason()  # marks left by fixtures belong to no test
        self._detector.take_built()
        self._record = TestRecord(short_id(test.id()), "pass")
        self._started = time.monotonic()
        self._events.emit("start", id=self._record.id)

    def stopTest(self, test: unittest.TestCase) -> None:
        super().stopTest(test)
        record = self._record
        assert record is not None
        record.duration = round(time.monotonic() - self._started, 3)
        reason = self._detector.take_reason()
        built = self._detector.take_built()
        if reason is None and self._require_loop_under_test and not built and record.outcome != "skip":
            reason = NO_LOOP_UNDER_TEST
        if reason is not None:
            record.ran, record.outcome, record.summary = record.outcome, "out-of-scope", reason
        self.emit(record)
        self._record = None

    def emit(self, record: TestRecord) -> None:
        self.recorded.add(record.id)
        self._events.emit("result", record=record.to_json())

    def _note(self, test: unittest.TestCase, outcome: Outcome, summary: str, detail: str = "") -> None:
        if not isinstance(test, unittest.TestCase):  # a class or module fixture
            self._fixture(str(test), outcome, summary, detail)
            return
        record = self._record
        assert record is not None
        if _RANK[outcome] > _RANK[record.outcome]:
            record.outcome, record.summary = outcome, summary
        record.detail += detail

    def _fixture(self, description: str, outcome: Outcome, summary: str, detail: str) -> None:
        match = _FIXTURE.fullmatch(description)
        fixture, target = match.groups() if match else ("fixture", description)
        record = TestRecord(f"{short_id(target)}.{fixture}", outcome, f"{fixture}: {summary}", detail)
        if fixture.startswith("setUp"):
            self.fixture_failures[target] = record
        elif outcome != "skip":
            self._events.emit("fixture", record=record.to_json())

    def addFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:  # type: ignore[override]
        self._note(test, "fail", *_describe(err))

    def addError(self, test: unittest.TestCase, err: ExcInfo) -> None:  # type: ignore[override]
        self._note(test, "error", *_describe(err))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        if self._record is None and isinstance(test, unittest.TestCase):
            self._begin(test)  # 3.12+ skips a decorated test without startTest (stopTest still comes)
        elif self._record is not None and short_id(test.id()) != self._record.id:
            return  # a skipped subtest: the test itself still ran
        self._note(test, "skip", _one_line(reason))

    def addExpectedFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:  # type: ignore[override]
        pass  # upstream's own @expectedFailure held: the test behaves as CPython expects

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._note(test, "fail", "unexpected success of an upstream @expectedFailure test")

    def addSubTest(  # type: ignore[override]
        self, test: unittest.TestCase, subtest: unittest.TestCase, err: ExcInfo | None
    ) -> None:
        if err is None:
            return
        outcome: Outcome = "fail" if issubclass(err[0], test.failureException) else "error"
        summary, detail = _describe(err)
        self._note(test, outcome, f"{subtest.id().removeprefix(test.id()).strip()} {summary}", detail)

    def not_run(self, test: unittest.TestCase) -> TestRecord:
        """The record of a planned test that never started."""
        cls = type(test)
        cause = self.fixture_failures.get(f"{cls.__module__}.{cls.__qualname__}") or self.fixture_failures.get(
            cls.__module__
        )
        tid = short_id(test.id())
        if cause is None:
            return TestRecord(tid, "error", "not run, and no fixture failure explains why")
        return TestRecord(tid, cause.outcome, f"not run: {cause.summary}", cause.detail)


def _flatten(suite: unittest.TestSuite | unittest.TestCase) -> Iterator[unittest.TestCase]:
    if isinstance(suite, unittest.TestSuite):
        for item in suite:
            yield from _flatten(item)
    else:
        yield suite


def run_module(
    short_name: str, lut: harness.LoopUnderTest, events: EventWriter, skip: set[str], out_of_scope: bool = False
) -> None:
    """Run the module's in-scope tests or, with ``out_of_scope``, only its ``scope.toml``-listed ones."""
    detector = ForeignLoopDetector()
    lut = harness.install(lut, detector)
    try:
        module = importlib.import_module(f"{PACKAGE}.{short_name}")
    except unittest.SkipTest as exc:  # e.g. the Windows-only modules on Linux
        events.emit("module_skipped", reason=_one_line(str(exc)))
        return
    notes = substitute.apply(module, short_name, lut.new_loop)

    rules = ScopeRules.load()
    tests = list(_flatten(unittest.TestLoader().loadTestsFromModule(module)))
    all_ids = {short_id(t.id()) for t in tests}
    if not out_of_scope:
        notes += [f"scope.toml entry {key!r} matches no test" for key in rules.unused(short_name, all_ids)]
    # Planned tests that directly follow listed tests whose tearDown would have run (adaptation 3).
    after_listed: set[str] = set()
    result = RecordingResult(
        events,
        detector,
        lambda tid: harness.before_test(lut.policy_class, after_listed_test=tid in after_listed),
        require_loop_under_test=out_of_scope,
    )
    planned = []
    listed_before = False
    for test in tests:
        tid = short_id(test.id())
        if tid in skip:
            continue
        reason = rules.reason_for(tid)
        if out_of_scope:
            if reason is not None:
                planned.append(test)
        elif reason is None:
            planned.append(test)
            if listed_before:
                after_listed.add(tid)
            listed_before = False
        else:
            result.emit(TestRecord(tid, "out-of-scope", reason))
            listed_before = listed_before or harness.tears_down_the_event_loop(test)
    events.emit("loaded", plan=[short_id(t.id()) for t in planned], notes=notes)

    # As `python -m unittest` does when no -W option is given.
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        unittest.TestSuite(planned).run(result)

    for test in planned:
        if short_id(test.id()) not in result.recorded:
            result.emit(result.not_run(test))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", required=True, choices=harness.LOOP_NAMES)
    parser.add_argument("--module", required=True, help="e.g. test_events")
    parser.add_argument("--events", required=True, type=Path, help="JSON-lines file to append to")
    parser.add_argument("--traceback", required=True, type=Path, help="where faulthandler writes")
    parser.add_argument("--skip", type=Path, help="JSON list of test ids not to run")
    parser.add_argument("--out-of-scope", action="store_true", help="run only the tests scope.toml lists")
    args = parser.parse_args()

    tb_file: TextIO = args.traceback.open("w")
    harness.restore_default_sigint()
    faulthandler.enable(file=tb_file, all_threads=True)
    faulthandler.register(DUMP_SIGNAL, file=tb_file, all_threads=True)

    skip = set(json.loads(args.skip.read_text())) if args.skip else set()
    events = EventWriter(args.events)
    run_module(args.module, harness.load_loop(args.loop), events, skip, args.out_of_scope)
    events.emit("finished")


if __name__ == "__main__":
    main()
