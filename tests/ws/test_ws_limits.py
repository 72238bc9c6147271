"""Every limit, hit: message size (ws_max_size → 1009, on one frame and on
a fragmented message), decompressed size (a compression bomb), the receive
queue by count (ws_max_queue) and by bytes pausing reads, send()
backpressure with a slow reader, the close timeout. Memory is checked as
bytes the server took or held (never as time)."""

from __future__ import annotations

import select
import socket
import zlib

import pytest

from ws_support import OP_BINARY, OP_CONT, OP_TEXT, RawWS, encode_frame, wait_settled

MIB = 1024 * 1024


def _vm_hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise KeyError("VmHWM")


def _expect_failed(ws, code):
    close = ws.expect_close()
    assert close.close_code() == code, (close.close_code(), close.payload)
    assert ws.wait_eof()


def test_message_of_max_size_passes(ws_server):
    ws = ws_server(ws_max_size=MIB).raw(conn="ok")
    payload = b"m" * MIB
    ws.send_frame(OP_BINARY, payload)
    assert ws.recv_message() == (OP_BINARY, payload)


def test_frame_over_max_size_is_1009(ws_server):
    ws = ws_server(ws_max_size=MIB).raw(conn="big")
    # The header alone announces too much: refused before the payload.
    ws.send_raw(encode_frame(OP_BINARY, b"x" * (MIB + 1)))
    _expect_failed(ws, 1009)


@pytest.mark.ferroloop_only
def test_max_frame_size_apart_from_message_size(ws_server):
    """ws_max_frame_size 64 KiB under ws_max_size 4 MiB: a 1 MiB message
    passes in 64 KiB fragments and is refused (1009) as one frame."""
    srv = ws_server(ws_max_size=4 * MIB, ws_max_frame_size=64 * 1024)
    ws = srv.raw(conn="fs")
    piece = b"p" * (64 * 1024)
    for i in range(16):
        ws.send_frame(OP_BINARY if i == 0 else OP_CONT, piece, fin=i == 15)
    assert ws.recv_message() == (OP_BINARY, piece * 16)
    ws.send_frame(OP_BINARY, piece + b"!")
    _expect_failed(ws, 1009)


def test_fragmented_message_over_max_size_is_1009(ws_server):
    srv = ws_server(ws_max_size=MIB)
    ws = srv.raw(conn="frag")
    quarter = b"q" * (MIB // 4)
    ws.send_frame(OP_BINARY, quarter, fin=False)
    for _ in range(3):
        ws.send_frame(OP_CONT, quarter, fin=False)
    ws.send_frame(OP_CONT, b"!")  # one byte over
    _expect_failed(ws, 1009)
    assert srv.events.wait("frag", "disconnect")[0]["code"] == 1009


def _deflate_handshake(ws: RawWS, path: str) -> None:
    response = ws.handshake(path, extra=[("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")])
    assert response.status == 101
    assert (response.header("sec-websocket-extensions") or "").startswith("permessage-deflate"), response.head


def test_compression_bomb_is_1009_before_the_memory_is_spent(ws_server):
    """A frame of about 0.5 MiB that inflates to 512 MiB, with ws_max_size
    1 MiB: refused with 1009; the server never held the inflated bytes."""
    srv = ws_server(ws_max_size=MIB)
    ws = RawWS.connect(srv.port)
    _deflate_handshake(ws, "/echo?id=bomb")
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MIB)
    body = b"".join(compressor.compress(zeros) for _ in range(512)) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert body.endswith(b"\x00\x00\xff\xff")
    body = body[:-4]  # RFC 7692 §7.2.1
    assert len(body) < MIB
    before = _vm_hwm(srv.pid)
    ws.send_frame(OP_BINARY, body, rsv=0b100)
    _expect_failed(ws, 1009)
    assert _vm_hwm(srv.pid) - before < 128 * MIB


def test_compressed_message_under_the_limit_passes(ws_server):
    srv = ws_server(ws_max_size=MIB)
    ws = RawWS.connect(srv.port)
    _deflate_handshake(ws, "/echo?id=small")
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    text = ("fine " * 1000).encode()
    body = (compressor.compress(text) + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4]
    ws.send_frame(OP_TEXT, body, rsv=0b100)
    frame = ws.recv_frame()
    payload = frame.payload
    if frame.rsv & 0b100:
        payload = zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")
    assert (frame.opcode, payload) == (OP_TEXT, text)


class _Sender:
    """Writes one long byte stream (whole frames) without blocking, so a
    stall leaves no frame cut in two: ``push(timeout)`` sends until the
    kernel refuses bytes for ``timeout`` seconds and returns how many went."""

    def __init__(self, sock: socket.socket, frames) -> None:
        self.sock = sock
        self.frames = iter(frames)
        self.pending = b""
        self.sent = 0

    def push(self, stall: float) -> bool:
        """True when everything is sent; False on a stall."""
        self.sock.setblocking(False)
        try:
            while True:
                if not self.pending:
                    self.pending = next(self.frames, b"")
                    if not self.pending:
                        return True
                _, writable, _ = select.select([], [self.sock], [], stall)
                if not writable:
                    return False
                n = self.sock.send(self.pending[: 4 * MIB])
                self.sent += n
                self.pending = self.pending[n:]
        finally:
            self.sock.setblocking(True)


def _flood_until_paused(srv, conn: str, size: int, count: int):
    ws = srv.raw(f"/gate-reader?gate=go-{conn}", conn=conn)
    # A small send buffer: what the sender got out is (nearly) what the
    # server's side took.
    ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
    srv.events.wait(conn, "accepted")
    frame_bytes = len(encode_frame(OP_BINARY, b"", length=size)) + size
    sender = _Sender(ws.sock, (encode_frame(OP_BINARY, bytes([i % 256]) * size) for i in range(count)))
    # The app reads nothing: the server must stop reading, so the kernel's
    # buffers fill and the sender stalls long before the whole stream.
    finished = sender.push(stall=10.0)
    return ws, sender, finished, frame_bytes


@pytest.mark.parametrize("queue", [1, 4])
def test_full_receive_queue_pauses_reading(ws_server, queue):
    srv = ws_server(ws_max_size=MIB, ws_max_queue=queue)
    size, count = MIB, 128
    ws, sender, finished, frame_bytes = _flood_until_paused(srv, "q", size, count)
    assert not finished, "the server read 128 MiB that its app never took"
    # Queue + one message being read + socket buffers (a few MiB each way).
    assert sender.sent < (queue + 1) * frame_bytes + 40 * MIB, sender.sent
    srv.open_gate("go-q")
    assert sender.push(stall=60.0)
    ws.send_text("end")
    assert ws.recv_message() == (OP_TEXT, f"{count} {count * size}".encode())


def test_receive_queue_byte_bound_pauses_reading(ws_server):
    """32 queued messages (the default ws_max_queue) of 4 MiB would be 128
    MiB: the byte bound (16 MiB) pauses reading first."""
    srv = ws_server(ws_max_size=4 * MIB)
    size, count = 4 * MIB, 64
    ws, sender, finished, frame_bytes = _flood_until_paused(srv, "qb", size, count)
    assert not finished
    assert sender.sent < 16 * MIB + 2 * frame_bytes + 40 * MIB, sender.sent
    srv.open_gate("go-qb")
    assert sender.push(stall=60.0)
    ws.send_text("end")
    assert ws.recv_message() == (OP_TEXT, f"{count} {count * size}".encode())


@pytest.mark.ferroloop_only
def test_receive_queue_byte_bound_setting(ws_server):
    srv = ws_server(ws_max_size=MIB, ws_max_queue_bytes=2 * MIB)
    size, count = MIB, 96
    ws, sender, finished, frame_bytes = _flood_until_paused(srv, "qs", size, count)
    assert not finished
    # 32 messages by count; 2 MiB by bytes (+ socket buffers).
    assert sender.sent < 2 * MIB + 2 * frame_bytes + 24 * MIB, sender.sent
    srv.open_gate("go-qs")
    assert sender.push(stall=60.0)
    ws.send_text("end")
    assert ws.recv_message() == (OP_TEXT, f"{count} {count * size}".encode())


def test_slow_reader_send_backpressure(ws_server):
    """The app sends 256 × 1 MiB to a client that reads nothing: send()
    must wait (the server buffers a bounded amount), then everything
    arrives intact once the client reads."""
    srv = ws_server()
    count, size = 256, MIB
    ws = srv.raw(f"/flood?count={count}&size={size}", conn="slow")
    ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)

    def sent() -> int:
        records = srv.events.of("slow", "sent")
        return records[-1]["n"] if records else 0

    # Wait until the app's progress stops (send() is waiting). A server
    # that buffered everything reaches `count`.
    srv.events.wait("slow", "sent")
    wait_settled(sent, done=count)
    stalled_at = sent()
    assert stalled_at < count // 2, f"send() never waited: {stalled_at} MiB taken by a client that reads nothing"
    for i in range(count):
        opcode, payload = ws.recv_message()
        assert opcode == OP_BINARY and len(payload) == size and payload[0] == i % 256 and payload[-1] == i % 256
    srv.events.wait("slow", "sent", where=lambda e: e["n"] == count)


def test_close_timeout_drops_a_client_that_never_answers(ws_server):
    """The app closes; the client never sends its close: the server drops
    TCP after its close timeout rather than waiting forever."""
    srv = ws_server(ws_close_timeout=1)
    ws = srv.raw("/server-close", conn="ct")
    ws.send_text("hi")
    assert ws.expect_close().close_code() == 4001
    assert ws.wait_eof(timeout=60)
    assert srv.events.wait_done("ct")
