"""Connections of a burst spread over the workers sharing one inherited
listener (issue 16: an accept batch of 64 once let the first worker woken
take a whole `wrk -c64` burst while the other idled)."""

from __future__ import annotations

import collections
import os
import re
import signal
import socket

from workers_support import EVENT_TIMEOUT

BURST = 200
ATTEMPTS = 3
REQUEST = b"GET /pid HTTP/1.1\r\nHost: burst\r\n\r\n"


def read_pid(sock: socket.socket) -> int:
    """The body of the one `/pid` response on `sock`."""
    buf = b""
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", buf[:end])
            assert length is not None, buf
            body = buf[end + 4 :]
            if len(body) >= int(length.group(1)):
                assert buf.startswith(b"HTTP/1.1 200 "), buf
                return int(body[: int(length.group(1))])
        chunk = sock.recv(4096)
        assert chunk, f"closed without a response: {buf!r}"
        buf += chunk


def burst(port: int, workers: set[int]) -> collections.Counter[int]:
    """`BURST` connections, each with a request sent, queued on the listener
    while every worker is stopped (so they arrive at once however slowly
    this client connects); then the workers continue. Returns the
    connections each worker pid answered."""
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    socks: list[socket.socket] = []
    try:
        for _ in range(BURST):
            sock = socket.create_connection(("127.0.0.1", port), timeout=EVENT_TIMEOUT)
            socks.append(sock)
            sock.sendall(REQUEST)
    finally:
        for pid in workers:
            os.kill(pid, signal.SIGCONT)
    try:
        return collections.Counter(read_pid(sock) for sock in socks)
    finally:
        for sock in socks:
            sock.close()


def test_a_burst_of_connections_is_served_by_both_workers(spawn):
    # Stopped workers do not answer health checks: give them all the time.
    server = spawn("--workers", "2", "--timeout-worker-healthcheck", "600")
    workers = server.wait_workers(2)
    assert server.answering_pids(2) == workers  # both accept by now
    seen = []
    for _ in range(ATTEMPTS):  # a loaded host may starve one worker once
        served = burst(server.port, workers)
        assert sum(served.values()) == BURST
        assert set(served) <= workers, served
        seen.append(dict(served))
        if set(served) == workers:
            break
    else:
        raise AssertionError(f"one worker took every connection of each burst: {seen}\n{server.output()}")
    assert server.workers() == workers  # nobody was killed or replaced
