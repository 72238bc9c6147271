"""Helpers for the WebSocket end-to-end tests (tests/ws).

* ``WsServer`` / ``spawn_ws_server``: an app of ``ws_apps`` served in a
  child process. The server under test is ferroloop's CLI
  (``python -m ferroloop``), or, with ``FERROLOOP_WS_TEST_PEER=uvicorn``,
  uvicorn's websockets-sansio implementation: the same tests run against
  the reference, so a test is known right before ferroloop passes it.
  Settings are uvicorn's names (``ws_max_size=...``), passed as the CLI
  flags both servers share.
* ``Events``: the events file the apps write (see ws_apps.py), read by
  waiting for lines, never by sleeping.
* ``RawWS``: a byte-level WebSocket client over a real socket that masks
  its own frames, for what real clients refuse to send (unmasked frames,
  RSV bits, bad UTF-8, bad close codes, no pongs, resets).

This module sits next to the tests (``tests/ws`` is on ``sys.path``, see
conftest.py); it is not a test module.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _helpers import PROJECT_ROOT, ServerProcess, child_env, free_port  # noqa: F401 - re-exported

HERE = Path(__file__).resolve().parent

PEER_ENV = "FERROLOOP_WS_TEST_PEER"

# Generous bounds for what must happen (a loaded 2-core machine).
IO_TIMEOUT = 10.0
EVENT_TIMEOUT = 20.0

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def peer() -> str:
    """The server under test: ``ferroloop`` (default) or ``uvicorn``."""
    name = os.environ.get(PEER_ENV, "ferroloop")
    if name not in ("ferroloop", "uvicorn"):
        raise ValueError(f"{PEER_ENV}={name!r}: expected ferroloop or uvicorn")
    return name


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


# --------------------------------------------------------------------------
# The server in a child process


def _flag_value(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: ferroloop's own settings (no uvicorn flag): left out when the peer is
#: uvicorn; the tests that depend on them are marked ``ferroloop_only``.
FERROLOOP_SETTINGS = frozenset({"ws_max_frame_size", "ws_max_queue_bytes", "ws_close_timeout"})


def server_argv(app: str, port: int, settings: dict) -> list[str]:
    """argv serving ``ws_apps:APP`` on ``port`` with ``settings`` as CLI
    flags (``ws_max_size=1`` → ``--ws-max-size 1``; ``True`` alone for a
    switch such as ``no_access_log``)."""
    flags: list[str] = []
    for name, value in settings.items():
        if peer() == "uvicorn" and name in FERROLOOP_SETTINGS:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True and name not in ("ws_per_message_deflate",):
            flags.append(flag)
        else:
            flags += [flag, _flag_value(value)]
    target = f"ws_apps:{app}"
    if peer() == "uvicorn":
        return [sys.executable, "-m", "uvicorn", target, "--port", str(port), "--ws", "websockets-sansio", *flags]
    return [sys.executable, "-m", "ferroloop", target, "--port", str(port), *flags]


class WsServer(ServerProcess):
    """A ``ServerProcess`` with its events file and WebSocket URLs."""

    def __init__(self, argv, *, port: int, workdir: Path) -> None:
        env = child_env({"WS_TEST_DIR": str(workdir)}, pythonpath=(str(PROJECT_ROOT), str(HERE)))
        super().__init__(argv, port=port, log_dir=workdir, env=env)
        self.workdir = workdir
        self.events = Events(workdir / "events.jsonl")

    def ws_url(self, path: str = "/echo", conn: str | None = None, query: str = "") -> str:
        params = "&".join(p for p in (f"id={conn}" if conn else "", query) if p)
        return f"ws://127.0.0.1:{self.port}{path}" + (f"?{params}" if params else "")

    def open_gate(self, name: str) -> None:
        (self.workdir / name).touch()

    def raw(self, path: str = "/echo", conn: str | None = None, **kw) -> "RawWS":
        """A ``RawWS`` that completed the handshake (101 asserted)."""
        target = path + ((("&" if "?" in path else "?") + f"id={conn}") if conn else "")
        ws = RawWS.connect(self.port)
        response = ws.handshake(target, **kw)
        assert response.status == 101, f"handshake answered {response.status}: {response.head!r}\n{self.output()}"
        return ws

    def access_lines(self) -> list[str]:
        return [line for line in self.output().splitlines() if "WebSocket" in line or '"GET' in line]


def spawn_ws_server(workdir: Path, app: str = "echo", **settings) -> WsServer:
    port = free_port()
    server = WsServer(server_argv(app, port, settings), port=port, workdir=workdir)
    server.wait_ready()
    return server


# --------------------------------------------------------------------------
# Events the apps record


class Events:
    def __init__(self, path: Path) -> None:
        self.path = path

    def all(self) -> list[dict]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]

    def of(self, conn: str, event: str | None = None) -> list[dict]:
        return [e for e in self.all() if e["conn"] == conn and (event is None or e["event"] == event)]

    def wait(self, conn: str, event: str, count: int = 1, timeout: float = EVENT_TIMEOUT, where=None) -> list[dict]:
        """Wait until ``conn`` recorded ``event`` at least ``count`` times
        (matching ``where`` if given); return those records."""
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.of(conn, event) if where is None or where(e)]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{conn!r} did not record {event!r} x{count} within {timeout} s; it recorded: {self.of(conn)}")
            time.sleep(0.02)

    def wait_done(self, conn: str, timeout: float = EVENT_TIMEOUT) -> list[dict]:
        """Wait until the app's call for ``conn`` returned; all its records."""
        self.wait(conn, "done", timeout=timeout)
        return self.of(conn)


def assert_one_disconnect(events: list[dict]) -> dict:
    """Exactly one websocket.disconnect, and a receive() after it did not
    deliver another (ws_apps._after_disconnect); returns it."""
    disconnects = [e for e in events if e["event"] == "disconnect"]
    assert len(disconnects) == 1, f"websocket.disconnect delivered {len(disconnects)} times: {events}"
    again = [e for e in events if e["event"] == "after-disconnect" and e["outcome"] == "message"]
    # uvicorn (websockets-sansio) answers a second receive() with another
    # disconnect (code 1005); the issue asks for exactly once.
    assert not again or peer() == "uvicorn", f"a receive() after websocket.disconnect delivered a message: {again}"
    assert disconnects[0].get("type", "websocket.disconnect") == "websocket.disconnect", disconnects[0]
    return disconnects[0]


def wait_until(predicate, timeout: float = EVENT_TIMEOUT, message: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message or f"condition not reached within {timeout} s")
        time.sleep(0.02)


def wait_settled(read, done, look: float = 2.0, timeout: float = 120.0) -> int:
    """Wait until ``read()`` reaches ``done`` or stops moving (two looks
    ``look`` s apart agree); returns the last value. A stall that is only
    a slow machine ends the wait early, so a test built on this can only
    pass wrongly, never fail wrongly."""
    deadline = time.monotonic() + timeout
    last = read()
    while last != done and time.monotonic() < deadline:
        time.sleep(look)
        now = read()
        if now == last:
            break
        last = now
    return last


# --------------------------------------------------------------------------
# Raw WebSocket client


class PeerClosed(Exception):
    """The server closed the TCP connection."""


@dataclass
class HandshakeResponse:
    status: int
    headers: list[tuple[str, str]]
    head: bytes
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name.lower():
                return value
        return None


@dataclass
class Frame:
    fin: bool
    rsv: int
    opcode: int
    payload: bytes

    def close_code(self) -> int | None:
        return struct.unpack("!H", self.payload[:2])[0] if len(self.payload) >= 2 else None

    def close_reason(self) -> str:
        return self.payload[2:].decode("utf-8")


def encode_frame(opcode: int, payload: bytes = b"", *, fin: bool = True, rsv: int = 0, mask: bool = True, length: int | None = None) -> bytes:
    """One client frame; ``mask=False`` for an (invalid) unmasked one,
    ``length`` to claim another payload length."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    mask_bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + _apply_mask(payload, key)


def _apply_mask(payload: bytes, key: bytes) -> bytes:
    if not payload:
        return b""
    # XOR with the key repeated: one big-int operation, fast for MiBs.
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def close_payload(code: int | None, reason: bytes = b"") -> bytes:
    return b"" if code is None else struct.pack("!H", code) + reason


class RawWS:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    @classmethod
    def connect(cls, port: int, timeout: float = IO_TIMEOUT) -> "RawWS":
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    # -- handshake

    def handshake(
        self,
        target: str = "/echo",
        *,
        method: str = "GET",
        version: str = "13",
        key: str | None = None,
        extra: list[tuple[str, str]] | None = None,
        upgrade: str = "websocket",
        connection: str = "Upgrade",
    ) -> HandshakeResponse:
        key = base64.b64encode(os.urandom(16)).decode() if key is None else key
        lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
        if upgrade:
            lines.append(f"Upgrade: {upgrade}")
        if connection:
            lines.append(f"Connection: {connection}")
        if key:
            lines.append(f"Sec-WebSocket-Key: {key}")
        if version:
            lines.append(f"Sec-WebSocket-Version: {version}")
        for name, value in extra or []:
            lines.append(f"{name}: {value}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        response = self.read_response()
        if response.status == 101:
            assert response.header("sec-websocket-accept") == accept_key(key), response.head
        return response

    def read_response(self) -> HandshakeResponse:
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        end = self.buf.index(b"\r\n\r\n") + 4
        head = bytes(self.buf[:end])
        del self.buf[:end]
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = []
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers.append((name.strip().lower(), value.strip()))
        body = b""
        length = dict(headers).get("content-length")
        if status != 101 and length is not None:
            while len(self.buf) < int(length):
                self._fill()
            body = bytes(self.buf[: int(length)])
            del self.buf[: int(length)]
        return HandshakeResponse(status, headers, head, body)

    # -- frames

    def send_frame(self, opcode: int, payload: bytes = b"", **kw) -> None:
        self.sock.sendall(encode_frame(opcode, payload, **kw))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_text(self, text: str) -> None:
        self.send_frame(OP_TEXT, text.encode())

    def send_close(self, code: int | None = 1000, reason: bytes = b"") -> None:
        self.send_frame(OP_CLOSE, close_payload(code, reason))

    def _fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise PeerClosed()
        self.buf += data

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def recv_frame(self) -> Frame:
        b0, b1 = self._take(2)
        assert not b1 & 0x80, "a server frame is masked"
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._take(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._take(8))
        return Frame(bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F, self._take(n))

    def recv_message(self) -> tuple[int, bytes]:
        """The next data message (pings answered, pongs skipped)."""
        opcode = None
        parts = []
        while True:
            frame = self.recv_frame()
            if frame.opcode == OP_PING:
                self.send_frame(OP_PONG, frame.payload)
                continue
            if frame.opcode == OP_PONG:
                continue
            if frame.opcode == OP_CLOSE:
                raise AssertionError(f"close {frame.close_code()} {frame.payload[2:]!r} instead of a message")
            if opcode is None:
                opcode = frame.opcode
            parts.append(frame.payload)
            if frame.fin:
                return opcode, b"".join(parts)

    def expect_close(self) -> Frame:
        """Read until the server's close frame (skipping data and
        control frames before it); returns it."""
        while True:
            try:
                frame = self.recv_frame()
            except PeerClosed:
                raise AssertionError("the server dropped the connection without a close frame") from None
            if frame.opcode == OP_CLOSE:
                return frame

    def wait_eof(self, timeout: float = IO_TIMEOUT) -> bool:
        """True once the server closed TCP (EOF or reset) within ``timeout``."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    if not self.sock.recv(65536):
                        return True
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    return True
            return False
        finally:
            self.sock.settimeout(IO_TIMEOUT)

    def reset(self) -> None:
        """Abort: SO_LINGER 0 and close, so the server reads an RST."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        self.sock.close()
