"""User-space instructions per request of an HTTP server, counted by
callgrind: repeatable where timings on a shared machine are not.

    python bench/http_callgrind.py [--overlay DIR] [--workload plaintext|json|post4k]
                                   [--requests N] [--connections C] [--server NAME]
                                   [--access-log off|null|devnull]
    python bench/http_callgrind.py --binary target/release/examples/server [--requests N]

The server (`http_serve.py serve NAME`, default ferroloop, from the bench
venv `target/bench-venv`; `--overlay DIR` puts DIR first on its PYTHONPATH,
as `--baseline-wheel` does for ferroloop-base: `target/bench-baseline/<hash>-py3.11`)
runs under `valgrind --tool=callgrind` with instrumentation off. After a warm-up
of 500 requests instrumentation is switched on, C keep-alive connections send N
requests in all (each waits for its response before the next), it
is switched off, and the total instruction count divided by N is printed,
with every response checked. `--binary` measures a server binary taking
ferroloop's `--host`/`--port` flags instead (loop-server's
`examples/server.rs`, the pure-Rust ceiling; plaintext only). Before/after a change: run it once per build
and compare the figures (the issue's rule: no more than 3 % above before).
`--access-log null|devnull` turns ferroloop's access log on, to a NullHandler
or through its AccessFormatter to /dev/null (default off, as every benchmark).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
VENV_PYTHON = REPO / "target" / "bench-venv" / "bin" / "python"

POST_BODY = b"x" * 4096
REQUESTS = {
    "plaintext": b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n",
    "json": b"GET /json HTTP/1.1\r\nHost: bench\r\n\r\n",
    "post4k": b"POST /post HTTP/1.1\r\nHost: bench\r\nContent-Length: 4096\r\n\r\n" + POST_BODY,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_response(sock: socket.socket, buf: bytearray) -> bytes:
    """One response with a content-length; returns its head's status line."""
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = bytes(buf[:end])
            match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            length = int(match.group(1)) if match else 0
            if len(buf) >= end + 4 + length:
                del buf[: end + 4 + length]
                return head.split(b"\r\n", 1)[0]
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk


def counted_instructions(directory: Path, keep: Path | None = None) -> int:
    """The instructions callgrind counted in the dumps in `directory`
    (`keep`: where to copy the dump taken on request, for
    callgrind_annotate)."""
    counted = 0
    for dump in directory.glob("callgrind.out*"):
        totals = re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.M)
        counted += int(totals.group(1)) if totals else 0
        if keep is not None and dump.name != "callgrind.out":
            keep.write_bytes(dump.read_bytes())
    if counted == 0:
        raise RuntimeError("callgrind counted nothing")
    return counted


def split_over_threads(work: Callable[[Any, int], None], items: list[Any], total: int) -> None:
    """`work(item, n)` for each item in a thread of its own, the `total`
    split evenly between them; the first exception any raised is raised."""
    errors: list[BaseException] = []

    def worker(item: Any, n: int) -> None:
        try:
            work(item, n)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    share = [total // len(items) + (i < total % len(items)) for i in range(len(items))]
    threads = [threading.Thread(target=worker, args=(item, n)) for item, n in zip(items, share)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _load(port: int, request: bytes, total: int, connections: int) -> None:
    def requests(_: int, n: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            buf = bytearray()
            for _ in range(n):
                sock.sendall(request)
                status = _read_response(sock, buf)
                if not status.endswith(b" 200 OK"):
                    raise AssertionError(f"unexpected response {status!r}")

    split_over_threads(requests, list(range(connections)), total)


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("server did not start")


def measure(
    server: str,
    overlay: Path | None,
    workload: str,
    total: int,
    connections: int,
    binary: Path | None = None,
    access_log: str = "off",
) -> tuple[float, str]:
    port = _free_port()
    env = dict(os.environ, BENCH_ACCESS_LOG=access_log)
    if overlay is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(overlay), env.get("PYTHONPATH"))))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        if binary is not None:
            cmd += [str(binary.resolve()), "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
        else:
            cmd += [str(VENV_PYTHON), str(BENCH / "http_serve.py"), "serve", server, str(port)]
        proc = subprocess.Popen(cmd, env=env, cwd=BENCH, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            _wait_listening(port, proc)
            # `SERVE_MODULE {"module_file": ...}`: which build is measured.
            module = (proc.stdout.readline() if proc.stdout else b"").decode().strip()
            request = REQUESTS[workload]
            _load(port, request, 500, connections)  # warm-up, not counted
            subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
            _load(port, request, total, connections)
            subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
            # The counts so far go to `out.1`; the exit dump adds nothing.
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
        return counted_instructions(Path(tmp)) / total, module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default="ferroloop")
    parser.add_argument("--overlay", type=Path)
    parser.add_argument("--workload", choices=sorted(REQUESTS), default="plaintext")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--binary", type=Path)
    parser.add_argument("--access-log", choices=("off", "null", "devnull"), default="off")
    args = parser.parse_args()
    if args.binary is not None and args.workload != "plaintext":
        parser.error("--binary serves the plaintext workload only")
    per_request, started = measure(
        args.server, args.overlay, args.workload, args.requests, args.connections, args.binary, args.access_log
    )
    name = args.binary or args.server
    access = f", access log {args.access_log}" if args.access_log != "off" else ""
    print(f"{name} {args.workload}{access}: {per_request:,.0f} instructions per request ({started})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
