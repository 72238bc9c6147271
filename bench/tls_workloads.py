"""The TLS suite's workloads (bench/README.md, "TLS suite").

Keep-alive: the HTTP suite's plaintext / JSON / POST 4 KiB endpoints
(`http_workloads.py`) over TLS 1.3 with wrk, on an ECDSA P-256 certificate.
Handshakes: `xtask tls-client`, one `GET /` with `Connection: close` per
connection, each a full handshake (`resumption` disabled in the client) or
a resumed one (`--resume`), on an ECDSA P-256 or an RSA 2048 certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

from http_workloads import WORKLOADS as HTTP_WORKLOADS

KEEPALIVE = "keepalive"
HANDSHAKE = "handshake"
ECDSA = "ecdsa-p256"
RSA = "rsa-2048"


@dataclass(frozen=True)
class TlsWorkload:
    kind: str
    # The certificate the server is given.
    cert: str
    # KEEPALIVE: the HTTP workload's name; HANDSHAKE: unused.
    http: str = ""
    resume: bool = False

    @property
    def label(self) -> str:
        if self.kind == KEEPALIVE:
            return f"keep-alive {HTTP_WORKLOADS[self.http].label}"
        how = "resumed" if self.resume else "full"
        return f"{how} handshakes, {self.cert}"


WORKLOADS: dict[str, TlsWorkload] = {
    "plaintext": TlsWorkload(KEEPALIVE, ECDSA, "plaintext"),
    "json": TlsWorkload(KEEPALIVE, ECDSA, "json"),
    "post4k": TlsWorkload(KEEPALIVE, ECDSA, "post4k"),
    "full-ecdsa": TlsWorkload(HANDSHAKE, ECDSA),
    "resumed-ecdsa": TlsWorkload(HANDSHAKE, ECDSA, resume=True),
    "full-rsa": TlsWorkload(HANDSHAKE, RSA),
    "resumed-rsa": TlsWorkload(HANDSHAKE, RSA, resume=True),
}
KEEPALIVE_WORKLOADS = tuple(n for n, w in WORKLOADS.items() if w.kind == KEEPALIVE)
