"""The expected-failures file, and the verdict of a run against it.

As in rustls' BoGo runner, the file is a contract in both directions: a
failure it does not list fails the run, and so does an entry whose test now
passes (or no longer exists, or is out of scope), so the list only shrinks
and the pass count only goes up.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import versions
from wire import FAILING, TestRecord, module_of

HEADER = """\
# Known failures of the CPython asyncio conformance run (tests/conformance).
#
# One table per test id: ["test_module.Class.test_name"]
#   reason = "why it fails"                      (required)
#   issue  = 4                                   (required: the tracker issue that will fix it;
#                                                 4 = transports/sockets/pipes/subprocess/TLS)
#   flaky  = true                                (optional, timing-dependent tests only: say why
#                                                 in the reason; may then pass or fail)
#   python = ">=3.12"                            (optional: only on these CPython versions, e.g.
#                                                 "3.12", "<3.13", ["3.12", "3.13"]; see versions.py)
# A test failing differently per version has one table per version range:
# [["test_module.Class.test_name"]] (an array of tables), with disjoint specs.
#
# The run fails on a failure not listed here and on a listed test that passes.
# Draft entries for the current failures: run.py --write-expected PATH.
"""

# Modules whose failures belong to issue 4 by default in a drafted file.
TRANSPORT_MODULES = frozenset(
    {
        "test_buffered_proto",
        "test_sendfile",
        "test_server",
        "test_sock_lowlevel",
        "test_ssl",
        "test_sslproto",
        "test_streams",
        "test_subprocess",
        "test_unix_events",
    }
)
_KEYS = {"reason", "issue", "flaky", "python"}


class ExpectedFileError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Expectation:
    reason: str
    issue: int
    flaky: bool = False
    # The 'python' spec as written (None: every version).
    python: str | list[str] | None = None


@dataclasses.dataclass
class ExpectedFile:
    # The entries that apply to the running Python, by test id.
    entries: dict[str, Expectation] = dataclasses.field(default_factory=dict)
    # Entries for other Python versions only: not judged, kept by write_draft.
    other_versions: list[tuple[str, Expectation]] = dataclasses.field(default_factory=list)


def load(path: Path | None, version: versions.Version = versions.RUNNING) -> ExpectedFile:
    """Parse, validate and select by version; ``None`` means "no failures expected"."""
    result = ExpectedFile()
    if path is None:
        return result
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ExpectedFileError(f"{path}: {exc}") from exc
    for test_id, value in data.items():
        where = f"{path}: [{json.dumps(test_id)}]"
        candidates = []
        for entry in versions.variants(value):
            exp = _parse_entry(where, entry)
            spec = versions.parse(exp.python) if exp.python is not None else None
            candidates.append((spec, exp))
        try:
            applying = versions.pick(test_id, candidates, version)
        except ValueError as exc:
            raise ExpectedFileError(f"{path}: {exc}") from None
        if applying is not None:
            result.entries[test_id] = applying
        result.other_versions += [(test_id, exp) for _, exp in candidates if exp is not applying]
    return result


def _parse_entry(where: str, entry: Any) -> Expectation:
    if not isinstance(entry, dict):
        raise ExpectedFileError(f"{where}: expected a table (or an array of tables)")
    if unknown := set(entry) - _KEYS:
        raise ExpectedFileError(f"{where}: unknown keys {sorted(unknown)}")
    reason, issue, flaky = entry.get("reason"), entry.get("issue"), entry.get("flaky", False)
    python = entry.get("python")
    if not isinstance(reason, str) or not reason.strip():
        raise ExpectedFileError(f"{where}: 'reason' must be a non-empty string")
    if not isinstance(issue, int) or isinstance(issue, bool) or issue < 0:
        raise ExpectedFileError(f"{where}: 'issue' must be an issue number")
    if not isinstance(flaky, bool):
        raise ExpectedFileError(f"{where}: 'flaky' must be true or false")
    if python is not None:
        try:
            versions.parse(python)
        except ValueError as exc:
            raise ExpectedFileError(f"{where}: {exc}") from None
    return Expectation(reason.strip(), issue, flaky, python)


@dataclasses.dataclass
class Verdict:
    unexpected: list[TestRecord]
    # (test id, why the entry is stale)
    stale: list[tuple[str, str]]
    expected_failing: list[str]
    # Entries still to triage: reason TODO or issue 0.
    untriaged: list[str]

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.stale


def judge(records: dict[str, TestRecord], expectations: dict[str, Expectation], modules_run: set[str]) -> Verdict:
    """Compare outcomes (tests and fixture errors, by id) with the file.

    Entries for modules that were not run (``--module``) are left alone.
    """
    verdict = Verdict([], [], [], [])
    for record in records.values():
        if record.outcome in FAILING:
            if record.id in expectations:
                verdict.expected_failing.append(record.id)
            else:
                verdict.unexpected.append(record)
    verdict.unexpected.sort(key=lambda r: r.id)
    for test_id, exp in expectations.items():
        if exp.reason.upper().startswith("TODO") or exp.issue == 0:
            verdict.untriaged.append(test_id)
        if module_of(test_id) not in modules_run:
            continue
        found = records.get(test_id)
        if found is None:
            verdict.stale.append((test_id, "no such test in this run"))
        elif found.outcome == "out-of-scope":
            verdict.stale.append((test_id, f"out of scope ({found.summary})"))
        elif found.outcome == "pass" and not exp.flaky:
            verdict.stale.append((test_id, "passes now"))
    return verdict


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string with ASCII escapes is a valid TOML basic string


def write_draft(
    path: Path,
    records: dict[str, TestRecord],
    expected_file: ExpectedFile,
    modules_run: set[str],
) -> int:
    """Write an expected-failures file for the current failures; returns the entry count.

    Existing entries are kept for tests that still fail, for flaky tests that
    ran, for modules not run this time and for other Python versions. New
    entries get reason "TODO", ``python`` = the running X.Y, and a comment
    with the failure.
    """
    expectations = expected_file.entries
    current: dict[str, tuple[Expectation, str]] = {}
    for test_id, exp in expectations.items():
        if module_of(test_id) not in modules_run or (exp.flaky and test_id in records):
            current[test_id] = (exp, "")
    for record in records.values():
        if record.outcome not in FAILING:
            continue
        if record.id in expectations:
            current[record.id] = (expectations[record.id], "")
        else:
            issue = 4 if module_of(record.id) in TRANSPORT_MODULES else 0
            draft = Expectation("TODO", issue, python=versions.running_label())
            current[record.id] = (draft, f"{record.outcome}: {record.summary}")
    per_id: dict[str, list[tuple[Expectation, str]]] = {}
    for test_id, exp in expected_file.other_versions:
        per_id.setdefault(test_id, []).append((exp, ""))
    for test_id, variant in current.items():
        per_id.setdefault(test_id, []).append(variant)
    lines = [HEADER.rstrip("\n")]
    for test_id in sorted(per_id):
        variants = sorted(per_id[test_id], key=lambda v: json.dumps(v[0].python))
        header = f"[[{_toml_string(test_id)}]]" if len(variants) > 1 else f"[{_toml_string(test_id)}]"
        for exp, comment in variants:
            lines.append("")
            if comment:
                lines.append(f"# {comment}")
            lines.append(header)
            lines.append(f"reason = {_toml_string(exp.reason)}")
            lines.append(f"issue = {exp.issue}")
            if exp.flaky:
                lines.append("flaky = true")
            if exp.python is not None:
                lines.append(f"python = {json.dumps(exp.python)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sum(map(len, per_id.values()))
