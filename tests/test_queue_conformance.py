"""CPython's own queue tests (``test.test_asyncio.test_queues`` of the
running interpreter) pass with asyncio's queues replaced by ferroloop's, on
the stdlib loop, uvloop and ferroloop (one child process each, run by
``_queue_conformance.py``). Nothing is excluded: the private attributes
those tests touch (``_getters``, ``_putters``, ``_format``,
``_unfinished_tasks``) are provided."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).with_name("_queue_conformance.py")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop", "ferroloop"])
def test_cpython_queue_suite_passes(loop):
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--loop", loop],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"runner printed nothing; stderr:\n{proc.stderr[-3000:]}"
    record = json.loads(lines[-1])
    assert record["queue_class"] == "ferroloop._queue.Queue"
    want_loop = {
        "asyncio": "asyncio.unix_events._UnixSelectorEventLoop",
        "uvloop": "uvloop.Loop",
        "ferroloop": "ferroloop._loop.Loop",
    }[loop]
    assert record["loop_classes"] == [want_loop]
    assert (record["failures"], record["errors"], record["skipped"]) == ([], [], 0), proc.stderr[-5000:]
    # 3.11 and 3.12 have 44 tests, 3.13 adds the shutdown ones.
    assert record["run"] >= 44
    assert proc.returncode == 0
