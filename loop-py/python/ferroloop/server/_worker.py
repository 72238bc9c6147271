"""A supervised worker: what a forked child runs. It never returns into the
supervisor's code (it leaves with `os._exit`) and never touches the loop
it was forked from: that loop belongs to the parent (`_loop.py`'s fork
hook gives it a private poller in the child; we just never run it again).

The worker imports the app itself (unless the supervisor preloaded it),
runs its own lifespan and a fresh ferroloop loop, serves the inherited
listeners through `Server.serve(sockets=...)`, and talks to the supervisor
over its control channel (`_control.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import traceback
from typing import Any, Iterator, NoReturn

from ._app import AppLoadError
from ._config import Config
from ._control import Channel, send_blocking
from ._lifespan import LifespanFailed
from ._server import Server

logger = logging.getLogger("ferroloop.error")

# uvicorn's exit codes (as the command line's).
EXIT_APP_ERROR = 1
EXIT_STARTUP_FAILED = 3

#: How long a startup failure report may take to write (no loop runs yet).
REPORT_TIMEOUT = 5.0


class WorkerServer(Server):
    """`Server` as a supervised worker: SIGTERM drains (the supervisor's
    stop; its retire request arrives over the control channel). SIGINT
    and SIGHUP stay ignored (`_fork.CHILD_SIGNALS`): a Ctrl-C or hang-up
    reaching the process group is the supervisor's to act on, so one
    Ctrl-C drains every worker gracefully, including one that is handing
    over, and the second is the supervisor's SIGKILL."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self._is_worker = True

    @contextlib.contextmanager
    def _signal_handlers(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        loop.add_signal_handler(signal.SIGTERM, self._handle_exit, signal.SIGTERM)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGTERM)


def run_worker(config: Config, sockets: list[socket.socket], control: socket.socket, label: str) -> NoReturn:
    """The child's whole life; exits the process with its status."""
    code = 0
    try:
        code = _run(config, sockets, control, label)
    except BaseException:  # noqa: BLE001 - the process ends here either way
        traceback.print_exc()
        code = EXIT_APP_ERROR
    finally:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _run(config: Config, sockets: list[socket.socket], control: socket.socket, label: str) -> int:
    from .._policy import run

    logger.info("Started server process [%d]", os.getpid())
    try:
        config.load_app()  # a no-op when preloaded in the supervisor
    except AppLoadError as exc:
        message = f"Error loading ASGI app. {exc}"
        logger.error("%s", message)
        _report_failure(control, message, EXIT_APP_ERROR)
        return EXIT_APP_ERROR
    except Exception as exc:
        # The app's own import failed (a SyntaxError in reload mode): its traceback, then the report.
        logger.exception("Error loading ASGI app %r", config.app)
        _report_failure(control, f"Error loading ASGI app. {type(exc).__name__}: {exc}", EXIT_APP_ERROR)
        return EXIT_APP_ERROR
    try:
        run(_serve(config, sockets, control, label), backend=config.backend)
    except LifespanFailed:
        return EXIT_STARTUP_FAILED  # reported by _serve
    return 0


def _report_failure(control: socket.socket, message: str, code: int) -> None:
    # Before the worker's loop exists: written blocking, briefly.
    send_blocking(control, {"op": "failed", "message": message, "code": code}, REPORT_TIMEOUT)


async def _serve(config: Config, sockets: list[socket.socket], control_sock: socket.socket, label: str) -> None:
    loop = asyncio.get_running_loop()
    server = WorkerServer(config)

    def on_message(message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ping":
            channel.send({"op": "pong", "id": message.get("id")})
        elif op == "stats":
            channel.send({"op": "stats", "id": message.get("id"), "pid": os.getpid(), **collect_stats(loop, server)})
        elif op == "retire":
            server.retire()

    def on_close() -> None:
        if not server.should_exit:
            logger.warning("Worker %s (pid %d): the supervisor is gone; shutting down", label, os.getpid())
            server.should_exit = True

    channel = Channel(loop, control_sock, on_message, on_close)
    server._on_started = lambda: channel.send({"op": "ready", "pid": os.getpid()})

    def request_limit_reached(limit: int) -> None:
        # The supervisor starts a replacement first, then answers "retire";
        # without it, stop as a single process does.
        logger.warning("Maximum request limit of %d exceeded. Asking the supervisor for a replacement.", limit)
        if not channel.send({"op": "recycle", "reason": f"limit_max_requests ({limit}) reached"}):
            server.should_exit = True

    server._request_limit_reached = request_limit_reached  # type: ignore[method-assign]
    try:
        await server.serve(sockets=sockets)
    except LifespanFailed as exc:
        channel.send({"op": "failed", "message": str(exc), "code": EXIT_STARTUP_FAILED})
        raise
    finally:
        if not channel.closed:
            channel.close()


def collect_stats(loop: asyncio.AbstractEventLoop, server: Any) -> dict[str, Any]:
    """C1's loop.stats() and C2's Server.stats(), each {} where this build
    does not have it yet."""
    loop_stats = getattr(loop, "stats", None)
    server_stats = getattr(server, "stats", None)
    return {
        "loop": dict(loop_stats()) if callable(loop_stats) else {},
        "server": dict(server_stats()) if callable(server_stats) else {},
    }
