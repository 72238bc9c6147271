"""User-space instructions per TCP echo of an echo server, counted by
callgrind (the echo suite's sibling of `http_callgrind.py`), and the share of
them that is the Python protocol's own work.

    python bench/echo_callgrind.py [--python PY] [--loop NAME] [--overlay DIR]
                                   [--kind protocol|streams] [--size BYTES]
                                   [--messages N] [--connections C] [--keep FILE]
    python bench/echo_callgrind.py --protocol-only [--python PY] [--kind K] [--size BYTES]

**A loop**: `echo_server.py NAME KIND` (the echo suite's server; default
ferroloop, protocol; run by PY, default the bench venv's python; `--overlay
DIR` first on its PYTHONPATH, as `--baseline-wheel` does for ferroloop-base)
runs under `valgrind --tool=callgrind` with instrumentation off.  C
connections (default 10, as the suite) echo 50 messages each as a warm-up;
instrumentation is switched on, the connections echo N messages in all (one
in flight each, every echo checked byte for byte), it is switched off, and the
count divided by N is printed.

**The protocol's own work** (`--protocol-only`): the same server code
(`echo_server.EchoProtocol`, or asyncio's `StreamReaderProtocol` and
`StreamReader`/`StreamWriter` with the `echo_stream` coroutine) driven with
no event loop at all: a transport whose `write` is a C no-op, the coroutine
resumed by hand.  It runs under callgrind twice, for N and 2N messages; the
difference divided by N is what one echo costs in the protocol's Python code
whatever the loop (plus the driver's call, a few dozen instructions).  A
loop's figure minus this one is the loop's own share: reactor, transport,
syscall wrappers, bytes objects, the task step.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from http_callgrind import VENV_PYTHON, counted_instructions, split_over_threads

BENCH = Path(__file__).resolve().parent
WARMUP = 50


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("server closed the connection")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _echo(sock: socket.socket, payload: bytes, count: int) -> None:
    for _ in range(count):
        sock.sendall(payload)
        if _recv_exact(sock, len(payload)) != payload:
            raise AssertionError("echo differs")


def _run_all(conns: list[socket.socket], payload: bytes, total: int) -> None:
    split_over_threads(lambda sock, n: _echo(sock, payload, n), conns, total)


def _environ(overlay: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if overlay is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(overlay), env.get("PYTHONPATH"))))
    return env


def measure(
    python: Path,
    loop: str,
    overlay: Path | None,
    kind: str,
    size: int,
    total: int,
    connections: int,
    keep: Path | None = None,
) -> tuple[float, str]:
    """Instructions per echo of `loop`'s server, and where it imported the loop."""
    payload = os.urandom(size)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               str(python), str(BENCH / "echo_server.py"), loop, kind]  # fmt: skip
        proc = subprocess.Popen(
            cmd, env=_environ(overlay), cwd=BENCH, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        conns: list[socket.socket] = []
        try:
            listening = json.loads(proc.stdout.readline())
            for _ in range(connections):
                sock = socket.create_connection(("127.0.0.1", listening["port"]))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns.append(sock)
            _run_all(conns, payload, WARMUP * connections)
            control = ["callgrind_control", "-i"]
            subprocess.run([*control, "on", str(proc.pid)], check=True, capture_output=True)
            _run_all(conns, payload, total)
            subprocess.run([*control, "off", str(proc.pid)], check=True, capture_output=True)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
        finally:
            for sock in conns:
                sock.close()
            proc.stdin.close()
            final = proc.stdout.readline()
            proc.wait(timeout=120)
        report = json.loads(final) if final else {}
        if report.get("status") != "ok":
            raise RuntimeError(f"the server reported {report or 'nothing'}")
        return counted_instructions(Path(tmp), keep) / total, listening["module_file"]


# ---- the protocol's own work, with no loop -----------------------------------


class _NullLoop:
    """What asyncio's stream classes ask of a loop when nothing is scheduled,
    as C callables where a loop's own are (a Python method here would be
    counted as the protocol's work)."""

    def __init__(self) -> None:
        import asyncio

        self.get_debug = bool  # bool() is False
        self.is_closed = bool
        self.create_future = functools.partial(asyncio.Future, loop=self)
        self.coro = None

    def create_task(self, coro):
        self.coro = coro
        return self

    def add_done_callback(self, callback) -> None:
        """(As the task create_task returned.)"""


def _null_transport():
    import asyncio

    class NullTransport(asyncio.Transport):  # (with a __dict__, unlike Transport)
        pass

    transport = NullTransport()
    transport.write = collections.deque(maxlen=0).append  # a C call that keeps nothing
    transport.close = collections.deque(maxlen=0).clear
    transport.is_closing = bool  # bool() is False
    transport.get_extra_info = lambda name, default=None: default
    return transport


def drive_without_loop(kind: str, size: int, n: int) -> None:
    """Echo `n` messages through the server's protocol code with no loop."""
    import asyncio

    import echo_server

    data = os.urandom(size)
    if kind == "protocol":
        protocol = echo_server.EchoProtocol()
        protocol.connection_made(_null_transport())
        received = protocol.data_received
        for _ in range(n):
            received(data)
        if protocol.connection.received != n * size:
            raise AssertionError("the protocol did not see every message")
        return
    loop = _NullLoop()
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, echo_server.echo_stream, loop=loop)
    protocol.connection_made(_null_transport())
    step = loop.coro.send
    step(None)  # to its first read
    received = protocol.data_received
    for _ in range(n):
        received(data)
        step(None)
    if sum(c.received for c in echo_server.CONNECTIONS) != n * size:
        raise AssertionError("the coroutine did not echo every message")


def protocol_only(python: Path, kind: str, size: int, total: int) -> float:
    """Instructions per echo of the protocol's code alone (see the module docs)."""
    counts = []
    for n in (total, 2 * total):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}",
                   str(python), str(Path(__file__).resolve()), "--drive", kind, str(size), str(n)]  # fmt: skip
            subprocess.run(cmd, cwd=BENCH, check=True, capture_output=True)
            counts.append(counted_instructions(Path(tmp)))
    return (counts[1] - counts[0]) / total


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", type=Path, default=VENV_PYTHON)
    parser.add_argument("--loop", default="ferroloop")
    parser.add_argument("--overlay", type=Path)
    parser.add_argument("--kind", choices=("protocol", "streams"), default="protocol")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the counted dump here (for callgrind_annotate)")
    parser.add_argument("--protocol-only", action="store_true", help="the protocol's own work, no loop")
    parser.add_argument("--drive", nargs=3, metavar=("KIND", "SIZE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    # Absolute (the server runs in bench/), not resolved (a venv's python is a link).
    args.python = args.python.absolute()
    if args.drive:
        kind, size, n = args.drive
        drive_without_loop(kind, int(size), int(n))
        return 0
    what = f"{args.kind} {args.size:,} B"
    if args.protocol_only:
        per_msg = protocol_only(args.python, args.kind, args.size, args.messages)
        print(f"protocol only, {what}: {per_msg:,.0f} instructions per echo")
        return 0
    per_msg, module = measure(
        args.python, args.loop, args.overlay, args.kind, args.size, args.messages,
        args.connections, args.keep,
    )  # fmt: skip
    print(f"{args.loop} {what}: {per_msg:,.0f} instructions per echo ({module})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
