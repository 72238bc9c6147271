"""The TCP echo workloads (bench/README.md, "TCP echo suite"): each server kind with
each message size.  The servers are in echo_server.py, the client in
xtask/src/echo_client.rs."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("protocol", "streams")
SIZES = (1024, 10 * 1024, 100 * 1024)


@dataclass(frozen=True)
class EchoWorkload:
    kind: str  # "protocol" (an asyncio.Protocol) or "streams" (asyncio.start_server)
    size: int  # bytes per message

    @property
    def label(self) -> str:
        return f"{self.kind} {self.size // 1024} KiB"


WORKLOADS: dict[str, EchoWorkload] = {
    f"{kind}_{size // 1024}k": EchoWorkload(kind, size) for kind in KINDS for size in SIZES
}
