"""Fixtures for the TLS end-to-end tests.

``tls_files``: every certificate, key and CRL of ``_tls.TlsFiles``, made
once per test process (trustme + cryptography). ``tls_server(**settings)``
serves ``tls_apps:app`` over TLS in a child process (ferroloop's CLI, or
uvicorn with ``FERROLOOP_TLS_TEST_PEER=uvicorn``, see tls_support.py) with
the server certificate unless the settings say otherwise; killed at
teardown.

No ``__init__.py``, as in tests/http and tests/ws: the child imports the
app as ``tls_apps`` (this directory on its ``PYTHONPATH``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _tls import write_tls_files  # noqa: E402
from tls_support import TlsServer, peer, spawn_tls_server  # noqa: E402


def pytest_report_header(config):
    return f"tests/tls: the server under test is {peer()}"


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    return write_tls_files(tmp_path_factory.mktemp("tls-files"))


@pytest.fixture
def tls_server(tmp_path, tls_files):
    servers: list[TlsServer] = []

    def spawn(**settings) -> TlsServer:
        workdir = tmp_path / f"server{len(servers)}"
        workdir.mkdir()
        server = spawn_tls_server(workdir, tls_files, **settings)
        servers.append(server)
        return server

    yield spawn
    for server in servers:
        server.kill()
        server.close_files()


def pytest_configure(config):
    config.addinivalue_line("markers", "ferroloop_only: needs a setting or behaviour only ferroloop has (skipped against uvicorn)")
    config.addinivalue_line(
        "markers",
        "uvicorn_differs(reason): uvicorn (the reference peer) disagrees with issue 15 here; "
        "with FERROLOOP_TLS_TEST_PEER=uvicorn the test is a strict xfail",
    )


def pytest_collection_modifyitems(config, items):
    if peer() != "uvicorn":
        return
    for item in items:
        if "tests/tls/" not in str(item.path).replace("\\", "/"):
            continue
        if item.get_closest_marker("ferroloop_only") is not None:
            item.add_marker(pytest.mark.skip(reason="a ferroloop setting or behaviour uvicorn does not have"))
        marker = item.get_closest_marker("uvicorn_differs")
        if marker is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason="uvicorn differs: " + marker.args[0]))
