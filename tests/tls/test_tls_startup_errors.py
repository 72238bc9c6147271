"""A bad certificate, key, CRL, CA file, password or cipher name fails at
startup: the CLI exits non-zero with a message naming the file (or the
name), no traceback, and nothing ever listens."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tls_support import PROJECT_ROOT, HERE, child_env, free_port, server_argv

GARBAGE = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"


def cases(f, tmp: Path) -> dict:
    """id → (settings, what the message must contain, case-insensitive alternatives)."""
    (tmp / "garbage_cert.pem").write_text(GARBAGE)
    (tmp / "garbage_key.pem").write_text("this is not PEM at all\n")
    (tmp / "garbage_crl.pem").write_text("-----BEGIN X509 CRL-----\nbm90IGEgY3Js\n-----END X509 CRL-----\n")
    (tmp / "garbage_ca.pem").write_text(GARBAGE)
    missing = str(tmp / "no-such-file.pem")
    base = {"ssl_certfile": f.server, "ssl_keyfile": f.server_key}
    mtls = {**base, "ssl_ca_certs": f.ca, "ssl_cert_reqs": 2}
    return {
        "missing-cert": ({**base, "ssl_certfile": missing}, missing, ()),
        "missing-key": ({**base, "ssl_keyfile": missing}, missing, ()),
        "garbage-cert": ({**base, "ssl_certfile": str(tmp / "garbage_cert.pem")}, str(tmp / "garbage_cert.pem"), ()),
        "garbage-key": ({**base, "ssl_keyfile": str(tmp / "garbage_key.pem")}, str(tmp / "garbage_key.pem"), ()),
        "wrong-password": (
            {**base, "ssl_keyfile": f.server_enc_key, "ssl_keyfile_password": "wrong"},
            f.server_enc_key,
            ("password", "decrypt"),
        ),
        "password-missing": ({**base, "ssl_keyfile": f.server_enc_key}, f.server_enc_key, ("password", "encrypted")),
        "key-not-matching-cert": ({**base, "ssl_keyfile": f.rsa_key}, f.rsa_key, ("match",)),
        "bad-crl": ({**mtls, "ssl_crl": [str(tmp / "garbage_crl.pem")]}, str(tmp / "garbage_crl.pem"), ()),
        "bad-ca-file": ({**mtls, "ssl_ca_certs": str(tmp / "garbage_ca.pem")}, str(tmp / "garbage_ca.pem"), ()),
        "legacy-encrypted-key": (
            {**base, "ssl_keyfile": f.server_legacy_key, "ssl_keyfile_password": f.PASSWORD},
            f.server_legacy_key,
            ("legacy", "proc-type", "pkcs#8", "pkcs8"),
        ),
        # uvicorn's 3 is ssl.PROTOCOL_TLSv1: a version rustls cannot do.
        "ssl-version-tls1": ({**base, "ssl_version": 3}, "ssl-version", ("tls", "version")),
        "unknown-cipher": ({**base, "ssl_ciphers": "TLS_NO_SUCH_CIPHER"}, "TLS_NO_SUCH_CIPHER", ()),
    }


CASES = [
    "missing-cert",
    "missing-key",
    "garbage-cert",
    "garbage-key",
    "wrong-password",
    "password-missing",
    "key-not-matching-cert",
    "bad-crl",
    "bad-ca-file",
    "legacy-encrypted-key",
    "ssl-version-tls1",
    "unknown-cipher",
]


@pytest.mark.ferroloop_only
@pytest.mark.parametrize("case", CASES)
def test_bad_file_fails_at_startup(tls_files, tmp_path, case):
    settings, named, words = cases(tls_files, tmp_path)[case]
    port = free_port()
    env = child_env({"TLS_TEST_DIR": str(tmp_path)}, pythonpath=(str(PROJECT_ROOT), str(HERE)))
    proc = subprocess.Popen(
        server_argv(port, settings), cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # While it runs (until it exits), nothing may listen on the port.
    listened = False
    while proc.poll() is None:
        with socket.socket() as probe:
            probe.settimeout(0.2)
            listened = listened or probe.connect_ex(("127.0.0.1", port)) == 0
        try:
            proc.wait(0.05)
        except subprocess.TimeoutExpired:
            pass
        if listened:
            proc.kill()
    out, err = proc.communicate(timeout=30)
    output = out + err
    assert not listened, f"the server listened despite {case}:\n{output}"
    assert proc.returncode not in (0, None), output
    assert "Traceback" not in output, output
    assert "running on" not in output, output
    assert named in output, f"the message does not name {named!r}:\n{output}"
    if words:
        assert any(w in output.lower() for w in words), f"the message says none of {words}:\n{output}"


@pytest.mark.parametrize(
    "key", ["rsa_pkcs1_key", "server_sec1_key", "server_enc_key"], ids=["pkcs1", "sec1", "encrypted-pkcs8"]
)
def test_key_formats_are_served(tls_server, tls_files, key):
    from tls_support import client_context, https_get

    cert = tls_files.rsa if key.startswith("rsa") else tls_files.server
    password = tls_files.PASSWORD if key == "server_enc_key" else None
    srv = tls_server(ssl_certfile=cert, ssl_keyfile=getattr(tls_files, key), ssl_keyfile_password=password)
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"


@pytest.mark.parametrize("ciphers", ["TLSv1", "HIGH", "TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES128-GCM-SHA256"])
def test_cipher_names_accepted(tls_server, tls_files, ciphers):
    from tls_support import client_context, https_get

    srv = tls_server(ssl_ciphers=ciphers)
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"
