"""Regressions of a review's findings, with a raw client: a close read
behind queued messages, our close while the queue is full, a ping flood,
the lingering close, a body on the upgrade request, a denial with a
pending receive(), an upgrade without the Connection token."""

from __future__ import annotations

import socket
import threading

import pytest

from ws_support import OP_CLOSE, OP_PING, OP_TEXT, RawWS, assert_one_disconnect, close_payload, encode_frame, wait_settled


def _read_to_eof(ws: RawWS) -> bytes:
    """What the server sends until its FIN; a reset fails the test."""
    data = bytes(ws.buf)
    ws.buf.clear()
    while True:
        try:
            chunk = ws.sock.recv(1 << 16)
        except ConnectionResetError:
            raise AssertionError("the server reset the connection instead of closing it") from None
        if not chunk:
            return data
        data += chunk


def test_close_behind_queued_messages_is_echoed_and_ends(ws_server):
    # Messages and the peer's close in one segment: the messages are
    # echoed, then the close, then FIN; the app gets one disconnect.
    srv = ws_server()
    ws = srv.raw(conn="q")
    ws.send_raw(b"".join(encode_frame(OP_TEXT, b"m%d" % i) for i in range(5)) + encode_frame(OP_CLOSE, close_payload(1000)))
    for i in range(5):
        assert ws.recv_message() == (OP_TEXT, b"m%d" % i)
    assert ws.expect_close().close_code() == 1000
    assert ws.wait_eof()
    assert assert_one_disconnect(srv.events.wait_done("q"))["code"] == 1000


def test_close_behind_messages_a_slow_app_reads_later(ws_server):
    # The app reads nothing until the gate opens; the close sits behind
    # the queued messages and takes effect once they are taken.
    srv = ws_server()
    ws = srv.raw("/gate-reader?gate=g1", conn="slow")
    srv.events.wait("slow", "accepted")
    ws.send_raw(b"".join(encode_frame(2, b"x" * 10) for _ in range(40)) + encode_frame(OP_CLOSE, close_payload(1000)))
    srv.open_gate("g1")
    assert ws.expect_close().close_code() == 1000
    assert ws.wait_eof()
    assert assert_one_disconnect(srv.events.wait_done("slow"))["code"] == 1000


def test_app_close_with_a_full_queue_reads_the_peer_close(ws_server):
    # 50 messages queued (more than the 32 of the queue) when the app
    # closes: the peer's close behind them is read, FIN follows (no wait
    # for the close timeout, no reset).
    srv = ws_server()
    ws = srv.raw("/server-close", conn="full")
    ws.send_raw(b"".join(encode_frame(OP_TEXT, b"n%d" % i) for i in range(50)))
    close = ws.expect_close()
    assert close.close_code() == 4001
    ws.send_close(4001)
    rest = _read_to_eof(ws)
    assert rest == b"", rest


def test_ping_flood_is_bounded_by_backpressure(ws_server):
    # A client that sends pings and never reads the pongs: the server stops
    # reading once its output is above the high-water mark, so the client's
    # sending stalls long before 96 MiB.
    # No keepalive ping: a client that never reads would (rightly) fail it.
    srv = ws_server(ws_ping_interval=None)
    ws = srv.raw(conn="flood")
    ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    chunk = encode_frame(OP_PING, b"p" * 125) * 8000
    total = len(chunk) * (96 * 1024 * 1024 // len(chunk))
    sent = 0
    ws.sock.setblocking(False)

    def push() -> int:
        # A partial send resumes inside the chunk: frames must stay whole.
        nonlocal sent
        while sent < total:
            offset = sent % len(chunk)
            try:
                sent += ws.sock.send(memoryview(chunk)[offset:])
            except BlockingIOError:
                break
        return sent

    try:
        settled = wait_settled(push, total, look=1.0)
    except ConnectionResetError:
        raise AssertionError(f"reset after {sent} bytes: {srv.events.of('flood')}\n{srv.output()}") from None
    ws.sock.setblocking(True)
    assert settled < 48 * 1024 * 1024, settled
    ws.reset()


def test_peer_close_with_unread_input_is_not_reset(ws_server):
    # The peer's close followed by more input the server never decodes:
    # the server's close echo arrives and then a FIN, not an RST.
    srv = ws_server()
    ws = srv.raw(conn="linger")
    junk = encode_frame(OP_TEXT, b"j" * 1000) * 1000

    def flood() -> None:
        try:
            ws.sock.sendall(encode_frame(OP_CLOSE, close_payload(1000)) + junk)
        except OSError:
            pass

    sender = threading.Thread(target=flood)
    sender.start()
    data = _read_to_eof(ws)
    sender.join()
    assert data[:2] == bytes([0x88, 2]) and data[2:4] == (1000).to_bytes(2, "big"), data[:8]
    assert assert_one_disconnect(srv.events.wait_done("linger"))["code"] == 1000


@pytest.mark.parametrize("field", [("Content-Length", "5"), ("Transfer-Encoding", "chunked")])
def test_upgrade_request_with_a_body_is_400(ws_server, field):
    # The bytes after the head are frames: a body would be smuggled in.
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    response = ws.handshake("/echo?id=body", extra=[field])
    ws.close()
    assert response.status == 400
    assert not srv.events.of("body", "connect")


def test_denial_completes_a_pending_receive(ws_server):
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    response = ws.handshake("/deny-pending?id=dp")
    ws.close()
    assert response.status == 401
    assert assert_one_disconnect(srv.events.wait_done("dp"))["code"] == 1006


def test_upgrade_without_connection_token_is_plain_http(ws_server):
    # As uvicorn: `Upgrade: websocket` alone is an HTTP request.
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    response = ws.handshake("/echo?id=plain", connection="")
    ws.close()
    assert response.status == 200
    assert not srv.events.of("plain", "connect")
