"""Real TLS clients against the server: Python's ``ssl`` (TLS 1.2 and 1.3
forced), httpx, aiohttp, ``curl --cacert``, ``openssl s_client`` and the
``websockets`` client over WSS; wrong host names, resumption and SNI."""

from __future__ import annotations

import asyncio
import time
import json
import ssl
import subprocess

import aiohttp
import httpx
import pytest
from websockets.sync.client import connect as ws_connect

from tls_support import (
    IO_TIMEOUT,
    client_context,
    get_info,
    https_get,
    peer,
    peer_cert_names,
    request,
    require_tool,
    tls_connect,
)


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
def test_stdlib_client_each_version(tls_server, tls_files, version):
    srv = tls_server()
    with tls_connect(srv.port, client_context(tls_files, version=version)) as tls:
        assert tls.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
        assert "localhost" in peer_cert_names(tls)
        status, _, body = request(tls)
        assert (status, body) == (200, b"hello")
        # Keep-alive over the same session.
        assert request(tls)[2] == b"hello"
    assert srv.error_lines() == []


def test_rsa_certificate(tls_server, tls_files):
    srv = tls_server(ssl_certfile=tls_files.rsa, ssl_keyfile=tls_files.rsa_key)
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert https_get(srv.port, client_context(tls_files, version=version))[2] == b"hello"


@pytest.mark.ferroloop_only
def test_scope_scheme_and_tls_extension(tls_server, tls_files):
    srv = tls_server()
    info = get_info(srv.port, client_context(tls_files, version=ssl.TLSVersion.TLSv1_3))
    assert info["scheme"] == "https"
    tls = info["tls"]
    assert tls is not None, info
    assert tls["tls_version"] == 0x0304
    assert tls["server_cert"] is True
    assert tls["client_cert_chain"] == 0
    assert tls["client_cert_name"] is None
    assert tls["client_cert_error"] is None
    assert isinstance(tls["cipher_suite"], int)


def test_httpx(tls_server, tls_files):
    srv = tls_server()
    with httpx.Client(verify=client_context(tls_files), timeout=IO_TIMEOUT) as client:
        for _ in range(3):
            response = client.get(f"https://localhost:{srv.port}/")
            assert response.status_code == 200 and response.text == "hello"
        response = client.post(f"https://localhost:{srv.port}/upload", content=b"x" * 100_000)
        assert response.json()["bytes"] == 100_000
        assert response.http_version == "HTTP/1.1"


def test_aiohttp(tls_server, tls_files):
    srv = tls_server()

    async def main():
        connector = aiohttp.TCPConnector(ssl=client_context(tls_files))
        async with aiohttp.ClientSession(connector=connector) as session:
            for _ in range(3):
                async with session.get(f"https://localhost:{srv.port}/") as response:
                    assert response.status == 200
                    assert await response.text() == "hello"
            async with session.get(f"https://localhost:{srv.port}/download?n=300000") as response:
                assert len(await response.read()) == 300_000

    asyncio.run(main())


def test_curl_cacert(tls_server, tls_files):
    curl = require_tool("curl")
    srv = tls_server()
    url = f"https://localhost:{srv.port}/info"
    proc = subprocess.run(
        [curl, "-sS", "--fail", "--cacert", tls_files.ca, "--resolve", f"localhost:{srv.port}:127.0.0.1", url],
        capture_output=True,
        text=True,
        timeout=IO_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scheme"] == "https"
    # Without the CA curl refuses the certificate.
    proc = subprocess.run(
        [curl, "-sS", "--resolve", f"localhost:{srv.port}:127.0.0.1", url], capture_output=True, text=True, timeout=IO_TIMEOUT
    )
    assert proc.returncode == 60, (proc.returncode, proc.stderr)


def s_client(tls_files, port: int, *args: str, send: bytes = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"):
    openssl = require_tool("openssl")
    argv = [openssl, "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", tls_files.ca, "-verify_return_error", *args]
    # -ign_eof: keep reading until the server closes (it answers, then closes).
    proc = subprocess.run(argv + ["-ign_eof"], input=send, capture_output=True, timeout=IO_TIMEOUT)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("flag, version", [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")])
def test_openssl_s_client_versions(tls_server, tls_files, flag, version):
    srv = tls_server()
    code, out, err = s_client(tls_files, srv.port, flag, "-servername", "localhost")
    assert code == 0, out + err
    assert f"Protocol  : {version}" in out or f"New, {version}" in out, out
    assert "Verify return code: 0 (ok)" in out, out
    assert "HTTP/1.1 200" in out and "hello" in out, out


@pytest.mark.uvicorn_differs("uvicorn sets no ALPN protocols on its context")
def test_openssl_alpn_http11_chosen(tls_server, tls_files):
    srv = tls_server()
    code, out, err = s_client(tls_files, srv.port, "-alpn", "http/1.1", "-servername", "localhost")
    assert code == 0, out + err
    assert "ALPN protocol: http/1.1" in out, out


def test_openssl_alpn_h2_not_chosen(tls_server, tls_files):
    srv = tls_server()
    code, out, err = s_client(tls_files, srv.port, "-alpn", "h2", "-servername", "localhost")
    # Either no protocol is negotiated or the handshake is refused with
    # no_application_protocol (RFC 7301 §3.2): never h2.
    assert "ALPN protocol: h2" not in out, out
    if code == 0:
        assert "No ALPN negotiated" in out, out
    # And h2 next to http/1.1: http/1.1 wins (uvicorn: none).
    code, out, err = s_client(tls_files, srv.port, "-alpn", "h2,http/1.1", "-servername", "localhost")
    assert code == 0, out + err
    assert "ALPN protocol: h2" not in out, out
    assert srv.error_lines() == []


def test_openssl_servername_localhost(tls_server, tls_files):
    srv = tls_server()
    code, out, err = s_client(tls_files, srv.port, "-servername", "localhost", "-verify_hostname", "localhost")
    assert code == 0, out + err
    assert "Verify return code: 0 (ok)" in out, out


def test_websockets_client_over_wss(tls_server, tls_files):
    srv = tls_server()
    with ws_connect(f"wss://localhost:{srv.port}/echo", ssl=client_context(tls_files), open_timeout=IO_TIMEOUT) as ws:
        ws.send("hello over wss")
        assert ws.recv(timeout=IO_TIMEOUT) == "hello over wss"
        payload = bytes(range(256)) * 4096  # 1 MiB
        ws.send(payload)
        assert ws.recv(timeout=IO_TIMEOUT) == payload
    assert srv.error_lines() == []


def test_wrong_hostname_fails_on_the_client(tls_server, tls_files):
    srv = tls_server()
    with pytest.raises(ssl.SSLCertVerificationError) as info:
        tls_connect(srv.port, client_context(tls_files), server_hostname="wrong.test")
    assert "hostname" in str(info.value).lower() or "match" in str(info.value).lower(), info.value
    # The server served the certificate we said: it names localhost only.
    with tls_connect(srv.port, client_context(tls_files)) as tls:
        assert peer_cert_names(tls) == ["localhost"]
    # A client trusting another CA refuses it too.
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(srv.port, client_context(tls_files, cafile=tls_files.rogue_ca))
    assert srv.error_lines() == []


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
def test_session_resumption(tls_server, tls_files, version):
    srv = tls_server()
    context = client_context(tls_files, version=version)
    with tls_connect(srv.port, context) as first:
        # On TLS 1.3 the ticket arrives after the handshake: read first.
        assert request(first)[0] == 200
        session = first.session
        assert not first.session_reused
    assert session is not None
    with tls_connect(srv.port, context, session=session) as second:
        assert request(second)[0] == 200
        assert second.session_reused, f"{version.name}: the session was not resumed"


@pytest.mark.ferroloop_only
def test_sni_selects_the_certificate(tls_server, tls_files):
    srv = tls_server(ssl_sni=[f"other.test={tls_files.other}:{tls_files.other_key}"])
    with tls_connect(srv.port, client_context(tls_files), server_hostname="other.test") as tls:
        assert peer_cert_names(tls) == ["other.test"]
        assert request(tls, host="other.test")[2] == b"hello"
    # Any other name (and no SNI at all) gets the default certificate.
    with tls_connect(srv.port, client_context(tls_files), server_hostname="localhost") as tls:
        assert peer_cert_names(tls) == ["localhost"]
    unverified = client_context(tls_files)
    unverified.check_hostname = False
    with tls_connect(srv.port, unverified, server_hostname=None) as tls:
        assert "localhost" in peer_cert_names(tls)
    code, out, err = s_client(tls_files, srv.port, "-servername", "other.test", "-verify_hostname", "other.test")
    assert code == 0 and "Verify return code: 0 (ok)" in out, out + err


@pytest.mark.ferroloop_only
def test_min_version_tls13_refuses_tls12(tls_server, tls_files):
    srv = tls_server(ssl_min_version="1.3")
    with pytest.raises(ssl.SSLError):
        tls_connect(srv.port, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2))
    assert https_get(srv.port, client_context(tls_files, version=ssl.TLSVersion.TLSv1_3))[2] == b"hello"
    assert srv.error_lines() == []


@pytest.mark.ferroloop_only
def test_wss_scope(tls_server, tls_files):
    srv = tls_server()
    with ws_connect(f"wss://localhost:{srv.port}/scope", ssl=client_context(tls_files), open_timeout=IO_TIMEOUT) as ws:
        scope = json.loads(ws.recv(timeout=IO_TIMEOUT))
    assert scope["scheme"] == "wss"
    assert scope["tls"] is not None and scope["tls"]["tls_version"] in (0x0303, 0x0304), scope


def test_plaintext_websocket_url_to_the_tls_port_fails(tls_server, tls_files):
    srv = tls_server()
    with pytest.raises(Exception):
        with ws_connect(f"ws://127.0.0.1:{srv.port}/echo", open_timeout=IO_TIMEOUT):
            pass
    assert srv.error_lines() == []


@pytest.mark.ferroloop_only
def test_failed_handshakes_are_logged_at_debug(tls_server, tls_files):
    import socket

    srv = tls_server(log_level="debug")
    # The client refuses the certificate (an alert to the server) ...
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(srv.port, client_context(tls_files, cafile=tls_files.rogue_ca))
    # ... and plaintext HTTP where a ClientHello belongs.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        while True:
            try:
                if not sock.recv(65536):
                    break
            except ConnectionResetError:
                break

    def debug_lines():
        return [line for line in srv.output().splitlines() if line.startswith("DEBUG") and "handshake" in line.lower()]

    deadline = time.monotonic() + IO_TIMEOUT
    while len(debug_lines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(debug_lines()) >= 2, f"not one debug line per failed handshake:\n{srv.output()}"
    assert srv.error_lines() == []
