"""Fixtures for the native HTTP/1.1 ASGI server's end-to-end tests.

``start_server(app, **config)`` runs ``ferroloop.Server(ferroloop.Config(app,
port=0, **config))`` in a background thread on ``ferroloop.run`` and returns a
``RunningServer`` once ``server.started``; at teardown the server is asked to
exit (``should_exit``) and must finish cleanly.

``server_process(...)`` / ``cli_server(...)`` run a server in a child
interpreter (CLI or ``ferroloop.serve()``), for signals, exit codes and
memory measurements.

There is deliberately no ``__init__.py`` here: with pytest's default
``prepend`` import mode a package directory named ``http`` would be imported
as the top-level package ``http`` and clash with the standard library. The
child processes import the apps as ``tests.http.apps`` (namespace packages,
the project root on ``PYTHONPATH``); the tests import them as ``apps``.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    # Also under --import-mode=importlib, where pytest does not add it.
    sys.path.insert(0, str(HERE))

import http_support  # noqa: E402
from http_support import LogCapture, RawConn, ServerProcess, free_port  # noqa: E402


def _import_ferroloop():
    try:
        import ferroloop
    except ImportError as exc:  # a failure, never a skip
        pytest.fail(f"cannot import ferroloop: {exc!r}", pytrace=False)
    return ferroloop


@dataclass
class RunningServer:
    """A server running in a background thread of the test process."""

    server: Any
    thread: threading.Thread
    address: Any
    error: BaseException | None = None
    result: Any = None
    stopped: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.address[0]

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def raw(self, timeout: float = http_support.IO_TIMEOUT) -> RawConn:
        return RawConn.open(self.address, timeout=timeout)

    def request_stop(self) -> None:
        self.server.should_exit = True

    def stop(self, timeout: float = 15.0) -> None:
        """Graceful exit; fails if serve() hangs or raises."""
        if self.stopped:
            return
        self.stopped = True
        self.server.should_exit = True
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"server did not exit within {timeout} s of should_exit"
        if self.error is not None:
            raise AssertionError(f"server.serve() raised {self.error!r}") from self.error


def _run_in_thread(server, runner, serve_kwargs=None) -> RunningServer:
    handle = RunningServer(server=server, thread=None, address=None)  # type: ignore[arg-type]

    def target():
        try:
            handle.result = runner(server.serve(**(serve_kwargs or {})))
        except BaseException as exc:  # noqa: BLE001 - reported by stop()/start
            handle.error = exc

    thread = threading.Thread(target=target, name="ferroloop-http-server", daemon=True)
    handle.thread = thread
    thread.start()
    return handle


def _wait_started(handle: RunningServer, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not handle.server.started:
        if not handle.thread.is_alive():
            raise AssertionError(f"server exited before starting: {handle.error!r}") from handle.error
        if time.monotonic() > deadline:
            handle.server.should_exit = True
            raise AssertionError(f"server not started within {timeout} s")
        time.sleep(0.005)


def _listening_sockets(server) -> list:
    return list(server.sockets)


@pytest.fixture
def start_server():
    """Factory: ``start_server(app, **config) -> RunningServer`` (started)."""
    ferroloop = _import_ferroloop()
    handles: list[RunningServer] = []

    def start(app, *, wait: bool = True, **config) -> RunningServer:
        if "port" not in config and "uds" not in config and "fd" not in config and "sock" not in config:
            config["port"] = 0
        server = ferroloop.Server(ferroloop.Config(app, **config))
        handle = _run_in_thread(server, ferroloop.run)
        handles.append(handle)
        if not wait:
            return handle
        _wait_started(handle)
        sockets = _listening_sockets(server)
        assert sockets, "server.sockets is empty once started"
        handle.address = sockets[0].getsockname()
        return handle

    yield start
    failures = []
    for handle in handles:
        if handle.stopped:
            continue
        try:
            handle.stop()
        except AssertionError as exc:
            failures.append(str(exc))
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture
def server_process(tmp_path):
    """Factory: ``server_process(argv, port=..., uds=..., pass_fds=...)`` (ready)."""
    processes: list[ServerProcess] = []

    def spawn(argv, *, port=None, uds=None, pass_fds=(), wait=True) -> ServerProcess:
        proc = ServerProcess(argv, port=port, uds=uds, log_dir=tmp_path, env=http_support.server_env(), pass_fds=pass_fds)
        processes.append(proc)
        if wait:
            proc.wait_ready()
        return proc

    yield spawn
    for proc in processes:
        proc.kill()
        proc.close_files()


@pytest.fixture
def cli_server(server_process):
    """Factory: ``cli_server(app="tests.http.apps:app", *args)`` → a ready
    ``python -m ferroloop APP --port N ...`` child."""

    def spawn(app: str = "tests.http.apps:app", *args: str, console_script: bool = False, wait: bool = True):
        port = free_port()
        argv = http_support.cli_argv(app, "--port", str(port), *args, console_script=console_script)
        return server_process(argv, port=port, wait=wait)

    return spawn


SERVE_SCRIPT = """\
import sys
import ferroloop
import {module} as mod
result = ferroloop.serve(mod.{attr}, host="127.0.0.1", port={port}, **{kwargs!r})
print("serve() returned", repr(result), flush=True)
"""


@pytest.fixture
def serve_process(server_process):
    """Factory: ``serve_process("apps:attr", **kwargs)``: a child running the
    blocking ``ferroloop.serve(app, port=N, **kwargs)``."""

    def spawn(app: str = "apps:app", wait: bool = True, **kwargs):
        module, attr = app.split(":")
        port = free_port()
        source = SERVE_SCRIPT.format(module=module, attr=attr, port=port, kwargs=kwargs)
        return server_process([sys.executable, "-c", source], port=port, wait=wait)

    return spawn


@pytest.fixture
def capture_logs():
    """Factory: ``capture_logs("error" | "access") -> LogCapture`` on the
    ``ferroloop.<name>`` logger, removed at teardown.

    Install it once the server has started: a server configuring logging
    (``logging.config.dictConfig``, as uvicorn does) replaces the handlers
    of the loggers it configures."""
    captures: list[LogCapture] = []

    def capture(name: str) -> LogCapture:
        cap = LogCapture(f"{http_support.LOG_PREFIX}.{name}").install()
        captures.append(cap)
        return cap

    yield capture
    for cap in captures:
        cap.uninstall()
