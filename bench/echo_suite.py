"""The TCP echo suite's measurements (bench/README.md, "TCP echo suite").

One measurement: a fresh server process (`echo_server.py`) on the loop under
test, pinned to the measured CPU; the Rust load generator (`xtask
echo-client`, the same binary for every contender) pinned to the load CPU,
with 10 connections each keeping one message in flight.  The client announces
the edges of its measured window on stdout; the server's CPU time is read from
/proc at those two moments, its peak RSS once the client is done.  Contenders
are interleaved by `rounds`.

Verification: the client compares every echo byte for byte with what it sent
and checks that nothing follows the last echo; the server counts what it
received, which must equal what the client sent, over as many connections as
the client opened.  A server that does not close a connection after the
client's half-close is noted (`unclosed`), not failed: its echoes were right.
A server that imported the wrong build of its loop (`benchenv`'s
`check_origin`, e.g. ferroloop-base not from the baseline wheel) is an error.
"""

from __future__ import annotations

import json
import os
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
from echo_workloads import WORKLOADS, EchoWorkload

SERVER = Path(__file__).with_name("echo_server.py")
REPO = Path(__file__).resolve().parent.parent

CONNECTIONS = 10
WARMUP_S = 1.0
DURATION_S = 3.0
QUICK_DURATION_S = 1.0

# How long a step may take beyond its nominal time before the measurement is
# declared hung.  The client gives up on a silent server after 10 s itself.
STARTUP_TIMEOUT_S = 20.0
CLIENT_SLACK_S = 20.0
SHUTDOWN_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Timing:
    warmup_s: float
    duration_s: float
    conns: int = CONNECTIONS


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


def client_command(client: Path, port: int, workload: EchoWorkload, timing: Timing) -> list[str]:
    return [
        str(client),
        "echo-client",
        "--addr",
        f"127.0.0.1:{port}",
        "--conns",
        str(timing.conns),
        "--size",
        str(workload.size),
        "--warmup",
        str(timing.warmup_s),
        "--duration",
        str(timing.duration_s),
    ]


def verify(result: dict, final: dict, timing: Timing) -> None:
    """What the client and server said against each other and the spec."""
    if result["errors"]:
        status = "failed verification" if result["mismatches"] else "error"
        raise Failed(
            status,
            f"{result['errors']} of {timing.conns} connections failed: "
            + "; ".join(result["error_messages"]),
        )
    if final["status"] != "ok":
        raise Failed("error", "loop exception handler: " + "; ".join(final["loop_errors"]))
    if final["connections"] != timing.conns:
        raise Failed(
            "failed verification",
            f"server saw {final['connections']} connections, the client opened {timing.conns}",
        )
    if final["bytes"] != result["bytes_sent"]:
        raise Failed(
            "failed verification",
            f"server received {final['bytes']:,} bytes, the client sent {result['bytes_sent']:,}",
        )
    if not result["messages"]:
        raise Failed("error", "no message echoed in the measured window")


def measure(
    env: BenchEnv,
    client: Path,
    contender: str,
    workload: EchoWorkload,
    timing: Timing,
    placement: Placement,
) -> dict:
    """One measurement; always returns a record with a status, never raises."""
    server = load = None
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
                preexec_fn=cpus.pin_to(placement.server_cpu),
            )
            server_out = JsonLines(server, "server", server_err)
            listening = server_out.next("port", STARTUP_TIMEOUT_S)
            wrong = env.check_origin(contender, listening.get("module_file"))
            if wrong is not None:
                raise Failed("error", f"wrong build: {wrong}")
            port = listening["port"]

            load = subprocess.Popen(
                client_command(client, port, workload, timing),
                stdout=subprocess.PIPE,
                stderr=client_err,
                bufsize=0,
                preexec_fn=cpus.pin_to(placement.client_cpu),
            )
            events = JsonLines(load, "client", client_err)
            events.expect("measure_start", timing.warmup_s + CLIENT_SLACK_S)
            server_cpu0, client_cpu0 = (
                procstat.cpu_seconds(server.pid),
                procstat.cpu_seconds(load.pid),
            )
            events.expect("measure_end", timing.duration_s + CLIENT_SLACK_S)
            server_cpu1, client_cpu1 = (
                procstat.cpu_seconds(server.pid),
                procstat.cpu_seconds(load.pid),
            )
            result = events.expect("result", CLIENT_SLACK_S)
            load.wait(timeout=SHUTDOWN_TIMEOUT_S)

            if server.poll() is not None:
                raise Failed(
                    "error", f"server {exit_description(server, server_err)} during the run"
                )
            peak_rss_kib = procstat.peak_rss_kib(server.pid)
            server.stdin.close()  # asks the server to stop and report
            final = server_out.next("final report", SHUTDOWN_TIMEOUT_S)
            server.wait(timeout=SHUTDOWN_TIMEOUT_S)
            verify(result, final, timing)
        except Failed as failure:
            return {"status": failure.status, "error": str(failure)} | last_words(server_err)
        except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
            return {"status": "error", "error": f"harness: {type(exc).__name__}: {exc}"}
        finally:
            for proc in (load, server):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()

    server_cpu_s = server_cpu1 - server_cpu0
    if server_cpu_s <= 0:
        return {"status": "error", "error": "no server CPU time in the measured window"}
    seconds = result["seconds"]
    return {
        "status": "ok",
        "conns": timing.conns,
        "messages": result["messages"],
        "seconds": seconds,
        "msgs_per_s": result["messages"] / seconds,
        "mib_per_s": result["bytes"] / seconds / 2**20,
        "msgs_per_cpu_s": result["messages"] / server_cpu_s,
        "peak_rss_mib": peak_rss_kib / 1024,
        "server_cpu_s": server_cpu_s,
        "client_cpu_s": client_cpu1 - client_cpu0,
        # connections the server left open after the client's half-close
        "unclosed": result["unclosed"],
    }


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
