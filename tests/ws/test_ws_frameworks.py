"""Starlette and FastAPI WebSocket endpoints on the server: routing with
path parameters, JSON, subprotocols, dependencies refusing before accept
(403), close with code and reason, WebSocketDisconnect's code."""

from __future__ import annotations

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as sync_connect


def test_starlette_websocket_route(ws_server):
    srv = ws_server("starlette_app")
    with sync_connect(srv.ws_url("/rooms/lobby", conn="st"), subprotocols=["chat"]) as ws:
        assert ws.subprotocol == "chat"
        ws.send('{"hello": [1, 2]}')
        assert ws.recv(timeout=10) == '{"echo":{"hello":[1,2]},"room":"lobby"}'
        ws.close(4005, "leaving")
    disconnect = srv.events.wait("st", "disconnect")[0]
    assert disconnect["code"] == 4005
    assert disconnect["reason"] == "leaving"


def test_starlette_close_with_code_and_reason(ws_server):
    srv = ws_server("starlette_app")
    # Starlette's close() before accept: HTTP 403.
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/closer")):
            pass
    assert info.value.response.status_code == 403


def test_starlette_unknown_route_is_403(ws_server):
    srv = ws_server("starlette_app")
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/nowhere")):
            pass
    assert info.value.response.status_code == 403


def test_fastapi_websocket_endpoint(ws_server):
    srv = ws_server("fastapi_app")
    with sync_connect(srv.ws_url("/items/7", conn="fa", query="token=secret")) as ws:
        ws.send("hi")
        assert ws.recv(timeout=10) == "item 7: hi"
        ws.send(b"\x01\x02\x03")
        assert ws.recv(timeout=10) == b"\x03\x02\x01"
    assert srv.events.wait("fa", "disconnect")[0]["code"] == 1000


def test_fastapi_dependency_refuses_before_accept(ws_server):
    srv = ws_server("fastapi_app")
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/items/7", query="token=wrong")):
            pass
    assert info.value.response.status_code == 403


def test_fastapi_path_validation_closes(ws_server):
    srv = ws_server("fastapi_app")
    # A path parameter that fails validation: FastAPI closes with 1008
    # (policy violation) before accepting, which is an HTTP 403. FastAPI's
    # handler passes the errors (a list) as the close's reason, not a str.
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/items/seven", query="token=secret")):
            pass
    assert info.value.response.status_code == 403
