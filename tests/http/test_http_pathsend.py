"""The ASGI path-send and zero-copy-send extensions: a file answered with
``sendfile(2)`` from Rust. Starlette's ``FileResponse`` over real sockets
(content, its headers, HEAD, keep-alive after a file), a 100 MiB file read
by a slow client while the server's RSS stays bounded, a client leaving
mid-file (no fd left open), the framing rules (declared length, chunked,
HTTP/1.0) and the errors the app's ``send()`` raises."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import time

import httpx
import pytest

import file_apps
from http_support import RawConn, open_fds, proc_status, request_bytes, wait_until

MIB = 1024 * 1024


def _write_file(path, size: int, seed: bytes = b"ferroloop") -> str:
    """A file of ``size`` patterned bytes (each MiB differs, so a reordered
    or repeated piece changes the hash)."""
    block = hashlib.sha256(seed).digest() * (MIB // 32)
    with open(path, "wb") as f:
        written = 0
        i = 0
        while written < size:
            piece = (i.to_bytes(8, "big") + block[8:])[: size - written]
            f.write(piece)
            written += len(piece)
            i += 1
    return str(path)


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(MIB):
            h.update(chunk)
    return h.hexdigest()


def _file_url(srv_url: str, path) -> str:
    return f"{srv_url}/file?path={path}"


# --------------------------------------------------------------------------
# Advertised, and Starlette's FileResponse uses it


def test_the_extensions_are_in_the_scope(start_server):
    seen = {}

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        seen.update(scope["extensions"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    srv = start_server(app, lifespan="off")
    assert httpx.get(srv.url).status_code == 204
    assert seen["http.response.pathsend"] == {}
    assert seen["http.response.zerocopysend"] == {}
    assert seen["http.response.trailers"] == {}


def test_starlette_file_response_is_sent_with_its_headers(start_server, tmp_path):
    path = _write_file(tmp_path / "data.bin", 3 * MIB + 17)
    srv = start_server(file_apps.app, lifespan="off")
    response = httpx.get(_file_url(srv.url, path))
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == _sha256(path)
    assert response.headers["content-length"] == str(3 * MIB + 17)
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["etag"]
    assert response.headers["last-modified"]
    assert "transfer-encoding" not in response.headers


def test_a_relative_path_is_opened_from_the_working_directory(start_server, tmp_path, monkeypatch):
    # The spec asks for absolute paths, but Starlette sends FileResponse's
    # path as given (and stat()ed it from the working directory itself).
    _write_file(tmp_path / "data.bin", 5000)
    monkeypatch.chdir(tmp_path)
    srv = start_server(file_apps.app, lifespan="off")
    response = httpx.get(_file_url(srv.url, "data.bin"))
    assert response.status_code == 200
    assert response.content == (tmp_path / "data.bin").read_bytes()


def test_starlette_file_response_to_head_has_no_body(start_server, tmp_path):
    path = _write_file(tmp_path / "data.bin", 12345)
    srv = start_server(file_apps.app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("HEAD", f"/file?path={path}"))
        head = conn.read_response("HEAD")
        assert head.status == 200
        assert head.header("content-length") == "12345"
        # Nothing follows the head: the next response is the GET's.
        conn.send(request_bytes("GET", f"/file?path={path}"))
        got = conn.read_response()
        assert got.body == open(path, "rb").read()


def test_the_connection_is_kept_after_a_file(start_server, tmp_path):
    small = _write_file(tmp_path / "small.bin", 1000, b"a")
    big = _write_file(tmp_path / "big.bin", 2 * MIB, b"b")
    srv = start_server(file_apps.app, lifespan="off")
    with srv.raw() as conn:
        port = conn.local_port
        for path in (small, big, small):
            conn.send(request_bytes("GET", f"/file?path={path}"))
            response = conn.read_response()
            assert response.status == 200
            assert response.header("connection") is None
            assert response.body == open(path, "rb").read()
        assert conn.local_port == port
        # Pipelined: both answered in order on the same connection.
        conn.send(request_bytes("GET", f"/file?path={big}") + request_bytes("GET", f"/file?path={small}"))
        assert conn.read_response().body == open(big, "rb").read()
        assert conn.read_response().body == open(small, "rb").read()


# --------------------------------------------------------------------------
# Back-pressure and memory


@pytest.mark.timeout(180)
def test_100_mib_file_to_a_slow_reader_keeps_server_rss_bounded(serve_process, tmp_path):
    size = 100 * MIB
    path = _write_file(tmp_path / "big.bin", size)
    expected = _sha256(path)
    proc = serve_process("file_apps:app", lifespan="off")
    warm = httpx.get(_file_url(proc.url, _write_file(tmp_path / "warm.bin", 4 * MIB, b"w")))
    assert warm.status_code == 200
    baseline = proc_status(proc.pid, "VmRSS")

    sock = socket.create_connection(("127.0.0.1", int(proc.url.rsplit(":", 1)[1])), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    conn = RawConn(sock)
    conn.send(request_bytes("GET", f"/file?path={path}"))
    head = conn._take_until(b"\r\n\r\n", time.monotonic() + 10)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert f"content-length: {size}\r\n".encode() in head
    h = hashlib.sha256()
    got = len(conn.buf)
    h.update(bytes(conn.buf))
    conn.buf.clear()
    # Slow: small reads with pauses, for a while (the server must wait on
    # the socket, not read ahead into memory)...
    peak = 0
    for _ in range(150):
        data = sock.recv(4096)
        assert data, "server closed during the slow phase"
        h.update(data)
        got += len(data)
        time.sleep(0.01)
        peak = max(peak, proc_status(proc.pid, "VmRSS"))
    assert got < 50 * MIB
    # ... then fast to the end.
    while got < size:
        data = sock.recv(MIB)
        assert data, f"server closed after {got} of {size} bytes"
        h.update(data)
        got += len(data)
        if got % (8 * MIB) < MIB:
            peak = max(peak, proc_status(proc.pid, "VmRSS"))
    assert got == size
    assert h.hexdigest() == expected
    growth = max(peak, proc_status(proc.pid, "VmRSS")) - baseline
    assert growth < 32 * MIB, f"server RSS grew by {growth / MIB:.1f} MiB sending a 100 MiB file"
    # The connection is still usable afterwards.
    conn.send(request_bytes("GET", f"/file?path={tmp_path / 'warm.bin'}"))
    assert conn.read_response().status == 200
    sock.close()
    assert proc.stop() == 0


def test_a_client_leaving_mid_file_leaves_no_fd_open(start_server, tmp_path):
    path = _write_file(tmp_path / "big.bin", 64 * MIB)
    record: list = []
    srv = start_server(file_apps.pathsend_app(path, record=record), lifespan="off")
    # One full round first, so the server's own fds exist before the count.
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        assert len(conn.read_response(timeout=30).body) == 64 * MIB
    record.clear()
    before = open_fds()
    for _ in range(5):
        sock = socket.create_connection(srv.address, timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.sendall(request_bytes("GET", "/"))
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK")
        sock.close()
    wait_until(lambda: len(record) == 5, message=f"the app's send() did not end: {record}")
    assert all(type(exc).__name__ == "ClientDisconnected" for exc in record), record
    wait_until(lambda: open_fds() <= before, message="fds left open after clients left mid-file")


# --------------------------------------------------------------------------
# Framing


def _raw_response(srv, method="GET", version="1.1"):
    with srv.raw() as conn:
        conn.send(request_bytes(method, "/", version=version))
        response = conn.read_response(method)
        return response, conn.is_open()


def test_without_content_length_the_file_is_chunked(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 300_000)
    srv = start_server(file_apps.pathsend_app(path), lifespan="off")
    response, kept = _raw_response(srv)
    assert response.chunked
    assert response.body == open(path, "rb").read()
    assert kept


def test_http10_without_content_length_is_close_delimited(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 200_000)
    srv = start_server(file_apps.pathsend_app(path), lifespan="off")
    response, _ = _raw_response(srv, version="1.0")
    assert response.close_delimited
    assert response.body == open(path, "rb").read()


def test_a_file_longer_than_content_length_is_cut_to_it(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 100_000)
    srv = start_server(file_apps.pathsend_app(path, [(b"content-length", b"1000")]), lifespan="off")
    response, kept = _raw_response(srv)
    assert response.body == open(path, "rb").read()[:1000]
    assert kept


def test_a_file_shorter_than_content_length_closes_the_connection(start_server, tmp_path, capture_logs):
    path = _write_file(tmp_path / "f.bin", 1000)
    record: list = []
    app = file_apps.pathsend_app(path, [(b"content-length", b"5000")], record=record)
    srv = start_server(app, lifespan="off")
    errors = capture_logs("error")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        assert conn.wait_closed(5)
        head, _, body = bytes(conn.buf).partition(b"\r\n\r\n")
        assert b"content-length: 5000" in head
        assert body == open(path, "rb").read()
    wait_until(lambda: record, message="the app's send() did not end")
    assert "shorter than its content-length" in errors.text()


def test_an_empty_file_is_an_empty_body(start_server, tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    srv = start_server(file_apps.pathsend_app(path), lifespan="off")
    response, kept = _raw_response(srv)
    assert response.status == 200 and response.body == b"" and kept


# --------------------------------------------------------------------------
# Errors the app's send() raises


def _error_app(message_after_start, record):
    """Start, send ``message_after_start`` (or, if it is a list, these
    messages first), record what the last one raised and answer with its
    type name as a body."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        messages = message_after_start if isinstance(message_after_start, list) else [message_after_start]
        try:
            for message in messages:
                await send(message)
        except Exception as exc:  # noqa: BLE001 - recorded for the test
            record.append(exc)
            await send({"type": "http.response.body", "body": type(exc).__name__.encode()})
            return
        record.append(None)

    return app


START = {"type": "http.response.start", "status": 200, "headers": []}


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("relative/no/such/file.txt", FileNotFoundError),
        (42, TypeError),
        ("/no/such/file/anywhere", FileNotFoundError),
        ("{tmp}", IsADirectoryError),
    ],
)
def test_a_bad_path_raises_in_send(start_server, tmp_path, path, error):
    record: list = []
    message = {"type": "http.response.pathsend", "path": path.format(tmp=tmp_path) if isinstance(path, str) else path}
    srv = start_server(_error_app([START, message], record), lifespan="off")
    response, kept = _raw_response(srv)
    assert isinstance(record[0], error), record
    # Nothing of the file went out: the app could still answer.
    assert response.status == 200
    assert response.body == error.__name__.encode()
    assert kept


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_raises_permission_error(start_server, tmp_path):
    path = tmp_path / "secret"
    path.write_bytes(b"x")
    path.chmod(0)
    record: list = []
    message = {"type": "http.response.pathsend", "path": str(path)}
    srv = start_server(_error_app([START, message], record), lifespan="off")
    response, _ = _raw_response(srv)
    assert isinstance(record[0], PermissionError), record
    assert response.body == b"PermissionError"


def test_pathsend_before_start_is_refused(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 10)
    record: list = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        try:
            await send({"type": "http.response.pathsend", "path": path})
        except RuntimeError as exc:
            record.append(str(exc))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.pathsend", "path": path})

    srv = start_server(app, lifespan="off")
    response, _ = _raw_response(srv)
    assert record == ["Expected ASGI message 'http.response.start', but got 'http.response.pathsend'."]
    assert response.body == open(path, "rb").read()


def test_pathsend_after_the_response_is_refused(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 10)
    record: list = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.pathsend", "path": path})
        try:
            await send({"type": "http.response.pathsend", "path": path})
        except RuntimeError as exc:
            record.append(str(exc))

    srv = start_server(app, lifespan="off")
    response, kept = _raw_response(srv)
    assert response.body == open(path, "rb").read() and kept
    wait_until(lambda: record)
    assert "after response already completed" in record[0]


def test_a_send_while_the_file_is_in_flight_is_refused(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 32 * MIB)
    record: list = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        sending = asyncio.ensure_future(send({"type": "http.response.pathsend", "path": path}))
        await asyncio.sleep(0)
        try:
            await send({"type": "http.response.body", "body": b"more"})
        except RuntimeError as exc:
            record.append(str(exc))
        await sending

    srv = start_server(app, lifespan="off")
    sock = socket.create_connection(srv.address, timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    conn = RawConn(sock)
    conn.send(request_bytes("GET", "/"))
    wait_until(lambda: record, message="the second send() did not fail")
    assert "still being sent" in record[0]
    response = conn.read_response(timeout=30)
    assert response.body == open(path, "rb").read()
    conn.close()


# --------------------------------------------------------------------------
# zerocopysend


def test_zerocopysend_sends_regions_of_an_open_file(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 1_000_000)
    data = open(path, "rb").read()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        with open(path, "rb") as f:
            f.seek(10)
            # From the file's position, which then moves past the region.
            await send({"type": "http.response.zerocopysend", "file": f, "count": 100, "more_body": True})
            assert f.tell() == 110
            await send({"type": "http.response.zerocopysend", "file": f, "count": 50, "more_body": True})
            await send({"type": "http.response.body", "body": b"|", "more_body": True})
            await send({"type": "http.response.zerocopysend", "file": f, "offset": 500_000})

    srv = start_server(app, lifespan="off")
    response, kept = _raw_response(srv)
    assert response.body == data[10:160] + b"|" + data[500_000:]
    assert kept


def test_head_to_a_pathsend_has_its_length_and_no_body(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 5000)
    srv = start_server(file_apps.pathsend_app(path, [(b"content-length", b"5000")]), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("HEAD", "/") + request_bytes("GET", "/"))
        head = conn.read_response("HEAD")
        assert head.status == 200 and head.header("content-length") == "5000"
        assert conn.read_response().body == open(path, "rb").read()


# --------------------------------------------------------------------------
# Shutdown with a file in flight


def _slow_client(srv, path_size):
    sock = socket.create_connection(srv.address, timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    conn = RawConn(sock)
    conn.send(request_bytes("GET", "/"))
    head = conn._take_until(b"\r\n\r\n", time.monotonic() + 10)
    assert f"content-length: {path_size}".encode() in head
    return conn


def test_shutdown_lets_a_file_in_flight_finish(start_server, tmp_path):
    size = 32 * MIB
    path = _write_file(tmp_path / "f.bin", size)
    record: list = []
    app = file_apps.pathsend_app(path, [(b"content-length", str(size).encode())], record=record)
    srv = start_server(app, lifespan="off", timeout_graceful_shutdown=60)
    conn = _slow_client(srv, size)
    srv.request_stop()
    # Still sending while the server drains; the reader takes it all.
    body = conn._take_exact(size, time.monotonic() + 60)
    assert hashlib.sha256(body).hexdigest() == _sha256(path)
    assert conn.wait_closed(5), "connection kept open after the drained response"
    conn.close()
    srv.stop()
    assert record == [None]


def test_shutdown_past_its_grace_period_closes_a_stalled_file(start_server, tmp_path):
    size = 64 * MIB
    path = _write_file(tmp_path / "f.bin", size)
    record: list = []
    app = file_apps.pathsend_app(path, [(b"content-length", str(size).encode())], record=record)
    srv = start_server(app, lifespan="off", timeout_graceful_shutdown=0.5)
    conn = _slow_client(srv, size)
    before_stop = open_fds()
    srv.request_stop()
    srv.stop()  # fails unless serve() returns
    # The reader never read: the server gave up on it at the deadline.
    assert conn.wait_closed(10)
    got = len(conn.buf)
    assert got < size
    conn.close()
    assert record and record[0] is not None, record
    assert open_fds() < before_stop


def test_declared_trailers_follow_a_file(start_server, tmp_path):
    path = _write_file(tmp_path / "f.bin", 70_000)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [], "trailers": True})
        await send({"type": "http.response.pathsend", "path": path})
        await send({"type": "http.response.trailers", "headers": [(b"x-sum", b"1")]})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/", headers=[("TE", "trailers")]))
        response = conn.read_response()
        assert response.chunked
        assert response.body == open(path, "rb").read()
        assert response.trailers == [("x-sum", "1")]


def test_a_fifo_is_refused_without_blocking(start_server, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    record: list = []
    message = {"type": "http.response.pathsend", "path": str(fifo)}
    srv = start_server(_error_app([START, message], record), lifespan="off")
    response, _ = _raw_response(srv)
    assert isinstance(record[0], ValueError) and "not a regular file" in str(record[0])
    assert response.body == b"ValueError"
