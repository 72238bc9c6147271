"""The WebSocket servers under comparison (bench/README.md, "WebSocket
suite"): how each is installed, started and described.

Every ASGI server runs one worker on CPU 0 and serves `ws_app.app` on
127.0.0.1; `picows` is the non-ASGI ceiling (`ws_picows.py`: an echo
listener on uvloop, no application in between).  ferroloop, its baseline
and cadeloop are started by `http_serve.py serve NAME PORT ws_app`, which
reports where it imported the server from; the others by their own command
lines.  Installing and probing is the HTTP suite's (`http_servers.probe`).
"""

from __future__ import annotations

from pathlib import Path

from contenders import BASE
from http_servers import BENCH, GRANIAN_ARGS, HTTP_SERVE, SERVED_BY_HTTP_SERVE, UVICORN_ARGS, Server
from http_servers import SERVERS as HTTP_SERVERS

APP_MODULE = "ws_app"
APP_SPEC = f"{APP_MODULE}:app"
PICOWS_SERVER = BENCH / "ws_picows.py"

# The HTTP suite's granian, with its WebSocket support on.
WS_GRANIAN_ARGS = tuple("--ws" if a == "--no-ws" else a for a in GRANIAN_ARGS)
UVICORN_WS = {"uvicorn-sansio": "websockets-sansio", "uvicorn-wsproto": "wsproto"}

SERVERS: dict[str, Server] = {
    s.name: s
    for s in (
        # Started as in the HTTP suite, serving ws_app.
        HTTP_SERVERS["ferroloop"],
        HTTP_SERVERS[BASE],
        Server(
            "uvicorn-sansio",
            ("uvicorn", "websockets", "httptools", "uvloop"),
            "uvicorn --ws websockets-sansio " + " ".join(UVICORN_ARGS),
        ),
        Server(
            "uvicorn-wsproto",
            ("uvicorn", "wsproto", "httptools", "uvloop"),
            "uvicorn --ws wsproto " + " ".join(UVICORN_ARGS),
        ),
        Server("granian", ("granian", "uvloop"), "granian " + " ".join(WS_GRANIAN_ARGS)),
        HTTP_SERVERS["cadeloop"],
        Server(
            "picows",
            ("picows", "uvloop"),
            "bench/ws_picows.py: a picows echo listener on uvloop (not ASGI; no deflate)",
            runs_app=False,
        ),
    )
}

# Ours: their failures fail the run; a peer's failure is only reported.
CORE = ("ferroloop", BASE)
# Not ASGI: the ceiling, not a peer the "Must" compares with.
CEILINGS = ("picows",)


def command(name: str, python: Path, port: int) -> list[str]:
    """The command line that starts `name` on 127.0.0.1:`port` (cwd: bench/)."""
    if name in SERVED_BY_HTTP_SERVE:
        return [str(python), str(HTTP_SERVE), "serve", name, str(port), APP_MODULE]
    if name == "granian":
        return [
            str(python.parent / "granian"),
            *WS_GRANIAN_ARGS,
            "--host", "127.0.0.1", "--port", str(port),
            "--working-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    if name in UVICORN_WS:
        return [
            str(python), "-m", "uvicorn",
            "--ws", UVICORN_WS[name],
            *UVICORN_ARGS,
            "--host", "127.0.0.1", "--port", str(port),
            "--app-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    if name == "picows":
        return [str(python), str(PICOWS_SERVER), str(port)]
    raise ValueError(f"unknown server {name}")
