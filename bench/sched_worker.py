"""One scheduling measurement in a fresh process.

    <venv>/bin/python bench/sched_worker.py CONTENDER WORKLOAD N [--cpu K]

Pins itself to one CPU, builds one loop of CONTENDER, warms it up with a
smaller run of WORKLOAD, then runs WORKLOAD with N operations on the same loop.
Prints one JSON line on stdout:

    {"status": "ok", "elapsed": s, "ops_per_s": N/s, ...}
    {"status": "failed verification" | "error", "error": "..."}

and exits 0 only for "ok".
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import traceback

from contenders import CONTENDERS, loop_factory, module_file
from sched_workloads import WORKLOADS, VerificationError


class LoopErrors:
    """Exception handler that records what the loop reports and stops it.

    By default a loop logs an exception raised in a callback and carries on,
    which would leave a broken workload waiting forever; stopping turns that
    into a prompt, explained failure.
    """

    def __init__(self) -> None:
        self.reports: list[str] = []

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        detail = f"{type(exc).__name__}: {exc}" if exc else ""
        self.reports.append(f"{context.get('message', '')} {detail}".strip())
        loop.stop()

    def raise_if_any(self, cause: BaseException | None = None) -> None:
        # When the workload failed too, the loop's report is the cause and
        # the workload's failure only the symptom.
        if self.reports:
            raise RuntimeError("loop exception handler: " + "; ".join(self.reports[:3])) from cause


def measure(contender: str, workload_name: str, n: int) -> dict:
    workload = WORKLOADS[workload_name]
    loop = loop_factory(contender)()
    errors = LoopErrors()
    loop.set_exception_handler(errors)
    asyncio.set_event_loop(loop)
    try:
        workload.warm_up(loop, n)
        gc.collect()  # start the measured run from the same heap state everywhere
        cpu0 = time.process_time()
        elapsed = workload.run(loop, n)
        # This process's CPU time over the measured run and its verification:
        # far below `elapsed` means the worker waited for the CPU (a busy host).
        cpu_s = time.process_time() - cpu0
    except Exception as exc:
        errors.raise_if_any(cause=exc)
        raise
    else:
        errors.raise_if_any()
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    return {
        "status": "ok",
        "elapsed": elapsed,
        "ops_per_s": n / elapsed,
        "cpu_s": cpu_s,
        "module_file": module_file(contender),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("contender", choices=sorted(CONTENDERS))
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("n", type=int)
    parser.add_argument("--cpu", type=int, help="pin this process to one CPU")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})

    record = {"contender": args.contender, "workload": args.workload, "n": args.n}
    try:
        record |= measure(args.contender, args.workload, args.n)
    except VerificationError as exc:
        record |= {"status": "failed verification", "error": str(exc)}
    except Exception as exc:
        traceback.print_exc()
        record |= {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(record), flush=True)
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
