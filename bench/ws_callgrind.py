"""User-space instructions per WebSocket echo of a server, counted by
callgrind: repeatable where timings on a shared machine are not (the
WebSocket sibling of `http_callgrind.py`).

    python bench/ws_callgrind.py [--python PY] [--overlay DIR] [--size BYTES] [--text]
                                 [--messages N] [--connections C] [--server NAME] [--keep FILE]

The server (`http_serve.py serve NAME PORT ws_app`, default ferroloop, run by
PY, default the bench venv `target/bench-venv`; `--overlay DIR` first on its
PYTHONPATH) runs under `valgrind --tool=callgrind` with instrumentation off.
C connections open (the handshake not offering permessage-deflate) and echo
50 messages each as a warm-up; instrumentation is switched on, the
connections echo N messages in all (one in flight each; every echo checked
byte for byte), it is switched off, and the count divided by N is printed.
Before/after a change: run it once per build and compare.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from http_callgrind import (
    VENV_PYTHON,
    _free_port,
    _wait_listening,
    counted_instructions,
    split_over_threads,
)

BENCH = Path(__file__).resolve().parent
WARMUP = 50


def _recv_exact(sock: socket.socket, buf: bytearray, n: int) -> bytes:
    while len(buf) < n:
        chunk = sock.recv(max(65536, n - len(buf)))
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


def _handshake(port: int) -> tuple[socket.socket, bytearray]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16))
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + b"\r\n\r\n"
    )
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        buf += chunk
    end = buf.index(b"\r\n\r\n") + 4
    if not buf.startswith(b"HTTP/1.1 101"):
        raise AssertionError(f"handshake refused: {bytes(buf[:end])!r}")
    del buf[:end]
    return sock, buf


def _frame(payload: bytes, opcode: int) -> bytes:
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    key = int.from_bytes(mask * (n // 4 + 1), "little")
    masked = (int.from_bytes(payload, "little") ^ key) & ((1 << (8 * n)) - 1)
    return head + mask + masked.to_bytes(n, "little")


def _echo(sock: socket.socket, buf: bytearray, payload: bytes, opcode: int, count: int) -> None:
    frame = _frame(payload, opcode)
    for _ in range(count):
        sock.sendall(frame)
        while True:
            b0, b1 = _recv_exact(sock, buf, 2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", _recv_exact(sock, buf, 2))
            elif n == 127:
                (n,) = struct.unpack("!Q", _recv_exact(sock, buf, 8))
            data = _recv_exact(sock, buf, n)
            if b0 == 0x89:  # the server's keepalive ping (valgrind is slow)
                sock.sendall(_frame(data, 0xA))
                continue
            break
        if b0 != 0x80 | opcode or b1 & 0x80:
            raise AssertionError(f"unexpected frame header {b0:#x} {b1:#x}")
        if data != payload:
            raise AssertionError("echo differs")


def _run_all(conns, payload: bytes, opcode: int, total: int) -> None:
    split_over_threads(lambda conn, n: _echo(*conn, payload, opcode, n), conns, total)


def measure(
    python: Path, server: str, overlay: Path | None, size: int, text: bool, total: int, connections: int,
    keep: Path | None = None,
) -> tuple[float, str]:
    port = _free_port()
    env = dict(os.environ)
    if overlay is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(overlay), env.get("PYTHONPATH"))))
    payload = (b"abcdefgh" * (size // 8 + 1))[:size] if text else os.urandom(size)
    opcode = 1 if text else 2
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               str(python), str(BENCH / "http_serve.py"), "serve", server, str(port), "ws_app"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=env, cwd=BENCH, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        conns = []
        try:
            _wait_listening(port, proc)
            module = (proc.stdout.readline() if proc.stdout else b"").decode().strip()
            conns = [_handshake(port) for _ in range(connections)]
            _run_all(conns, payload, opcode, WARMUP * connections)
            subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
            _run_all(conns, payload, opcode, total)
            subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
        finally:
            for sock, _ in conns:
                sock.close()
            proc.terminate()
            proc.wait(timeout=120)
        return counted_instructions(Path(tmp), keep) / total, module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", type=Path, default=VENV_PYTHON)
    parser.add_argument("--server", default="ferroloop")
    parser.add_argument("--overlay", type=Path)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--text", action="store_true")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="write the counted dump here (for callgrind_annotate)")
    args = parser.parse_args()
    per_msg, started = measure(
        args.python, args.server, args.overlay, args.size, args.text, args.messages, args.connections, args.keep
    )
    kind = "text" if args.text else "binary"
    print(f"{args.server} {kind} {args.size} B: {per_msg:,.0f} instructions per echo ({started})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
