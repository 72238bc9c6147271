"""The Autobahn|Testsuite's fuzzing-client cases (517, with the 12.x/13.x
permessage-deflate ones), run by kosoku against an echo app, compared case
by case with a golden file, tungstenite-style: the run fails on a case
whose result got worse *and* on one that got better without the file being
updated. Every entry that is not OK says why.

* ``autobahn_expected.json``: ferroloop's; ``autobahn_expected_uvicorn.json``:
  the reference's, for ``FERROLOOP_WS_TEST_PEER=uvicorn``.
* Regenerate: ``FERROLOOP_AUTOBAHN_UPDATE=1 .venv/bin/python -m pytest
  tests/ws/test_ws_autobahn.py`` rewrites the file from the run (reasons of
  entries whose verdict stayed are kept; new ones get kosoku's prose, to be
  edited by hand) and then fails, so an update is never silent.
* An entry may list ``also``: other verdicts accepted for a case whose
  result depends on timing (its reason says why), so the run is not flaky.
* ``FERROLOOP_AUTOBAHN_CASES="1.*,9.7.1"`` runs a subset (compared on those
  cases only).
* ``FERROLOOP_AUTOBAHN_CONCURRENCY=N``: cases in parallel (default 2).
* Marked ``autobahn``: ``-m autobahn`` runs only it, ``-m "not autobahn"``
  skips it. A whole run took 840 s here (concurrency 1, ferroloop) and
  593 s with FERROLOOP_AUTOBAHN_CONCURRENCY=2; uvicorn 854 s. ``cargo xtask
  test`` runs it on the first tested Python only.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from ws_support import HERE, peer

# A whole run is minutes (pyproject's 120 s is for ordinary tests).
pytestmark = [pytest.mark.autobahn, pytest.mark.timeout(1800)]

UPDATE_ENV = "FERROLOOP_AUTOBAHN_UPDATE"
CASES_ENV = "FERROLOOP_AUTOBAHN_CASES"
CONCURRENCY_ENV = "FERROLOOP_AUTOBAHN_CONCURRENCY"

#: Verdicts that need no reason.
PLAIN = {"OK", "INFORMATIONAL"}


def expected_path() -> Path:
    return HERE / ("autobahn_expected.json" if peer() == "ferroloop" else f"autobahn_expected_{peer()}.json")


def _verdicts(result) -> dict:
    return {"behavior": result.behavior.value, "behaviorClose": result.behavior_close.value}


def _prose(result) -> str:
    """A first reason for a non-OK entry, from kosoku: its verdict's prose
    and the case's expectation (edit it by hand into the real why)."""
    parts = []
    if result.behavior.value not in PLAIN:
        parts.append(result.result)
    if result.behavior_close.value not in PLAIN:
        parts.append(result.result_close)
    said = " / ".join(p.strip() for p in parts if p and p.strip()) or "kosoku gave no prose"
    expectation = " ".join((result.expectation or "").split())
    return f"{said} Expected: {expectation[:300]}" if expectation else said


def needs_reason(entry: dict) -> bool:
    return entry["behavior"] not in PLAIN or entry["behaviorClose"] not in PLAIN


async def _run(url: str, cases):
    import kosoku

    concurrency = int(os.environ.get(CONCURRENCY_ENV, "2"))
    try:
        return await kosoku.run_fuzzingclient(url, cases=cases, concurrency=concurrency)
    except kosoku.FailureError as exc:
        # Raised when any case failed; carries every case's result.
        return exc.results


def _summary(actual: dict) -> str:
    counts: dict[str, int] = {}
    for entry in actual.values():
        counts[entry["behavior"]] = counts.get(entry["behavior"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def test_autobahn_fuzzingclient(ws_server, record_property):
    # No keepalive pings: a server ping in the middle of a long case (12.x
    # runs past the 20 s default interval) makes kosoku end the case as
    # "did not finish" (12.2.10 fails with pings, passes without).
    srv = ws_server("autobahn_echo", no_access_log=True, ws_ping_interval=None)
    selected = [c.strip() for c in os.environ.get(CASES_ENV, "").split(",") if c.strip()] or None
    started = time.monotonic()
    results = asyncio.run(_run(f"ws://127.0.0.1:{srv.port}", selected))
    elapsed = time.monotonic() - started
    actual = {r.case_id: _verdicts(r) for r in results}
    prose = {r.case_id: _prose(r) for r in results}
    record_property("autobahn_seconds", round(elapsed, 1))
    record_property("autobahn_summary", _summary(actual))
    print(f"\nautobahn against {peer()}: {len(actual)} cases in {elapsed:.0f} s: {_summary(actual)}")
    assert results, "kosoku ran no case"

    path = expected_path()
    expected = json.loads(path.read_text()) if path.exists() else {}
    for case_id, entry in expected.items():
        if needs_reason(entry) or entry.get("also"):
            assert entry.get("reason", "").strip(), f"{path.name}: {case_id} is {entry} without a reason"

    if os.environ.get(UPDATE_ENV) == "1":
        updated = dict(expected)
        for case_id, verdicts in actual.items():
            entry = dict(verdicts)
            old = expected.get(case_id, {})
            if old.get("also") and (verdicts == {k: old[k] for k in verdicts} or verdicts in old["also"]):
                # A case with alternatives keeps its entry whichever it got.
                updated[case_id] = old
                continue
            if needs_reason(entry):
                same = {k: old.get(k) for k in verdicts} == verdicts
                entry["reason"] = old["reason"] if same and old.get("reason") else prose[case_id]
            updated[case_id] = entry
        ordered = dict(sorted(updated.items(), key=lambda kv: [int(p) for p in kv[0].split(".")]))
        path.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n")
        pytest.fail(f"{UPDATE_ENV}=1: wrote {path.name} ({_summary(actual)}); review its reasons and commit it", pytrace=False)

    assert expected, f"{path.name} is missing: run with {UPDATE_ENV}=1"
    if selected is None:
        missing = sorted(set(expected) - set(actual))
        assert not missing, f"cases in {path.name} that kosoku no longer runs: {missing}"
    worse, better, unknown = [], [], []
    for case_id, verdicts in actual.items():
        want = expected.get(case_id)
        if want is None:
            unknown.append(f"{case_id}: {verdicts}")
            continue
        want_verdicts = {k: want[k] for k in verdicts}
        if want_verdicts == verdicts or verdicts in want.get("also", []):
            continue
        line = f"{case_id}: expected {want_verdicts}, got {verdicts} ({prose[case_id]})"
        (better if _rank(verdicts) > _rank(want_verdicts) else worse).append(line)
    message = []
    if worse:
        message.append("regressions:\n  " + "\n  ".join(worse))
    if better:
        message.append(f"improved, update {path.name} ({UPDATE_ENV}=1):\n  " + "\n  ".join(better))
    if unknown:
        message.append(f"cases not in {path.name}:\n  " + "\n  ".join(unknown))
    assert not message, "\n".join(message)


_ORDER = {"OK": 3, "INFORMATIONAL": 3, "NON-STRICT": 2, "UNIMPLEMENTED": 1}


def _rank(verdicts: dict) -> tuple[int, int]:
    return (_ORDER.get(verdicts["behavior"], 0), _ORDER.get(verdicts["behaviorClose"], 0))
