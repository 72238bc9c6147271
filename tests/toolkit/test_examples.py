"""multiloop's README examples (examples/toolkit/, the import changed to
ferroloop.toolkit) run as written and print what they should."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "toolkit"

EXPECTED = {
    "pool_submit.py": ["Computed result: 84"],
    "pool_submit_pin_to.py": ["[42, 42]"],
    "channel_select.py": ["Received: Message from Worker A"],
    "wait_group.py": [*(f"worker task-{i} done" for i in range(5)), "All workers finished cleanly!"],
    "task_group.py": ["Timed out: child tasks cancelled safely"],
}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name):
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    # Workers print from their own threads: lines may interleave.
    for line in EXPECTED[name]:
        assert done.stdout.count(line) == 1, done.stdout
    assert done.stdout.rstrip().endswith(EXPECTED[name][-1])
