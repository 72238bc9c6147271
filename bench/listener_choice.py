"""The measurement behind the supervisor's listener choice (docs/decisions.md,
"Workers: one inherited listener" and "accept spread"): two worker
processes serving a plaintext app on one port, either accepting from ONE
inherited listener or from one SO_REUSEPORT listener each ("reuseport").
The inherited listener is served two ways: "shared" as the supervisor's
workers serve it (`Server.serve(sockets=[sock])`: one connection per accept
wake-up), "shared-batch64" as a single-process server serves
its own listener (`Config(sock=sock)`: 64 connections per accept batch,
every worker woken), which is what the workers did before.

For each mode:
  0. burst: 20 times, 64 connections opened at once (non-blocking connects
     from one thread, as wrk opens its connections), each asking `/pid`
     (with `Connection: close`); the largest share one worker served, per
     burst (0.5 = even, 1.0 = one worker took the whole burst);
  1. evenness: `wrk -t2 -c64 -d10s` (keep-alive), then the requests and CPU
     seconds of each worker;
  2. hand-over: `wrk -t2 -c64 -d6s -H 'Connection: close'` (a new
     connection per request) while worker 1 is replaced halfway: a new
     worker starts (binding its own listener in reuseport mode), then the
     old one drains and exits, as the supervisor's rolling restart does.
     wrk's socket errors (connect/read/write/timeout) are counted.

Run: `flock /tmp/ferroloop-build.lock .venv/bin/python bench/listener_choice.py [MODE...]`
(modes: shared, shared-batch64, reuseport; default all; needs wrk). Prints
one line per mode and phase.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

APP = b"Hello, World!"


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        return
    body = str(os.getpid()).encode() if scope["path"] == "/pid" else APP
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def listener(port: int, reuseport: bool) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuseport:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    return sock


def worker(sock: socket.socket | None, port: int, report_fd: int, as_workers: bool) -> None:
    """A child: serve until SIGTERM, then write 'requests' to report_fd."""
    import ferroloop
    from ferroloop.server._server import Server

    if sock is None:
        sock = listener(port, True)
    if as_workers:  # the supervisor's workers: the listener is handed in
        server = Server(ferroloop.Config(app, access_log=False, log_level="warning"))
    else:
        server = Server(ferroloop.Config(app, sock=sock, access_log=False, log_level="warning"))

    async def main() -> None:
        await server.serve(sockets=[sock] if as_workers else None)

    ferroloop.run(main())
    os.write(report_fd, f"{server._native.request_count if server._native else 0}\n".encode())
    os._exit(0)


def start(sock: socket.socket | None, port: int, as_workers: bool = False) -> tuple[int, int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        worker(sock, port, w, as_workers)
    os.close(w)
    return pid, r


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(pid: int, r: int) -> int:
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    data = os.read(r, 100)
    os.close(r)
    return int(data or b"0")


def wait_listening(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("not listening")


def wrk(port: int, seconds: int, *extra: str) -> subprocess.Popen[str]:
    argv = ["wrk", "-t2", "-c64", f"-d{seconds}s", *extra, f"http://127.0.0.1:{port}/"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def errors(output: str) -> str:
    m = re.search(r"Socket errors: (.*)", output)
    return m.group(1) if m else "none"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def burst_shares(port: int, bursts: int = 20, size: int = 64) -> list[float]:
    """Per burst, the largest share of its connections one worker served."""
    shares = []
    for _ in range(bursts):
        socks = []
        for _ in range(size):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            socks.append(sock)
        pids: dict[bytes, int] = {}
        for sock in socks:
            sock.settimeout(30)
            sock.sendall(b"GET /pid HTTP/1.1\r\nHost: burst\r\nConnection: close\r\n\r\n")
        for sock in socks:
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
            sock.close()
            pid = data.rpartition(b"\r\n\r\n")[2]
            pids[pid] = pids.get(pid, 0) + 1
        shares.append(max(pids.values()) / size)
    return shares


def run(mode: str) -> None:
    reuseport = mode == "reuseport"
    as_workers = mode == "shared"
    port = free_port()
    shared = None if reuseport else listener(port, False)
    workers = [start(shared, port, as_workers) for _ in range(2)]
    wait_listening(port)
    time.sleep(0.5)
    shares = sorted(burst_shares(port))
    print(
        f"{mode:14} burst: largest share per burst: median {shares[len(shares) // 2]:.2f}, "
        f"max {shares[-1]:.2f}; one worker took all in {sum(s == 1.0 for s in shares)} of {len(shares)}"
    )
    cpu0 = [cpu_seconds(pid) for pid, _ in workers]
    out = wrk(port, 10).communicate()[0]
    cpu = [cpu_seconds(pid) - c for (pid, _), c in zip(workers, cpu0)]
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    counts = [stop(pid, r) for pid, r in workers]
    share = max(counts) / max(1, sum(counts))
    print(
        f"{mode:14} evenness: requests {counts} (largest share {share:.1%}), "
        f"cpu s {[round(c, 2) for c in cpu]}, {rps.group(1) if rps else '?'} req/s, errors: {errors(out)}"
    )
    # Hand-over under connection-per-request load.
    workers = [start(shared, port, as_workers) for _ in range(2)]
    wait_listening(port)
    time.sleep(0.5)
    load = wrk(port, 6, "-H", "Connection: close")
    time.sleep(2.5)
    new = start(shared, port, as_workers)
    time.sleep(0.5)  # the new worker is listening
    old_pid, old_r = workers[0]
    stop(old_pid, old_r)
    out = load.communicate()[0]
    for pid, r in (workers[1], new):
        stop(pid, r)
    total = re.search(r"(\d+) requests in", out)
    print(f"{mode:14} hand-over: {total.group(1) if total else '?'} requests, socket errors: {errors(out)}")
    if shared is not None:
        shared.close()


if __name__ == "__main__":
    for mode in sys.argv[1:] or ["shared", "shared-batch64", "reuseport"]:
        run(mode)
