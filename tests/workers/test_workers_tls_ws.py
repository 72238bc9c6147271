"""Workers with TLS (every worker answers HTTPS; SIGHUP's new workers
read the certificate files again) and with WebSocket (sessions on every
worker, echoing)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl

import pytest
from websockets.sync.client import connect as ws_connect

from _tls import write_tls_files
from workers_support import EVENT_TIMEOUT, wait_for


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return write_tls_files(tmp_path_factory.mktemp("tls-files"))


def https_pid(port: int, context: ssl.SSLContext) -> tuple[int, bytes]:
    """One request on a new TLS connection: the worker's pid and the
    certificate it presented."""
    with socket.create_connection(("127.0.0.1", port), timeout=EVENT_TIMEOUT) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"GET /pid HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
            der = tls.getpeercert(binary_form=True)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), data
    return int(body), der


def test_tls_workers_and_sighup_reads_new_certificates(spawn, tls_files, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    shutil.copy(tls_files.server, cert)
    shutil.copy(tls_files.server_key, key)
    server = spawn("--workers", "2", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key))
    pids = server.wait_workers(2)
    context = ssl.create_default_context(cafile=tls_files.ca)
    seen: dict[int, bytes] = {}
    wait_for(lambda: seen.update([https_pid(server.port, context)]) or set(seen) == pids,
             lambda: f"HTTPS answered by {set(seen)} of {pids}:\n{server.output()}")
    old_der = next(iter(seen.values()))
    # New certificate files (RSA, same names), then a rolling restart.
    for src, dst in ((tls_files.rsa, cert), (tls_files.rsa_key, key)):
        shutil.copy(src, str(dst) + ".new")
        os.replace(str(dst) + ".new", dst)
    server.send_signal(signal.SIGHUP)
    new = server.wait_workers(2, not_in=pids, timeout=60.0)
    seen.clear()
    wait_for(lambda: seen.update([https_pid(server.port, context)]) or set(seen) == new,
             lambda: f"HTTPS answered by {set(seen)} of {new}:\n{server.output()}")
    assert all(der != old_der for der in seen.values())


def test_websocket_sessions_on_every_worker(spawn):
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    seen: set[int] = set()
    sessions: list = []
    with contextlib.ExitStack() as stack:
        def one_more() -> bool:
            ws = stack.enter_context(ws_connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=EVENT_TIMEOUT))
            sessions.append(ws)
            ws.send(f"hi {len(sessions)}")
            text, pid = ws.recv(timeout=EVENT_TIMEOUT).rsplit(" ", 1)
            assert text == f"hi {len(sessions)}"
            seen.add(int(pid))
            return seen == pids

        wait_for(one_more, lambda: f"WebSocket sessions only on {seen} of {pids}")
        # Every session still echoes while the others are open.
        for i, ws in enumerate(sessions):
            ws.send(f"again {i}")
            assert ws.recv(timeout=EVENT_TIMEOUT).startswith(f"again {i} ")
