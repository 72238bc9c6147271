"""Run CPython's own asyncio test suite (``test.test_asyncio``) against an event loop.

    python tests/conformance/run.py --loop ferroloop [--module M ...] [--list-failures]
                                    [--json PATH] [--jobs N] [--write-expected PATH]
                                    [--include-out-of-scope]

Runs the suite of the interpreter running this script. ``--loop asyncio`` runs
the same generated classes on the stdlib loop: the sanity check, which must
report 100 %. Exit status: 0 when every in-scope failure is listed in the
expected-failures file and no listed test passes; 1 otherwise; 2 when the run
cannot start (loop not importable, bad arguments or files). Both files may
key entries by Python version (versions.py); the running interpreter's apply.
``--include-out-of-scope`` also runs the scope.toml-listed tests, apart, and
reports how many pass; that never changes the exit status.

See README.md beside this file.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import expected
import harness
import report
import versions
from scope import ScopeRules
from supervise import ModuleJob
from wire import PACKAGE, TestRecord

HERE = Path(__file__).resolve().parent
# Per loop: the expected-failures file used without --expected (None: expect none).
DEFAULT_EXPECTED: dict[str, Path | None] = {
    "ferroloop": HERE / "expected-failures.toml",
    "asyncio": None,
}
POLL_INTERVAL = 0.05
# The informational pass's watchdog (at most --timeout): listed tests that patch
# stdlib internals often just wait forever on the loop under test.
OUT_OF_SCOPE_TIMEOUT = 10.0


class UsageError(Exception):
    pass


def discover_modules() -> dict[str, Path]:
    """The suite's test modules, by short name, without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"{PACKAGE} is not installed for {sys.executable} (Debian: python3-test?)")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    return {path.stem: path for path in sorted(package_dir.glob("test_*.py"))}


def select_modules(available: dict[str, Path], wanted: list[str]) -> list[str]:
    """Modules to run, largest file first (a fair proxy for run time, so the pool ends together)."""
    if not wanted:
        chosen = list(available)
    else:
        chosen = []
        for name in wanted:
            short = name.removeprefix(PACKAGE + ".")
            short = short if short.startswith("test_") else f"test_{short}"
            if short not in available:
                raise UsageError(f"no module {name!r} in {PACKAGE}; have: {', '.join(available)}")
            chosen.append(short)
    return sorted(set(chosen), key=lambda m: available[m].stat().st_size, reverse=True)


def run_jobs(jobs: list[ModuleJob], parallel: int) -> None:
    pending = collections.deque(jobs)
    running: list[ModuleJob] = []
    finished = 0
    try:
        while pending or running:
            while pending and len(running) < parallel:
                job = pending.popleft()
                job.start()
                running.append(job)
            time.sleep(POLL_INTERVAL)
            for job in list(running):
                if job.poll():
                    running.remove(job)
                    finished += 1
                    _progress(job, finished, len(jobs))
    finally:
        for job in running:
            job.kill()


def _progress(job: ModuleJob, finished: int, total: int) -> None:
    c = report.Counts.of(job.records.values())
    failing = c.failed + c.errors + c.timeouts + len(job.fixture_errors)
    restarts = f", {job.attempts} processes" if job.attempts > 1 else ""
    oos = "foreign loop" if job.out_of_scope else "out of scope"
    name = f"{job.module} (listed)" if job.out_of_scope else job.module
    print(
        f"[{finished:>2}/{total}] {name:<31} {c.passed:4} passed {failing:4} failing "
        f"{c.skipped:4} skipped {c.out_of_scope:4} {oos}  ({job.elapsed:.1f} s{restarts})",
        file=sys.stderr,
        flush=True,
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=harness.LOOP_NAMES, default="ferroloop", help="loop under test")
    parser.add_argument(
        "--module", action="append", default=[], metavar="M", help="run only this module (repeatable), e.g. test_events"
    )
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="child processes in parallel (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="per-test watchdog in seconds (default 30)"
    )
    parser.add_argument(
        "--expected", type=Path, metavar="PATH", help="expected-failures file (default: per loop, see README)"
    )
    parser.add_argument("--list-failures", action="store_true", help="print failing test ids with a one-line summary")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write counts and per-test outcomes as JSON")
    parser.add_argument(
        "--write-expected", type=Path, metavar="PATH", help="write a draft expected-failures file for current failures"
    )
    parser.add_argument("--work-dir", type=Path, metavar="DIR", help="keep child logs here (default: a temp dir)")
    parser.add_argument(
        "--include-out-of-scope",
        action="store_true",
        help="also run the scope.toml-listed tests, apart, and report how many pass (never affects the verdict)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs and --timeout must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        modules = select_modules(discover_modules(), args.module)
        harness.load_loop(args.loop)  # fail here, once, rather than in every child
        rules = ScopeRules.load()
        expected_file = expected.load(args.expected or DEFAULT_EXPECTED[args.loop])
    except harness.LoopUnavailable as exc:
        print(f"error: {exc}\nBuild and install ferroloop into {sys.executable} first.", file=sys.stderr)
        return 2
    except (UsageError, ValueError, expected.ExpectedFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    expectations = expected_file.entries
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="conformance-"))
    print(
        f"{PACKAGE} of Python {sys.version.split()[0]} on loop {args.loop!r}: {len(modules)} modules, {args.jobs} jobs"
        f"\nentries for Python {versions.running_label()}: scope.toml {len(rules.entries)} "
        f"(+{rules.other_versions} for other versions only), expected failures {len(expectations)} "
        f"(+{len(expected_file.other_versions)} for other versions only)",
        file=sys.stderr,
    )
    started = time.monotonic()
    jobs = [ModuleJob(m, args.loop, work_dir, args.timeout) for m in modules]
    listed_modules = rules.modules() if args.include_out_of_scope else set()
    # Apart from the verdict's jobs (own processes, own records), and after them.
    info_timeout = min(args.timeout, OUT_OF_SCOPE_TIMEOUT)
    info_jobs = [
        ModuleJob(m, args.loop, work_dir, info_timeout, out_of_scope=True) for m in modules if m in listed_modules
    ]
    run_jobs(jobs + info_jobs, args.jobs)

    records: dict[str, TestRecord] = {}
    for job in jobs:
        records.update(job.records)
        records.update((r.id, r) for r in job.fixture_errors)
    verdict = expected.judge(records, expectations, set(modules))

    out = sys.stdout
    counts = report.module_counts(jobs)
    total = report.print_table(counts, out)
    out.write(
        f"\nOverall conformance on {args.loop}: {report.format_rate(total.rate)} "
        f"({total.passed} of {total.rated} in-scope tests passed; {total.skipped} skipped themselves, "
        f"{total.out_of_scope} out of scope; {time.monotonic() - started:.0f} s)\n"
    )
    report.print_notes(jobs, out)
    if args.include_out_of_scope:
        report.print_out_of_scope_run(info_jobs, rules, out, per_entry=args.list_failures)
    else:
        not_run = sum(1 for r in records.values() if r.outcome == "out-of-scope" and not r.ran)
        out.write(f"\n{not_run} scope.toml-listed tests not run (--include-out-of-scope runs them, for information).\n")
    if args.list_failures:
        report.print_failures(records, expectations, out)
    report.print_verdict(verdict, out)
    if args.json:
        doc = report.document(args.loop, jobs, counts, total, expectations, verdict, info_jobs)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    if args.write_expected:
        n = expected.write_draft(args.write_expected, records, expected_file, set(modules))
        out.write(f"\nWrote {n} entries to {args.write_expected}\n")

    if verdict.ok and not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    else:
        out.write(f"\nChild logs: {work_dir}\n")
    out.write("\nRESULT: " + ("OK" if verdict.ok else "FAILED") + "\n")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
