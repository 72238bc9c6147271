"""Instructions per operation of a scheduling workload, under callgrind.

    <bench venv>/bin/python bench/sched_callgrind.py CONTENDER WORKLOAD [--n N] [--out DIR]

Runs `sched_worker.py CONTENDER WORKLOAD` twice under valgrind's callgrind,
with N and 2N operations, and prints the difference of their instruction
counts divided by the difference in operations (warm-ups included): the cost of one operation without interpreter start-up
and warm-up. Instruction counts repeat on a shared machine where timings do
not. The 2N run's profile stays in DIR (`callgrind_annotate` it by function).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def instructions(contender: str, workload: str, n: int, out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(HERE / "sched_worker.py"),
        contender,
        workload,
        str(n),
    ]
    # Leaving the cycle collector as is: it is part of the cost measured.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ), check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{contender} {workload}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-2000:]}")
    text = out.read_text(errors="replace")
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if not m:
        raise SystemExit(f"no instruction total in {out}")
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("contender")
    ap.add_argument("workload")
    ap.add_argument("--n", type=int, default=20_000, help="operations of the smaller run (default 20,000)")
    ap.add_argument("--out", type=Path, default=Path("target/sched-callgrind"))
    args = ap.parse_args()
    small = instructions(args.contender, args.workload, args.n, args.out / f"{args.contender}-{args.workload}-1.out")
    big = instructions(args.contender, args.workload, 2 * args.n, args.out / f"{args.contender}-{args.workload}-2.out")
    # The worker's warm-up is a tenth of N (fib21: one smaller tree, the
    # same in both runs), so the larger run does this many more operations.
    extra = args.n if args.workload.startswith("fib21") else args.n + max(1, 2 * args.n // 10) - max(1, args.n // 10)
    print(json.dumps({"contender": args.contender, "workload": args.workload, "instr_per_op": (big - small) / extra}))


if __name__ == "__main__":
    main()
