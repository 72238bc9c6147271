"""Certificate reload without a restart: SIGHUP under load (clients
looping new connections) loses no handshake, new connections get the new
certificate, live ones go on; a bad new file keeps the old certificate
and logs a warning naming it."""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import threading
import time

import pytest

from tls_support import EVENT_TIMEOUT, client_context, request, tls_connect


def leaf_der(tls: ssl.SSLSocket) -> bytes:
    return tls.getpeercert(binary_form=True)


class Load:
    """Threads that loop: connect, handshake, one request, close; count
    successes and keep every failure and the certificates seen."""

    def __init__(self, port: int, context: ssl.SSLContext, threads: int = 3) -> None:
        self.port, self.context = port, context
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failures: list[str] = []
        self.last_der: bytes | None = None
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                with tls_connect(self.port, self.context) as tls:
                    der = leaf_der(tls)
                    status, _, body = request(tls)
                    assert (status, body) == (200, b"hello"), (status, body)
                with self.lock:
                    self.ok += 1
                    self.last_der = der
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                with self.lock:
                    self.failures.append(repr(exc))

    def count(self) -> int:
        with self.lock:
            return self.ok

    def wait_more(self, n: int) -> None:
        target = self.count() + n
        deadline = time.monotonic() + EVENT_TIMEOUT
        while self.count() < target:
            assert time.monotonic() < deadline, f"load stalled at {self.count()} (failures: {self.failures[:3]})"
            time.sleep(0.02)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(EVENT_TIMEOUT)


def wait_for(predicate, message: str) -> None:
    deadline = time.monotonic() + EVENT_TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, message()
        time.sleep(0.05)


@pytest.mark.ferroloop_only
def test_sighup_reload_under_load(tls_server, tls_files, tmp_path):
    live_cert, live_key = tmp_path / "live.pem", tmp_path / "live_key.pem"
    shutil.copy(tls_files.server, live_cert)
    shutil.copy(tls_files.server_key, live_key)
    srv = tls_server(ssl_certfile=str(live_cert), ssl_keyfile=str(live_key))
    context = client_context(tls_files)
    held = tls_connect(srv.port, context)  # a live connection across the reloads
    old_der = leaf_der(held)
    load = Load(srv.port, context)
    try:
        load.wait_more(20)
        # Swap in another certificate and key (RSA, same names), atomically.
        for src, dst in ((tls_files.rsa, live_cert), (tls_files.rsa_key, live_key)):
            shutil.copy(src, str(dst) + ".new")
            os.replace(str(dst) + ".new", dst)
        srv.send_signal(signal.SIGHUP)
        wait_for(lambda: load.last_der not in (None, old_der), lambda: f"no new certificate after SIGHUP:\n{srv.output()}")
        load.wait_more(20)
        new_der = load.last_der

        # A bad new key: the reload fails, the last good certificate stays.
        live_key.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        srv.send_signal(signal.SIGHUP)
        wait_for(
            lambda: any("WARNING" in line and str(live_key) in line for line in srv.output().splitlines()),
            lambda: f"no warning naming {live_key}:\n{srv.output()}",
        )
        load.wait_more(20)
        assert load.last_der == new_der
    finally:
        load.finish()
    assert load.failures == [], f"{len(load.failures)} failed handshakes/requests during reload: {load.failures[:5]}"
    # The connection opened before both reloads is untouched.
    assert request(held)[2] == b"hello"
    assert leaf_der(held) == old_der
    held.close()
    assert srv.error_lines() == []
