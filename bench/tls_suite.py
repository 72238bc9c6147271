"""The TLS suite's measurements (bench/README.md, "TLS suite").

One measurement: a fresh server process (`tls_servers.py`) with TLS on,
pinned to the measured CPU, serving `http_app.py` on a free port of
127.0.0.1 with the workload's certificate (ECDSA P-256 or RSA 2048, made
at bench time by `openssl req`); the endpoint's response checked over
HTTPS; then a warm-up and the measured run, the load pinned to the load CPU:

- keep-alive: `wrk -t1 -c64` on `https://127.0.0.1:PORT/...` (TLS 1.3, the
  HTTP suite's `http_wrk.lua` and workloads); the server's CPU time (its
  process tree, from /proc) read just before and after wrk, as in
  `http_suite.py`; the app's call count checked the same way.
- handshakes: `xtask tls-client` (rustls + ring) with 16 connections, each
  connect → handshake → `GET /` with `Connection: close` → read to EOF →
  close; no resumption (every handshake full) or `--resume`.  The client
  announces its window's edges on stdout; the server's CPU time is read at
  those two moments.  The figure "req_per_cpu_s" is then handshakes (each
  with its request) per server CPU-second; the client's own CPU share is
  recorded to show it did not set the pace.

Peak RSS per connection: (the tree's peak RSS after the run − its RSS
before the load) / connections.

`ferroloop-http` (tls_servers.PLAIN) takes the keep-alive workloads over
plain `http://`, checked and counted exactly as in the HTTP suite.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cpus
import http_suite
import procstat
import rounds
import tls_servers
from benchenv import BenchEnv
from echo_suite import Failed, JsonLines, stderr_tail
from http_suite import Placement, free_port, start_server, stop
from http_workloads import WORKLOADS as HTTP_WORKLOADS
from summary import SUBJECT
from tls_workloads import KEEPALIVE, WORKLOADS, TlsWorkload

__all__ = ["Placement", "Timing", "run"]

HANDSHAKE_CONNS = 16
WARMUP_S = 2
DURATION_S = 8
QUICK_WARMUP_S = 1
QUICK_DURATION_S = 2
CLIENT_SLACK_S = 30.0
REQUEST_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Timing:
    warmup_s: int
    duration_s: int
    conns: int = http_suite.CONNECTIONS
    threads: int = http_suite.THREADS
    handshake_conns: int = HANDSHAKE_CONNS


def _context() -> ssl.SSLContext:
    # Our own self-signed certificate: the check is of the response.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _request(port: int, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, timeout=REQUEST_TIMEOUT_S, context=_context()
    )
    try:
        headers = {"Content-Type": "application/octet-stream"} if body else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise Failed("error", f"{method} {path} over TLS: {type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


def check_response(port: int, http_name: str) -> None:
    w = HTTP_WORKLOADS[http_name]
    status, got = _request(port, w.method, w.path, b"x" * w.body_size if w.body_size else None)
    if status != 200 or got != w.body:
        raise Failed(
            "failed verification",
            f"{w.method} {w.path} over TLS: status {status}, body {got[:80]!r}, "
            f"expected 200 {w.body[:80]!r}",
        )


def app_count(port: int) -> int:
    status, body = _request(port, "GET", "/__count", None)
    if status != 200:
        raise Failed("error", f"GET /__count over TLS: status {status}")
    return int(body)


def run_wrk(
    wrk: str, port: int, http_name: str, seconds: int, timing: Timing, cpu: int, tls: bool = True
) -> dict:
    """One wrk run over HTTPS (or HTTP): its WRK_RESULT figures (http_wrk.lua)."""
    workload = HTTP_WORKLOADS[http_name]
    argv = http_suite.wrk_command(wrk, port, workload, seconds, timing)
    if tls:
        argv[-1] = argv[-1].replace("http://", "https://", 1)
    env = {k: v for k, v in os.environ.items() if k != "WRK_POST_BYTES"}
    if workload.body_size:
        env["WRK_POST_BYTES"] = str(workload.body_size)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env,
            timeout=seconds + http_suite.WRK_SLACK_S, preexec_fn=cpus.pin_to(cpu),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise Failed("error", f"wrk did not finish within {seconds + 30} s") from None
    for line in proc.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            return json.loads(line.split(" ", 1)[1])
    tail = " | ".join((proc.stderr + proc.stdout).strip().splitlines()[-3:])
    raise Failed("error", f"wrk exited {proc.returncode} without a result: {tail}")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _keepalive(
    wrk, port, proc, w: TlsWorkload, timing: Timing, placement: Placement, tls: bool
) -> dict:
    count_calls = app_count if tls else http_suite.app_count
    run_wrk(wrk, port, w.http, timing.warmup_s, timing, placement.client_cpu, tls)
    time.sleep(http_suite.SETTLE_S)
    count0 = count_calls(port)
    tree = procstat.process_tree(proc.pid)
    client0 = _children_cpu_s()
    cpu0, t0 = procstat.tree_cpu_seconds(tree), time.monotonic()
    figures = run_wrk(wrk, port, w.http, timing.duration_s, timing, placement.client_cpu, tls)
    cpu1, t1 = procstat.tree_cpu_seconds(tree), time.monotonic()
    client_cpu_s = _children_cpu_s() - client0
    time.sleep(http_suite.SETTLE_S)
    count = count_calls(port) - count0
    http_suite.verify(figures, count, timing)
    return {
        "conns": timing.conns,
        "requests": figures["requests"],
        "seconds": figures["duration_us"] / 1e6,
        "server_cpu_s": cpu1 - cpu0,
        "client_cpu_s": client_cpu_s,
        "window_s": t1 - t0,
        "p50_ms": figures["p50_us"] / 1000,
        "p99_ms": figures["p99_us"] / 1000,
        "app_calls": count,
    }


def _handshakes(client: Path, port, proc, w: TlsWorkload, timing: Timing, placement) -> dict:
    argv = [str(client), "tls-client", "--addr", f"127.0.0.1:{port}", "--path", "/",
            "--conns", str(timing.handshake_conns), "--warmup", str(timing.warmup_s),
            "--duration", str(timing.duration_s)]  # fmt: skip
    if w.resume:
        argv.append("--resume")
    tree = procstat.process_tree(proc.pid)
    with tempfile.TemporaryFile() as client_err:
        load = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=client_err, stdin=subprocess.DEVNULL,
            preexec_fn=cpus.pin_to(placement.client_cpu),
        )  # fmt: skip
        try:
            lines = JsonLines(load, "tls-client", client_err)
            lines.expect("measure_start", timing.warmup_s + CLIENT_SLACK_S)
            cpu0, t0 = procstat.tree_cpu_seconds(tree), time.monotonic()
            lines.expect("measure_end", timing.duration_s + CLIENT_SLACK_S)
            cpu1, t1 = procstat.tree_cpu_seconds(tree), time.monotonic()
            result = lines.expect("result", CLIENT_SLACK_S)
            # wait4: this child's own CPU time (it exits right after its result).
            _, status, usage = os.wait4(load.pid, 0)
            load.returncode = code = os.waitstatus_to_exitcode(status)
            client_cpu_s = usage.ru_utime + usage.ru_stime
        finally:
            if load.poll() is None:
                load.kill()
                load.wait()
        if code != 0 or result["failed"]:
            raise Failed(
                "failed verification",
                f"tls-client: {result['failed']} connections failed: {result['errors'][:3]}",
            )
    if not result["handshakes"]:
        raise Failed("error", "tls-client completed no handshake")
    if w.resume and result["resumed"] < 0.9 * result["handshakes"]:
        raise Failed(
            "failed verification",
            f"only {result['resumed']:,} of {result['handshakes']:,} handshakes resumed",
        )
    if not w.resume and result["resumed"]:
        raise Failed("failed verification", f"{result['resumed']} resumed with resumption off")
    return {
        "conns": timing.handshake_conns,
        "requests": result["handshakes"],
        "resumed": result["resumed"],
        "seconds": result["seconds"],
        "server_cpu_s": cpu1 - cpu0,
        # The client's CPU over its whole run (warm-up included) / its wall time.
        "client_cpu_s": client_cpu_s,
        "window_s": t1 - t0,
        "client_window_s": timing.warmup_s + timing.duration_s,
    }


def measure(env, wrk, client, certs, server, workload_name, timing, placement) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    w = WORKLOADS[workload_name]
    cert, key = certs[w.cert]
    tls = server != tls_servers.PLAIN
    proc = None
    with tempfile.TemporaryFile() as err:
        try:
            port = free_port()
            argv = tls_servers.command(server, env.python, port, cert, key)
            # ferroloop-http is ferroloop: the same build check.
            started_as = server if tls else SUBJECT
            proc = start_server(env, started_as, argv, port, placement.server_cpu, err)
            if tls:
                check_response(port, w.http or "plaintext")
            else:
                http_suite.check_responses(port, runs_app=True)
            rss_before_kib = procstat.tree_rss_kib(procstat.process_tree(proc.pid))
            if w.kind == KEEPALIVE:
                got = _keepalive(wrk, port, proc, w, timing, placement, tls)
            else:
                got = _handshakes(client, port, proc, w, timing, placement)
            if proc.poll() is not None:
                raise Failed("error", "server exited during the run")
            peak_rss_kib = procstat.tree_peak_rss_kib(procstat.process_tree(proc.pid))
            got["server_exit"] = stop(proc)
        except Failed as failure:
            record = {"status": failure.status, "error": str(failure)}
            tail = stderr_tail(err, lines=10)
            return record | ({"server_stderr_tail": tail} if tail else {})
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            if proc is not None and proc.poll() is None:
                stop(proc)
    if got["server_cpu_s"] <= 0:
        return {"status": "error", "error": "no server CPU time in the measured window"}
    return {
        "status": "ok",
        **got,
        "req_per_s": got["requests"] / got["seconds"],
        "req_per_cpu_s": got["requests"] / got["server_cpu_s"],
        "server_cpu_pct": 100 * got["server_cpu_s"] / got["window_s"],
        "peak_rss_mib": peak_rss_kib / 1024,
        "rss_before_mib": rss_before_kib / 1024,
        "kib_per_conn": max(0, peak_rss_kib - rss_before_kib) / got["conns"],
    }


def run(env: BenchEnv, wrk: str, client: Path, certs: dict, servers: list[str],
        workloads: list[str], round_count: int, timing: Timing, placement: Placement,
        progress: Callable[[dict], None]) -> list[dict]:  # fmt: skip
    """All measurements, in the order taken (see rounds.run)."""

    def one(server: str, workload: str) -> dict:
        return measure(env, wrk, client, certs, server, workload, timing, placement)

    return rounds.run(servers, workloads, round_count, one, progress, tls_servers.takes_part)
