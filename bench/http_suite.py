"""The HTTP suite's measurements (bench/README.md, "HTTP suite").

One measurement: a fresh server process (`http_servers.py`) pinned to the
measured CPU, serving `http_app.py` on a free port of 127.0.0.1; each
endpoint's response checked byte for byte; a wrk warm-up; then the measured
wrk run (`wrk -t1 -c64 -dNs --latency`, `http_wrk.lua`) pinned to the load
CPU.  The server's CPU time (its whole process tree, from /proc) is read
just before wrk starts and just after it exits; its peak RSS before it is
stopped with SIGTERM (SIGKILL after a grace period).

Verification: every endpoint's status, content-type, content-length and
body before the run; no socket error and no non-2xx response in the run;
and, for servers running our app, the app's call count over the measured
run (`GET /__count` before and after, itself not counted) at least wrk's
completed requests and at most one more per connection: wrk stops with up
to one request in flight on each connection, which the app may still have
served, so an exact match is not possible from outside.  A server started
by `http_serve.py` that imported the wrong build (`benchenv`'s
`check_origin`, e.g. ferroloop-base not from the baseline wheel) is an error.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cpus
import http_servers
import procstat
import rounds
from benchenv import BenchEnv
from debian_tools import ensure_tool
from echo_suite import Failed, stderr_tail
from http_serve import MODULE_LINE
from http_workloads import WORKLOADS, HttpWorkload

BENCH = Path(__file__).resolve().parent
WRK_SCRIPT = BENCH / "http_wrk.lua"

CONNECTIONS = 64
THREADS = 1
WARMUP_S = 2
DURATION_S = 8
QUICK_WARMUP_S = 1
QUICK_DURATION_S = 2

STARTUP_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 10.0
WRK_SLACK_S = 30.0
STOP_TIMEOUT_S = 10.0
# After a wrk run, time for the requests it left in flight to reach the app
# before the count is read.
SETTLE_S = 0.3


@dataclass(frozen=True)
class Timing:
    warmup_s: int
    duration_s: int
    conns: int = CONNECTIONS
    threads: int = THREADS


@dataclass(frozen=True)
class Placement:
    server_cpu: int
    client_cpu: int


def ensure_wrk() -> str:
    """wrk's path (see `debian_tools.ensure_tool`)."""
    return ensure_tool("wrk", "wrk")


def wrk_version(wrk: str) -> str:
    """"wrk 4.1.0 [epoll]" from its banner, without the copyright."""
    proc = subprocess.run([wrk, "--version"], capture_output=True, text=True)
    first = ((proc.stdout + proc.stderr).strip().splitlines() or ["wrk ?"])[0]
    return first.split(" Copyright")[0].strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exited(proc: subprocess.Popen, err, when: str) -> str:
    """"server exited 3 before listening: <its last words>"."""
    code = proc.returncode
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited {code}"
    tail = stderr_tail(err, lines=4)
    return f"server {how} {when}" + (f": {tail}" if tail else "")


def wait_ready(proc: subprocess.Popen, port: int, err) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failed("error", _exited(proc, err, "before listening"))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise Failed("error", f"server not listening on port {port} after {STARTUP_TIMEOUT_S:.0f} s")


def _request(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None):
    headers = {"Content-Type": "application/octet-stream"} if body else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response, response.read()


def check_responses(port: int, runs_app: bool) -> None:
    """Each endpoint once, on one keep-alive connection, against the spec."""
    expected = [("plaintext", WORKLOADS["plaintext"], 200)]
    if runs_app:
        expected += [("json", WORKLOADS["json"], 200), ("post4k", WORKLOADS["post4k"], 200)]
        short = HttpWorkload("POST", "/post", 100, "text/plain", b"100")
        expected.append(("post of 100 bytes", short, 400))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    try:
        for what, w, status in expected:
            body = b"x" * w.body_size if w.method == "POST" else None
            try:
                response, got = _request(conn, w.method, w.path, body)
            except (OSError, http.client.HTTPException) as exc:
                raise Failed("error", f"{what}: {w.method} {w.path}: {type(exc).__name__}: {exc}")
            problems = []
            if response.status != status:
                problems.append(f"status {response.status}, expected {status}")
            if got != w.body:
                problems.append(f"body {got[:80]!r}, expected {w.body[:80]!r}")
            length = response.getheader("content-length")
            if length != str(len(got)):
                problems.append(f"content-length {length!r} for a {len(got)}-byte body")
            ctype = response.getheader("content-type") or ""
            if not ctype.startswith(w.content_type):
                problems.append(f"content-type {ctype!r}, expected {w.content_type}")
            if problems:
                raise Failed(
                    "failed verification", f"{what}: {w.method} {w.path}: " + "; ".join(problems)
                )
    finally:
        conn.close()


def served_module(err) -> str | None:
    """The module file `http_serve.py` reported in its output (`err`, which
    the server is still writing: read without moving the shared offset)."""
    fd = err.fileno()
    text = os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")
    for line in text.splitlines():
        if line.startswith(MODULE_LINE):
            return json.loads(line[len(MODULE_LINE) :])["module_file"]
    return None


def app_count(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    try:
        response, body = _request(conn, "GET", "/__count", None)
    except (OSError, http.client.HTTPException) as exc:
        raise Failed("error", f"GET /__count: {type(exc).__name__}: {exc}") from None
    finally:
        conn.close()
    if response.status != 200:
        raise Failed("error", f"GET /__count: status {response.status}")
    return int(body)


def wrk_command(
    wrk: str, port: int, workload: HttpWorkload, seconds: int, timing: Timing
) -> list[str]:
    return [
        wrk,
        f"-t{timing.threads}",
        f"-c{timing.conns}",
        f"-d{seconds}s",
        "--latency",
        "-s",
        str(WRK_SCRIPT),
        f"http://127.0.0.1:{port}{workload.path}",
    ]


def run_wrk(
    wrk: str, port: int, workload: HttpWorkload, seconds: int, timing: Timing, cpu: int | None
) -> tuple[dict, str]:
    """One wrk run: its WRK_RESULT figures and its whole stdout (`cpu`
    None: not pinned, as in the workers suite)."""
    env = dict(os.environ)
    env.pop("WRK_POST_BYTES", None)
    if workload.body_size:
        env["WRK_POST_BYTES"] = str(workload.body_size)
    try:
        proc = subprocess.run(
            wrk_command(wrk, port, workload, seconds, timing),
            capture_output=True,
            text=True,
            env=env,
            timeout=seconds + WRK_SLACK_S,
            preexec_fn=None if cpu is None else cpus.pin_to(cpu),
        )
    except subprocess.TimeoutExpired:
        raise Failed("error", f"wrk did not finish within {seconds + WRK_SLACK_S:.0f} s") from None
    for line in proc.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            return json.loads(line.split(" ", 1)[1]), proc.stdout
    tail = " | ".join((proc.stderr + proc.stdout).strip().splitlines()[-3:])
    raise Failed("error", f"wrk exited {proc.returncode} without a result: {tail}")


def stop(proc: subprocess.Popen) -> int | None:
    """SIGTERM to the server's process group, SIGKILL after a grace period;
    its exit status (negative: the signal that ended it)."""
    if proc.poll() is not None:
        return proc.returncode
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return None


def start_server(
    env: BenchEnv, server: str, argv: list[str], port: int, cpu: int | None, err
) -> subprocess.Popen:
    """Start `server` (`argv`, cwd bench/) pinned to `cpu` (None: not
    pinned, for servers with several workers), in its own
    process group (stopped as one by `stop`), its output to `err`; return
    once it listens on `port`, having checked that a server started by
    `http_serve.py` imported the intended build.  Shared with the
    WebSocket suite."""
    proc = subprocess.Popen(
        argv,
        cwd=BENCH,
        env=env.environ(server),
        stdin=subprocess.DEVNULL,
        stdout=err,
        stderr=err,
        start_new_session=True,
        preexec_fn=None if cpu is None else cpus.pin_to(cpu),
    )
    try:
        wait_ready(proc, port, err)
        if server in http_servers.SERVED_BY_HTTP_SERVE:
            wrong = env.check_origin(server, served_module(err))
            if wrong is not None:
                raise Failed("error", f"wrong build: {wrong}")
    except BaseException:
        stop(proc)
        raise
    return proc


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def verify(figures: dict, count: int | None, timing: Timing) -> None:
    sockets = {k: figures[k] for k in ("connect", "read", "write", "timeout") if figures[k]}
    if sockets:
        raise Failed(
            "error", "wrk socket errors: " + ", ".join(f"{k} {v}" for k, v in sockets.items())
        )
    if figures["status"]:
        raise Failed(
            "failed verification",
            f"{figures['status']:,} non-2xx/3xx responses of {figures['requests']:,}",
        )
    if not figures["requests"]:
        raise Failed("error", "wrk completed no request")
    if count is not None and not (
        figures["requests"] <= count <= figures["requests"] + timing.conns
    ):
        raise Failed(
            "failed verification",
            f"the app was called {count:,} times over the run, wrk completed "
            f"{figures['requests']:,} requests on {timing.conns} connections",
        )


def measure(
    env: BenchEnv,
    wrk: str,
    plaintext: Path | None,
    server: str,
    workload_name: str,
    timing: Timing,
    placement: Placement,
) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    workload = WORKLOADS[workload_name]
    runs_app = http_servers.SERVERS[server].runs_app
    proc = None
    exit_status = None
    with tempfile.TemporaryFile() as err:
        try:
            port = free_port()
            proc = start_server(
                env,
                server,
                http_servers.command(server, env.python, port, plaintext),
                port,
                placement.server_cpu,
                err,
            )
            check_responses(port, runs_app)
            run_wrk(wrk, port, workload, timing.warmup_s, timing, placement.client_cpu)
            time.sleep(SETTLE_S)
            if proc.poll() is not None:
                raise Failed("error", _exited(proc, err, "during the warm-up"))
            count0 = app_count(port) if runs_app else None
            tree = procstat.process_tree(proc.pid)
            client0 = _children_cpu_s()
            cpu0, t0 = procstat.tree_cpu_seconds(tree), time.monotonic()
            figures, _ = run_wrk(
                wrk, port, workload, timing.duration_s, timing, placement.client_cpu
            )
            cpu1, t1 = procstat.tree_cpu_seconds(tree), time.monotonic()
            client_cpu_s = _children_cpu_s() - client0
            if proc.poll() is not None:
                raise Failed("error", _exited(proc, err, "during the run"))
            time.sleep(SETTLE_S)
            count = app_count(port) - count0 if runs_app else None
            peak_rss_kib = procstat.tree_peak_rss_kib(procstat.process_tree(proc.pid))
            exit_status = stop(proc)
            verify(figures, count, timing)
        except Failed as failure:
            record = {"status": failure.status, "error": str(failure)}
            tail = stderr_tail(err, lines=10)
            return record | ({"server_stderr_tail": tail} if tail else {})
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            if proc is not None and proc.poll() is None:
                stop(proc)

    server_cpu_s = cpu1 - cpu0
    if server_cpu_s <= 0:
        return {"status": "error", "error": "no server CPU time in the measured window"}
    seconds = figures["duration_us"] / 1e6
    window_s = t1 - t0
    return {
        "status": "ok",
        "conns": timing.conns,
        "requests": figures["requests"],
        "seconds": seconds,
        "req_per_s": figures["requests"] / seconds,
        "p50_ms": figures["p50_us"] / 1000,
        "p90_ms": figures["p90_us"] / 1000,
        "p99_ms": figures["p99_us"] / 1000,
        "max_ms": figures["max_us"] / 1000,
        "req_per_cpu_s": figures["requests"] / server_cpu_s,
        "server_cpu_pct": 100 * server_cpu_s / window_s,
        "peak_rss_mib": peak_rss_kib / 1024,
        "server_cpu_s": server_cpu_s,
        "client_cpu_s": client_cpu_s,
        "window_s": window_s,
        "server_processes": len(tree),
        "socket_errors": sum(figures[k] for k in ("connect", "read", "write", "timeout")),
        "non_2xx": figures["status"],
        # app calls over the run beyond wrk's completed requests (requests
        # in flight when wrk stopped); None when the server runs no app
        "app_calls": count,
        "in_flight_at_stop": None if count is None else count - figures["requests"],
        "server_exit": exit_status,
    }


def run(
    env: BenchEnv,
    wrk: str,
    plaintext: Path | None,
    servers: list[str],
    workloads: list[str],
    round_count: int,
    timing: Timing,
    placement: Placement,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken (see rounds.run); a server only
    takes part in the workloads it serves (rust-plaintext: plaintext)."""

    def one(server: str, workload: str) -> dict:
        return measure(env, wrk, plaintext, server, workload, timing, placement)

    return rounds.run(servers, workloads, round_count, one, progress, _takes_part)


def _takes_part(server: str, workload: str) -> bool:
    only = http_servers.SERVERS[server].workloads
    return only is None or workload in only
