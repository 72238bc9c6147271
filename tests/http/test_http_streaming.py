"""Streaming and resources: request bodies under back-pressure (100 MiB
upload to a slow app with the server's RSS bounded), large downloads
(chunked and sized), response back-pressure, 1,000 idle keep-alive
connections, and abrupt client resets under load."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import socket
import threading
import time

import httpx
import pytest

import apps
from http_support import (
    RawConn,
    open_fds,
    proc_status,
    raise_fd_limit,
    request_bytes,
    wait_until,
)

MIB = 1024 * 1024


def _reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _upload(url: str, size: int, piece: int = MIB, timeout: float = 120.0) -> httpx.Response:
    block = b"u" * piece

    def body():
        sent = 0
        while sent < size:
            n = min(piece, size - sent)
            yield block if n == piece else block[:n]
            sent += n

    return httpx.post(url, content=body(), headers={"content-length": str(size)}, timeout=timeout)


# --------------------------------------------------------------------------
# Request body back-pressure


@pytest.mark.timeout(120)
def test_upload_100_mib_to_slow_app_keeps_server_rss_bounded(serve_process):
    proc = serve_process("apps:app", max_body_size=256 * MIB)
    # Warm up the upload path, then take the baseline.
    warm = _upload(f"{proc.url}/slow-upload?stall=0&rate={200 * MIB}", 8 * MIB)
    assert warm.json() == {"received": 8 * MIB}
    baseline = proc_status(proc.pid, "VmRSS")
    peak_reset = _reset_peak_rss(proc.pid)
    size = 100 * MIB
    # The app waits 1 s before reading, then reads at most 40 MiB/s: a server
    # that kept reading the socket would hold most of the 100 MiB.
    response = _upload(f"{proc.url}/slow-upload?stall=1&rate={40 * MIB}", size)
    assert response.status_code == 200
    assert response.json() == {"received": size}
    peak = proc_status(proc.pid, "VmHWM") if peak_reset else proc_status(proc.pid, "VmRSS")
    growth = peak - baseline
    assert growth < 64 * MIB, f"server RSS grew by {growth / MIB:.1f} MiB during a 100 MiB upload"
    assert proc.stop() == 0
    assert "serve() returned None" in proc.output()


def test_server_stops_reading_when_app_does_not_consume(start_server):
    """While the app does not call receive(), the client can only fill the
    socket buffers: its upload stalls instead of landing in server memory."""
    reading = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while not reading.is_set():
            await asyncio.sleep(0.01)
        body, _, _ = await apps.read_body(receive)
        await apps.respond(send, 200, b"%d" % len(body))

    srv = start_server(app, lifespan="off", max_body_size=256 * MIB)
    size = 100 * MIB
    progress = [0]
    conn = srv.raw(timeout=60)
    conn.send(request_bytes("POST", "/", headers=[("Content-Length", str(size))]))
    piece = b"p" * (256 * 1024)

    def sender():
        while progress[0] < size:
            conn.sock.sendall(piece)
            progress[0] += len(piece)

    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    time.sleep(1.5)
    stalled_at = progress[0]
    assert stalled_at < 48 * MIB, f"client could push {stalled_at / MIB:.0f} MiB while the app read nothing"
    reading.set()
    thread.join(60)
    response = conn.read_response(timeout=60)
    assert response.body == b"%d" % size
    conn.close()


# --------------------------------------------------------------------------
# Downloads


@pytest.mark.parametrize("cl", ["1", "0"], ids=["content-length", "chunked"])
def test_download_64_mib(start_server, cl):
    srv = start_server(apps.app)
    size = 64 * MIB
    expected = hashlib.sha256()
    for _ in range(size // MIB):
        expected.update(apps.PIECE)
    got = hashlib.sha256()
    received = 0
    with httpx.Client(timeout=60) as client:
        with client.stream("GET", f"{srv.url}/download?size={size}&cl={cl}") as response:
            assert response.status_code == 200
            if cl == "1":
                assert response.headers["content-length"] == str(size)
            else:
                assert response.headers["transfer-encoding"] == "chunked"
            for data in response.iter_raw():
                got.update(data)
                received += len(data)
        # The connection is reusable after a complete large response.
        assert client.get(f"{srv.url}/").text == "hello, world"
    assert received == size
    assert got.hexdigest() == expected.hexdigest()


def test_download_aiohttp_chunked(start_server):
    srv = start_server(apps.app)

    async def main():
        total = 0
        async with aiohttp_session() as session:
            async with session.get(f"{srv.url}/download?size={16 * MIB}&cl=0") as r:
                async for data in r.content.iter_chunked(1 << 16):
                    total += len(data)
        return total

    assert asyncio.run(main()) == 16 * MIB


def aiohttp_session():
    import aiohttp

    return aiohttp.ClientSession()


def test_response_chunks_are_sent_as_produced(start_server):
    srv = start_server(apps.app)
    arrivals = []
    with httpx.Client(timeout=10) as client:
        started = time.monotonic()
        with client.stream("GET", f"{srv.url}/stream?chunks=3&size=4&delay=0.5") as response:
            for data in response.iter_raw():
                arrivals.append((time.monotonic() - started, data))
    assert b"".join(d for _, d in arrivals) == b"000011112222"
    first_at, first = arrivals[0]
    assert first.startswith(b"0000") and first_at < 0.4, "the first chunk was held back"
    assert arrivals[-1][0] > 0.9


def test_response_back_pressure_blocks_send(start_server):
    """A client that does not read makes the app's send() wait."""
    sent = [0]
    finished = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            for _ in range(256):
                await send({"type": "http.response.body", "body": apps.PIECE, "more_body": True})
                sent[0] += 1
            await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass
        finally:
            finished.set()

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
        conn.send(request_bytes("GET", "/"))
        time.sleep(1.5)
        assert sent[0] < 64, f"app pushed {sent[0]} MiB to a client that read nothing"
        conn.reset()
    assert finished.wait(10), "app still blocked in send() after the client went away"


# --------------------------------------------------------------------------
# Many idle connections


@pytest.mark.timeout(120)
def test_1000_idle_keep_alive_connections_then_released(serve_process):
    raise_fd_limit(4096)
    proc = serve_process("apps:app", timeout_keep_alive=60, timeout_request_head=60, log_level="warning")
    with httpx.Client() as client:  # warm up
        for _ in range(20):
            assert client.get(f"{proc.url}/").status_code == 200
    time.sleep(0.2)
    base_rss = proc_status(proc.pid, "VmRSS")
    base_fds = open_fds(proc.pid)

    conns = []
    try:
        for _ in range(1000):
            conn = RawConn.open(proc.port, timeout=20)
            conn.send(request_bytes("GET", "/"))
            conns.append(conn)
        for conn in conns:
            assert conn.read_response(timeout=20).body == b"hello, world"
        held_fds = open_fds(proc.pid)
        held_rss = proc_status(proc.pid, "VmRSS")
        assert held_fds >= base_fds + 1000
        # All still alive and idle: a second round on a sample works.
        for conn in conns[::100]:
            conn.send(request_bytes("GET", "/"))
            assert conn.read_response().status == 200
        # And a fresh client is served promptly meanwhile.
        began = time.monotonic()
        assert httpx.get(f"{proc.url}/", timeout=10).status_code == 200
        assert time.monotonic() - began < 3.0
    finally:
        for conn in conns:
            conn.close()

    wait_until(lambda: open_fds(proc.pid) <= base_fds + 2, timeout=10, message="server did not release the closed connections")
    time.sleep(0.5)
    settled_rss = proc_status(proc.pid, "VmRSS")
    per_conn = (held_rss - base_rss) / 1000
    assert per_conn < 64 * 1024, f"{per_conn / 1024:.1f} KiB per idle connection"
    assert settled_rss - base_rss < 24 * MIB, (
        f"RSS did not settle: base {base_rss / MIB:.1f} MiB, held {held_rss / MIB:.1f} MiB, "
        f"after release {settled_rss / MIB:.1f} MiB"
    )
    assert httpx.get(f"{proc.url}/").status_code == 200
    assert proc.stop() == 0
    assert "serve() returned None" in proc.output()


# --------------------------------------------------------------------------
# Abrupt resets


def _reset_after(port: int, kind: int) -> None:
    try:
        conn = RawConn.open(port, timeout=5)
    except OSError:
        return
    try:
        if kind == 0:  # mid-head
            conn.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Le")
        elif kind == 1:  # mid-body
            conn.send(request_bytes("POST", "/echo", headers=[("Content-Length", "100000")]) + b"b" * 50000)
        elif kind == 2:  # waiting for a slow response
            conn.send(request_bytes("GET", "/sleep?t=0.2"))
        elif kind == 3:  # mid-download
            conn.send(request_bytes("GET", f"/download?size={32 * MIB}&cl=0"))
            conn.recv_some(2)
        else:  # request complete, response not read
            conn.send(request_bytes("POST", "/echo", body=b"c" * 100000))
        time.sleep(0.01)
    except OSError:
        pass
    finally:
        conn.reset()


@pytest.mark.timeout(120)
def test_abrupt_client_resets_under_load(start_server):
    srv = start_server(apps.app, timeout_graceful_shutdown=5)
    base_fds = open_fds()

    def normal_client(i):
        with httpx.Client(timeout=20) as client:
            for j in range(30):
                payload = f"{i}-{j}".encode() * 100
                response = client.post(f"{srv.url}/echo", content=payload)
                assert response.status_code == 200 and response.content == payload
        return True

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        normal = [pool.submit(normal_client, i) for i in range(4)]
        resets = [pool.submit(_reset_after, srv.port, k % 5) for k in range(400)]
        for future in resets:
            future.result()
        assert all(f.result() for f in normal)

    # The server still serves, and let go of every reset connection.
    assert httpx.get(f"{srv.url}/").text == "hello, world"
    wait_until(lambda: open_fds() <= base_fds + 2, timeout=15, message="descriptors of reset connections leaked")
