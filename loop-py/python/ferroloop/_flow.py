"""Write-side flow control shared by the transports: the high/low water
marks and the ``pause_writing``/``resume_writing`` calls (asyncio's rules)."""

from __future__ import annotations

from typing import Any


class FlowControl:
    """Mixed into a transport that defines ``get_write_buffer_size()`` and
    has ``_protocol`` and ``_loop``."""

    _protocol: Any
    _loop: Any

    def _init_flow_control(self) -> None:
        self._protocol_paused = False
        self._high_water = 64 * 1024
        self._low_water = 16 * 1024

    def get_write_buffer_size(self) -> int:
        raise NotImplementedError

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (self._low_water, self._high_water)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = 64 * 1024 if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self._high_water = high
        self._low_water = low
        self._maybe_pause_protocol()

    def _maybe_pause_protocol(self) -> None:
        if self.get_write_buffer_size() <= self._high_water or self._protocol_paused:
            return
        self._protocol_paused = True
        self._notify_protocol("pause_writing")

    def _maybe_resume_protocol(self) -> None:
        if not self._protocol_paused or self.get_write_buffer_size() > self._low_water:
            return
        self._protocol_paused = False
        self._notify_protocol("resume_writing")

    def _notify_protocol(self, method: str) -> None:
        try:
            getattr(self._protocol, method)()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._loop.call_exception_handler({
                "message": f"protocol.{method}() failed",
                "exception": exc,
                "transport": self,
                "protocol": self._protocol,
            })
