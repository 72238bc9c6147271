"""ferroloop benchmarks, as defined in bench/README.md.

    python bench/bench.py sched [COMMON] [--contenders a,b,...] [--workloads a,b,...]
    python bench/bench.py echo  [COMMON] [--contenders a,b,...] [--workloads a,b,...]
                                [--client XTASK]
    python bench/bench.py http  [COMMON] [--contenders a,b,...] [--workloads a,b,...]
                                [--plaintext BIN]
    python bench/bench.py ws    [COMMON] [--contenders a,b,...] [--workloads a,b,...]
    python bench/bench.py tls   [COMMON] [--client XTASK] [--contenders a,b,...] [--workloads a,b,...]
                                [--client XTASK]
    python bench/bench.py workers [COMMON] [--contenders a,b,...]
    python bench/bench.py toolkit [COMMON] [--contenders a,b,...] [--workloads a,b,...]
    python bench/bench.py all   [COMMON] [--client XTASK] [--plaintext BIN]
    python bench/bench.py compare OLD.json NEW.json [--threshold 0.10]

COMMON: [--quick] [--rounds N] [--ferroloop-wheel WHEEL] [--baseline-wheel WHEEL]
        [--venv DIR] [--out DIR] [--compare OLD.json|DIR ...] [--threshold 0.10]

--baseline-wheel adds the contender ferroloop-base: ferroloop as that wheel
built it (the code before a change), interleaved with the others, and the
report's paired ratios ferroloop/ferroloop-base.

A suite writes SUITE-<timestamp>.json/.md and SUITE-latest.json/.md to --out
and prints the markdown; `all` runs sched, echo, http, ws, tls, workers and toolkit in turn.  Exit
status: 0 when our contenders (asyncio and ferroloop; for http ferroloop and
rust-plaintext; for ws and workers ferroloop) measured and verified everything; 1 when one failed or could
not be loaded (a peer's failure is only reported); 2 for bad usage.  Timings
never affect it; --compare only prints.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import benchenv
import charts
import cpus
import echo_report
import echo_suite
import hostinfo
import http_report
import http_servers
import http_suite
import progress
import report
import sched_report
import sched_suite
import tls_report
import tls_servers
import tls_suite
import toolkit_report
import toolkit_suite
import ws_report
import ws_servers
import workers_suite
import ws_suite
from contenders import BASE, CONTENDERS, CORE
from echo_workloads import CONNS as ECHO_CONNS
from echo_workloads import IDLE_CONNS as ECHO_IDLE_CONNS
from echo_workloads import MANY_CONNS as ECHO_MANY_CONNS
from echo_workloads import WORKLOADS as ECHO_WORKLOADS
from http_workloads import WORKLOADS as HTTP_WORKLOADS
from sched_workloads import WORKLOADS as SCHED_WORKLOADS
from summary import SUBJECT, summarize_echo, summarize_http, summarize_sched, summarize_ws
from tls_workloads import WORKLOADS as TLS_WORKLOADS
from toolkit_workloads import IMPLS as TOOLKIT_IMPLS
from toolkit_workloads import WORKLOADS as TOOLKIT_WORKLOADS
from ws_workloads import WORKLOADS as WS_WORKLOADS

REPO = Path(__file__).resolve().parent.parent
SUITES = ("sched", "echo", "http", "ws", "tls", "workers", "toolkit")
DEFAULT_ROUNDS = {"sched": 5, "echo": 5, "http": 3, "ws": 3, "tls": 3, "workers": 3, "toolkit": 5}
QUICK_ROUNDS = {"sched": 3, "echo": 2, "http": 1, "ws": 1, "tls": 1, "workers": 1, "toolkit": 1}
# `all --quick`: fewer rounds still, so the four suites take about 3 minutes.
ALL_QUICK_ROUNDS = {"sched": 2, "echo": 1, "http": 1, "ws": 1, "tls": 1, "workers": 1, "toolkit": 1}
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


class Contenders:
    """The bench venv prepared and probed: which contenders can run.  By
    default the event loops of the sched and echo suites; the HTTP suite
    passes its servers (`known`), what each needs installed, its probe and
    which of them are ours (`core`)."""

    def __init__(
        self,
        args: argparse.Namespace,
        known: dict = CONTENDERS,
        dists: Callable[[list[str]], dict] = benchenv.loop_dists,
        probe: Callable[[benchenv.BenchEnv, list[str]], dict] | None = None,
        core: tuple[str, ...] = CORE,
    ) -> None:
        self.explicit = args.contenders is not None
        self.names = with_base(args.contenders or [n for n in known if n != BASE], args)
        self.env = benchenv.prepare(
            args.venv, dists(self.names), args.ferroloop_wheel, args.baseline_wheel
        )
        for line in self.env.log:
            print(f"bench venv: {line}", file=sys.stderr)
        self.found = probe(self.env, self.names) if probe else self.env.probe(self.names)
        for name, reason in self.env.install_failures.items():
            self.found[name] = {"available": False, "reason": reason}
        self.runnable = [c for c in self.names if self.found[c]["available"]]
        # Ours (asyncio and ferroloop; for http ferroloop and rust-plaintext)
        # must load when asked for by name (ferroloop also when a wheel was
        # given, ferroloop-base always: it only runs with its wheel); a
        # missing peer is only noted.
        required = [
            c
            for c in self.names
            if c in core
            and (
                self.explicit
                or c == BASE
                or (c == SUBJECT and args.ferroloop_wheel is not None)
            )
        ]
        self.missing = [
            f"{c}: {self.found[c]['reason']}" for c in required if not self.found[c]["available"]
        ]


def with_base(names: list[str], args: argparse.Namespace) -> list[str]:
    """`names` with ferroloop-base when --baseline-wheel is given, right
    after ferroloop so the two sit side by side in every table."""
    if args.baseline_wheel is None or BASE in names:
        return names
    at = names.index(SUBJECT) + 1 if SUBJECT in names else len(names)
    return names[:at] + [BASE] + names[at:]


def _rounds(args: argparse.Namespace, suite: str) -> int:
    if args.rounds is not None:
        return args.rounds
    return QUICK_ROUNDS[suite] if args.quick else DEFAULT_ROUNDS[suite]


def _prepare(args: argparse.Namespace, **how) -> Contenders | None:
    """The contenders, or None (after saying why) when a required one is missing."""
    contenders = Contenders(args, **how)
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


def _complete(result: dict, started: float, records: list[dict], summary: dict) -> None:
    """The fields a suite's result gets once its measurements are taken."""
    result |= {
        "duration_s": time.time() - started,
        "load_after": hostinfo.load_average(),
        "workloads": summary,
        "measurements": records,
    }


def _built_client(args: argparse.Namespace) -> bool:
    """`args.client`, built when not given (the echo and WebSocket load
    generators are one xtask binary); False, after saying why, when that fails."""
    if args.client is not None:
        return True
    try:
        args.client = echo_suite.build_client()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: cannot build the load generator (xtask): {exc}", file=sys.stderr)
        return False
    return True


def _finish(
    suite: str, started: float, args, result: dict, table: str, core: tuple[str, ...] = CORE
) -> int:
    """Write the result and its markdown, print the table (and --compare);
    the exit status: 1 when one of ours (`core`) failed a measurement."""
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    for name in (f"{suite}-{stamp}", f"{suite}-latest"):
        _write(args.out / f"{name}.json", json.dumps(result, indent=2) + "\n")
        _write(args.out / f"{name}.md", table)
    print(table)
    print(f"wrote {args.out / f'{suite}-{stamp}.json'} and .md", file=sys.stderr)
    # The charts (docs/benchmarks.md) follow the latest results.
    charts.main(["charts.py", str(args.out)])
    _print_comparisons(suite, args, result)
    core_failures = [
        r for r in result["measurements"] if r["contender"] in core and r["status"] != "ok"
    ]
    return 1 if core_failures else 0


def _wrk() -> str | None:
    """wrk (installed when missing), or None after saying why not."""
    try:
        return http_suite.ensure_wrk()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def _servers(
    args: argparse.Namespace, servers: dict, core: tuple[str, ...], probe
) -> Contenders | None:
    """`_prepare` for a server suite: `servers` maps names to their
    definitions (`.dists`, `.settings`)."""
    return _prepare(
        args,
        known=servers,
        dists=lambda names: {n: servers[n].dists for n in names},
        probe=probe,
        core=core,
    )


def _timing(args: argparse.Namespace, suite):
    """The suite module's Timing, --quick or not."""
    return suite.Timing(
        warmup_s=suite.QUICK_WARMUP_S if args.quick else suite.WARMUP_S,
        duration_s=suite.QUICK_DURATION_S if args.quick else suite.DURATION_S,
    )


def _method(args, rounds: int, timing, placement, servers: dict, contenders, **extra) -> dict:
    """The `method` record the server suites share; `extra`: theirs."""
    return {
        "rounds": rounds,
        "quick": args.quick,
        "warmup_s": timing.warmup_s,
        "duration_s": timing.duration_s,
        **extra,
        "server_cpu": placement.server_cpu,
        "client_cpu": placement.client_cpu,
        "settings": {s: servers[s].settings for s in contenders.runnable},
    }


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
        contenders.env, contenders.runnable, workloads, rounds, divisor, cpu, progress.sched
    )
    _complete(result, started, records, summarize_sched(records, contenders.runnable, workloads))
    return _finish("sched", started, args, result, sched_report.markdown(result))


def run_echo(args: argparse.Namespace) -> int:
    contenders = _prepare(args)
    if contenders is None:
        return 1
    if not _built_client(args):
        return 1
    workloads = args.workloads or list(ECHO_WORKLOADS)
    rounds = _rounds(args, "echo")
    timing = echo_suite.Timing(
        warmup_s=echo_suite.WARMUP_S,
        duration_s=echo_suite.QUICK_DURATION_S if args.quick else echo_suite.DURATION_S,
        idle_conns=echo_suite.QUICK_IDLE_CONNS if args.quick else ECHO_IDLE_CONNS,
    )
    placement = echo_suite.Placement(server_cpu=cpus.measured_cpu(), client_cpu=cpus.load_cpu())

    started = time.time()
    method = {
        "rounds": rounds,
        "quick": args.quick,
        "warmup_s": timing.warmup_s,
        "duration_s": timing.duration_s,
        "conns": ECHO_CONNS,
        "many_conns": ECHO_MANY_CONNS,
        "idle_conns": timing.idle_conns,
        "idle_warmup_conns": echo_suite.IDLE_WARMUP_CONNS,
        "settled_allocator_bytes": echo_suite.ALLOCATOR_SETTLING_BYTES,
        "server_cpu": placement.server_cpu,
        "client_cpu": placement.client_cpu,
        "client": str(args.client),
    }
    result = _result("echo", started, args, contenders, method)
    records = echo_suite.run(
        contenders.env,
        args.client,
        contenders.runnable,
        workloads,
        rounds,
        timing,
        placement,
        progress.echo,
    )
    _complete(result, started, records, summarize_echo(records, contenders.runnable, workloads))
    return _finish("echo", started, args, result, echo_report.markdown(result))


def run_http(args: argparse.Namespace) -> int:
    wrk = _wrk()
    if wrk is None:
        return 1
    names = args.contenders or list(http_servers.SERVERS)
    plaintext, build_error = args.plaintext, None
    if plaintext is None and "rust-plaintext" in names:
        try:
            plaintext = http_servers.build_plaintext()
        except (OSError, subprocess.CalledProcessError) as exc:
            build_error = f"cannot build it: {exc}"
            print(f"warning: rust-plaintext: {build_error}", file=sys.stderr)
    contenders = _servers(
        args,
        http_servers.SERVERS,
        http_servers.CORE,
        lambda env, names: http_servers.probe(env, names, plaintext, build_error),
    )
    if contenders is None:
        return 1
    workloads = args.workloads or list(HTTP_WORKLOADS)
    rounds = _rounds(args, "http")
    timing = _timing(args, http_suite)
    placement = http_suite.Placement(server_cpu=cpus.measured_cpu(), client_cpu=cpus.load_cpu())

    started = time.time()
    method = _method(
        args, rounds, timing, placement, http_servers.SERVERS, contenders,
        conns=timing.conns, threads=timing.threads, wrk=http_suite.wrk_version(wrk),
    )  # fmt: skip
    result = _result("http", started, args, contenders, method)
    records = http_suite.run(
        contenders.env,
        wrk,
        plaintext,
        contenders.runnable,
        workloads,
        rounds,
        timing,
        placement,
        progress.http,
    )
    _complete(result, started, records, summarize_http(records, contenders.runnable, workloads))
    return _finish(
        "http", started, args, result, http_report.markdown(result), core=http_servers.CORE
    )


def run_ws(args: argparse.Namespace) -> int:
    contenders = _servers(
        args,
        ws_servers.SERVERS,
        ws_servers.CORE,
        lambda env, names: http_servers.probe(env, names, None),
    )
    if contenders is None:
        return 1
    if not _built_client(args):
        return 1
    workloads = args.workloads or list(WS_WORKLOADS)
    rounds = _rounds(args, "ws")
    timing = _timing(args, ws_suite)
    placement = ws_suite.Placement(server_cpu=cpus.measured_cpu(), client_cpu=cpus.load_cpu())

    started = time.time()
    method = _method(
        args, rounds, timing, placement, ws_servers.SERVERS, contenders,
        conns=WS_WORKLOADS["bin_64"].conns, idle_conns=WS_WORKLOADS["idle_1k"].conns,
        client=str(args.client),
    )  # fmt: skip
    result = _result("ws", started, args, contenders, method)
    records = ws_suite.run(
        contenders.env,
        args.client,
        contenders.runnable,
        workloads,
        rounds,
        timing,
        placement,
        progress.ws,
    )
    _complete(result, started, records, summarize_ws(records, contenders.runnable, workloads))
    return _finish("ws", started, args, result, ws_report.markdown(result), core=ws_servers.CORE)


def run_tls(args: argparse.Namespace) -> int:
    """The TLS suite (tls_suite.py): keep-alive HTTPS with wrk (and
    ferroloop's plaintext HTTP beside it), full and resumed handshakes with
    `xtask tls-client`."""
    wrk = _wrk()
    if wrk is None or not _built_client(args):
        return 1
    contenders = _servers(args, tls_servers.SERVERS, tls_servers.CORE, tls_servers.probe)
    if contenders is None:
        return 1
    workloads = args.workloads or list(TLS_WORKLOADS)
    rounds = _rounds(args, "tls")
    timing = _timing(args, tls_suite)
    placement = http_suite.Placement(server_cpu=cpus.measured_cpu(), client_cpu=cpus.load_cpu())
    started = time.time()
    method = _method(
        args, rounds, timing, placement, tls_servers.SERVERS, contenders,
        conns=timing.conns, threads=timing.threads, handshake_conns=timing.handshake_conns,
        wrk=http_suite.wrk_version(wrk),
    )  # fmt: skip
    result = _result("tls", started, args, contenders, method)
    with tempfile.TemporaryDirectory(prefix="ferroloop-tls-bench-") as tmp:
        certs = tls_servers.make_certs(Path(tmp))
        records = tls_suite.run(
            contenders.env, wrk, args.client, certs, contenders.runnable, workloads,
            rounds, timing, placement, progress.tls,
        )  # fmt: skip
    _complete(result, started, records, tls_report.summarize(records, contenders.runnable, workloads))
    return _finish("tls", started, args, result, tls_report.markdown(result), core=tls_servers.CORE)


def run_workers(args: argparse.Namespace) -> int:
    """Two-worker servers on plaintext (workers_suite.py); reports, never gates on a timing."""
    try:
        wrk = http_suite.ensure_wrk()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.baseline_wheel is not None:
        print("error: the workers suite takes no --baseline-wheel", file=sys.stderr)
        return 2
    known = {n: http_servers.SERVERS[n] for n in workers_suite.NAMES}
    contenders = _prepare(
        args,
        known=known,
        dists=lambda names: {n: known[n].dists for n in names},
        probe=lambda env, names: http_servers.probe(env, names, None),
        core=workers_suite.CORE,
    )
    if contenders is None:
        return 1
    rounds = _rounds(args, "workers")
    timing = http_suite.Timing(
        warmup_s=http_suite.QUICK_WARMUP_S if args.quick else http_suite.WARMUP_S,
        duration_s=http_suite.QUICK_DURATION_S if args.quick else http_suite.DURATION_S,
        threads=workers_suite.THREADS,
    )
    started = time.time()
    method = {
        "rounds": rounds,
        "quick": args.quick,
        "warmup_s": timing.warmup_s,
        "duration_s": timing.duration_s,
        "conns": timing.conns,
        "threads": timing.threads,
        "workers": workers_suite.WORKERS,
        "wrk": http_suite.wrk_version(wrk),
        "settings": {s: workers_suite.settings(s) for s in contenders.runnable},
    }
    result = _result("workers", started, args, contenders, method)
    records = workers_suite.run(contenders.env, wrk, contenders.runnable, rounds, timing, progress.workers)
    _complete(result, started, records, workers_suite.summarize(records, contenders.runnable))
    return _finish(
        "workers", started, args, result, workers_suite.markdown(result), core=workers_suite.CORE
    )


def run_toolkit(args: argparse.Namespace) -> int:
    """The toolkit suite (toolkit_workloads.py): the toolkit's channels,
    select and pool against janus, culsans and run_coroutine_threadsafe."""
    if args.baseline_wheel is not None:
        print("error: the toolkit suite takes no --baseline-wheel", file=sys.stderr)
        return 2
    contenders = _prepare(
        args,
        known={i: None for i in TOOLKIT_IMPLS},
        dists=toolkit_suite.dists,
        probe=toolkit_suite.probe,
        core=toolkit_suite.CORE,
    )
    if contenders is None:
        return 1
    workloads = args.workloads or list(TOOLKIT_WORKLOADS)
    rounds = _rounds(args, "toolkit")
    divisor = QUICK_DIVISOR if args.quick else 1
    cpu = cpus.measured_cpu()
    started = time.time()
    method = {"rounds": rounds, "quick": args.quick, "n_divisor": divisor, "cpu": cpu}
    result = _result("toolkit", started, args, contenders, method)
    records = toolkit_suite.run(
        contenders.env, contenders.runnable, workloads, rounds, divisor, cpu, progress.sched
    )
    summary = toolkit_report.summarize(records, contenders.runnable, workloads)
    _complete(result, started, records, summary)
    return _finish(
        "toolkit", started, args, result, toolkit_report.markdown(result), core=toolkit_suite.CORE
    )


def run_all(args: argparse.Namespace) -> int:
    """sched, echo, http and ws in turn, each as its own command would run
    it (all contenders and workloads); 1 when any of them returned 1."""
    status = 0
    suites = (("sched", run_sched), ("echo", run_echo), ("http", run_http), ("ws", run_ws),
              ("tls", run_tls), ("workers", run_workers), ("toolkit", run_toolkit))
    for suite, run in suites:
        print(f"== {suite}", file=sys.stderr, flush=True)
        suite_args = argparse.Namespace(**vars(args))
        suite_args.contenders = suite_args.workloads = None
        if args.rounds is None and args.quick:
            suite_args.rounds = ALL_QUICK_ROUNDS[suite]
        status = max(status, run(suite_args))
    return status


def _baselines(paths: list[Path]) -> list[dict]:
    """Earlier results named by --compare, read before this run overwrites
    any *-latest file: a file as it is, a directory as its SUITE-latest.json."""
    found = []
    for path in paths:
        files = [path / f"{s}-latest.json" for s in SUITES] if path.is_dir() else [path]
        found += [json.loads(f.read_text()) for f in files if f.is_file()]
    return found


def _print_comparisons(suite: str, args, result: dict) -> None:
    if not args.baselines:
        return
    same = [b for b in args.baselines if b.get("suite", "sched") == suite]
    if same:
        for old in same:
            print(report.compare(old, result, args.threshold))
    elif args.command != "all":
        # Says that the suites differ.
        print(report.compare(args.baselines[0], result, args.threshold))
    else:
        print(f"No earlier {suite} result given to compare with.\n")


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
        f"echo: {QUICK_ROUNDS['echo']} rounds, {echo_suite.QUICK_DURATION_S:g} s measured, "
        f"{echo_suite.QUICK_IDLE_CONNS:,} idle connections; "
        f"http: {QUICK_ROUNDS['http']} round, {http_suite.QUICK_WARMUP_S} s warm-up, "
        f"{http_suite.QUICK_DURATION_S} s measured; ws: {QUICK_ROUNDS['ws']} round, "
        f"{ws_suite.QUICK_DURATION_S:g} s measured; all: "
        + ", ".join(f"{s} {n}" for s, n in ALL_QUICK_ROUNDS.items())
        + " round(s)",
    )
    common.add_argument(
        "--rounds", type=int, help="rounds (default 5, http and ws 3; fewer with --quick)"
    )
    common.add_argument("--ferroloop-wheel", type=Path, help="wheel to force-reinstall in the venv")
    common.add_argument(
        "--baseline-wheel",
        type=Path,
        metavar="WHEEL",
        help=f"add the contender {BASE}: ferroloop from this wheel (e.g. the build before a "
        "change), unpacked into target/bench-baseline/<sha256> and put first on its processes' "
        f"PYTHONPATH; the report gives the paired ratios ferroloop/{BASE}",
    )
    common.add_argument(
        "--venv",
        type=Path,
        default=REPO / "target" / "bench-venv",
        help="venv holding the contenders, created or reused (default target/bench-venv)",
    )
    common.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results are written (default bench/results; with --quick target/bench-quick, "
        "so a quick run never replaces the published results)",
    )
    common.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        metavar="OLD.json|DIR",
        help="print ferroloop ratio changes against an earlier result of the suite "
        "(a directory: its SUITE-latest.json, read before the run); repeatable",
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

    loops = argparse.ArgumentParser(add_help=False)
    loops.add_argument(
        "--contenders",
        type=lambda s: _names(s, CONTENDERS, "contender"),
        help=f"comma-separated, default all: {','.join(c for c in CONTENDERS if c != BASE)} "
        f"(and {BASE} with --baseline-wheel)",
    )
    client = argparse.ArgumentParser(add_help=False)
    client.add_argument(
        "--client",
        type=Path,
        help="the xtask binary that runs `echo-client` and `ws-client` (default: built into "
        "target/xtask-bench)",
    )
    plaintext = argparse.ArgumentParser(add_help=False)
    plaintext.add_argument(
        "--plaintext",
        type=Path,
        help="the rust-plaintext server (loop-server's example server; default: built "
        "with the dist profile into target/xtask-bench when the example exists)",
    )

    sched = sub.add_parser("sched", parents=[common, loops], help="the scheduling suite")
    sched.add_argument(
        "--workloads",
        type=lambda s: _names(s, SCHED_WORKLOADS, "workload"),
        help="comma-separated, default all",
    )
    sched.set_defaults(func=run_sched)

    echo = sub.add_parser("echo", parents=[common, loops, client], help="the TCP echo suite")
    echo.add_argument(
        "--workloads",
        type=lambda s: _names(s, ECHO_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(ECHO_WORKLOADS)}",
    )
    echo.set_defaults(func=run_echo)

    http = sub.add_parser(
        "http", parents=[common, plaintext], help="the HTTP suite (single-worker servers, wrk)"
    )
    http.add_argument(
        "--contenders",
        type=lambda s: _names(s, http_servers.SERVERS, "server"),
        help=f"comma-separated, default all: "
        f"{','.join(s for s in http_servers.SERVERS if s != BASE)} (and {BASE} with --baseline-wheel)",
    )
    http.add_argument(
        "--workloads",
        type=lambda s: _names(s, HTTP_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(HTTP_WORKLOADS)}",
    )
    http.set_defaults(func=run_http)

    ws = sub.add_parser(
        "ws", parents=[common, client], help="the WebSocket suite (single-worker servers)"
    )
    ws.add_argument(
        "--contenders",
        type=lambda s: _names(s, ws_servers.SERVERS, "server"),
        help=f"comma-separated, default all: "
        f"{','.join(s for s in ws_servers.SERVERS if s != BASE)} "
        f"(and {BASE} with --baseline-wheel)",
    )
    ws.add_argument(
        "--workloads",
        type=lambda s: _names(s, WS_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(WS_WORKLOADS)}",
    )
    ws.set_defaults(func=run_ws)

    tls = sub.add_parser(
        "tls", parents=[common, client], help="the TLS suite (keep-alive HTTPS, handshakes)"
    )
    tls.add_argument(
        "--contenders",
        type=lambda s: _names(s, tls_servers.SERVERS, "server"),
        help=f"comma-separated, default all: "
        f"{','.join(s for s in tls_servers.SERVERS if s != BASE)} (and {BASE} with --baseline-wheel)",
    )
    tls.add_argument(
        "--workloads",
        type=lambda s: _names(s, TLS_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(TLS_WORKLOADS)}",
    )
    tls.set_defaults(func=run_tls)

    workers = sub.add_parser(
        "workers", parents=[common], help="two-worker servers on plaintext (wrk -t2, not pinned)"
    )
    workers.add_argument(
        "--contenders",
        type=lambda s: _names(s, {n: None for n in workers_suite.NAMES}, "server"),
        help=f"comma-separated, default all: {','.join(workers_suite.NAMES)}",
    )
    workers.set_defaults(func=run_workers)

    toolkit = sub.add_parser(
        "toolkit", parents=[common], help="the toolkit's channels, select and pool vs janus, culsans"
    )
    toolkit.add_argument(
        "--contenders",
        type=lambda s: _names(s, {i: None for i in TOOLKIT_IMPLS}, "implementation"),
        help=f"comma-separated, default all: {','.join(TOOLKIT_IMPLS)}",
    )
    toolkit.add_argument(
        "--workloads",
        type=lambda s: _names(s, TOOLKIT_WORKLOADS, "workload"),
        help=f"comma-separated, default all: {','.join(TOOLKIT_WORKLOADS)}",
    )
    toolkit.set_defaults(func=run_toolkit)

    every = sub.add_parser(
        "all",
        parents=[common, client, plaintext],
        help="sched, echo, http, ws, tls, workers and toolkit in turn",
    )
    every.set_defaults(func=run_all)

    cmp = sub.add_parser("compare", help="ferroloop ratio changes between two results of a suite")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--threshold", type=float, default=0.10)
    cmp.set_defaults(func=run_compare)

    args = parser.parse_args()
    if hasattr(args, "out") and args.out is None:
        quick = getattr(args, "quick", False)
        args.out = REPO / "target" / "bench-quick" if quick else REPO / "bench" / "results"
    if getattr(args, "rounds", None) is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for path in getattr(args, "compare", None) or ():
        if not path.exists():
            parser.error(f"--compare: no such file or directory {path}")
    for option in ("client", "plaintext"):
        path = getattr(args, option, None)
        if path is not None and not os.access(path, os.X_OK):
            parser.error(f"--{option}: not an executable file: {path}")
    wheel = getattr(args, "baseline_wheel", None)
    if wheel is not None and not (wheel.is_file() and wheel.name.endswith(".whl")):
        parser.error(f"--baseline-wheel: not a wheel file: {wheel}")
    if BASE in (getattr(args, "contenders", None) or ()) and wheel is None:
        parser.error(f"--contenders {BASE} needs --baseline-wheel WHEEL")
    if hasattr(args, "compare"):
        args.baselines = _baselines(args.compare)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
