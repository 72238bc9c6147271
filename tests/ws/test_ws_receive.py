"""receive() as apps use it beyond a plain `await receive()`: under
asyncio.wait_for and asyncio.timeout (a timed-out receive loses no later
message), cancelled while pending, wrapped in create_task/ensure_future/
gather, two at once, and after websocket.disconnect (the apps are in
ws_receive_apps.py)."""

from __future__ import annotations

import sys

import pytest
from websockets.sync.client import connect as sync_connect

from ws_support import WsServer, assert_one_disconnect, free_port, peer


# --------------------------------------------------------------------------
# The tests


@pytest.fixture
def server(tmp_path):
    port = free_port()
    if peer() == "uvicorn":
        argv = [sys.executable, "-m", "uvicorn", "ws_receive_apps:app", "--port", str(port), "--ws", "websockets-sansio"]
    else:
        argv = [sys.executable, "-m", "ferroloop", "ws_receive_apps:app", "--port", str(port)]
    srv = WsServer(argv, port=port, workdir=tmp_path)
    srv.wait_ready()
    yield srv
    srv.kill()
    srv.close_files()


def _echo_checked(ws) -> None:
    ws.send(b"after")
    assert ws.recv(timeout=30) == b"after"


@pytest.mark.parametrize("path", ["/wait-for", "/timeout-scope"])
def test_timed_out_receive_loses_no_message(server, path):
    with sync_connect(server.ws_url(path)) as ws:
        assert ws.recv(timeout=30) == "timeout"
        _echo_checked(ws)


def test_cancel_a_pending_receive_task(server):
    with sync_connect(server.ws_url("/cancel-task")) as ws:
        assert ws.recv(timeout=30) == "cancelled=True"
        _echo_checked(ws)


def test_cancel_the_task_awaiting_receive(server):
    with sync_connect(server.ws_url("/cancel-direct")) as ws:
        assert ws.recv(timeout=30) == "cancelled ('from a sibling',)"
        _echo_checked(ws)


@pytest.mark.parametrize("path", ["/create-task", "/ensure-future", "/gather"])
def test_receive_wrapped_in_a_task(server, path):
    with sync_connect(server.ws_url(path)) as ws:
        assert ws.recv(timeout=30) == "ready"
        _echo_checked(ws)


def test_second_receive_while_one_is_pending(server):
    with sync_connect(server.ws_url("/two-pending")) as ws:
        reply = ws.recv(timeout=30)
        assert reply.startswith("RuntimeError:") and "pending" in reply, reply
        _echo_checked(ws)


def test_receive_after_disconnect_raises(server):
    with sync_connect(server.ws_url("/after-disconnect", conn="a")) as ws:
        ws.send(b"one")
    events = server.events.wait_done("a")
    assert assert_one_disconnect(events)["code"] == 1000
    after = {e["how"]: e["outcome"] for e in events if e["event"] == "after"}
    assert after == {"await": "ClientDisconnected", "task": "ClientDisconnected"}, events
