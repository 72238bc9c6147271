"""The WebSocket suite's measurements (bench/README.md, "WebSocket suite").

**Echo** workloads: a fresh server process (`ws_servers.py`) pinned to the
measured CPU, serving `ws_app.py` on a free port of 127.0.0.1; the Rust
load generator (`xtask ws-client`, the same binary for every server)
pinned to the load CPU, 10 connections with one message in flight each.
The client announces the edges of its measured window on stdout; the
server's CPU time (its whole process tree, from /proc) is read at those
two moments, its peak RSS once the client is done.

**Idle**: after a one-connection warm-up (so lazy imports and first-use
allocations are behind us), the server's RSS (VmRSS of its tree) is read,
the client opens 1,000 WebSockets (each handshake offering
permessage-deflate, each connection pinged once), the RSS is read again
while they are open, then the client closes them all.  The figure is the
difference divided by the connections.

Verification: the client checks every echoed byte (after inflating, where
deflate was negotiated), the opcodes, the absence of RSV bits not
negotiated, and the closing handshake; for the servers running `ws_app`,
the app's count of echoed messages over the run must equal the client's
(it is exact: the client has every echo before it closes).  A server that
does not finish the closing handshake within a second, or answers our
close 1000 with another code, is noted (`unclosed`, `bad_close`), not
failed: its echoes were right.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cpus
import procstat
import rounds
import ws_servers
from benchenv import BenchEnv
from echo_suite import (
    Failed,
    JsonLines,
    exit_description,
    last_words,
    stderr_tail,
)
from http_suite import Placement, app_count, free_port, start_server, stop
from ws_workloads import IDLE, WORKLOADS, WsWorkload

__all__ = ["Placement", "Timing", "run"]

WARMUP_S = 1.0
DURATION_S = 5.0
QUICK_WARMUP_S = 0.25
QUICK_DURATION_S = 0.75
# The idle workload's warm-up: one connection, a few messages with deflate.
IDLE_WARMUP = ("--conns", "1", "--size", "4096", "--text", "--deflate",
               "--warmup", "0", "--duration", "0.2")  # fmt: skip

# How long a step may take beyond its nominal time before the measurement
# is declared hung (the client gives up on a silent server after 10 s).
CLIENT_SLACK_S = 30.0
# Opening 1,000 WebSockets one after another.
IDLE_OPEN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Timing:
    warmup_s: float
    duration_s: float


def client_command(client: Path, port: int, workload: WsWorkload, timing: Timing) -> list[str]:
    argv = [str(client), "ws-client", "--addr", f"127.0.0.1:{port}", "--path", "/ws",
            "--conns", str(workload.conns)]  # fmt: skip
    if workload.deflate:
        argv.append("--deflate")
    if workload.kind == IDLE:
        return argv + ["--idle"]
    if workload.text:
        argv.append("--text")
    return argv + ["--size", str(workload.size), "--warmup", f"{timing.warmup_s:g}",
                   "--duration", f"{timing.duration_s:g}"]  # fmt: skip


def _client_failed(result: dict, conns: int) -> None:
    if result["errors"]:
        status = "failed verification" if result["mismatches"] else "error"
        raise Failed(
            status,
            f"{result['errors']} of {conns} connections failed: "
            + "; ".join(result["error_messages"]),
        )


def _run_client(argv: list[str], cpu: int, client_err, timeout: float) -> dict:
    """A client run to its end (the warm-up of the idle workload)."""
    proc = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=client_err, timeout=timeout,
        preexec_fn=cpus.pin_to(cpu),
    )  # fmt: skip
    lines = proc.stdout.decode(errors="replace").strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise Failed("error", f"warm-up client exited {proc.returncode} without a result") from None
    _client_failed(result, int(argv[argv.index("--conns") + 1]))
    return result


def _result(events: JsonLines, load: subprocess.Popen) -> dict:
    """The client's last line, once it has exited."""
    result = events.expect("result", CLIENT_SLACK_S)
    load.wait(timeout=CLIENT_SLACK_S)
    return result


def _reap(load: subprocess.Popen) -> None:
    if load.poll() is None:
        load.kill()
        load.wait()


def _echo(proc, port, client, workload, timing, placement, client_err) -> dict:
    """The measured echo run against a listening server."""
    load = subprocess.Popen(
        client_command(client, port, workload, timing),
        stdout=subprocess.PIPE, stderr=client_err, bufsize=0,
        preexec_fn=cpus.pin_to(placement.client_cpu),
    )  # fmt: skip
    try:
        events = JsonLines(load, "client", client_err)
        tree = procstat.process_tree(proc.pid)
        events.expect("measure_start", timing.warmup_s + CLIENT_SLACK_S)
        server0, client0 = procstat.tree_cpu_seconds(tree), procstat.cpu_seconds(load.pid)
        events.expect("measure_end", timing.duration_s + CLIENT_SLACK_S)
        server1, client1 = procstat.tree_cpu_seconds(tree), procstat.cpu_seconds(load.pid)
        result = _result(events, load)
    finally:
        _reap(load)
    _client_failed(result, workload.conns)
    if not result["messages"]:
        raise Failed("error", "no message echoed in the measured window")
    server_cpu_s = server1 - server0
    if server_cpu_s <= 0:
        raise Failed("error", "no server CPU time in the measured window")
    seconds = result["seconds"]
    return {
        "messages": result["messages"],
        "seconds": seconds,
        "msgs_per_s": result["messages"] / seconds,
        "mib_per_s": result["bytes"] / seconds / 2**20,
        "msgs_per_cpu_s": result["messages"] / server_cpu_s,
        "p50_ms": result["p50_us"] / 1000,
        "p90_ms": result["p90_us"] / 1000,
        "p99_ms": result["p99_us"] / 1000,
        "max_ms": result["max_us"] / 1000,
        "server_cpu_s": server_cpu_s,
        "client_cpu_s": client1 - client0,
        "server_processes": len(tree),
        "total_messages": result["total_messages"],
        "deflate": result["deflate"],
        "deflate_params": result["deflate_params"],
        "unclosed": result["unclosed"],
        "bad_close": result["bad_close"],
    }


def _idle(proc, port, client, workload, timing, placement, client_err) -> dict:
    """Warm up, read RSS, hold `workload.conns` WebSockets open, read it
    again, close them."""
    warmup = [str(client), "ws-client", "--addr", f"127.0.0.1:{port}", "--path", "/ws",
              *IDLE_WARMUP]  # fmt: skip
    warm = _run_client(warmup, placement.client_cpu, client_err, CLIENT_SLACK_S)
    tree = procstat.process_tree(proc.pid)
    before = procstat.tree_rss_kib(tree)
    load = subprocess.Popen(
        client_command(client, port, workload, timing),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=client_err, bufsize=0,
        preexec_fn=cpus.pin_to(placement.client_cpu),
    )  # fmt: skip
    try:
        events = JsonLines(load, "client", client_err)
        opened = events.expect("open", IDLE_OPEN_TIMEOUT_S)
        tree = procstat.process_tree(proc.pid)
        during = procstat.tree_rss_kib(tree)
        load.stdin.close()  # the client closes every connection and reports
        result = _result(events, load)
    finally:
        _reap(load)
    _client_failed(result, workload.conns)
    if opened["failed"]:
        raise Failed("error", f"{opened['failed']} of {workload.conns} connections failed to open")
    return {
        "idle_kib_per_conn": (during - before) / workload.conns,
        "rss_before_mib": before / 1024,
        "rss_open_mib": during / 1024,
        "server_processes": len(tree),
        # echoes of the warm-up (the only messages the app saw)
        "total_messages": warm["total_messages"],
        "deflate": result["deflate"],
        "deflate_params": result["deflate_params"],
        "unclosed": result["unclosed"],
        "bad_close": result["bad_close"],
    }


def measure(
    env: BenchEnv,
    client: Path,
    server: str,
    workload_name: str,
    timing: Timing,
    placement: Placement,
) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    workload = WORKLOADS[workload_name]
    runs_app = ws_servers.SERVERS[server].runs_app
    proc = None
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as client_err:
        try:
            port = free_port()
            argv = ws_servers.command(server, env.python, port)
            proc = start_server(env, server, argv, port, placement.server_cpu, err)
            count0 = app_count(port) if runs_app else None
            run = _idle if workload.kind == IDLE else _echo
            figures = run(proc, port, client, workload, timing, placement, client_err)
            if proc.poll() is not None:
                raise Failed("error", f"server {exit_description(proc, err)} during the run")
            figures["peak_rss_mib"] = (
                procstat.tree_peak_rss_kib(procstat.process_tree(proc.pid)) / 1024
            )
            if runs_app:
                count = app_count(port) - count0
                if count != figures["total_messages"]:
                    raise Failed(
                        "failed verification",
                        f"the app echoed {count:,} messages, the client verified "
                        f"{figures['total_messages']:,}",
                    )
                figures["app_messages"] = count
            figures["server_exit"] = stop(proc)
        except Failed as failure:
            record = {"status": failure.status, "error": str(failure)}
            return record | last_words(err) | _client_words(client_err)
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            if proc is not None and proc.poll() is None:
                stop(proc)
    return {"status": "ok", "conns": workload.conns} | figures


def _client_words(client_err) -> dict:
    tail = stderr_tail(client_err, lines=5)
    return {"client_stderr_tail": tail} if tail else {}


def run(
    env: BenchEnv,
    client: Path,
    servers: list[str],
    workloads: list[str],
    round_count: int,
    timing: Timing,
    placement: Placement,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken (see rounds.run)."""

    def one(server: str, workload: str) -> dict:
        return measure(env, client, server, workload, timing, placement)

    return rounds.run(servers, workloads, round_count, one, progress)
