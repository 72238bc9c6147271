"""RFC 6455 rules with a raw client (a handful: Autobahn covers the
breadth): handshake refusals, masking, RSV bits, control frames,
fragmentation, UTF-8 fail-fast, close codes."""

from __future__ import annotations

import struct

import pytest

from ws_support import OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT, RawWS, peer


def _refused(srv, **kw):
    ws = RawWS.connect(srv.port)
    response = ws.handshake("/echo?id=refused", **kw)
    ws.close()
    return response


@pytest.mark.uvicorn_differs("a bad Sec-WebSocket-Version is a 400 there")
def test_bad_version_is_426_with_supported_version(ws_server):
    srv = ws_server()
    response = _refused(srv, version="8")
    assert response.status == 426
    assert response.header("sec-websocket-version") == "13"


@pytest.mark.parametrize("key", ["", "short", "dGhlIHNhbXBsZSBub25jZQ", "AAAAAAAAAAAAAAAAAAAAAAAA"])
def test_bad_key_is_400(ws_server, key):
    # Missing (no header); not base64; 15 bytes unpadded; base64 of 18 bytes.
    srv = ws_server()
    response = _refused(srv, key=key)
    assert response.status == 400


def test_non_get_upgrade_is_refused(ws_server):
    srv = ws_server()
    response = _refused(srv, method="POST", extra=[("Content-Length", "0")])
    assert response.status in ((400,) if peer() == "ferroloop" else (400, 405, 200))
    assert not srv.events.of("refused", "connect")


@pytest.mark.uvicorn_differs("httptools sees no upgrade in 'Upgrade: foo, WebSocket'")
def test_upgrade_and_connection_tokens_in_lists(ws_server):
    srv = ws_server()
    ws = RawWS.connect(srv.port)
    response = ws.handshake("/echo?id=tok", upgrade="foo, WebSocket", connection="keep-alive, UPGRADE")
    assert response.status == 101
    ws.send_text("tokens")
    assert ws.recv_message() == (OP_TEXT, b"tokens")


def _expect_failed(ws, code):
    close = ws.expect_close()
    assert close.close_code() == code, (close.close_code(), close.payload)
    assert ws.wait_eof()


def test_unmasked_client_frame_is_1002(ws_server):
    ws = ws_server().raw(conn="m")
    ws.send_frame(OP_TEXT, b"no mask", mask=False)
    _expect_failed(ws, 1002)


def test_rsv_bit_without_extension_is_1002(ws_server):
    ws = ws_server().raw(conn="rsv")
    ws.send_frame(OP_TEXT, b"rsv1", rsv=0b100)
    _expect_failed(ws, 1002)


def test_unknown_opcode_is_1002(ws_server):
    ws = ws_server().raw(conn="op")
    ws.send_frame(0x3, b"reserved opcode")
    _expect_failed(ws, 1002)


def test_fragmented_control_frame_is_1002(ws_server):
    ws = ws_server().raw(conn="fc")
    ws.send_frame(OP_PING, b"part", fin=False)
    _expect_failed(ws, 1002)


def test_oversized_control_frame_is_1002(ws_server):
    ws = ws_server().raw(conn="oc")
    ws.send_frame(OP_PING, b"x" * 126)
    _expect_failed(ws, 1002)


@pytest.mark.uvicorn_differs("websockets accepts a length in a longer encoding than needed")
@pytest.mark.parametrize("form", ["16-bit", "64-bit"])
def test_non_minimal_payload_length_is_1002(ws_server, form):
    # RFC 6455 §5.2: the minimal number of bytes MUST be used for the length.
    ws = ws_server().raw(conn="len")
    payload = b"short"
    key = b"\x01\x02\x03\x04"
    length = struct.pack("!H", len(payload)) if form == "16-bit" else struct.pack("!Q", len(payload))
    marker = 126 if form == "16-bit" else 127
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    ws.send_raw(bytes([0x80 | OP_BINARY, 0x80 | marker]) + length + key + masked)
    _expect_failed(ws, 1002)


def test_continuation_without_start_is_1002(ws_server):
    ws = ws_server().raw(conn="cs")
    ws.send_frame(OP_CONT, b"orphan")
    _expect_failed(ws, 1002)


def test_new_message_inside_fragmented_message_is_1002(ws_server):
    ws = ws_server().raw(conn="nm")
    ws.send_frame(OP_TEXT, b"first ", fin=False)
    ws.send_frame(OP_BINARY, b"second")
    _expect_failed(ws, 1002)


def test_ping_answered_and_control_frames_inside_a_fragmented_message(ws_server):
    ws = ws_server().raw(conn="pp")
    ws.send_frame(OP_PING, b"payload")
    pong = ws.recv_frame()
    assert (pong.opcode, pong.payload) == (OP_PONG, b"payload")
    ws.send_frame(OP_TEXT, b"frag", fin=False)
    ws.send_frame(OP_PONG, b"unsolicited")  # fine, ignored
    ws.send_frame(OP_PING, b"mid")
    ws.send_frame(OP_CONT, b"mented")
    frames = [ws.recv_frame(), ws.recv_frame()]
    assert (frames[0].opcode, frames[0].payload) == (OP_PONG, b"mid")
    assert (frames[1].opcode, frames[1].payload) == (OP_TEXT, b"fragmented")


def test_invalid_utf8_is_1007(ws_server):
    ws = ws_server().raw(conn="u8")
    ws.send_frame(OP_TEXT, b"valid then \xff invalid")
    _expect_failed(ws, 1007)


@pytest.mark.uvicorn_differs("websockets validates a text message once it is complete")
def test_invalid_utf8_fails_fast_in_an_unfinished_message(ws_server):
    """The first fragment already holds an invalid byte: the server fails
    the session without waiting for the message's end."""
    ws = ws_server().raw(conn="ff")
    ws.send_frame(OP_TEXT, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80", fin=False)
    _expect_failed(ws, 1007)


def test_utf8_code_point_split_across_fragments_is_fine(ws_server):
    ws = ws_server().raw(conn="sp")
    text = "κόσμε €".encode()
    ws.send_frame(OP_TEXT, text[:3], fin=False)
    ws.send_frame(OP_CONT, text[3:-1], fin=False)
    ws.send_frame(OP_CONT, text[-1:])
    assert ws.recv_message() == (OP_TEXT, text)


@pytest.mark.parametrize("code", [999, 1004, 1005, 1006, 1015, 1016, 2999, 5000])
def test_invalid_close_code_is_1002(ws_server, code):
    ws = ws_server().raw(conn="bc")
    ws.send_close(code)
    _expect_failed(ws, 1002)


def test_close_reason_must_be_utf8(ws_server):
    ws = ws_server().raw(conn="cr")
    ws.send_close(1000, b"\xff\xfe")
    _expect_failed(ws, 1007)


def test_one_byte_close_payload_is_1002(ws_server):
    ws = ws_server().raw(conn="c1")
    ws.send_frame(OP_CLOSE, b"\x03")
    _expect_failed(ws, 1002)


@pytest.mark.parametrize("code", [1000, 1001, 1003, 1007, 1011, 3000, 4999])
def test_valid_close_code_is_echoed(ws_server, code):
    ws = ws_server().raw(conn="vc")
    ws.send_close(code)
    assert ws.expect_close().close_code() == code
    assert ws.wait_eof()


def test_byte_by_byte_frames(ws_server):
    from ws_support import encode_frame

    ws = ws_server().raw(conn="bb")
    data = encode_frame(OP_TEXT, "byte by byte ✓".encode(), fin=False) + encode_frame(OP_CONT, b" and on")
    for i in range(len(data)):
        ws.send_raw(data[i : i + 1])
    assert ws.recv_message() == (OP_TEXT, "byte by byte ✓ and on".encode())
