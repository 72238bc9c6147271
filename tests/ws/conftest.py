"""Fixtures for the WebSocket end-to-end tests.

``ws_server(app="echo", **settings)`` serves ``ws_apps:APP`` in a child
process (ferroloop's CLI, or uvicorn with ``FERROLOOP_WS_TEST_PEER=uvicorn``,
see ws_support.py) and returns a ready ``WsServer``; killed at teardown.

No ``__init__.py``, as in tests/http: the child imports the apps as
``ws_apps`` (this directory on its ``PYTHONPATH``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from ws_support import WsServer, peer, spawn_ws_server  # noqa: E402


def pytest_report_header(config):
    return f"tests/ws: the server under test is {peer()}"


@pytest.fixture
def ws_server(tmp_path):
    servers: list[WsServer] = []

    def spawn(app: str = "echo", **settings) -> WsServer:
        workdir = tmp_path / f"server{len(servers)}"
        workdir.mkdir()
        server = spawn_ws_server(workdir, app, **settings)
        servers.append(server)
        return server

    yield spawn
    for server in servers:
        server.kill()
        server.close_files()



def pytest_configure(config):
    config.addinivalue_line("markers", "ferroloop_only: needs a setting only ferroloop has (skipped against uvicorn)")
    config.addinivalue_line("markers", "autobahn: the Autobahn|Testsuite run (minutes); select with -m autobahn")
    config.addinivalue_line(
        "markers",
        "uvicorn_differs(reason): uvicorn (the reference peer) disagrees with issue 14 here; "
        "with FERROLOOP_WS_TEST_PEER=uvicorn the test is a strict xfail",
    )


def pytest_collection_modifyitems(config, items):
    # The Autobahn run takes minutes: first, so that with two xdist workers
    # the other worker runs the rest of the suite meanwhile.
    items.sort(key=lambda item: item.get_closest_marker("autobahn") is None)
    if peer() != "uvicorn":
        return
    for item in items:
        if item.get_closest_marker("ferroloop_only") is not None:
            item.add_marker(pytest.mark.skip(reason="a ferroloop setting uvicorn does not have"))
        marker = item.get_closest_marker("uvicorn_differs")
        if marker is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason="uvicorn differs: " + marker.args[0]))
