"""The metrics listener (`metrics_port`): `GET /metrics` (Prometheus text
exposition 0.0.4), `GET /stats` (JSON) and `GET /healthz`, on a socket and
a native `HttpServer` of its own, on the loop of the process that starts
it. Its own server has its own small `limit_concurrency`, so `/healthz`
answers while the app's limit is reached; it has no access log.

It costs the app's requests nothing: it reads the counters the loop and
the server keep anyway (`loop.stats()`, `Server.stats()`), only when
scraped. What it reads comes from a *source*: `ServerSource` over the one
`Server` of a single process (worker label "0"), or the supervisor's over
its workers' control channels.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from typing import Any, Awaitable, Callable, Protocol

from .. import _native
from . import _prometheus
from ._config import Config
from ._listen import bind_tcp

logger = logging.getLogger("ferroloop.error")
access_logger = logging.getLogger("ferroloop.access")

#: Connections plus requests the listener serves at once (scrapers and
#: probes; the excess gets 503), whatever the app's `limit_concurrency`.
LIMIT_CONCURRENCY = 64

#: Backlog of the listener's socket.
BACKLOG = 64

#: How long `aclose()` waits for a scrape being answered.
CLOSE_TIMEOUT = 1.0


class MetricsSource(Protocol):
    """What the listener renders (a single server's, or the supervisor's over its workers)."""

    async def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        """One `(worker label, {"pid": .., "loop": loop.stats(), "server":
        Server.stats()})` per worker; an entry may carry `"healthy":
        False` (then it may have no counters: a worker that did not answer)."""
        ...

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Healthy?, and the detail `/healthz` shows (`workers`,
        `unhealthy`: the labels of the workers that are not healthy, the
        ones `ferroloop_worker_healthy` reports 0 for, ...)."""
        ...


class ServedProcess(Protocol):
    """What `ServerSource` reads of the process's `Server`."""

    @property
    def should_exit(self) -> bool: ...

    def stats(self) -> Any: ...


class ServerSource:
    """The source over the one `Server` of this process: worker "0". It
    runs on the server's loop, so a blocked loop answers nothing (a failed
    health check, which is the point); while the server drains it reports
    `draining` (503), so a balancer stops sending new requests."""

    def __init__(self, server: ServedProcess) -> None:
        self._server = server

    async def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        loop: Any = asyncio.get_running_loop()
        return [("0", {"pid": os.getpid(), "loop": loop.stats(), "server": self._server.stats()})]

    def health(self) -> tuple[bool, dict[str, Any]]:
        detail: dict[str, Any] = {"workers": 1, "unhealthy": [], "pid": os.getpid()}
        if self._server.should_exit:
            detail["status"] = "draining"
            return False, detail
        return True, detail


Response = tuple[int, bytes, bytes]  # status, content type, body

_JSON = b"application/json"
_TEXT = b"text/plain; charset=utf-8"


async def _metrics(source: MetricsSource) -> Response:
    snapshot = await source.snapshot()
    _, detail = source.health()
    text = _prometheus.render(snapshot, detail.get("unhealthy", ()))
    return 200, _prometheus.CONTENT_TYPE.encode(), text.encode()


async def _stats(source: MetricsSource) -> Response:
    snapshot = await source.snapshot()
    _, detail = source.health()
    return 200, _JSON, _json(_prometheus.stats_document(snapshot, detail.get("unhealthy", ())))


async def _healthz(source: MetricsSource) -> Response:
    ok, detail = source.health()
    body = {"status": "ok" if ok else "unhealthy", **detail}
    return (200 if ok else 503), _JSON, _json(body)


_ROUTES: dict[str, Callable[[MetricsSource], Awaitable[Response]]] = {
    "/metrics": _metrics,
    "/stats": _stats,
    "/healthz": _healthz,
}


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


class MetricsApp:
    """The listener's ASGI app: the three routes, 404 for other paths, 405
    for methods other than GET and HEAD (the server drops HEAD's body)."""

    def __init__(self, source: MetricsSource) -> None:
        self.source = source

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        route = _ROUTES.get(scope["path"])
        headers = []
        if route is None:
            status, content_type, body = 404, _TEXT, b"Not Found\n"
        elif scope["method"] not in ("GET", "HEAD"):
            status, content_type, body = 405, _TEXT, b"Method Not Allowed\n"
            headers.append((b"allow", b"GET, HEAD"))
        else:
            status, content_type, body = await route(self.source)
        headers += [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            # One scrape per connection: a worker forked while a scrape
            # connection is open holds a copy of its fd, so the
            # supervisor's close would not end it and a reused connection
            # would hang.
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class MetricsServer:
    """A running metrics listener; `close()` (or `await aclose()`) stops it."""

    def __init__(self, native: Any, sock: socket.socket) -> None:
        self._native = native
        self.sockets = [sock]
        self.address: tuple[str, int] = sock.getsockname()[:2]

    @property
    def port(self) -> int:
        return self.address[1]

    def close(self) -> None:
        """Stop accepting and close every connection (idempotent)."""
        if not self.sockets:
            return
        self._native.stop_accepting()
        self._native.close_all()
        for sock in self.sockets:
            sock.close()
        self.sockets = []

    async def aclose(self) -> None:
        """`close()`, then wait (briefly) for scrapes being answered."""
        self.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_TIMEOUT
        while self._native.task_count and loop.time() < deadline:
            await asyncio.sleep(0.01)


async def start_metrics_server(config: Config, source: MetricsSource) -> MetricsServer:
    """Bind `config.metrics_address`:`config.metrics_port` and serve the
    metrics of `source` there, on the running (ferroloop) loop. A bind
    failure raises `OSError` (uvicorn's bind message)."""
    if config.metrics_port is None:
        raise ValueError("metrics_port: not set")
    loop = asyncio.get_running_loop()
    app = MetricsApp(source)
    own = Config(
        app,
        access_log=False,
        lifespan="off",
        ws="none",
        proxy_headers=False,
        limit_concurrency=LIMIT_CONCURRENCY,
        server_header=config.server_header,
        date_header=config.date_header,
    )
    sock = bind_tcp(config.metrics_address, config.metrics_port, BACKLOG)
    try:
        native = _native.HttpServer(loop, app, own, error_log=logger, access_log=access_logger)
        native.listen(sock.fileno(), True)
    except BaseException:
        sock.close()
        raise
    server = MetricsServer(native, sock)
    host, port = server.address
    logger.info("Metrics on http://%s/metrics", f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return server
