"""The WebSocket workloads (bench/README.md, "WebSocket suite"): what the
Rust client (`xtask ws-client`) sends, or how many connections it holds
open for the idle-memory figure."""

from __future__ import annotations

from dataclasses import dataclass

ECHO = "echo"
IDLE = "idle"


@dataclass(frozen=True)
class WsWorkload:
    kind: str  # ECHO or IDLE
    conns: int
    # Bytes per message (echo); 0 for idle.
    size: int = 0
    text: bool = False
    # The handshake offers permessage-deflate.
    deflate: bool = False

    @property
    def label(self) -> str:
        if self.kind == IDLE:
            return f"idle, {self.conns:,} open" + (" (deflate offered)" if self.deflate else "")
        size = f"{self.size // 1024} KiB" if self.size >= 1024 else f"{self.size} B"
        kind = "text" if self.text else "binary"
        return f"{kind} {size}" + (" + deflate" if self.deflate else "")


WORKLOADS: dict[str, WsWorkload] = {
    "bin_64": WsWorkload(ECHO, 10, 64),
    "bin_4k": WsWorkload(ECHO, 10, 4096),
    "bin_256k": WsWorkload(ECHO, 10, 256 * 1024),
    "text_4k_deflate": WsWorkload(ECHO, 10, 4096, text=True, deflate=True),
    "idle_1k": WsWorkload(IDLE, 1000, deflate=True),
}
