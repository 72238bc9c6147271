"""The toolkit suite's measurements: each (implementation, workload) in a
fresh worker process (`toolkit_worker.py`) pinned to the measured CPU with
all its threads, implementations interleaved by `rounds`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import rounds
import sched_suite
from benchenv import BenchEnv
from toolkit_workloads import DISTS, IMPLS, WORKLOADS

WORKER = Path(__file__).with_name("toolkit_worker.py")
# ferroloop's implementations: their failure is ours to fix (and the floor).
FERROLOOP_IMPLS = ("ferroloop", "ferroloop.Queue", "select_channel")
CORE = (*FERROLOOP_IMPLS, "floor")


def dists(impls: list[str]) -> dict[str, tuple[str, ...]]:
    return {i: DISTS[i] for i in impls if i in DISTS}


def probe(env: BenchEnv, impls: list[str]) -> dict[str, dict]:
    """Which implementations import in the venv, and their versions."""
    found = {}
    for impl in impls:
        modules = ["ferroloop", "ferroloop.toolkit", *DISTS.get(impl, ())]
        # The version shown: the peer's, ferroloop's for its own, Python's
        # for the stdlib's (run_coroutine_threadsafe, asyncio.Queue, pipes).
        dist = DISTS.get(impl, ("ferroloop",) if impl in FERROLOOP_IMPLS else ())
        version = f"' '.join(m.version(d) for d in {dist!r})" if dist else "platform.python_version()"
        code = (
            "import importlib, importlib.metadata as m, json, platform, ferroloop\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            f"print(json.dumps({{'version': {version}, 'module_file': ferroloop.__file__}}))"
        )
        proc = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True)
        try:
            found[impl] = {"available": True} | json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            found[impl] = {"available": False, "reason": tail}
    return env.checked(found)


def sized(workload: str, divisor: int) -> int:
    return max(1, WORKLOADS[workload].n // divisor)


def run(
    env: BenchEnv,
    impls: list[str],
    workloads: list[str],
    round_count: int,
    divisor: int,
    cpu: int,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken (see rounds.run)."""

    def one(impl: str, workload: str) -> dict:
        n = sized(workload, divisor)
        return {"n": n} | sched_suite.measure(env, impl, workload, n, cpu, worker=WORKER)

    def takes_part(impl: str, workload: str) -> bool:
        return impl in WORKLOADS[workload].impls

    ordered = [i for i in IMPLS if i in impls]
    return rounds.run(ordered, workloads, round_count, one, progress, takes_part)
