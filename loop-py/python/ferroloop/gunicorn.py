"""A gunicorn worker class for teams that keep gunicorn as their
supervisor: ``gunicorn -k ferroloop.gunicorn.Worker -w 4 app:app``.

Each gunicorn worker runs one ferroloop `Server` on a ferroloop loop, on
the listening sockets gunicorn bound and handed over (`Server.serve(
sockets=...)`, every `--bind`). gunicorn's settings
that have a ferroloop equivalent are mapped (`Worker.config_kwargs`);
the heartbeat gunicorn's arbiter watches is touched from the loop, so a
blocked loop is killed by the arbiter's `--timeout` as with any gunicorn
worker. Signals follow gunicorn's worker contract: SIGTERM drains
(within `--graceful-timeout`), SIGQUIT and SIGINT stop at once, SIGUSR1
reopens the log files, SIGABRT (the arbiter's timeout) exits.

SIGTERM and `--max-requests` hand over (`Server.retire()`): the arbiter's
other workers accept on the same listeners, so idle keep-alive
connections answer one more request with `connection: close` instead of
being closed under a client that may be sending (gunicorn's SIGHUP
reload and recycling then fail no request).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any, Iterator

from gunicorn.arbiter import Arbiter
from gunicorn.workers.base import Worker as _GunicornWorker

from .server._config import Config
from .server._lifespan import LifespanFailed
from .server._server import Server

__all__ = ["Worker"]

logger = logging.getLogger("ferroloop.error")

# gunicorn's request-line limit ranges over 0 (unlimited)..8190; ferroloop's
# smallest allowed value is 64.
_MIN_REQUEST_LINE = 64


class _WorkerServer(Server):
    """`Server` with gunicorn's worker signals instead of uvicorn's, and
    a hand-over at the request limit."""

    @contextlib.contextmanager
    def _signal_handlers(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        handlers = {signal.SIGTERM: self._graceful, signal.SIGQUIT: self._fast, signal.SIGINT: self._fast}
        try:
            for sig, handler in handlers.items():
                loop.add_signal_handler(sig, handler)
            yield
        finally:
            for sig in handlers:
                loop.remove_signal_handler(sig)

    def _graceful(self) -> None:
        self.retire()

    def _request_limit_reached(self, limit: int) -> None:
        logger.info("Maximum request limit of %d reached: the worker hands over and exits", limit)
        self.retire()

    def _fast(self) -> None:
        self.force_exit = True
        self.should_exit = True


class Worker(_GunicornWorker):  # type: ignore[misc]
    """gunicorn worker serving an ASGI app with ferroloop's native server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # ferroloop's loggers write through gunicorn's handlers and levels.
        for name, source in (("ferroloop.error", self.log.error_log), ("ferroloop.access", self.log.access_log)):
            target = logging.getLogger(name)
            target.handlers = source.handlers
            target.setLevel(source.level)
            target.propagate = False

    def config_kwargs(self) -> dict[str, Any]:
        """`ferroloop.Config` keywords from gunicorn's settings."""
        cfg = self.cfg
        kwargs: dict[str, Any] = {
            # Logging is gunicorn's (set up in __init__): an empty dictConfig.
            "log_config": {"version": 1, "disable_existing_loggers": False},
            "log_level": None,
            "timeout_keep_alive": float(cfg.keepalive),
            "timeout_graceful_shutdown": float(cfg.graceful_timeout),
            "forwarded_allow_ips": ",".join(cfg.forwarded_allow_ips)
            if isinstance(cfg.forwarded_allow_ips, list)
            else cfg.forwarded_allow_ips,
            "max_header_count": max(1, cfg.limit_request_fields),
        }
        if cfg.max_requests > 0:
            # gunicorn drew this worker's jitter already (self.max_requests).
            kwargs["limit_max_requests"] = self.max_requests
            kwargs["limit_max_requests_jitter"] = 0
        if cfg.limit_request_line > 0:
            kwargs["max_request_line"] = max(_MIN_REQUEST_LINE, cfg.limit_request_line)
        if cfg.backlog:
            kwargs["backlog"] = cfg.backlog
        if cfg.is_ssl:
            ssl = cfg.ssl_options
            for theirs, ours in (
                ("certfile", "ssl_certfile"),
                ("keyfile", "ssl_keyfile"),
                ("ca_certs", "ssl_ca_certs"),
                ("cert_reqs", "ssl_cert_reqs"),
                ("ciphers", "ssl_ciphers"),
                ("ssl_version", "ssl_version"),
            ):
                if ssl.get(theirs) is not None:
                    kwargs[ours] = ssl[theirs]
        return kwargs

    def init_signals(self) -> None:
        # gunicorn's handlers would interrupt the loop from Python frames;
        # the loop takes SIGTERM/SIGQUIT/SIGINT (`_WorkerServer`). Reset
        # the rest so subprocesses' exit codes are not swallowed.
        for sig in self.SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGUSR1, self.handle_usr1)
        signal.siginterrupt(signal.SIGUSR1, False)
        signal.signal(signal.SIGABRT, self.handle_abort)

    def run(self) -> None:
        from ._policy import run

        run(self._serve())

    async def _serve(self) -> None:
        config = Config(self.wsgi, **self.config_kwargs())
        server = _WorkerServer(config)
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(server))
        try:
            # gunicorn keeps (and closes) its listeners.
            await server.serve(sockets=[listener.sock for listener in self.sockets])
        except LifespanFailed:
            # The arbiter stops on a worker that cannot boot (as uvicorn's worker).
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
        finally:
            heartbeat.cancel()

    async def _heartbeat(self, server: Server) -> None:
        """Tell the arbiter this worker's loop runs; stop when the arbiter
        is gone (this worker was re-parented)."""
        interval = max(0.1, min(1.0, self.timeout / 2))
        while True:
            self.notify()
            if os.getppid() != self.ppid:
                self.log.info("Parent changed, shutting down: %s", self)
                server.should_exit = True
                return
            await asyncio.sleep(interval)
