"""The TLS servers under comparison: the HTTP suite's ASGI servers
(`http_servers.py`: one worker, serving `http_app.app`) with TLS on, and the
certificates they are given (made at bench time with the `openssl` CLI).

`ferroloop-http` is ferroloop's plaintext HTTP server exactly as the HTTP
suite runs it (no TLS, keep-alive workloads only): the same run's
denominator for the issue's Target, ferroloop TLS / ferroloop plaintext
per server CPU-second."""

from __future__ import annotations

import subprocess
from pathlib import Path

import http_servers
from benchenv import BenchEnv
from contenders import BASE
from http_servers import BENCH, GRANIAN_ARGS, SERVED_BY_HTTP_SERVE, UVICORN_ARGS, Server
from http_servers import SERVERS as HTTP_SERVERS
from summary import SUBJECT
from tls_workloads import ECDSA, KEEPALIVE_WORKLOADS, RSA

TLS_SERVE = BENCH / "tls_serve.py"
APP_SPEC = "http_app:app"

SERVERS: dict[str, Server] = {
    s.name: s
    for s in (
        Server(
            "ferroloop",
            (),
            'ferroloop.serve(app, host="127.0.0.1", port=P, access_log=False, '
            "ssl_certfile=C, ssl_keyfile=K)",
        ),
        Server(BASE, (), HTTP_SERVERS[BASE].settings),
        Server(
            "cadeloop",
            ("cadeloop",),
            "cadeloop.serve(app, ..., ssl=ssl.SSLContext(PROTOCOL_TLS_SERVER) with "
            "load_cert_chain(C, K))",
        ),
        Server(
            "granian",
            ("granian", "uvloop"),
            "granian " + " ".join(GRANIAN_ARGS) + " --ssl-certificate C --ssl-keyfile K",
        ),
        Server(
            "uvicorn",
            ("uvicorn", "httptools", "uvloop"),
            "uvicorn " + " ".join(UVICORN_ARGS) + " --ssl-certfile C --ssl-keyfile K",
        ),
    )
}
# ferroloop without TLS (see the module's doc): the HTTP suite's server.
PLAIN = "ferroloop-http"
SERVERS[PLAIN] = Server(
    PLAIN,
    (),
    HTTP_SERVERS[SUBJECT].settings + " (plaintext HTTP, no TLS: the Target's denominator)",
    workloads=KEEPALIVE_WORKLOADS,
)
# Beside ferroloop in every table.
SERVERS = {n: SERVERS[n] for n in ("ferroloop", PLAIN, *SERVERS) if n in SERVERS}

CORE = ("ferroloop", BASE, PLAIN)


def takes_part(server: str, workload: str) -> bool:
    only = SERVERS[server].workloads
    return only is None or workload in only


def probe(env: BenchEnv, names: list[str]) -> dict[str, dict]:
    """The HTTP suite's probe; ferroloop-http is ferroloop."""
    asked = list(dict.fromkeys(SUBJECT if n == PLAIN else n for n in names))
    found = http_servers.probe(env, asked, None)
    return {n: found[SUBJECT if n == PLAIN else n] for n in names}

# openssl req arguments for each certificate kind.
KEY_ARGS = {
    ECDSA: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    RSA: ["-newkey", "rsa:2048"],
}


def make_certs(directory: Path) -> dict[str, tuple[Path, Path]]:
    """A self-signed certificate (SAN IP:127.0.0.1) and its unencrypted key
    per kind: kind -> (certfile, keyfile)."""
    made = {}
    for kind, key_args in KEY_ARGS.items():
        cert, key = directory / f"{kind}.pem", directory / f"{kind}.key"
        subprocess.run(
            ["openssl", "req", "-x509", *key_args, "-nodes", "-keyout", str(key),
             "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True,
        )  # fmt: skip
        made[kind] = (cert, key)
    return made


def command(name: str, python: Path, port: int, cert: Path, key: Path) -> list[str]:
    """The command line that starts `name` with TLS on 127.0.0.1:`port`
    (ferroloop-http: without)."""
    if name == PLAIN:
        return http_servers.command(SUBJECT, python, port, None)
    if name in SERVED_BY_HTTP_SERVE:
        return [str(python), str(TLS_SERVE), name, str(port), str(cert), str(key)]
    if name == "granian":
        return [
            str(python.parent / "granian"),
            *GRANIAN_ARGS,
            "--ssl-certificate", str(cert), "--ssl-keyfile", str(key),
            "--host", "127.0.0.1", "--port", str(port),
            "--working-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    if name == "uvicorn":
        return [
            str(python), "-m", "uvicorn",
            *UVICORN_ARGS,
            "--ssl-certfile", str(cert), "--ssl-keyfile", str(key),
            "--host", "127.0.0.1", "--port", str(port),
            "--app-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    raise ValueError(f"unknown server {name}")
