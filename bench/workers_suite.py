"""The workers suite: each server with two worker
processes on the plaintext workload, side by side.

    ferroloop http_app:app --workers 2   uvicorn --workers 2 (httptools, uvloop)
    granian --workers 2                  (the HTTP suite's settings otherwise)

One measurement: a fresh server (`http_suite.start_server`, not pinned:
its two workers and wrk share the machine's cores, so the figures are
reported, never gated), every endpoint checked (`http_suite.
check_responses`), a wrk warm-up, then `wrk -t2 -c64 -dNs` measured.
Figures: requests/s; requests per server CPU-second (every process of
the server's tree: supervisor and workers); and how evenly the load
spread: each worker's share of the workers' CPU time over the window
(the two busiest processes other than the one started, which is the
supervisor for all three), and `evenness` = the smaller share over the
larger (1.0 = perfectly even).  Verified: no socket error, no non-2xx
response (the app's per-process call count cannot be summed from
outside, so it is not checked here; the HTTP suite checks it).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import http_servers
import http_suite
import procstat
import report
import rounds
from benchenv import BenchEnv
from echo_suite import Failed, stderr_tail
from http_workloads import WORKLOADS

WORKERS = 2
THREADS = 2
WORKLOAD = "plaintext"
# Servers: the HTTP suite's (dists, settings), run with two workers.
NAMES = ("ferroloop", "uvicorn", "granian")
CORE = ("ferroloop",)
FERROLOOP_ARGS = ("--no-access-log", "--log-level", "warning", "--workers", str(WORKERS))


def _with_workers(args: tuple[str, ...]) -> list[str]:
    """The HTTP suite's command line for a server with `--workers 2`."""
    out = list(args)
    out[out.index("--workers") + 1] = str(WORKERS)
    return out


def settings(name: str) -> str:
    if name == "ferroloop":
        return "ferroloop http_app:app " + " ".join(FERROLOOP_ARGS)
    base = http_servers.UVICORN_ARGS if name == "uvicorn" else http_servers.GRANIAN_ARGS
    return f"{name} " + " ".join(_with_workers(base))


def command(name: str, python: Path, port: int) -> list[str]:
    """`name`'s command line with two workers on 127.0.0.1:`port` (cwd bench/)."""
    where = ["--host", "127.0.0.1", "--port", str(port)]
    if name == "ferroloop":
        return [str(python), "-m", "ferroloop", *FERROLOOP_ARGS, *where, http_servers.APP_SPEC]
    argv = http_servers.command(name, python, port, None)
    base = http_servers.UVICORN_ARGS if name == "uvicorn" else http_servers.GRANIAN_ARGS
    start = argv.index(base[0])
    return argv[:start] + _with_workers(base) + argv[start + len(base) :]


def _workers(root: int) -> list[int]:
    return [p for p in procstat.process_tree(root) if p != root]


def _wait_workers(root: int, proc: subprocess.Popen, err) -> list[int]:
    deadline = time.monotonic() + http_suite.STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failed("error", f"server exited {proc.returncode}: {stderr_tail(err, lines=4)}")
        found = _workers(root)
        if len(found) >= WORKERS:
            return found
        time.sleep(0.05)
    raise Failed("error", f"fewer than {WORKERS} worker processes after {http_suite.STARTUP_TIMEOUT_S:.0f} s")


def _own_cpu(pids: list[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        try:
            found[pid] = procstat.cpu_seconds(pid)
        except OSError:
            continue
    return found


def measure(env: BenchEnv, wrk: str, server: str, timing: http_suite.Timing) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    workload = WORKLOADS[WORKLOAD]
    proc = None
    with tempfile.TemporaryFile() as err:
        try:
            port = http_suite.free_port()
            proc = http_suite.start_server(env, server, command(server, env.python, port), port, None, err)
            http_suite.check_responses(port, runs_app=True)
            _wait_workers(proc.pid, proc, err)
            http_suite.run_wrk(wrk, port, workload, timing.warmup_s, timing, None)
            tree = procstat.process_tree(proc.pid)
            own0 = _own_cpu(tree)
            cpu0, t0 = procstat.tree_cpu_seconds(tree), time.monotonic()
            figures, _ = http_suite.run_wrk(wrk, port, workload, timing.duration_s, timing, None)
            cpu1, t1 = procstat.tree_cpu_seconds(tree), time.monotonic()
            own1 = _own_cpu(tree)
            if proc.poll() is not None:
                raise Failed("error", f"server exited {proc.returncode} during the run")
            if set(procstat.process_tree(proc.pid)) != set(tree):
                raise Failed("error", "the server's processes changed during the run")
            http_suite.stop(proc)
            http_suite.verify(figures, None, timing)
        except Failed as failure:
            tail = stderr_tail(err, lines=10)
            return {"status": failure.status, "error": str(failure)} | ({"server_stderr_tail": tail} if tail else {})
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            if proc is not None and proc.poll() is None:
                http_suite.stop(proc)
    server_cpu_s = cpu1 - cpu0
    if server_cpu_s <= 0:
        return {"status": "error", "error": "no server CPU time in the measured window"}
    per_process = {pid: own1[pid] - own0[pid] for pid in own1 if pid in own0}
    busiest = sorted((s for p, s in per_process.items() if p != tree[0]), reverse=True)[:WORKERS]
    worker_total = sum(busiest)
    shares = [s / worker_total for s in busiest] if worker_total > 0 else []
    seconds = figures["duration_us"] / 1e6
    return {
        "status": "ok",
        "requests": figures["requests"],
        "req_per_s": figures["requests"] / seconds,
        "req_per_cpu_s": figures["requests"] / server_cpu_s,
        "server_cpu_s": server_cpu_s,
        "window_s": t1 - t0,
        "supervisor_cpu_s": per_process.get(tree[0], 0.0),
        "worker_cpu_s": busiest,
        "worker_shares": shares,
        "evenness": min(shares) / max(shares) if len(shares) == WORKERS and max(shares) > 0 else 0.0,
        "server_processes": len(tree),
        "p50_ms": figures["p50_us"] / 1000,
        "p99_ms": figures["p99_us"] / 1000,
    }


def run(
    env: BenchEnv, wrk: str, servers: list[str], round_count: int, timing: http_suite.Timing,
    progress: Callable[[dict], None],
) -> list[dict]:
    return rounds.run(servers, [WORKLOAD], round_count, lambda s, _w: measure(env, wrk, s, timing), progress)


def summarize(records: list[dict], servers: list[str]) -> dict:
    """Per server: medians over the ok rounds."""
    out = {}
    for server in servers:
        ok = [r for r in records if r["contender"] == server and r["status"] == "ok"]
        if not ok:
            failed = next((r for r in records if r["contender"] == server), {"error": "not run"})
            out[server] = {"status": "failed", "error": failed.get("error")}
            continue
        out[server] = {"status": "ok", "rounds": len(ok)} | {
            f"median_{k}": statistics.median(r[k] for r in ok)
            for k in ("req_per_s", "req_per_cpu_s", "evenness", "p50_ms", "p99_ms", "supervisor_cpu_s")
        }
    return {WORKLOAD: {"contenders": out}}


def markdown(result: dict) -> str:
    m = result["method"]
    text = (
        f"{m['rounds']} round(s), servers rotated each round; a fresh server with {WORKERS} workers per "
        f"measurement, not pinned (it shares the {result['host']['nproc']} CPUs with wrk: reported, never "
        f"gated), `wrk -t{m['threads']} -c{m['conns']} -d{m['warmup_s']}s` warm-up then "
        f"`-d{m['duration_s']}s` measured on `GET /` (plaintext, keep-alive; {m['wrk']})"
        + (" (--quick)" if m["quick"] else "")
    )
    notes = [
        "- servers: " + "; ".join(f"**{n}**: `{how}`" for n, how in m["settings"].items()),
        "- requests per server CPU-second: every process of the server (supervisor + workers); evenness: the "
        "less busy worker's CPU time over the busier one's in the measured window (1.00 = even)",
    ]
    lines = report.header(result, f"Workers benchmark ({WORKERS} workers)", text, notes)
    lines += [
        "| server | requests/s | requests per server CPU-s | evenness | p50 / p99 ms | supervisor CPU-s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, cell in result["workloads"][WORKLOAD]["contenders"].items():
        if cell["status"] != "ok":
            lines.append(f"| {name} | failed: {cell['error']} | | | | |")
            continue
        lines.append(
            f"| {name} | {report.ops(cell['median_req_per_s'])} | {report.ops(cell['median_req_per_cpu_s'])} | "
            f"{cell['median_evenness']:.2f} | {cell['median_p50_ms']:.2f} / {cell['median_p99_ms']:.2f} | "
            f"{cell['median_supervisor_cpu_s']:.2f} |"
        )
    lines.append("")
    lines.append("Cells: medians over rounds.")
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"
