"""The TCP echo workloads (bench/README.md, "TCP echo suite"): each server kind with
each message size over 10 connections, 1 KiB over 1,000 concurrent connections,
and many idle connections.  The servers are in echo_server.py, the client in
xtask/src/echo_client.rs."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("protocol", "streams")
SIZES = (1024, 10 * 1024, 100 * 1024)
# Connections of the throughput workloads, and of the many-connection one.
CONNS = 10
MANY_CONNS = 1000
# Idle connections held open (fewer with --quick: echo_suite.Timing.idle_conns).
IDLE_CONNS = 10_000
# Bytes each idle connection echoes once before it goes quiet.
IDLE_SIZE = 1024


@dataclass(frozen=True)
class EchoWorkload:
    kind: str  # "protocol" (an asyncio.Protocol) or "streams" (asyncio.start_server)
    size: int  # bytes per message
    # Connections, each with one message in flight (idle: IDLE_CONNS, or the
    # run's reduced count; see echo_suite.Timing).
    conns: int = CONNS
    # Each connection echoes one message, then stays open and silent: the
    # figure is the server's memory per idle connection, not throughput.
    idle: bool = False

    @property
    def label(self) -> str:
        if self.idle:
            return f"{self.kind} idle"
        many = f", {self.conns:,} conns" if self.conns != CONNS else ""
        return f"{self.kind} {self.size // 1024} KiB{many}"


WORKLOADS: dict[str, EchoWorkload] = {
    f"{kind}_{size // 1024}k": EchoWorkload(kind, size) for kind in KINDS for size in SIZES
}
WORKLOADS |= {f"{kind}_1k_{MANY_CONNS}c": EchoWorkload(kind, 1024, MANY_CONNS) for kind in KINDS}
WORKLOADS |= {f"{kind}_idle": EchoWorkload(kind, IDLE_SIZE, IDLE_CONNS, idle=True) for kind in KINDS}
