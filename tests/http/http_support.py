"""Helpers for the native HTTP server's end-to-end tests.

* ``RawConn``: a byte-level HTTP/1.1 client over a real socket, for hostile
  input, pipelining, keep-alive and connection-state checks that real clients
  hide.
* ``ServerProcess`` (``_helpers``, shared with ``tests/cli``): a server in
  a child interpreter (CLI ``python -m ferroloop``, the ``ferroloop`` console
  script or ``ferroloop.serve()``), for signals, exit codes and memory
  measured on ``/proc/PID/status``; ``server_env()`` is its environment.
* ``LogCapture``: records of the ``ferroloop.error`` / ``ferroloop.access``
  loggers.

This module sits next to the tests (``tests/http`` is on ``sys.path``, see
conftest.py); it is not a test module.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from _helpers import PROJECT_ROOT, ServerProcess, child_env, free_port, raise_fd_limit  # noqa: F401 - re-exported

HERE = Path(__file__).resolve().parent

# Generous bound for socket reads that must succeed.
IO_TIMEOUT = 5.0

LOG_PREFIX = "ferroloop"
SERVER_MODULE = "ferroloop"


# --------------------------------------------------------------------------
# Raw HTTP/1.x over a socket


class PeerClosed(Exception):
    """The server closed the connection before a complete response arrived."""


@dataclass
class RawResponse:
    version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    chunked: bool = False
    close_delimited: bool = False
    head: bytes = b""

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def header_all(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self.headers if key == name]

    def json(self):
        import json

        return json.loads(self.body)


class RawConn:
    """A client socket with a receive buffer and an HTTP/1.x response reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.eof = False
        self.reset_seen = False

    @classmethod
    def open(cls, address, timeout: float = IO_TIMEOUT) -> "RawConn":
        if isinstance(address, int):
            address = ("127.0.0.1", address)
        if isinstance(address, (str, os.PathLike)):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(os.fspath(address))
        else:
            sock = socket.create_connection(address, timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    # -- plumbing

    def __enter__(self) -> "RawConn":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def local_port(self) -> int:
        return self.sock.getsockname()[1]

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def reset(self) -> None:
        """Close abortively: SO_LINGER 0 makes close() send RST."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def _fill(self, deadline: float) -> bool:
        """Receive more bytes into the buffer; False at EOF (or reset)."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out waiting for data from the server")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError("timed out waiting for data from the server") from None
        except (ConnectionResetError, BrokenPipeError):
            self.reset_seen = True
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _take_until(self, sep: bytes, deadline: float) -> bytes:
        while True:
            index = self.buf.find(sep)
            if index >= 0:
                out = bytes(self.buf[: index + len(sep)])
                del self.buf[: index + len(sep)]
                return out
            if not self._fill(deadline):
                raise PeerClosed(f"connection closed while waiting for {sep!r}; have {bytes(self.buf)[:200]!r}")

    def _take_exact(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            if not self._fill(deadline):
                raise PeerClosed(f"connection closed after {len(self.buf)} of {n} bytes")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def wait_for_response_start(self, timeout: float = IO_TIMEOUT) -> None:
        """Wait until the response's first bytes have arrived, leaving them
        for read_response()."""
        deadline = time.monotonic() + timeout
        while not self.buf:
            if not self._fill(deadline):
                raise PeerClosed("connection closed before the response started")

    def recv_some(self, timeout: float = IO_TIMEOUT) -> bytes:
        """Whatever is buffered or arrives next (b"" at EOF)."""
        if not self.buf:
            try:
                self._fill(time.monotonic() + timeout)
            except TimeoutError:
                return b""
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def read_all(self, timeout: float = IO_TIMEOUT) -> bytes:
        """Everything until EOF."""
        deadline = time.monotonic() + timeout
        while self._fill(deadline):
            pass
        out = bytes(self.buf)
        self.buf.clear()
        return out

    # -- HTTP

    def read_response(self, method: str = "GET", timeout: float = IO_TIMEOUT) -> RawResponse:
        """Read the next response (an interim 1xx one included)."""
        deadline = time.monotonic() + timeout
        head = self._take_until(b"\r\n\r\n", deadline)
        lines = head[:-4].split(b"\r\n")
        version, _, rest = lines[0].decode("latin-1").partition(" ")
        status_text, _, reason = rest.partition(" ")
        assert version.startswith("HTTP/1."), f"not an HTTP/1.x status line: {lines[0]!r}"
        status = int(status_text)
        headers = []
        for line in lines[1:]:
            name, colon, value = line.decode("latin-1").partition(":")
            assert colon, f"malformed response header line {line!r}"
            headers.append((name.strip().lower(), value.strip()))
        response = RawResponse(version, status, reason, headers, head=head)
        if status < 200 or status in (204, 304) or method.upper() == "HEAD":
            return response
        te = response.header("transfer-encoding")
        if te is not None and te.lower().split(",")[-1].strip() == "chunked":
            response.chunked = True
            body = bytearray()
            while True:
                size_line = self._take_until(b"\r\n", deadline)[:-2]
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    break
                body += self._take_exact(size, deadline)
                assert self._take_exact(2, deadline) == b"\r\n", "chunk data not followed by CRLF"
            while True:
                line = self._take_until(b"\r\n", deadline)[:-2]
                if not line:
                    break
                name, _, value = line.decode("latin-1").partition(":")
                response.trailers.append((name.strip().lower(), value.strip()))
            response.body = bytes(body)
        elif response.header("content-length") is not None:
            response.body = self._take_exact(int(response.header("content-length")), deadline)
        else:
            response.close_delimited = True
            while self._fill(deadline):
                pass
            response.body = bytes(self.buf)
            self.buf.clear()
        return response

    def wait_closed(self, timeout: float = 3.0) -> bool:
        """True once the server closed (EOF or reset) within ``timeout``.

        Bytes arriving meanwhile stay in ``self.buf`` for the caller to check.
        """
        deadline = time.monotonic() + timeout
        try:
            while self._fill(deadline):
                pass
        except TimeoutError:
            return False
        return True

    def is_open(self, wait: float = 0.2) -> bool:
        """True if the connection is still open and silent after ``wait`` s."""
        return not self.wait_closed(wait) and not self.buf


def request_bytes(
    method: str = "GET",
    target: str = "/",
    *,
    version: str = "1.1",
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
    host: str | None = "127.0.0.1",
    content_length: bool | None = None,
) -> bytes:
    """Serialize one request. ``content_length`` None: only when there is a body."""
    lines = [f"{method} {target} HTTP/{version}"]
    if host is not None:
        lines.append(f"Host: {host}")
    for name, value in headers or []:
        lines.append(f"{name}: {value}")
    if content_length or (content_length is None and body):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*pieces: bytes, trailers: bytes = b"") -> bytes:
    out = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p)
    return out + b"0\r\n" + trailers + b"\r\n"


def connect_refused(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return False
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    except OSError:
        return True


def wait_until(predicate, timeout: float = IO_TIMEOUT, interval: float = 0.01, message: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message or f"condition not reached within {timeout} s")
        time.sleep(interval)


# --------------------------------------------------------------------------
# Logging


class LogCapture(logging.Handler):
    """Attached straight to a logger, so it sees records whatever the
    logger's ``propagate`` and the root handlers are."""

    def __init__(self, logger_name: str) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.logger = logging.getLogger(logger_name)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]

    def text(self) -> str:
        """Messages with their formatted tracebacks."""
        formatter = logging.Formatter("%(levelname)s %(message)s")
        return "\n".join(formatter.format(r) for r in self.records)

    def install(self) -> "LogCapture":
        self._saved_level = self.logger.level
        self.logger.addHandler(self)
        if self.logger.getEffectiveLevel() > logging.DEBUG:
            self.logger.setLevel(logging.DEBUG)
        return self

    def uninstall(self) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self._saved_level)


# --------------------------------------------------------------------------
# Process memory and descriptors (Linux /proc)


def proc_status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                value, unit = line.split()[1:3]
                assert unit == "kB"
                return int(value) * 1024
    raise KeyError(key)


def open_fds(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# --------------------------------------------------------------------------
# Servers in a child process


def server_env() -> dict:
    """A child server's environment: the project root (``tests.http.apps``)
    and this directory (``apps``) importable."""
    return child_env(pythonpath=(str(PROJECT_ROOT), str(HERE)))


def cli_argv(*args: str, console_script: bool = False) -> list[str]:
    if console_script:
        return [str(Path(sys.executable).parent / SERVER_MODULE), *args]
    return [sys.executable, "-m", SERVER_MODULE, *args]


def run_cli(*args: str, console_script: bool = False, timeout: float = 30.0, **kw) -> subprocess.CompletedProcess:
    """Run the CLI to completion (usage errors, --help, bad APP)."""
    return subprocess.run(
        cli_argv(*args, console_script=console_script),
        cwd=PROJECT_ROOT,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
