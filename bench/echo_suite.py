"""The TCP echo suite's measurements (bench/README.md, "TCP echo suite").

One measurement: a fresh server process (`echo_server.py`) on the loop under
test, pinned to the measured CPU; the Rust load generator (`xtask
echo-client`, the same binary for every contender) pinned to the load CPU.

**Echo** workloads: 10 (or 1,000) connections each keeping one message in
flight.  The client announces the edges of its measured window on stdout; the
server's CPU time is read from /proc at those two moments, its peak RSS once
the client is done.

**Idle** workloads: after a warm-up client (10 connections, one echo each),
the server's RSS (VmRSS) is read; then the client opens 10,000 connections
(1,000 with --quick), each echoes one 1 KiB message and stays open and silent
for the measured window, at whose end the RSS is read again.  The figure is
the difference divided by the connections.

Both processes get the hard limit of open files as their soft limit.
Contenders are interleaved by `rounds`.

Verification: the client compares every echo byte for byte with what it sent
and checks that nothing follows the last echo; the server counts what it
received, which must equal what the client (both clients, for idle) sent, over
as many connections as were opened.  A server that does not close a
connection after the client's half-close is noted (`unclosed`), not failed:
its echoes were right.  A server that imported the wrong build of its loop
(`benchenv`'s `check_origin`, e.g. ferroloop-base not from the baseline wheel)
is an error.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cpus
import procstat
import rounds
from benchenv import BenchEnv
from echo_server import ALLOCATOR_SETTLING_BYTES
from echo_workloads import IDLE_CONNS, WORKLOADS, EchoWorkload

SERVER = Path(__file__).with_name("echo_server.py")
REPO = Path(__file__).resolve().parent.parent

WARMUP_S = 1.0
DURATION_S = 3.0
QUICK_DURATION_S = 1.0
# Idle connections under --quick (IDLE_CONNS otherwise).
QUICK_IDLE_CONNS = 1000
# The idle workloads' warm-up client: connections, each echoing one message.
IDLE_WARMUP_CONNS = 10

# How long a step may take beyond its nominal time before the measurement is
# declared hung.  The client gives up on a silent server after 10 s itself
# (and on its close after 1 s plus 1 s per 1,000 connections).
STARTUP_TIMEOUT_S = 20.0
CLIENT_SLACK_S = 20.0
SHUTDOWN_TIMEOUT_S = 10.0
# Opening the idle connections and echoing once on each.
IDLE_OPEN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Timing:
    warmup_s: float
    duration_s: float
    idle_conns: int = IDLE_CONNS

    def conns(self, workload: EchoWorkload) -> int:
        return self.idle_conns if workload.idle else workload.conns


@dataclass(frozen=True)
class Placement:
    server_cpu: int
    client_cpu: int


class Failed(Exception):
    """Ends a measurement with `status` ("error" or "failed verification")."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def build_client() -> Path:
    """Build `xtask` (std only, seconds) optimized, in its own target dir, as
    `cargo xtask bench echo` does, and return the binary."""
    target = REPO / "target" / "xtask-bench"
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "xtask"],
        cwd=REPO,
        env=os.environ | {"CARGO_TARGET_DIR": str(target)},
        check=True,
    )
    return target / "release" / "xtask"


class JsonLines:
    """JSON lines from a child's stdout, each awaited with a deadline: a hung
    child must fail its measurement, not hang the suite."""

    def __init__(self, proc: subprocess.Popen, name: str, stderr) -> None:
        self.proc, self.name, self.stderr = proc, name, stderr
        self.fd = proc.stdout.fileno()
        self.buffer = b""

    def next(self, what: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise Failed("error", f"{self.name} gave no {what} within {timeout:.0f} s")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise Failed("error", f"{self.name} {exit_description(self.proc, self.stderr)}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            raise Failed("error", f"{self.name} printed {line[:200]!r}, not JSON") from None

    def expect(self, event: str, timeout: float) -> dict:
        message = self.next(event, timeout)
        if message.get("event") != event:
            raise Failed("error", f"{self.name} sent {message} instead of {event}")
        return message


def stderr_tail(stderr, lines: int = 3) -> str:
    stderr.seek(0)
    text = stderr.read().decode(errors="replace").strip()
    return " | ".join(text.splitlines()[-lines:])


def exit_description(proc: subprocess.Popen, stderr) -> str:
    """How a child that closed its stdout ended, with its last words."""
    try:
        code = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "closed its stdout"
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited {code}"
    tail = stderr_tail(stderr)
    return f"{how}: {tail}" if tail else how


def last_words(server_err) -> dict:
    """The end of a failed server's stderr, for the result JSON."""
    tail = stderr_tail(server_err, lines=10)
    return {"server_stderr_tail": tail} if tail else {}


def client_command(
    client: Path, port: int, size: int, conns: int, warmup_s: float, duration_s: float,
    messages: int = 0,
) -> list[str]:
    argv = [str(client), "echo-client", "--addr", f"127.0.0.1:{port}", "--conns", str(conns),
            "--size", str(size), "--warmup", f"{warmup_s:g}", "--duration", f"{duration_s:g}"]  # fmt: skip
    return argv + (["--messages", str(messages)] if messages else [])


def open_files_preexec(cpu: int):
    """A preexec_fn: pin to `cpu` and raise the soft limit of open files to
    the hard one (10,000 idle connections need more than the usual 1,024)."""
    pin = cpus.pin_to(cpu)

    def preexec() -> None:
        pin()
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    return preexec


def check_client(result: dict, conns: int) -> None:
    """What the client found: every connection's echoes right."""
    if result["errors"]:
        status = "failed verification" if result["mismatches"] else "error"
        raise Failed(
            status,
            f"{result['errors']} of {conns} connections failed: "
            + "; ".join(result["error_messages"]),
        )


def check_server(final: dict, conns: int, bytes_sent: int) -> None:
    """What the server counted against what the client(s) did."""
    if final["status"] != "ok":
        raise Failed("error", "loop exception handler: " + "; ".join(final["loop_errors"]))
    if final["connections"] != conns:
        raise Failed(
            "failed verification",
            f"server saw {final['connections']} connections, the client opened {conns}",
        )
    if final["bytes"] != bytes_sent:
        raise Failed(
            "failed verification",
            f"server received {final['bytes']:,} bytes, the client sent {bytes_sent:,}",
        )


@dataclass
class Run:
    """A measurement's moving parts."""

    server: subprocess.Popen
    port: int
    client: Path
    workload: EchoWorkload
    timing: Timing
    placement: Placement
    client_err: object

    def start_client(self, conns: int, warmup_s: float, duration_s: float, messages: int = 0):
        argv = client_command(
            self.client, self.port, self.workload.size, conns, warmup_s, duration_s, messages
        )
        return subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.client_err,
            bufsize=0,
            preexec_fn=open_files_preexec(self.placement.client_cpu),
        )


def _reap(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def _echo(run: Run) -> tuple[dict, int, int]:
    """The measured echo run: figures, connections opened, bytes sent."""
    conns = run.workload.conns
    load = run.start_client(conns, run.timing.warmup_s, run.timing.duration_s)
    try:
        events = JsonLines(load, "client", run.client_err)
        # Opening 1,000 connections takes part of the warm-up, or more.
        events.expect("measure_start", run.timing.warmup_s + CLIENT_SLACK_S)
        server_cpu0, client_cpu0 = (
            procstat.cpu_seconds(run.server.pid),
            procstat.cpu_seconds(load.pid),
        )
        events.expect("measure_end", run.timing.duration_s + CLIENT_SLACK_S)
        server_cpu1, client_cpu1 = (
            procstat.cpu_seconds(run.server.pid),
            procstat.cpu_seconds(load.pid),
        )
        result = events.expect("result", CLIENT_SLACK_S)
        load.wait(timeout=SHUTDOWN_TIMEOUT_S)
    finally:
        _reap(load)
    check_client(result, conns)
    if not result["messages"]:
        raise Failed("error", "no message echoed in the measured window")
    server_cpu_s = server_cpu1 - server_cpu0
    if server_cpu_s <= 0:
        raise Failed("error", "no server CPU time in the measured window")
    seconds = result["seconds"]
    figures = {
        "messages": result["messages"],
        "seconds": seconds,
        "msgs_per_s": result["messages"] / seconds,
        "mib_per_s": result["bytes"] / seconds / 2**20,
        "msgs_per_cpu_s": result["messages"] / server_cpu_s,
        "server_cpu_s": server_cpu_s,
        "client_cpu_s": client_cpu1 - client_cpu0,
        # connections the server left open after the client's half-close
        "unclosed": result["unclosed"],
    }
    return figures, conns, result["bytes_sent"]


def _client_run(run: Run, conns: int, duration_s: float) -> dict:
    """A client run to its end, each connection echoing one message (the
    idle workloads' warm-up)."""
    load = run.start_client(conns, 0, duration_s, messages=1)
    try:
        events = JsonLines(load, "warm-up client", run.client_err)
        for event in ("measure_start", "measure_end", "result"):
            result = events.expect(event, duration_s + CLIENT_SLACK_S)
        load.wait(timeout=SHUTDOWN_TIMEOUT_S)
    finally:
        _reap(load)
    check_client(result, conns)
    return result


def _idle(run: Run) -> tuple[dict, int, int]:
    """Warm up, read RSS, open the idle connections (one echo each), read it
    again at the end of the measured window: figures, connections, bytes."""
    warm = _client_run(run, IDLE_WARMUP_CONNS, 0.05)
    before = procstat.rss_kib(run.server.pid)
    conns = run.timing.conns(run.workload)
    launched = time.monotonic()
    load = run.start_client(conns, 0, run.timing.duration_s, messages=1)
    try:
        events = JsonLines(load, "client", run.client_err)
        events.expect("measure_start", IDLE_OPEN_TIMEOUT_S)
        open_s = time.monotonic() - launched
        server_cpu0, at_start = procstat.cpu_seconds(run.server.pid), procstat.rss_kib(
            run.server.pid
        )
        events.expect("measure_end", run.timing.duration_s + CLIENT_SLACK_S)
        server_cpu1, at_end = procstat.cpu_seconds(run.server.pid), procstat.rss_kib(
            run.server.pid
        )
        result = events.expect("result", CLIENT_SLACK_S + conns / 1000)
        load.wait(timeout=SHUTDOWN_TIMEOUT_S)
    finally:
        _reap(load)
    check_client(result, conns)
    if result["total_messages"] != conns:
        raise Failed(
            "failed verification",
            f"{result['total_messages']} echoes verified, one per connection is {conns}",
        )
    figures = {
        "idle_kib_per_conn": (at_end - before) / conns,
        "rss_before_mib": before / 1024,
        "rss_idle_start_mib": at_start / 1024,
        "rss_open_mib": at_end / 1024,
        "open_s": open_s,
        "seconds": result["seconds"],
        # server CPU while every connection was idle
        "idle_server_cpu_s": server_cpu1 - server_cpu0,
        "unclosed": result["unclosed"],
    }
    return figures, IDLE_WARMUP_CONNS + conns, warm["bytes_sent"] + result["bytes_sent"]


def measure(
    env: BenchEnv,
    client: Path,
    contender: str,
    workload: EchoWorkload,
    timing: Timing,
    placement: Placement,
) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    server = None
    with tempfile.TemporaryFile() as server_err, tempfile.TemporaryFile() as client_err:
        try:
            # stderr goes to files: a chatty loop must not block on a full pipe.
            server = subprocess.Popen(
                [str(env.python), str(SERVER), contender, workload.kind],
                env=env.environ(contender),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=server_err,
                bufsize=0,
                preexec_fn=open_files_preexec(placement.server_cpu),
            )
            server_out = JsonLines(server, "server", server_err)
            listening = server_out.next("port", STARTUP_TIMEOUT_S)
            wrong = env.check_origin(contender, listening.get("module_file"))
            if wrong is not None:
                raise Failed("error", f"wrong build: {wrong}")
            run = Run(server, listening["port"], client, workload, timing, placement, client_err)
            figures, conns, bytes_sent = (_idle if workload.idle else _echo)(run)

            if server.poll() is not None:
                raise Failed(
                    "error", f"server {exit_description(server, server_err)} during the run"
                )
            figures["peak_rss_mib"] = procstat.peak_rss_kib(server.pid) / 1024
            server.stdin.close()  # asks the server to stop and report
            final = server_out.next("final report", SHUTDOWN_TIMEOUT_S)
            server.wait(timeout=SHUTDOWN_TIMEOUT_S)
            check_server(final, conns, bytes_sent)
        except Failed as failure:
            return {"status": failure.status, "error": str(failure)} | last_words(server_err)
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            _reap(server)
    return {"status": "ok", "conns": timing.conns(workload)} | figures


def run(
    env: BenchEnv,
    client: Path,
    contenders: list[str],
    workloads: list[str],
    round_count: int,
    timing: Timing,
    placement: Placement,
    progress: Callable[[dict], None],
) -> list[dict]:
    """All measurements, in the order taken (see rounds.run)."""

    def one(contender: str, workload: str) -> dict:
        return measure(env, client, contender, WORKLOADS[workload], timing, placement)

    return rounds.run(contenders, workloads, round_count, one, progress)
