"""ferroloop benchmarks, as defined in shared BENCHMARKS.md.

    python bench/bench.py sched [COMMON] [--workloads a,b,...]
    python bench/bench.py echo  [COMMON] [--workloads a,b,...] [--client XTASK]
    python bench/bench.py compare OLD.json NEW.json [--threshold 0.10]

COMMON: [--quick] [--rounds N] [--contenders a,b,...] [--ferroloop-wheel WHEEL]
        [--venv DIR] [--out DIR] [--compare OLD.json] [--threshold 0.10]

A suite writes SUITE-<timestamp>.json/.md and SUITE-latest.json/.md to --out
and prints the markdown.  Exit status: 0 when asyncio and ferroloop measured
and verified everything; 1 when either failed or could not be loaded (a peer's
failure is only reported); 2 for bad usage.  Timings never affect it;
--compare only prints.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import benchenv
import charts
import cpus
import echo_report
import echo_suite
import hostinfo
import report
import sched_report
import sched_suite
from contenders import CONTENDERS, CORE
from echo_workloads import WORKLOADS as ECHO_WORKLOADS
from sched_workloads import WORKLOADS as SCHED_WORKLOADS
from summary import SUBJECT, summarize_echo, summarize_sched

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROUNDS = {"sched": 5, "echo": 5}
QUICK_ROUNDS = {"sched": 3, "echo": 2}
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


def _where(record: dict) -> str:
    return f"[round {record['round'] + 1}] {record['workload']:<22} {record['contender']:<10}"


def _outcome(record: dict, figures: str) -> str:
    return figures if record["status"] == "ok" else f"{record['status'].upper()}: {record['error']}"


def _sched_progress(record: dict) -> None:
    figures = f"{record.get('ops_per_s', 0):>12,.0f} ops/s"
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


def _echo_progress(record: dict) -> None:
    figures = (
        f"{record.get('msgs_per_s', 0):>9,.0f} msgs/s {record.get('mib_per_s', 0):>7,.1f} MiB/s "
        f"{record.get('msgs_per_cpu_s', 0):>9,.0f} msgs/CPU-s "
        f"{record.get('peak_rss_mib', 0):>6.1f} MiB"
    )
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


class Contenders:
    """The bench venv prepared and probed: which contenders can run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.explicit = args.contenders is not None
        self.names = args.contenders or list(CONTENDERS)
        self.env = benchenv.prepare(args.venv, self.names, args.ferroloop_wheel)
        for line in self.env.log:
            print(f"bench venv: {line}", file=sys.stderr)
        self.found = self.env.probe(self.names)
        for name, reason in self.env.install_failures.items():
            self.found[name] = {"available": False, "reason": reason}
        self.runnable = [c for c in self.names if self.found[c]["available"]]
        # asyncio and ferroloop must load when asked for by name (or, for
        # ferroloop, when a wheel was given); a missing peer is only noted.
        required = [
            c
            for c in self.names
            if c in CORE and (self.explicit or (c == SUBJECT and args.ferroloop_wheel is not None))
        ]
        self.missing = [
            f"{c}: {self.found[c]['reason']}" for c in required if not self.found[c]["available"]
        ]


def _rounds(args: argparse.Namespace, suite: str) -> int:
    if args.rounds is not None:
        return args.rounds
    return QUICK_ROUNDS[suite] if args.quick else DEFAULT_ROUNDS[suite]


def _prepare(args: argparse.Namespace) -> Contenders | None:
    """The contenders, or None (after saying why) when a required one is missing."""
    contenders = Contenders(args)
    if contenders.missing:
        print(
            "error: required contender unavailable: " + "; ".join(contenders.missing),
            file=sys.stderr,
        )
        return None
    return contenders


def _result(suite: str, started: float, args, contenders: Contenders, method: dict) -> dict:
    """The fields every suite's result JSON starts with."""
    return {
        "suite": suite,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(started)),
        "duration_s": None,
        "host": hostinfo.describe(REPO, contenders.env.python_version()),
        "method": method,
        "load_before": hostinfo.load_average(),
        "load_after": None,
        "venv": {"path": str(args.venv), "changes": contenders.env.log},
        "contenders": {c: contenders.found[c] for c in contenders.names},
    }


def _finish(suite: str, started: float, args, result: dict, table: str) -> int:
    """Write the result and its markdown, print the table (and --compare);
    the exit status: 1 when asyncio or ferroloop failed a measurement."""
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    for name in (f"{suite}-{stamp}", f"{suite}-latest"):
        _write(args.out / f"{name}.json", json.dumps(result, indent=2) + "\n")
        _write(args.out / f"{name}.md", table)
    print(table)
    print(f"wrote {args.out / f'{suite}-{stamp}.json'} and .md", file=sys.stderr)
    # The README's charts follow the latest results.
    charts.main(["charts.py", str(args.out)])
    if args.compare is not None:
        print(report.compare(json.loads(args.compare.read_text()), result, args.threshold))
    core_failures = [
        r for r in result["measurements"] if r["contender"] in CORE and r["status"] != "ok"
    ]
    return 1 if core_failures else 0


def run_sched(args: argparse.Namespace) -> int:
    contenders = _prepare(args)
    if contenders is None:
        return 1
    workloads = args.workloads or list(SCHED_WORKLOADS)
    rounds = _rounds(args, "sched")
    divisor = QUICK_DIVISOR if args.quick else 1
    cpu = cpus.measured_cpu()

    started = time.time()
    method = {"rounds": rounds, "quick": args.quick, "n_divisor": divisor, "cpu": cpu}
    result = _result("sched", started, args, contenders, method)
    records = sched_suite.run(
        contenders.env.python, contenders.runnable, workloads, rounds, divisor, cpu, _sched_progress
    )
    result |= {
        "duration_s": time.time() - started,
        "load_after": hostinfo.load_average(),
        "workloads": summarize_sched(records, contenders.runnable, workloads),
        "measurements": records,
    }
    return _finish("sched", started, args, result, sched_report.markdown(result))


def run_echo(args: argparse.Namespace) -> int:
    contenders = _prepare(args)
    if contenders is None:
        return 1
    if args.client is None:
        try:
            args.client = echo_suite.build_client()
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"error: cannot build the echo client: {exc}", file=sys.stderr)
            return 1
    workloads = args.workloads or list(ECHO_WORKLOADS)
    rounds = _rounds(args, "echo")
    timing = echo_suite.Timing(
        warmup_s=echo_suite.WARMUP_S,
        duration_s=echo_suite.QUICK_DURATION_S if args.quick else echo_suite.DURATION_S,
    )
    placement = echo_suite.Placement(server_cpu=cpus.measured_cpu(), client_cpu=cpus.load_cpu())

    started = time.time()
    method = {
        "rounds": rounds,
        "quick": args.quick,
        "warmup_s": timing.warmup_s,
        "duration_s": timing.duration_s,
        "conns": timing.conns,
        "server_cpu": placement.server_cpu,
        "client_cpu": placement.client_cpu,
        "client": str(args.client),
    }
    result = _result("echo", started, args, contenders, method)
    records = echo_suite.run(
        contenders.env.python,
        args.client,
        contenders.runnable,
        workloads,
        rounds,
        timing,
        placement,
        _echo_progress,
    )
    result |= {
        "duration_s": time.time() - started,
        "load_after": hostinfo.load_average(),
        "workloads": summarize_echo(records, contenders.runnable, workloads),
        "measurements": records,
    }
    return _finish("echo", started, args, result, echo_report.markdown(result))


def run_compare(args: argparse.Namespace) -> int:
    old, new = (json.loads(p.read_text()) for p in (args.old, args.new))
    print(report.compare(old, new, args.threshold))
    return 0


def _common_options() -> argparse.ArgumentParser:
    """The options every suite takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--quick",
        action="store_true",
        help=f"sched: {QUICK_ROUNDS['sched']} rounds, n / {QUICK_DIVISOR}; "
        f"echo: {QUICK_ROUNDS['echo']} rounds, {echo_suite.QUICK_DURATION_S:g} s measured",
    )
    common.add_argument("--rounds", type=int, help="rounds (default 5; fewer with --quick)")
    common.add_argument(
        "--contenders",
        type=lambda s: _names(s, CONTENDERS, "contender"),
        help=f"comma-separated, default all: {','.join(CONTENDERS)}",
    )
    common.add_argument("--ferroloop-wheel", type=Path, help="wheel to force-reinstall in the venv")
    common.add_argument(
        "--venv",
        type=Path,
        default=REPO / "target" / "bench-venv",
        help="venv holding the contenders, created or reused (default target/bench-venv)",
    )
    common.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results",
        help="where results are written (default bench/results)",
    )
    common.add_argument(
        "--compare",
        type=Path,
        metavar="OLD.json",
        help="print ferroloop ratio changes against an earlier result of the suite",
    )
    common.add_argument(
        "--threshold",
        type=float,
        default=0.10,
        help="relative change that --compare reports (default 0.10)",
    )
    return common


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = _common_options()

    sched = sub.add_parser("sched", parents=[common], help="the scheduling suite")
    sched.add_argument(
        "--workloads",
        type=lambda s: _names(s, SCHED_WORKLOADS, "workload"),
        help="comma-separated, default all",
    )
    sched.set_defaults(func=run_sched)

    echo = sub.add_parser("echo", parents=[common], help="the TCP echo suite")
    echo.add_argument(
        "--workloads",
        type=lambda s: _names(s, ECHO_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(ECHO_WORKLOADS)}",
    )
    echo.add_argument(
        "--client",
        type=Path,
        help="the xtask binary that runs `echo-client` (default: built into target/xtask-bench)",
    )
    echo.set_defaults(func=run_echo)

    cmp = sub.add_parser("compare", help="ferroloop ratio changes between two results of a suite")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--threshold", type=float, default=0.10)
    cmp.set_defaults(func=run_compare)

    args = parser.parse_args()
    if getattr(args, "rounds", None) is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if getattr(args, "compare", None) is not None and not args.compare.is_file():
        parser.error(f"--compare: no such file {args.compare}")
    if getattr(args, "client", None) is not None and not os.access(args.client, os.X_OK):
        parser.error(f"--client: not an executable file: {args.client}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
