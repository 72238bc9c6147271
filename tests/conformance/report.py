"""Per-module counts, the stdout report and the JSON document."""

from __future__ import annotations

import collections
import dataclasses
import math
import platform
import sys
from collections.abc import Iterable
from typing import Any, ClassVar, TextIO

from expected import Expectation, Verdict
from scope import NO_LOOP_UNDER_TEST, ScopeRules
from supervise import ModuleJob
from wire import FAILING, TestRecord


@dataclasses.dataclass
class Counts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    timeouts: int = 0
    out_of_scope: int = 0
    # Informational pass only: of out_of_scope, the tests that built no loop under test.
    no_loop: int = 0

    _FIELD: ClassVar[dict[str, str]] = {
        "pass": "passed",
        "fail": "failed",
        "error": "errors",
        "skip": "skipped",
        "timeout": "timeouts",
        "out-of-scope": "out_of_scope",
    }

    @classmethod
    def of(cls, records: Iterable[TestRecord]) -> Counts:
        counts = cls()
        for record in records:
            counts.total += 1
            field = cls._FIELD[record.outcome]
            setattr(counts, field, getattr(counts, field) + 1)
            counts.no_loop += record.outcome == "out-of-scope" and record.summary == NO_LOOP_UNDER_TEST
        return counts

    @property
    def rated(self) -> int:
        """The denominator: tests in scope that did not skip themselves."""
        return self.total - self.out_of_scope - self.skipped

    @property
    def rate(self) -> float | None:
        return self.passed / self.rated if self.rated else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dataclasses.asdict(self)
        data["rate"] = self.rate
        return data


def format_rate(rate: float | None) -> str:
    if rate is None:
        return "n/a"
    # Round down, so that 100.0 % only ever means every test passed.
    return f"{math.floor(rate * 1000) / 10:.1f} %"


def module_counts(jobs: list[ModuleJob]) -> dict[str, Counts]:
    return {job.module: Counts.of(job.records.values()) for job in sorted(jobs, key=lambda j: j.module)}


def sum_counts(counts: Iterable[Counts]) -> Counts:
    total = Counts()
    for c in counts:
        for field in dataclasses.fields(Counts):
            setattr(total, field.name, getattr(total, field.name) + getattr(c, field.name))
    return total


def print_table(counts: dict[str, Counts], out: TextIO, informational: bool = False) -> Counts:
    """The per-module table with a total row; returns the totals.

    ``informational``: the listed tests' table, where "oos" splits into tests
    on a foreign loop and tests that built no loop under test.
    """
    oos = ("foreign", "no loop") if informational else ("oos",)
    columns = ("total", "pass", "fail", "error", "skip", "timeout", *oos, "rate")
    width = max(len("module"), *(len(m) for m in counts))
    total = sum_counts(counts.values())
    out.write(f"{'module':<{width}}  " + "  ".join(f"{c:>7}" for c in columns) + "\n")

    def row(name: str, c: Counts) -> None:
        split = (c.out_of_scope - c.no_loop, c.no_loop) if informational else (c.out_of_scope,)
        cells = (c.total, c.passed, c.failed, c.errors, c.skipped, c.timeouts, *split)
        out.write(f"{name:<{width}}  " + "  ".join(f"{n:>7}" for n in cells) + f"  {format_rate(c.rate):>7}\n")

    for module, c in counts.items():
        row(module, c)
    out.write("-" * (width + 2 + 9 * len(columns)) + "\n")
    row("overall", total)
    return total


def print_notes(jobs: list[ModuleJob], out: TextIO) -> None:
    lines = []
    detected: collections.Counter[str] = collections.Counter()
    for job in sorted(jobs, key=lambda j: j.module):
        if job.skipped_reason:
            lines.append(f"{job.module}: module skipped itself: {job.skipped_reason}")
        lines += [f"{job.module}: {note}" for note in job.notes]
        if job.attempts > 1:
            lines.append(f"{job.module}: ran in {job.attempts} child processes (hang or crash)")
        detected.update(r.summary for r in job.records.values() if r.outcome == "out-of-scope" and r.ran)
    if lines:
        out.write("\nNotes:\n" + "".join(f"  {line}\n" for line in lines))
    if detected:
        out.write("\nOut of scope, detected at run time:\n")
        out.write("".join(f"  {n:5}  {reason}\n" for reason, n in detected.most_common()))


def print_out_of_scope_run(jobs: list[ModuleJob], rules: ScopeRules, out: TextIO, per_entry: bool = False) -> None:
    """The informational pass: how the scope.toml-listed tests fare on the loop under test.

    Tests that turn out to run on a stdlib loop they build themselves are
    counted as "foreign" (as in the main run), never as passes.
    """
    if not jobs:
        out.write("\nNo scope.toml entries for the modules run: no out-of-scope tests to run.\n")
        return
    out.write(
        "\nscope.toml-listed tests, run apart for information, not part of the verdict (foreign: "
        "runs on a stdlib loop it builds itself; no loop: builds no loop under test):\n"
    )
    total = print_table(module_counts(jobs), out, informational=True)
    out.write(
        f"{total.passed} of {total.rated} listed tests that ran on the loop under test passed "
        f"({total.skipped} skipped themselves, {total.out_of_scope - total.no_loop} on a foreign loop, "
        f"{total.no_loop} built no loop under test).\n"
    )
    lines = []
    by_entry: dict[str, list[TestRecord]] = collections.defaultdict(list)
    fixture_ids = []
    for job in sorted(jobs, key=lambda j: j.module):
        if job.skipped_reason:
            lines.append(f"{job.module}: module skipped itself: {job.skipped_reason}")
        if job.attempts > 1:
            lines.append(f"{job.module}: ran in {job.attempts} child processes (hang or crash)")
        lines += [f"{r.id}: [{r.outcome}] {r.summary}" for r in job.fixture_errors]
        fixture_ids += [r.id for r in job.fixture_errors]
        for record in job.records.values():
            key = rules.key_for(record.id)
            if key is not None:
                by_entry[key].append(record)
    if lines:
        out.write("".join(f"  {line}\n" for line in lines))
    candidates, entry_lines = [], []
    for key, records in sorted(by_entry.items()):
        c = Counts.of(records)
        broken_fixture = any(f.startswith(key + ".") for f in fixture_ids)
        if c.passed and c.passed == c.rated and not c.out_of_scope and not broken_fixture:
            candidates.append(f"{key}  ({c.passed} passed{f', {c.skipped} skipped' if c.skipped else ''})")
        entry_lines.append(
            f"{key}: {c.passed} of {c.rated} passed ({c.skipped} skipped, "
            f"{c.out_of_scope - c.no_loop} foreign loop, {c.no_loop} no loop)"
        )
    if candidates:
        out.write("Entries whose every listed test passes (stale? bring back into scope, or argue the reason):\n")
        out.write("".join(f"  {line}\n" for line in candidates))
    if per_entry:
        out.write("Per scope.toml entry:\n" + "".join(f"  {line}\n" for line in entry_lines))


def print_verdict(verdict: Verdict, out: TextIO) -> None:
    if verdict.expected_failing:
        out.write(f"\n{len(verdict.expected_failing)} expected failures (listed in the expected-failures file).\n")
    if verdict.untriaged:
        out.write(f"{len(verdict.untriaged)} expected-failure entries still need a reason or issue number.\n")
    if verdict.unexpected:
        out.write(f"\nUnexpected failures ({len(verdict.unexpected)}):\n")
        out.write("".join(f"  {r.id}  [{r.outcome}] {r.summary}\n" for r in verdict.unexpected))
    if verdict.stale:
        out.write(f"\nStale expected-failure entries ({len(verdict.stale)}):\n")
        out.write("".join(f"  {test_id}: {why}\n" for test_id, why in verdict.stale))


def print_failures(records: dict[str, TestRecord], expectations: dict[str, Expectation], out: TextIO) -> None:
    failing = sorted((r for r in records.values() if r.outcome in FAILING), key=lambda r: r.id)
    out.write(f"\nFailing tests ({len(failing)}):\n")
    for r in failing:
        exp = expectations.get(r.id)
        tag = "NEW" if exp is None else f"expected, issue {exp.issue}{', flaky' if exp.flaky else ''}"
        out.write(f"  {r.id}  [{r.outcome}] {r.summary}  ({tag})\n")


def document(
    loop: str,
    jobs: list[ModuleJob],
    counts: dict[str, Counts],
    total: Counts,
    expectations: dict[str, Expectation],
    verdict: Verdict,
    out_of_scope_jobs: list[ModuleJob] | None = None,
) -> dict[str, Any]:
    """The ``--json`` document: the table's data plus every test's outcome
    (and, with ``--include-out-of-scope``, those of the listed tests, apart)."""
    tests: dict[str, Any] = {}
    for job in jobs:
        for record in [*job.records.values(), *job.fixture_errors]:
            entry = record.to_json()
            del entry["id"]
            if (exp := expectations.get(record.id)) is not None:
                entry["expected"] = dataclasses.asdict(exp)
            tests[record.id] = entry
    return {
        "loop": loop,
        "python": sys.version,
        "platform": platform.platform(),
        "modules": {
            job.module: {
                **counts[job.module].to_json(),
                "seconds": round(job.elapsed, 2),
                "child_processes": job.attempts,
                "notes": job.notes,
                "skipped_reason": job.skipped_reason,
            }
            for job in sorted(jobs, key=lambda j: j.module)
        },
        "overall": total.to_json(),
        "fixture_errors": sorted(r.id for job in jobs for r in job.fixture_errors),
        "tests": dict(sorted(tests.items())),
        "verdict": {
            "ok": verdict.ok,
            "unexpected": [r.id for r in verdict.unexpected],
            "stale": [{"id": test_id, "why": why} for test_id, why in verdict.stale],
            "expected_failing": verdict.expected_failing,
        },
        "out_of_scope_run": _out_of_scope_document(out_of_scope_jobs) if out_of_scope_jobs else None,
    }


def _out_of_scope_document(jobs: list[ModuleJob]) -> dict[str, Any]:
    counts = module_counts(jobs)
    total = sum_counts(counts.values())
    tests = {}
    for job in jobs:
        for record in [*job.records.values(), *job.fixture_errors]:
            entry = record.to_json()
            del entry["id"]
            tests[record.id] = entry
    return {
        "modules": {module: c.to_json() for module, c in counts.items()},
        "overall": total.to_json(),
        "tests": dict(sorted(tests.items())),
    }
