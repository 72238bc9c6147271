"""The native server over TLS: HTTPS and WSS with rustls under the HTTP
connection and the WebSocket session, against real clients (`ssl`,
`http.client`, httpx, websockets) over real sockets.

These pin the server's TLS code paths (loop-py `asgi/tls.rs` and the
connection's layer-awareness): the accept path, scope `scheme` and the
TLS extension, keep-alive, large bodies both ways, plaintext to the TLS
port, a handshake that never comes, certificate reload (native and
SIGHUP) and the handshake counters. Certificates are made at test time
(trustme, `tests/_tls.py`).
"""

from __future__ import annotations

import hashlib
import logging
import http.client
import json
import signal
import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import pytest
import trustme

import _tls
from tls_apps import echo_messages, lifespan
from _helpers import PROJECT_ROOT, PROMPT, ServerProcess, child_env, free_port

ferroloop = pytest.importorskip("ferroloop")

BIG = 10 * 1024 * 1024


# --------------------------------------------------------------------------
# The app


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    if scope["type"] == "websocket":
        await websocket(scope, receive, send)
        return
    path = scope["path"]
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if path == "/scope":
        tls = scope["extensions"].get("tls")
        data = json.dumps({"scheme": scope["scheme"], "tls": tls, "client": list(scope["client"])}).encode()
    elif path == "/upload":
        data = f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()
    elif path == "/download":
        data = _pattern(BIG)
    else:
        data = b"Hello, TLS!"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


async def websocket(scope, receive, send):
    message = await receive()
    assert message["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    tls = scope["extensions"].get("tls")
    await send({"type": "websocket.send", "text": json.dumps({"scheme": scope["scheme"], "tls": tls is not None})})
    await echo_messages(receive, send)


def _pattern(n: int) -> bytes:
    block = bytes(range(256)) * 256
    return (block * (n // len(block) + 1))[:n]


# --------------------------------------------------------------------------
# Certificates and servers


class CertFiles:
    """A server certificate (leaf + chain) and key as PEM files, rewritable
    in place for reload tests."""

    def __init__(self, directory: Path, ca: trustme.CA) -> None:
        self.ca = ca
        self.certfile = directory / "server.pem"
        self.keyfile = directory / "server.key"
        self.leaf_der = b""
        self.issue()

    def issue(self, *names: str) -> None:
        leaf = self.ca.issue_cert(*(names or ("localhost", "127.0.0.1")))
        self.certfile.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        self.keyfile.write_bytes(leaf.private_key_pem.bytes())
        self.leaf_der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
        self.leaf_pem = leaf.cert_chain_pems[0].bytes().decode()

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self.ca.configure_trust(context)
        return context


@pytest.fixture
def certs(tmp_path) -> CertFiles:
    return CertFiles(tmp_path, _tls.authority())


def tls_config(certs: CertFiles, *, ca_certs: str | None = None, cert_reqs: int = 0, **settings) -> "ferroloop.Config":
    """A `Config` serving `app` over TLS with `certs`."""
    handshake_timeout = settings.pop("ssl_handshake_timeout", None)
    settings.setdefault("port", 0)
    ssl = {"ssl_certfile": str(certs.certfile), "ssl_keyfile": str(certs.keyfile)}
    if ca_certs is not None:
        ssl.update(ssl_ca_certs=ca_certs, ssl_cert_reqs=cert_reqs)
    config = ferroloop.Config(app, **ssl, **settings)
    if handshake_timeout is not None:
        config.ssl_handshake_timeout = handshake_timeout
    return config


class Running:
    def __init__(self, server) -> None:
        self.server = server
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            assert self.thread.is_alive(), f"server exited before starting: {self.error!r}"
            assert time.monotonic() < deadline, "server not started"
            time.sleep(0.005)
        self.port = server.sockets[0].getsockname()[1]

    def _run(self) -> None:
        try:
            ferroloop.run(self.server.serve())
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def on_loop(self, fn):
        """`fn()` called on the server's loop thread; its result."""
        done = threading.Event()
        box: dict = {}

        def call():
            try:
                box["result"] = fn()
            except BaseException as exc:  # noqa: BLE001
                box["error"] = exc
            done.set()

        self.server._loop.call_soon_threadsafe(call)
        assert done.wait(PROMPT), "the server's loop did not run the call"
        if "error" in box:
            raise box["error"]
        return box["result"]

    def stats(self) -> dict:
        return self.on_loop(self.server.tls_stats)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        assert not self.thread.is_alive(), "server did not exit"
        if self.error is not None:
            raise AssertionError(f"serve() raised {self.error!r}") from self.error


@pytest.fixture
def serve(certs):
    running: list[Running] = []

    def start(**settings) -> Running:
        handle = Running(ferroloop.Server(tls_config(certs, **settings)))
        running.append(handle)
        return handle

    yield start
    for handle in running:
        handle.stop()


def https(port: int, context: ssl.SSLContext) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=PROMPT)


def get(conn: http.client.HTTPSConnection, path: str) -> tuple[int, bytes]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


def peer_cert(port: int, context: ssl.SSLContext) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=PROMPT) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


# --------------------------------------------------------------------------
# HTTPS


def test_https_get_with_the_stdlib_client(serve, certs):
    server = serve()
    conn = https(server.port, certs.client_context())
    status, body = get(conn, "/")
    assert (status, body) == (200, b"Hello, TLS!")
    conn.close()
    assert server.stats()["handshakes"] == 1


def test_https_get_with_httpx(serve, certs):
    httpx = pytest.importorskip("httpx")
    server = serve()
    with httpx.Client(verify=certs.client_context()) as client:
        response = client.get(f"https://127.0.0.1:{server.port}/")
        assert response.status_code == 200
        assert response.content == b"Hello, TLS!"
        assert response.http_version == "HTTP/1.1"


def test_keep_alive_over_tls_serves_many_requests_on_one_connection(serve, certs):
    server = serve()
    conn = https(server.port, certs.client_context())
    clients = set()
    for _ in range(20):
        status, body = get(conn, "/scope")
        assert status == 200
        clients.add(tuple(json.loads(body)["client"]))
    conn.close()
    assert len(clients) == 1
    assert server.stats()["handshakes"] == 1


def test_client_close_notify_is_answered_without_waiting_for_a_fin(serve, certs):
    """A client that sends `close_notify` and waits for ours (the `ssl`
    module's `unwrap()`) gets it at once: the server does not wait for a
    FIN or the keep-alive timeout."""
    server = serve(timeout_keep_alive=30)
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    tls = certs.client_context().wrap_socket(raw, server_hostname="localhost")
    tls.sendall(b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n")
    response = b""
    while b"\r\n\r\n" not in response:
        response += tls.recv(65536)
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += tls.recv(65536)
    # Sends close_notify, then reads the server's: a server that waited
    # for a FIN (or the 30 s keep-alive timeout) makes it time out.
    plain = tls.unwrap()
    plain.close()


def test_scope_has_https_and_the_tls_extension(serve, certs):
    server = serve()
    conn = https(server.port, certs.client_context())
    _, body = get(conn, "/scope")
    conn.close()
    scope = json.loads(body)
    assert scope["scheme"] == "https"
    tls = scope["tls"]
    assert set(tls) == {"server_cert", "client_cert_chain", "client_cert_name", "client_cert_error", "tls_version", "cipher_suite"}
    assert tls["tls_version"] in (0x0303, 0x0304)
    assert isinstance(tls["cipher_suite"], int) and tls["cipher_suite"] > 0
    assert ssl.PEM_cert_to_DER_cert(tls["server_cert"]) == certs.leaf_der
    assert tls["client_cert_chain"] == []
    assert tls["client_cert_name"] is None
    assert tls["client_cert_error"] is None


def test_scope_has_the_client_certificate_chain_and_name(serve, certs, tmp_path):
    ca_file = tmp_path / "ca.pem"
    certs.ca.cert_pem.write_to_path(str(ca_file))
    server = serve(ca_certs=str(ca_file), cert_reqs=2)
    context = certs.client_context()
    client = certs.ca.issue_cert("client@example.org", common_name="test client")
    client.configure_cert(context)
    conn = https(server.port, context)
    _, body = get(conn, "/scope")
    conn.close()
    tls = json.loads(body)["tls"]
    chain = [ssl.PEM_cert_to_DER_cert(pem) for pem in tls["client_cert_chain"]]
    assert chain[0] == ssl.PEM_cert_to_DER_cert(client.cert_chain_pems[0].bytes().decode())
    assert "CN=test client" in tls["client_cert_name"]
    assert tls["client_cert_error"] is None


def test_tls_1_2_client_gets_version_0x0303(serve, certs):
    server = serve()
    context = certs.client_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    conn = https(server.port, context)
    _, body = get(conn, "/scope")
    conn.close()
    assert json.loads(body)["tls"]["tls_version"] == 0x0303


def test_ten_mib_upload_and_download(serve, certs):
    server = serve()
    conn = https(server.port, certs.client_context())
    payload = _pattern(BIG)[::-1]
    conn.request("POST", "/upload", body=payload, headers={"content-length": str(len(payload))})
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == f"{BIG} {hashlib.sha256(payload).hexdigest()}".encode()
    status, body = get(conn, "/download")
    assert status == 200
    assert len(body) == BIG and body == _pattern(BIG)
    conn.close()


# --------------------------------------------------------------------------
# What is not a TLS client


def _read_until_closed(sock: socket.socket) -> bytes:
    got = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk


def test_plaintext_http_to_the_tls_port_is_closed_without_an_http_answer(serve):
    server = serve()
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        got = _read_until_closed(sock)  # a hang fails with socket.timeout
    assert not got.startswith(b"HTTP/"), got
    stats = server.stats()
    assert stats["failed_not_tls"] == 1
    assert stats["handshakes"] == 0
    # The server still serves TLS clients.
    assert peer_cert(server.port, _tls_client(server))


def test_failed_handshakes_are_logged_at_debug_only(serve):
    server = serve(log_level="debug")
    records = Records()
    logger = logging.getLogger("ferroloop.error")
    logger.addHandler(records)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _read_until_closed(sock)
        with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
            trustme.CA().configure_trust(context)  # not the server's CA: the client refuses
            with pytest.raises(ssl.SSLError):
                context.wrap_socket(sock, server_hostname="127.0.0.1")
        # The client's alert reaches the server after the client raised.
        deadline = time.monotonic() + PROMPT
        while server.stats()["failed_handshake"] == 0:
            assert time.monotonic() < deadline, server.stats()
            time.sleep(0.01)
    finally:
        logger.removeHandler(records)
    closed = [m for m in records.messages if "Connection closed" in m]
    assert any(m.startswith("DEBUG") and "not TLS" in m for m in closed), records.messages
    assert any(m.startswith("DEBUG") and "TLS handshake failed" in m for m in closed), records.messages
    assert not [m for m in records.messages if m.startswith(("WARNING", "ERROR"))], records.messages
    stats = server.stats()
    assert (stats["failed_not_tls"], stats["failed_handshake"]) == (1, 1), stats


def _tls_client(server) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    _tls.authority().configure_trust(context)
    return context


def test_a_handshake_that_never_comes_is_closed_after_ssl_handshake_timeout(serve):
    server = serve(ssl_handshake_timeout=0.3, timeout_request_head=60)
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
        assert _read_until_closed(sock) == b""  # closed, before the socket timeout
    assert server.stats()["failed_timeout"] == 1


def test_the_request_head_deadline_bounds_the_handshake_too(serve):
    # It runs from accept: a handshake longer than it is cut there.
    server = serve(ssl_handshake_timeout=60, timeout_request_head=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
        assert _read_until_closed(sock) == b""
    assert server.stats()["failed_timeout"] == 1


def test_a_stalled_handshake_is_closed_after_ssl_handshake_timeout(serve):
    # The ClientHello's first bytes, then nothing.
    server = serve(ssl_handshake_timeout=0.3, timeout_request_head=60)
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
        sock.sendall(b"\x16\x03\x01\x02\x00\x01")
        assert _read_until_closed(sock) == b""
    assert server.stats()["failed_timeout"] == 1


# --------------------------------------------------------------------------
# WSS


def test_wss_echo_with_websockets(serve, certs):
    from websockets.sync.client import connect

    server = serve()
    with connect(f"wss://127.0.0.1:{server.port}/ws", ssl=certs.client_context(), open_timeout=PROMPT) as ws:
        hello = json.loads(ws.recv(timeout=PROMPT))
        assert hello == {"scheme": "wss", "tls": True}
        ws.send("text over TLS")
        assert ws.recv(timeout=PROMPT) == "text over TLS"
        big = _pattern(1024 * 1024)  # the large-payload send path, through the layer
        ws.send(big)
        assert ws.recv(timeout=PROMPT) == big


# --------------------------------------------------------------------------
# Reload


def test_reload_tls_serves_the_new_certificate_to_new_connections_only(serve, certs):
    server = serve()
    context = certs.client_context()
    old_der = certs.leaf_der
    kept = https(server.port, context)
    assert get(kept, "/")[0] == 200
    certs.issue("localhost", "127.0.0.1", "reloaded.example")
    assert server.on_loop(server.server.reload_tls) is True
    assert peer_cert(server.port, context) == certs.leaf_der != old_der
    # The kept connection goes on with its session.
    assert get(kept, "/") == (200, b"Hello, TLS!")
    assert kept.sock.getpeercert(binary_form=True) == old_der
    kept.close()
    assert server.stats()["reloads"] == 1


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.levelname} {record.getMessage()}")


def test_a_bad_file_on_reload_keeps_the_old_certificate(serve, certs):
    server = serve()
    context = certs.client_context()
    old_der = certs.leaf_der
    records = Records()
    # Installed after start: the server's logging setup replaces handlers.
    logging.getLogger("ferroloop.error").addHandler(records)
    try:
        certs.keyfile.write_text("not a key\n")
        assert server.on_loop(server.server.reload_tls) is False
    finally:
        logging.getLogger("ferroloop.error").removeHandler(records)
    assert any(m.startswith("WARNING TLS reload failed") and "server.key" in m for m in records.messages), records.messages
    assert peer_cert(server.port, context) == old_der
    assert server.stats()["reload_errors"] == 1


SIGHUP_SERVER = """\
import sys
import ferroloop
sys.path.insert(0, {tests!r})
sys.path.insert(0, {here!r})
import test_tls_server as t

class Certs:
    certfile, keyfile = {certfile!r}, {keyfile!r}

config = t.tls_config(Certs, port={port}, log_level="info")
ferroloop.run(ferroloop.Server(config).serve())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGHUP")
def test_sighup_reloads_the_certificates(certs, tmp_path):
    port = free_port()
    source = SIGHUP_SERVER.format(
        tests=str(PROJECT_ROOT / "tests"),
        here=str(Path(__file__).parent),
        certfile=str(certs.certfile),
        keyfile=str(certs.keyfile),
        port=port,
    )
    proc = ServerProcess([sys.executable, "-c", source], port=port, log_dir=tmp_path, env=child_env())
    try:
        proc.wait_ready()
        context = certs.client_context()
        old_der = peer_cert(port, context)
        assert old_der == certs.leaf_der
        certs.issue("localhost", "127.0.0.1", "sighup.example")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + PROMPT
        while peer_cert(port, context) == old_der:
            assert time.monotonic() < deadline, f"no reload after SIGHUP:\n{proc.output()}"
            time.sleep(0.05)
        assert peer_cert(port, context) == certs.leaf_der
        assert "TLS certificates reloaded" in proc.output()
        assert f"running on https://127.0.0.1:{port}" in proc.output()
        assert proc.stop() == 0, proc.output()
    finally:
        proc.kill()
        proc.close_files()


def test_plaintext_server_scope_has_no_tls_extension(tmp_path):
    config = ferroloop.Config(app, port=0)
    server = Running(ferroloop.Server(config))
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=PROMPT)
        conn.request("GET", "/scope")
        scope = json.loads(conn.getresponse().read())
        conn.close()
        assert scope["scheme"] == "http"
        assert scope["tls"] is None
        assert server.stats()["handshakes"] == 0
    finally:
        server.stop()


# --------------------------------------------------------------------------
# Server.stats() over TLS: handshakes, resumptions, failures by alert


def test_stats_count_handshakes_resumptions_and_a_refusing_clients_alert(serve, certs):
    server = serve()
    context = certs.client_context()
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            # The ticket arrives after the handshake: read the response first.
            assert b"Hello, TLS!" in _read_response_bytes(tls)
            session = tls.session
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"Hello, TLS!" in _read_response_bytes(tls)
            assert tls.session_reused
    # A client that does not trust the certificate refuses it with an alert.
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as raw:
        refusing = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        trustme.CA().configure_trust(refusing)
        with pytest.raises(ssl.SSLError):
            refusing.wrap_socket(raw, server_hostname="127.0.0.1")
    deadline = time.monotonic() + PROMPT
    while server.stats()["failed_handshake"] == 0:
        assert time.monotonic() < deadline, server.stats()
        time.sleep(0.01)
    tls_stats = server.stats()
    assert (tls_stats["handshakes"], tls_stats["resumptions"]) == (2, 1), tls_stats
    assert tls_stats["alerts"] == {"unknown_ca": 1}, tls_stats
    assert tls_stats["alerts_sent"] == {}, tls_stats
    full = server.on_loop(server.server.stats)
    # The same counters in both views.
    assert full["tls"] == tls_stats
    assert full["requests"]["by_status"]["2xx"] == 2
    # Bytes are the wire's: ciphertext, more than the plaintext carried.
    assert full["bytes"]["in"] > 2 * len(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert full["bytes"]["out"] > 2 * len(b"Hello, TLS!")


def test_stats_name_the_alert_the_server_sends(serve):
    server = serve()
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as sock:
        # A handshake record with a body that is not a ClientHello.
        sock.sendall(bytes([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00]))
        _read_until_closed(sock)
    deadline = time.monotonic() + PROMPT
    while server.stats()["handshakes_failed"] == 0:
        assert time.monotonic() < deadline, server.stats()
        time.sleep(0.01)
    tls_stats = server.stats()
    assert tls_stats["alerts_sent"] == {"decode_error": 1}, tls_stats
    assert tls_stats["alerts"] == {}, tls_stats


def _read_response_bytes(tls: ssl.SSLSocket) -> bytes:
    """A whole response with a Content-Length body."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = tls.recv(65536)
        assert data, buf
        buf += data
    head, _, body = buf.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        data = tls.recv(65536)
        assert data, buf
        body += data
    return head + b"\r\n\r\n" + body
