"""Fixtures for the metrics listener's tests (``--metrics-port``):
``metrics_cli(*args)`` runs ``python -m ferroloop`` on the traffic app
(``metrics_apps.py``) with a metrics port, ready once both listen.

No ``__init__.py`` (as ``tests/http``): children import the app as
``tests.metrics.metrics_apps``; the tests import ``metrics_support``."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import pytest  # noqa: E402

from _helpers import PROJECT_ROOT, ServerProcess, child_env, free_port  # noqa: E402
from metrics_support import MetricsChild, wait_listening  # noqa: E402

APP = "tests.metrics.metrics_apps:app"


@pytest.fixture
def metrics_cli(tmp_path):
    """Factory: ``metrics_cli(*args, metrics_host="127.0.0.1", wait=True)``
    → a ``MetricsChild`` (``.proc``, ``.url``, ``.metrics_url``)."""
    children: list[ServerProcess] = []

    def spawn(*args: str, metrics_host: str = "127.0.0.1", metrics_port: int | None = None, wait: bool = True):
        port, mport = free_port(), metrics_port or free_port()
        argv = [sys.executable, "-m", "ferroloop", APP, "--port", str(port), "--no-access-log"]
        argv += ["--metrics-port", str(mport), *args]
        proc = ServerProcess(argv, port=port, log_dir=tmp_path, env=child_env(pythonpath=(str(PROJECT_ROOT),)))
        children.append(proc)
        child = MetricsChild(proc, port, metrics_host, mport)
        if wait:
            proc.wait_ready()
            wait_listening(proc, metrics_host, mport)
        return child

    yield spawn
    for proc in children:
        proc.kill()
        proc.close_files()
