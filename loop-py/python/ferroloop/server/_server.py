"""`Server`: binds the listeners (or takes ready ones, as a supervised
worker does), runs lifespan, hands accepted connections to the native HTTP
server and shuts down gracefully on SIGINT/SIGTERM (and, with TLS, reloads
its certificates on SIGHUP). Its sockets come from `_listen.bind_sockets`,
the supervisor's too."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import random
import signal
import socket
import threading
from typing import Any, Callable, TypedDict

from .. import _native
from ._config import Config
from ._lifespan import Lifespan
from ._listen import bind_sockets, log_running
from ._loops import ExtraLoops, add_up
from ._metrics import MetricsServer, ServerSource, start_metrics_server
from ._pidfile import remove_pid_file, write_pid_file

logger = logging.getLogger("ferroloop.error")
access_logger = logging.getLogger("ferroloop.access")

ClientDisconnected = _native.ClientDisconnected
ClientDisconnected.__module__ = "ferroloop"

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class WebSocketStats(TypedDict):
    """`Server.stats()["websocket"]`. `close_codes`: sessions by the code
    they ended with, the registered codes ("1000" … "1015") one by one and
    any other in a group: "application" (3000–3999), "private"
    (4000–4999), "other"; only what was seen is a key."""

    sessions_open: int
    sessions_total: int
    messages_in: int
    messages_out: int
    close_codes: dict[str, int]


class ServerStats(TypedDict, total=False):
    """`Server.stats()`: nested dicts of counters (ints), by family (no
    keys before the server started)."""

    connections: dict[str, int]
    requests: dict[str, Any]
    bytes: dict[str, int]
    rejections: dict[str, int]
    timeouts: dict[str, int]
    app_exceptions: int
    client_disconnects: int
    websocket: WebSocketStats
    tls: dict[str, Any]
    backend: str  #: the event loop's poller backend: "io_uring" or "epoll"


class Server:
    """One ASGI server. `await server.serve()` runs it until `should_exit`
    is set (or SIGINT/SIGTERM when run in the main thread)."""

    def __init__(self, config: Config) -> None:
        if not isinstance(config, Config):
            raise TypeError(f"Server() expects a ferroloop.Config, got {type(config).__name__}")
        self.config = config
        self.started = False
        self.force_exit = False
        self.sockets: list[socket.socket] = []
        self._should_exit = False
        self._exit_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._native: Any = None
        self._owned_sockets: list[socket.socket] = []
        self._uds_path: str | None = None
        self._froze_gc = False
        self.metrics: MetricsServer | None = None  # the metrics listener (metrics_port)
        # Set by a supervised worker (`_worker.py`): called once the
        # listeners accept; the "running on" line is the supervisor's; a
        # hand-over drain keeps idle keep-alive connections for one more
        # response (`retire`).
        self._on_started: Callable[[], None] | None = None
        self._is_worker = False
        self._handover = False
        self._pid_file: str | None = None
        self._extra_loops: ExtraLoops | None = None  # `loops` above 1
        self._extra_loop = False  # one of another Server's extra loops

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = bool(value)
        if value and self._loop is not None and self._exit_event is not None:
            # May be set from another thread (tests, embedding apps).
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._exit_event.set)

    def reload_tls(self) -> bool:
        """Re-read the TLS certificate and key files for new handshakes;
        live connections keep theirs. A file that does not load keeps the
        current certificates and logs a warning naming why. Returns whether
        new certificates are in use (False also without TLS or before the
        server started). Session tickets are per process: they stay valid
        across a reload (the ticket keys are kept)."""
        if self._native is None:
            return False
        return bool(self._native.reload_tls())

    def tls_stats(self) -> dict[str, Any]:
        """The TLS handshake counters: `handshakes` completed,
        `handshakes_failed` (by kind: `failed_not_tls`, `failed_handshake`,
        `failed_too_large`, `failed_timeout`, `failed_abandoned`),
        `protocol_errors` and `truncated` after the handshake, `reloads`,
        `reload_errors`, `resumptions`, and the alerts that ended sessions
        by name (`alerts`: the clients', `alerts_sent`: ours). Empty before
        the server started."""
        if self._native is None:
            return {}
        return dict(self._native.tls_stats())

    def stats(self) -> ServerStats:
        """The server's counters, a fresh dict each call (empty before the
        server started): `connections` (open, accepted, closed, reset),
        `requests` (total, in_flight, by_method, by_status), `bytes` (in,
        out, on the wire), `rejections` (the statuses the server answered
        itself), `timeouts` (by kind), `app_exceptions`,
        `client_disconnects` (app calls ended by their client leaving),
        `websocket` (sessions, messages, close codes), `tls` (as `tls_stats()`;
        empty without TLS) and `backend` (the loop's poller backend). See
        docs/server.md, "Server.stats()"."""
        if self._native is None:
            return {}
        stats: ServerStats = self._native.stats()
        stats["backend"] = str(getattr(self._loop, "_poller_backend", ""))
        if self._extra_loops is not None:
            for more in self._extra_loops.stats():
                add_up(stats, more)  # type: ignore[arg-type]
        return stats

    def retire(self) -> None:
        """Stop gracefully, handing over to another process on the same
        listeners: as `should_exit = True`, but idle keep-alive connections
        are kept to answer one more request (with `connection: close`)
        instead of being closed while their client may be sending."""
        self._handover = True
        self.should_exit = True

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Start, serve until asked to stop, then shut down gracefully.
        `sockets`: listening sockets to serve on instead of binding (as
        uvicorn's); the caller keeps them. `Server` is one process: with
        `workers` above 1 use `ferroloop.serve()` or the command line,
        whose supervisor forks the workers."""
        from .._loop import Loop

        loop = asyncio.get_running_loop()
        if not isinstance(loop, Loop):
            raise RuntimeError(
                "ferroloop.Server runs on a ferroloop loop: use ferroloop.run(server.serve()) or ferroloop.serve()"
            )
        config = self.config
        if sockets is None and config.workers > 1:
            raise RuntimeError(
                f"Server.serve() runs one process, not workers={config.workers}: use ferroloop.serve(...) or "
                "the ferroloop command, which supervise worker processes"
            )
        config.configure_logging()
        app = config.load_app()
        self._loop = loop
        self._exit_event = asyncio.Event()
        if self._should_exit:
            self._exit_event.set()
        # A bad certificate, key, CRL or password fails here, before the
        # app starts up and anything binds (the native server loads the
        # files again when it is made, after the bind).
        config.load_tls()
        lifespan = Lifespan(app, config.lifespan)
        await lifespan.startup()
        try:
            if sockets is None:
                self._bind()
            else:
                self.sockets = list(sockets)
            self._native = _native.HttpServer(loop, app, config, error_log=logger, access_log=access_logger)
            self._native.set_state(lifespan.state)
            if config.limit_max_requests is not None:
                limit = config.limit_max_requests + random.randint(0, config.limit_max_requests_jitter)
                self._native.on_request_limit(limit, lambda: self._request_limit_reached(limit))
            # The heap built by imports and startup is long-lived: keep it
            # out of the cyclic collector's generations, so collections
            # while serving only walk what requests allocate. Skipped if
            # the application froze objects itself (unfreeze could not
            # tell ours from theirs).
            gc.collect()
            if gc.get_freeze_count() == 0:
                gc.freeze()
                self._froze_gc = True
            # Sockets handed in are the caller's and may be served by other
            # processes too (the supervisor's and gunicorn's workers): shared
            # listeners take small accept batches so a burst spreads.
            shared = sockets is not None or config.loops > 1
            for sock in self.sockets:
                self._native.listen(sock.fileno(), sock.family in (socket.AF_INET, socket.AF_INET6), shared)
            if config.loops > 1 and not self._extra_loop:
                self._extra_loops = ExtraLoops(Server, self, config.loops - 1)
                await self._extra_loops.start(self.sockets)
            self.started = True
            if config.metrics_port is not None and not self._is_worker:
                # its own listener, on this loop: worker "0" (a supervisor serves it for its workers)
                self.metrics = await start_metrics_server(config, ServerSource(self))
            if not self._is_worker:
                self._log_ws_alias()
                self._log_started()
            if self._on_started is not None:
                self._on_started()
            with self._signal_handlers(loop):
                # Once SIGTERM is handled: whoever reads the file may signal at once.
                if config.pid_file is not None and not self._is_worker:
                    write_pid_file(config.pid_file)
                    self._pid_file = config.pid_file
                await self._exit_event.wait()
                await self._shutdown()
                self.started = False
        finally:
            if self._native is not None and self.started:
                # Cancelled or failed before a graceful shutdown: stop the
                # native server before its listening fds are closed.
                self._native.stop_accepting()
                self._native.close_all()
            if self._extra_loops is not None:
                self._extra_loops.force_exit()
                await self._extra_loops.stop_and_join(handover=False)
                self._extra_loops = None
            self._close_sockets()
            if self._pid_file is not None:
                remove_pid_file(self._pid_file)
                self._pid_file = None
            self.started = False
            if self._froze_gc:
                gc.unfreeze()
                self._froze_gc = False
            if self.metrics is not None:  # last: /healthz answered (503 draining) during the drain
                self.metrics.close()
                self.metrics = None
            await lifespan.shutdown()

    def _bind(self) -> None:
        self.sockets, self._owned_sockets, self._uds_path = bind_sockets(self.config)

    def _log_ws_alias(self) -> None:
        # uvicorn's implementation names are accepted for its command lines' sake.
        ws = self.config.ws
        if ws not in ("auto", "none"):
            logger.info("WebSocket implementation %r is served by ferroloop's native WebSocket", ws)

    def _log_started(self) -> None:
        log_running(self.config, self.sockets[0], tls=self._native is not None and self._native.tls)

    @contextlib.contextmanager
    def _signal_handlers(self, loop: asyncio.AbstractEventLoop):  # type: ignore[no-untyped-def]
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        installed = []
        try:
            for sig in HANDLED_SIGNALS:
                loop.add_signal_handler(sig, self._handle_exit, sig)
                installed.append(sig)
            # uvicorn ignores SIGHUP; with TLS it reloads the certificates
            # (one process: with workers it will be a rolling restart).
            if self._native is not None and self._native.tls:
                loop.add_signal_handler(signal.SIGHUP, self._handle_reload)
                installed.append(signal.SIGHUP)
            yield
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _handle_reload(self) -> None:
        logger.info("Received SIGHUP: reloading TLS certificates")
        self.reload_tls()

    def _request_limit_reached(self, limit: int) -> None:
        logger.warning("Maximum request limit of %d exceeded. Terminating process.", limit)
        self.should_exit = True

    def _handle_exit(self, sig: int) -> None:
        if self._should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop waiting
        self.should_exit = True

    async def _shutdown(self) -> None:
        native = self._native
        logger.info("Shutting down")
        if self._extra_loops is not None:
            self._extra_loops.stop(self._handover)
        native.stop_accepting()
        self._close_sockets()
        native.drain(keep_idle=self._handover)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout_graceful_shutdown
        if native.connection_count:
            logger.info("Waiting for connections to close. (CTRL+C to force quit)")
        while native.connection_count and not self.force_exit and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if native.connection_count:
            why = "on force quit" if self.force_exit else "after the graceful shutdown period"
            logger.warning("Closing %d connection(s) still open %s", native.connection_count, why)
        native.close_all()
        if native.task_count and not self.force_exit:
            logger.info("Waiting for background tasks to complete. (CTRL+C to force quit)")
        while native.task_count and not self.force_exit and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if native.task_count:
            why = "on force quit" if self.force_exit else "after the graceful shutdown period"
            logger.warning("%d application task(s) still running %s", native.task_count, why)
        if self._extra_loops is not None:
            if self.force_exit:
                self._extra_loops.force_exit()
            await self._extra_loops.join()
            self._extra_loops = None

    def _close_sockets(self) -> None:
        for sock in self._owned_sockets:
            sock.close()
        self._owned_sockets = []
        if self._uds_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._uds_path)
            self._uds_path = None
