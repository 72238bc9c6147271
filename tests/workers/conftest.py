"""Fixtures for the supervised-workers tests: the real `ferroloop` command
(and gunicorn) in a child process serving `workers_support.APP_SOURCE`
from the test's directory, stopped and reaped with all its workers at
teardown.

With ``FERROLOOP_WORKERS_TEST_PEER=uvicorn`` the command is uvicorn's
(`python -m uvicorn`), to check a test against the reference; the tests
of settings uvicorn lacks then fail on its usage error, as expected."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import pytest  # noqa: E402

from workers_support import GUNICORN, Supervised, child_env, free_port, server_command, write_app  # noqa: E402


@pytest.fixture
def app_dir(tmp_path) -> Path:
    write_app(tmp_path)
    return tmp_path


@pytest.fixture
def spawn(app_dir):
    """Factory: ``spawn(*args, env=..., ready=True, port=..., uds=...,
    pass_fds=..., argv=...)`` → a ``Supervised`` running
    ``ferroloop wapp:app --port PORT *args`` in ``app_dir`` (``argv``
    replaces the command; ``port=None`` with ``uds`` listens there
    instead), waited for until it answers when ``ready``."""
    started: list[Supervised] = []

    def start(*args: str, env: dict | None = None, ready: bool = True, port: int | None = -1, uds: str | None = None,
              pass_fds=(), argv: list[str] | None = None) -> Supervised:
        if port == -1:
            port = free_port()
        if argv is None:
            argv = [*server_command(), "wapp:app", *args]
            if port is not None and uds is None:
                argv += ["--host", "127.0.0.1", "--port", str(port)]
        server = Supervised(argv, port=port, uds=uds, cwd=app_dir, env=child_env(env), log_dir=app_dir, pass_fds=pass_fds)
        started.append(server)
        if ready:
            server.wait_ready(timeout=40.0)
        return server

    yield start
    for server in started:
        server.kill()
        server.close_files()


@pytest.fixture
def gunicorn(app_dir):
    """Factory: ``gunicorn(*args)`` → gunicorn with ferroloop's worker class
    serving wapp:app on a free port, ready."""
    started: list[Supervised] = []

    def start(*args: str, env: dict | None = None) -> Supervised:
        port = free_port()
        argv = [str(GUNICORN), "-k", "ferroloop.gunicorn.Worker", "-b", f"127.0.0.1:{port}", *args, "wapp:app"]
        server = Supervised(argv, port=port, cwd=app_dir, env=child_env(env), log_dir=app_dir)
        started.append(server)
        server.wait_ready(timeout=40.0)
        return server

    yield start
    for server in started:
        server.kill()
        server.close_files()
