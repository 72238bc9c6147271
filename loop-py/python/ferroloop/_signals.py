"""Unix signal handlers for the loop, the way asyncio delivers them.

A Python-level handler that does nothing is installed for the signal, and
``signal.set_wakeup_fd`` makes the interpreter write the signal number to a
socket the loop reads; the registered callback then runs as an ordinary
loop callback, in the loop's thread.
"""

from __future__ import annotations

import signal
import socket
import sys
from typing import Any, Callable, Protocol


class SignalLoop(Protocol):
    """What the handlers use of their loop (ferroloop's `Loop`)."""

    def add_reader(self, fd: int, callback: Callable[..., Any], *args: Any) -> None: ...

    def remove_reader(self, fd: int) -> bool: ...

    def _check_closed(self) -> None: ...

    def _new_handle(self, callback: Callable[..., Any], args: tuple[Any, ...]) -> Any: ...

    def _schedule(self, handle: Any) -> None: ...


def _noop_handler(signum: int, frame: Any) -> None:
    """The Python-level handler: the wake-up fd does the work."""


def check_signal(sig: Any) -> None:
    if not isinstance(sig, int):
        raise TypeError(f"sig must be an int, not {sig!r}")
    if sig not in signal.valid_signals():
        raise ValueError(f"invalid signal number {sig}")


class SignalHandlers:
    """The signal → handle table of one loop and its wake-up socket pair."""

    def __init__(self, loop: SignalLoop) -> None:
        self._loop = loop
        self._handlers: dict[int, Any] = {}
        self._reader: socket.socket | None = None
        self._writer: socket.socket | None = None

    def __bool__(self) -> bool:
        return bool(self._handlers)

    def _ensure_wakeup(self) -> None:
        if self._writer is not None:
            return
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        try:
            # Raises ValueError outside the main thread.
            signal.set_wakeup_fd(writer.fileno())
        except (ValueError, OSError) as exc:
            reader.close()
            writer.close()
            raise RuntimeError(str(exc)) from None
        self._reader, self._writer = reader, writer
        self._loop.add_reader(reader.fileno(), self._read_signals)

    def _drop_wakeup(self) -> None:
        if self._writer is None:
            return
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        if self._reader is not None:
            self._loop.remove_reader(self._reader.fileno())
            self._reader.close()
        self._writer.close()
        self._reader = self._writer = None

    def forget(self) -> None:
        """In a forked child that never runs this loop again: close the
        child's copies of the wake-up pair (the parent's stay open) and
        drop the handles, without touching the loop or the signals (the
        caller reset the interpreter's wake-up fd first)."""
        for sock in (self._reader, self._writer):
            if sock is not None:
                sock.close()
        self._reader = self._writer = None
        self._handlers.clear()

    def _read_signals(self) -> None:
        assert self._reader is not None
        while True:
            try:
                data = self._reader.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            for signum in data:
                handle = self._handlers.get(signum)
                if handle is None:
                    continue
                if handle.cancelled():
                    self.remove(signum)
                else:
                    self._loop._schedule(handle)

    def add(self, sig: int, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        check_signal(sig)
        self._loop._check_closed()
        self._ensure_wakeup()
        handle = self._loop._new_handle(callback, args)
        self._handlers[sig] = handle
        try:
            signal.signal(sig, _noop_handler)
            # Let system calls restart after our handler ran.
            signal.siginterrupt(sig, False)
        except OSError as exc:
            del self._handlers[sig]
            if not self._handlers:
                self._drop_wakeup()
            if exc.errno == 22:  # EINVAL: SIGKILL, SIGSTOP
                raise RuntimeError(f"sig {sig:d} cannot be caught") from None
            raise

    def remove(self, sig: int) -> bool:
        check_signal(sig)
        try:
            handle = self._handlers.pop(sig)
        except KeyError:
            return False
        handle.cancel()
        default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        try:
            signal.signal(sig, default)
        except OSError as exc:
            if exc.errno == 22:
                raise RuntimeError(f"sig {sig:d} cannot be caught") from None
            raise
        if not self._handlers:
            self._drop_wakeup()
        return True

    def close(self) -> None:
        if sys.is_finalizing():
            self._handlers.clear()
        else:
            for sig in list(self._handlers):
                self.remove(sig)
        self._drop_wakeup()
