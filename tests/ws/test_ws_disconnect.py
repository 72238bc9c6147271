"""Every way a session ends delivers websocket.disconnect exactly once:
client close, server close (test_ws_clients), TCP reset, drop before
accept, ping timeout, shutdown; send() after it raises ClientDisconnected
(an OSError); messages out of order raise errors naming them."""

from __future__ import annotations

import signal

import pytest
from websockets.sync.client import connect as sync_connect

from ws_support import OP_PING, OP_PONG, RawWS, assert_one_disconnect, peer

# A session that ended without a close frame (RFC 6455 §7.1.5); uvicorn
# reports 1005 (no status received) instead.
ABNORMAL = 1006 if peer() == "ferroloop" else 1005
# uvicorn re-raises SIGTERM once it has shut down gracefully.
CLEAN_EXIT = 0 if peer() == "ferroloop" else -signal.SIGTERM


def test_client_close_code_and_reason_raw(ws_server):
    srv = ws_server()
    ws = srv.raw(conn="c")
    ws.send_close(4321, "raw reason".encode())
    close = ws.expect_close()
    # The server echoes the code (RFC 6455 §5.5.1), then closes TCP.
    assert close.close_code() == 4321
    assert ws.wait_eof()
    disconnect = assert_one_disconnect(srv.events.wait_done("c"))
    assert disconnect["code"] == 4321
    assert disconnect.get("reason", "raw reason") == "raw reason"


def test_close_without_code_is_1005(ws_server):
    srv = ws_server()
    ws = srv.raw(conn="n")
    ws.send_close(None)
    assert ws.expect_close().opcode == 0x8
    disconnect = assert_one_disconnect(srv.events.wait_done("n"))
    assert disconnect["code"] == 1005


def test_tcp_reset(ws_server):
    srv = ws_server()
    ws = srv.raw(conn="r")
    ws.send_text("before the reset")
    assert ws.recv_message() == (0x1, b"before the reset")
    ws.reset()
    disconnect = assert_one_disconnect(srv.events.wait_done("r"))
    assert disconnect["code"] == ABNORMAL


def test_eof_without_close_frame(ws_server):
    srv = ws_server()
    ws = srv.raw(conn="e")
    ws.close()
    disconnect = assert_one_disconnect(srv.events.wait_done("e"))
    assert disconnect["code"] == ABNORMAL


@pytest.mark.parametrize("how", ["close", "reset"])
def test_drop_before_accept(ws_server, how):
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    # The handshake's 101 waits for the app's accept, which waits for the
    # gate: send the request only, then leave.
    ws.send_raw(
        b"GET /gate-accept?id=g&gate=open HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    srv.events.wait("g", "connect")
    ws.reset() if how == "reset" else ws.close()
    srv.open_gate("open")
    events = srv.events.wait_done("g")
    after = [e for e in events if e["event"] == "after-gate"]
    assert after and after[0]["type"] == "websocket.disconnect", events
    accepted = [e for e in events if e["event"] == "accept-after-disconnect"]
    # Accepting a session whose client left: ClientDisconnected, or
    # (uvicorn) nothing.
    if peer() == "ferroloop":
        assert accepted[0]["outcome"] == "raised" and accepted[0]["oserror"], accepted


def test_send_after_disconnect_raises_client_disconnected(ws_server):
    srv = ws_server()
    with sync_connect(srv.ws_url("/send-after-disconnect", conn="sad")) as ws:
        ws.close(1000)
    events = srv.events.wait_done("sad")
    outcome = [e for e in events if e["event"] == "send-after-disconnect"][0]
    # ASGI spec 2.4: an OSError subclass (uvicorn's and ferroloop's ClientDisconnected).
    assert outcome["outcome"] == "raised", outcome
    assert outcome["oserror"] and outcome["error"] == "ClientDisconnected", outcome


@pytest.mark.parametrize(
    "case, step",
    [
        ("send-before-accept", 0),
        ("http-response-after-accept", 1),
        ("accept-twice", 1),
        ("send-after-close", 2),
        ("unknown-type", 1),
        ("http-type", 0),
    ],
)
def test_wrong_message_order_raises(ws_server, case, step):
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    ws.handshake(f"/wrong-order?id=w&case={case}")
    events = srv.events.wait_done("w")
    outcome = [e for e in events if e["event"] == "wrong-order"][0]
    assert outcome["step"] == step, outcome
    if peer() == "ferroloop":
        # The error names the message type it refused.
        assert "websocket." in outcome["message"] or "http." in outcome["message"], outcome
    ws.close()


def test_ping_timeout_with_a_client_that_never_pongs(ws_server):
    srv = ws_server(ws_ping_interval=0.5, ws_ping_timeout=0.5)
    ws = srv.raw("/wait-close", conn="pt")
    # Never answer: read the server's pings and ignore them.
    first = ws.recv_frame()
    assert first.opcode == OP_PING
    disconnect = assert_one_disconnect(srv.events.wait_done("pt"))
    # The session is failed with 1011 (uvicorn reports 1005).
    assert disconnect["code"] == (1011 if peer() == "ferroloop" else 1005), disconnect
    assert ws.wait_eof()


def test_pings_answered_keep_the_session(ws_server):
    srv = ws_server(ws_ping_interval=0.3, ws_ping_timeout=5)
    ws = srv.raw("/wait-close", conn="pk")
    pings = 0
    while pings < 3:
        frame = ws.recv_frame()
        assert frame.opcode == OP_PING, frame
        ws.send_frame(OP_PONG, frame.payload)
        pings += 1
    ws.send_text("still here")
    assert ws.recv_message() == (0x1, b"still here")
    assert not srv.events.of("pk", "disconnect")


def test_shutdown_closes_open_sessions_with_1012(ws_server):
    srv = ws_server()
    clients = [srv.raw("/wait-close", conn=f"sd{i}") for i in range(3)]
    for i in range(3):
        srv.events.wait(f"sd{i}", "accepted")
    srv.send_signal(signal.SIGTERM)
    for ws in clients:
        close = ws.expect_close()
        assert close.close_code() == 1012
        ws.send_close(1012)
    assert srv.wait_exit() == CLEAN_EXIT
    for i in range(3):
        disconnect = assert_one_disconnect(srv.events.wait_done(f"sd{i}"))
        assert disconnect["code"] == 1012


def test_shutdown_with_a_client_that_never_answers_the_close(ws_server):
    srv = ws_server(timeout_graceful_shutdown=2)
    ws = srv.raw("/wait-close", conn="silent")
    srv.events.wait("silent", "accepted")
    srv.send_signal(signal.SIGTERM)
    assert ws.expect_close().close_code() == 1012
    # No close from the client: the server still exits (bounded wait).
    assert srv.wait_exit(timeout=30) == CLEAN_EXIT
    assert_one_disconnect(srv.events.wait_done("silent"))
