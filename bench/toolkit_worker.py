"""One toolkit-suite measurement in a fresh process.

    <venv>/bin/python bench/toolkit_worker.py IMPL WORKLOAD N [--cpu K]

Pins itself (and so every thread it starts) to one CPU, warms up with a run
of N/10, then measures WORKLOAD with N operations. Prints one JSON line:

    {"status": "ok", "elapsed": s, "ops_per_s": N/s, "cpu_s": ..., "versions": {...}}
    {"status": "failed verification" | "error", "error": "..."}
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
import time
import traceback

from toolkit_workloads import DISTS, VerificationError, run


def _versions(impl: str) -> dict[str, str]:
    import ferroloop

    return {"ferroloop": ferroloop.__version__} | {d: importlib.metadata.version(d) for d in DISTS.get(impl, ())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("impl")
    ap.add_argument("workload")
    ap.add_argument("n", type=int)
    ap.add_argument("--cpu", type=int)
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    try:
        run(args.workload, args.impl, max(1, args.n // 10))
        cpu0 = time.process_time()
        elapsed = run(args.workload, args.impl, args.n)
        record = {
            "status": "ok",
            "elapsed": elapsed,
            "ops_per_s": args.n / elapsed,
            "cpu_s": time.process_time() - cpu0,
            "versions": _versions(args.impl),
            "module_file": importlib.import_module("ferroloop").__file__,
        }
    except VerificationError as exc:
        record = {"status": "failed verification", "error": str(exc)}
    except Exception as exc:  # reported, with where it happened
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        record = {"status": "error", "error": f"{type(exc).__name__}: {exc} ({tb.filename}:{tb.lineno})"}
    print(json.dumps(record))
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
