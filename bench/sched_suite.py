"""The scheduling suite's measurements: each in a fresh worker process
(`sched_worker.py`) pinned to the measured CPU, contenders interleaved by
`rounds`; a worker that imported the wrong build of its loop (`benchenv`'s
`check_origin`) is an error."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import rounds
from benchenv import BenchEnv
from sched_workloads import WORKLOADS

WORKER = Path(__file__).with_name("sched_worker.py")
# Full-size workloads take about a second on stdlib asyncio; a worker still
# running after this is hung (e.g. a loop that never fires a timer).
WORKER_TIMEOUT_S = 120


def sized(workload: str, divisor: int) -> int:
    return max(1, WORKLOADS[workload].n // divisor)


def measure(env: BenchEnv, contender: str, workload: str, n: int, cpu: int, worker: Path = WORKER) -> dict:
    """Run one worker (`worker CONTENDER WORKLOAD N --cpu CPU`, printing one
    JSON record: the toolkit suite's too); always returns a record with a
    status, never raises."""
    cmd = [str(env.python), str(worker), contender, workload, str(n), "--cpu", str(cpu)]
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=WORKER_TIMEOUT_S,
            env=env.environ(contender),
        )
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
    if record["status"] == "ok":
        wrong = env.check_origin(contender, record.get("module_file"))
        if wrong is not None:
            return {"status": "error", "error": f"wrong build: {wrong}"}
    if record["status"] != "ok" and proc.stderr.strip():
        record["stderr_tail"] = proc.stderr.strip().splitlines()[-10:]
    return record


def run(
    env: BenchEnv,
    contenders: list[str],
    workloads: list[str],
    round_count: int,
    divisor: int,
    cpu: int,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken (see rounds.run)."""

    def one(contender: str, workload: str) -> dict:
        n = sized(workload, divisor)
        return {"n": n} | measure(env, contender, workload, n, cpu)

    return rounds.run(contenders, workloads, round_count, one, progress)
