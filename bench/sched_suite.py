"""The scheduling suite's method: every measurement in a fresh worker process,
contenders interleaved round by round with rotation (A B C, B C A, ...).

Rounds are the outer loop, so each round covers every workload and a slow
drift of the machine (another tenant, thermal state) spreads over all cells
instead of landing on one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from sched_workloads import WORKLOADS

WORKER = Path(__file__).with_name("sched_worker.py")
# Full-size workloads take about a second on stdlib asyncio; a worker still
# running after this is hung (e.g. a loop that never fires a timer).
WORKER_TIMEOUT_S = 120


def worker_cpu() -> int:
    """CPU 0 as BENCHMARKS.md asks, or the first CPU we may use if 0 is not ours."""
    allowed = os.sched_getaffinity(0)
    return 0 if 0 in allowed else min(allowed)


def rotation(contenders: list[str], round_index: int) -> list[str]:
    k = round_index % len(contenders)
    return contenders[k:] + contenders[:k]


def sized(workload: str, divisor: int) -> int:
    return max(1, WORKLOADS[workload].n // divisor)


def measure(python: Path, contender: str, workload: str, n: int, cpu: int) -> dict:
    """Run one worker; always returns a record with a status, never raises."""
    cmd = [str(python), str(WORKER), contender, workload, str(n), "--cpu", str(cpu)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"worker timed out after {WORKER_TIMEOUT_S} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        # The worker died before reporting (a crash inside the loop's native code).
        how = (
            f"worker killed by {signal.Signals(-proc.returncode).name}"
            if proc.returncode < 0
            else f"worker exited {proc.returncode} without a result"
        )
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"status": "error", "error": f"{how}: {tail}" if tail else how}
    if record["status"] != "ok" and proc.stderr.strip():
        record["stderr_tail"] = proc.stderr.strip().splitlines()[-10:]
    return record


def run(
    python: Path,
    contenders: list[str],
    workloads: list[str],
    rounds: int,
    divisor: int,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken.  A contender that fails a workload
    is not run on it again: its cell is failed either way."""
    cpu = worker_cpu()
    failed: set[tuple[str, str]] = set()
    records = []
    for round_index in range(rounds):
        for workload in workloads:
            for slot, contender in enumerate(rotation(contenders, round_index)):
                if (contender, workload) in failed:
                    continue
                n = sized(workload, divisor)
                record = {
                    "round": round_index,
                    "slot": slot,
                    "contender": contender,
                    "workload": workload,
                    "n": n,
                }
                record |= measure(python, contender, workload, n, cpu)
                if record["status"] != "ok":
                    failed.add((contender, workload))
                records.append(record)
                progress(record)
    return records
