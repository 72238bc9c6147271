"""The supervisor <-> worker control channel: one AF_UNIX SOCK_STREAM
socketpair per worker, newline-delimited JSON objects.

supervisor -> worker: {"op": "ping", "id": n}   -> {"op": "pong", "id": n}
                      {"op": "stats", "id": n}  -> {"op": "stats", "id": n, "loop": .., "server": .., "pid": ..}
                      {"op": "retire"}          hand over: drain, keeping idle keep-alive
                                                connections for one more response (additive)
worker -> supervisor: {"op": "ready", "pid": pid}           its listeners accept
                      {"op": "failed", "message": "..", "code": n}   startup failed, then it exits
                      {"op": "recycle", "reason": ".."}     limit_max_requests reached: replace me
                                                            (additive; the supervisor answers "retire")

Both ends are read with `add_reader` on the loop of their process: a
worker's pong is written by its loop, so a blocked loop does not answer.
Writes are small and non-blocking; a peer that stopped reading (a full
socket buffer) loses messages rather than blocking the writer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any, Callable

logger = logging.getLogger("ferroloop.error")

#: A line longer than this is a broken peer, not a message.
MAX_LINE = 16 * 1024 * 1024

#: How long `Channel.send` blocks to finish a message the socket took in part.
FINISH_TIMEOUT = 1.0


def encode(message: dict[str, Any]) -> bytes:
    """One message as the channel's framing: a JSON object and a newline."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def send_blocking(sock: socket.socket, message: dict[str, Any], timeout: float) -> bool:
    """Write one message whole on a socket no loop reads for us (a worker
    reporting a startup failure before its loop runs); False if it could
    not within `timeout` seconds."""
    return _send_all(sock, encode(message), timeout)


def _send_all(sock: socket.socket, data: bytes, timeout: float) -> bool:
    # settimeout makes the socket blocking, with a deadline per call.
    try:
        sock.settimeout(timeout)
        sock.sendall(data)
    except OSError:
        return False
    return True


class Channel:
    """One end of a control socketpair, read on `loop`: each complete line
    is decoded and passed to `on_message`; `on_close()` runs once, at EOF
    or an error (the peer is gone), never for this end's own `close()`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        on_message: Callable[[dict[str, Any]], None],
        on_close: Callable[[], None],
    ) -> None:
        self._loop = loop
        self.sock = sock
        self._on_message = on_message
        self._on_close = on_close
        self._buffer = bytearray()
        self.closed = False
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._readable)

    def send(self, message: dict[str, Any]) -> bool:
        """Queue one message; False if the peer is gone or not reading."""
        if self.closed:
            return False
        data = encode(message)
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self._lost()
            return False
        if sent < len(data):
            # Rare (a full buffer mid-message): finish it blocking briefly
            # rather than leaving half a line that breaks the framing.
            if not _send_all(self.sock, data[sent:], FINISH_TIMEOUT):
                self._lost()
                return False
            self.sock.setblocking(False)
        return True

    def _readable(self) -> None:
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._lost()
            return
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > MAX_LINE:
                    logger.error("Control channel: a message over %d bytes; closing the channel", MAX_LINE)
                    self._lost()
                return
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            try:
                message = json.loads(line)
            except ValueError:
                logger.error("Control channel: a line that is not JSON: %r", line[:200])
                continue
            if isinstance(message, dict):
                self._on_message(message)
            if self.closed:
                return

    def close(self) -> None:
        """Close this end (the peer sees EOF); `on_close` does not run."""
        if self.closed:
            return
        self.closed = True
        try:
            self._loop.remove_reader(self.sock.fileno())
        except (ValueError, OSError, RuntimeError):
            pass
        self.sock.close()

    def _lost(self) -> None:
        """The peer is gone (EOF, an error, a broken framing): close, then
        tell the owner once."""
        if self.closed:
            return
        self.close()
        self._on_close()

    def forget(self) -> None:
        """In a forked child: close this inherited end without touching the
        loop it was registered with (the parent's)."""
        self.closed = True
        self.sock.close()
