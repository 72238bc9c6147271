"""Helpers for the TLS end-to-end tests (tests/tls).

* ``TlsServer`` / ``spawn_tls_server``: ``tls_apps:app`` served over TLS in
  a child process. The server under test is ferroloop's CLI
  (``python -m ferroloop``), or, with ``FERROLOOP_TLS_TEST_PEER=uvicorn``,
  uvicorn with the same ``--ssl-*`` flags: the same tests run against the
  reference, so a test is known right before ferroloop passes it.
  Settings are uvicorn's names (``ssl_cert_reqs=2``); ferroloop's own
  (``FERROLOOP_SETTINGS``) are left out for uvicorn, and the tests that
  need them are marked ``ferroloop_only``.
* Clients: ``client_context`` (stdlib ``ssl``), ``https_get`` (one request
  on a fresh TLS socket), ``require_tool`` (``curl`` / ``openssl``: a
  missing tool fails, never skips).
* ``vm_rss``, ``error_lines``: what a test checks about the server itself.

This module sits next to the tests (``tests/tls`` is on ``sys.path``, see
conftest.py); it is not a test module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import ssl
import sys
import time
from pathlib import Path

import pytest

from _helpers import PROJECT_ROOT, ServerProcess, child_env, free_port  # noqa: F401 - re-exported
from _tls import TlsFiles  # noqa: F401 - re-exported

HERE = Path(__file__).resolve().parent

PEER_ENV = "FERROLOOP_TLS_TEST_PEER"

# Generous bounds for what must happen (a loaded 2-core machine).
IO_TIMEOUT = 20.0
EVENT_TIMEOUT = 20.0

#: ferroloop's own settings (no uvicorn flag).
#: ``max_body_size`` (default 16 MiB) has no uvicorn counterpart either.
FERROLOOP_SETTINGS = frozenset({"ssl_crl", "ssl_min_version", "ssl_handshake_timeout", "ssl_sni", "max_body_size"})


def peer() -> str:
    """The server under test: ``ferroloop`` (default) or ``uvicorn``."""
    name = os.environ.get(PEER_ENV, "ferroloop")
    if name not in ("ferroloop", "uvicorn"):
        raise ValueError(f"{PEER_ENV}={name!r}: expected ferroloop or uvicorn")
    return name


def require_tool(name: str) -> str:
    """The path of a command-line peer; a missing one fails the test (CI
    installs them, see .ci/run): a suite that skips stays green."""
    found = shutil.which(name)
    if not found:
        pytest.fail(f"`{name}` is not installed: the TLS tests need it (Debian: apt-get install {name})", pytrace=False)
    return found


# --------------------------------------------------------------------------
# The server in a child process


def settings_flags(settings: dict) -> list[str]:
    """CLI flags for ``settings`` (``ssl_cert_reqs=2`` → ``--ssl-cert-reqs
    2``; a list repeats the flag; ``True`` alone for a switch)."""
    flags: list[str] = []
    for name, value in settings.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                flags += [flag, str(item)]
        else:
            flags += [flag, str(value)]
    return flags


def server_argv(port: int, settings: dict, app: str = "tls_apps:app") -> list[str]:
    if peer() == "uvicorn":
        kept = {k: v for k, v in settings.items() if k not in FERROLOOP_SETTINGS}
        return [sys.executable, "-m", "uvicorn", app, "--port", str(port), *settings_flags(kept)]
    return [sys.executable, "-m", "ferroloop", app, "--port", str(port), *settings_flags(settings)]


def default_settings(files: TlsFiles) -> dict:
    return {"ssl_certfile": files.server, "ssl_keyfile": files.server_key}


class TlsServer(ServerProcess):
    """A ``ServerProcess`` serving ``tls_apps`` over TLS, with its events
    file and the files it was started with."""

    def __init__(self, argv, *, port: int, workdir: Path, files: TlsFiles) -> None:
        env = child_env({"TLS_TEST_DIR": str(workdir)}, pythonpath=(str(PROJECT_ROOT), str(HERE)))
        super().__init__(argv, port=port, log_dir=workdir, env=env)
        self.workdir = workdir
        self.files = files

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def events(self, conn: str) -> list[dict]:
        try:
            text = (self.workdir / "events.jsonl").read_text()
        except FileNotFoundError:
            return []
        return [e for e in (json.loads(line) for line in text.splitlines() if line.endswith("}")) if e["conn"] == conn]

    def wait_event(self, conn: str, event: str, timeout: float = EVENT_TIMEOUT) -> list[dict]:
        deadline = time.monotonic() + timeout
        while not any(e["event"] == event for e in self.events(conn)):
            if time.monotonic() > deadline:
                raise AssertionError(f"{conn!r} did not record {event!r} within {timeout} s: {self.events(conn)}\n{self.output()}")
            time.sleep(0.02)
        return self.events(conn)

    def error_lines(self) -> list[str]:
        return error_lines(self.output())


def spawn_tls_server(workdir: Path, files: TlsFiles, **settings) -> TlsServer:
    port = free_port()
    merged = {**default_settings(files), **settings}
    server = TlsServer(server_argv(port, merged), port=port, workdir=workdir, files=files)
    server.wait_ready()
    return server


_ERROR_LINE = re.compile(r"^(ERROR|CRITICAL)\b|Traceback \(most recent call last\)", re.MULTILINE)


def error_lines(output: str) -> list[str]:
    """Error-level log lines (uvicorn's format, which ferroloop keeps) and
    tracebacks in a server's output."""
    return [line for line in output.splitlines() if _ERROR_LINE.search(line)]


def vm_rss(pid: int) -> int:
    """The resident set of process ``pid``, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


# --------------------------------------------------------------------------
# Clients


def client_context(
    files: TlsFiles,
    *,
    version: ssl.TLSVersion | None = None,
    cert: str | None = None,
    key: str | None = None,
    cafile: str | None = None,
) -> ssl.SSLContext:
    """A verifying client context trusting ``files.ca`` (or ``cafile``);
    ``version`` pins both ends of the protocol range; ``cert``/``key`` a
    client certificate."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile or files.ca)
    if version is not None:
        context.minimum_version = version
        context.maximum_version = version
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


def tls_connect(port: int, context: ssl.SSLContext, server_hostname: str = "localhost", session=None) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    try:
        return context.wrap_socket(sock, server_hostname=server_hostname, session=session)
    except BaseException:
        sock.close()
        raise


def read_response(tls: ssl.SSLSocket) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 response with a Content-Length: status, headers, body."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = tls.recv(65536)
        if not data:
            raise ConnectionError(f"closed before a response head: {buf!r}")
        buf += data
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        data = tls.recv(65536)
        if not data:
            raise ConnectionError("closed mid-body")
        body += data
    return int(lines[0].split()[1]), headers, body


def request(tls: ssl.SSLSocket, path: str = "/", host: str = "localhost") -> tuple[int, dict, bytes]:
    tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return read_response(tls)


def https_get(port: int, context: ssl.SSLContext, path: str = "/", server_hostname: str = "localhost") -> tuple[int, dict, bytes]:
    with tls_connect(port, context, server_hostname) as tls:
        return request(tls, path, server_hostname)


def get_info(port: int, context: ssl.SSLContext, server_hostname: str = "localhost") -> dict:
    status, _, body = https_get(port, context, "/info", server_hostname)
    assert status == 200, body
    return json.loads(body)


def assert_handshake_fails(port: int, context: ssl.SSLContext, server_hostname: str = "localhost") -> Exception:
    """The handshake (or the first read after it: a TLS 1.3 client learns
    that its certificate was refused only then) fails; returns the error."""
    try:
        with tls_connect(port, context, server_hostname) as tls:
            status, _, body = request(tls)
    except (ssl.SSLError, ConnectionError, OSError) as exc:
        return exc
    raise AssertionError(f"the connection was served ({status}: {body[:80]!r}); expected a failed handshake")


def peer_cert_names(tls: ssl.SSLSocket) -> list[str]:
    """The subjectAltName DNS names of the server certificate ``tls`` got."""
    return [value for kind, value in tls.getpeercert().get("subjectAltName", ()) if kind == "DNS"]
