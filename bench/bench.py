"""ferroloop benchmarks, as defined in shared BENCHMARKS.md.

    python bench/bench.py sched [--quick] [--rounds N] [--contenders a,b,...]
                                [--workloads a,b,...] [--ferroloop-wheel WHEEL]
                                [--venv DIR] [--out DIR] [--compare OLD.json]
                                [--threshold 0.10]
    python bench/bench.py compare OLD.json NEW.json [--threshold 0.10]

`sched` writes sched-<timestamp>.json/.md and sched-latest.json/.md to --out
and prints the markdown table.  Exit status: 0 when asyncio and ferroloop
measured and verified everything; 1 when either failed or could not be loaded
(a peer's failure is only reported); 2 for bad usage.  Timings never affect it;
--compare only prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import benchenv
import hostinfo
import report
import sched_suite
from contenders import CONTENDERS, CORE
from sched_workloads import WORKLOADS
from summary import SUBJECT, summarize

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROUNDS = 5
QUICK_ROUNDS = 3
QUICK_DIVISOR = 4


def _names(text: str, known: dict, what: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what}: {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    return names


def _write(path: Path, text: str) -> None:
    # Written beside and renamed, so a reader never sees half a file.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _progress(record: dict) -> None:
    outcome = (
        f"{record['ops_per_s']:>12,.0f} ops/s"
        if record["status"] == "ok"
        else f"{record['status'].upper()}: {record['error']}"
    )
    where = f"[round {record['round'] + 1}] {record['workload']:<22} {record['contender']:<10}"
    print(f"{where} {outcome}", file=sys.stderr, flush=True)


def run_sched(args: argparse.Namespace) -> int:
    explicit = args.contenders is not None
    contenders = args.contenders or list(CONTENDERS)
    workloads = args.workloads or list(WORKLOADS)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS)
    divisor = QUICK_DIVISOR if args.quick else 1

    env = benchenv.prepare(args.venv, contenders, args.ferroloop_wheel)
    for line in env.log:
        print(f"bench venv: {line}", file=sys.stderr)
    found = env.probe(contenders)
    for name, reason in env.install_failures.items():
        found[name] = {"available": False, "reason": reason}

    # asyncio and ferroloop must load when asked for by name (or, for
    # ferroloop, when a wheel was given); a missing peer is only noted.
    required = [
        c
        for c in contenders
        if c in CORE and (explicit or (c == SUBJECT and args.ferroloop_wheel is not None))
    ]
    missing = [f"{c}: {found[c]['reason']}" for c in required if not found[c]["available"]]
    if missing:
        print("error: required contender unavailable: " + "; ".join(missing), file=sys.stderr)
        return 1
    runnable = [c for c in contenders if found[c]["available"]]

    started = time.time()
    load_before = hostinfo.load_average()
    records = sched_suite.run(env.python, runnable, workloads, rounds, divisor, _progress)
    load_after = hostinfo.load_average()

    result = {
        "suite": "sched",
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(started)),
        "duration_s": time.time() - started,
        "host": hostinfo.describe(REPO, env.python_version()),
        "method": {
            "rounds": rounds,
            "quick": args.quick,
            "n_divisor": divisor,
            "cpu": sched_suite.worker_cpu(),
        },
        "load_before": load_before,
        "load_after": load_after,
        "venv": {"path": str(args.venv), "changes": env.log},
        "contenders": {c: found[c] for c in contenders},
        "workloads": summarize(records, runnable, workloads),
        "measurements": records,
    }

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    table = report.markdown(result)
    for name in (f"sched-{stamp}", "sched-latest"):
        _write(args.out / f"{name}.json", json.dumps(result, indent=2) + "\n")
        _write(args.out / f"{name}.md", table)
    print(table)
    print(f"wrote {args.out / f'sched-{stamp}.json'} and .md", file=sys.stderr)

    if args.compare is not None:
        print(report.compare(json.loads(args.compare.read_text()), result, args.threshold))

    core_failures = [r for r in records if r["contender"] in CORE and r["status"] != "ok"]
    return 1 if core_failures else 0


def run_compare(args: argparse.Namespace) -> int:
    old, new = (json.loads(p.read_text()) for p in (args.old, args.new))
    print(report.compare(old, new, args.threshold))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    sched = sub.add_parser("sched", help="the scheduling suite")
    sched.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_ROUNDS} rounds with n divided by {QUICK_DIVISOR}",
    )
    sched.add_argument(
        "--rounds", type=int, help=f"rounds (default {DEFAULT_ROUNDS}, {QUICK_ROUNDS} with --quick)"
    )
    sched.add_argument(
        "--contenders",
        type=lambda s: _names(s, CONTENDERS, "contender"),
        help=f"comma-separated, default all: {','.join(CONTENDERS)}",
    )
    sched.add_argument(
        "--workloads",
        type=lambda s: _names(s, WORKLOADS, "workload"),
        help="comma-separated, default all",
    )
    sched.add_argument("--ferroloop-wheel", type=Path, help="wheel to force-reinstall in the venv")
    sched.add_argument(
        "--venv",
        type=Path,
        default=REPO / "target" / "bench-venv",
        help="venv holding the contenders, created or reused (default target/bench-venv)",
    )
    sched.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results",
        help="where results are written (default bench/results)",
    )
    sched.add_argument(
        "--compare",
        type=Path,
        metavar="OLD.json",
        help="print ferroloop ratio changes against an earlier result",
    )
    sched.add_argument(
        "--threshold",
        type=float,
        default=0.10,
        help="relative change that --compare reports (default 0.10)",
    )
    sched.set_defaults(func=run_sched)

    cmp = sub.add_parser("compare", help="ferroloop ratio changes between two sched results")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--threshold", type=float, default=0.10)
    cmp.set_defaults(func=run_compare)

    args = parser.parse_args()
    if getattr(args, "rounds", None) is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if getattr(args, "compare", None) is not None and not args.compare.is_file():
        parser.error(f"--compare: no such file {args.compare}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
