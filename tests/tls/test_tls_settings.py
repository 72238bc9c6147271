"""The ssl_* settings: `Config` checks them together (naming the
setting), the files are read before anything binds (the error naming the
file), and the command line names its flags. Certificates are made at test
time (tests/_tls.py)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

import _tls
import ferroloop
from _helpers import child_env, free_port
from ferroloop.server._server import Server

FERROLOOP = Path(sys.executable).parent / "ferroloop"


async def app(scope, receive, send):
    pass


@pytest.fixture
def files(tls_files):
    return {"ssl_certfile": tls_files.server, "ssl_keyfile": tls_files.server_key}


# --- Config: values and combinations -------------------------------------


def test_plaintext_by_default():
    config = ferroloop.Config(app)
    assert config.ssl_certfile is None and config.ssl_crl == [] and config.ssl_sni == {}
    assert config.ssl_version == 17 and config.ssl_min_version == "1.2" and config.ssl_handshake_timeout == 10.0
    config.load_tls()  # nothing to read


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"ssl_certfile": "c.pem"}, "ssl_keyfile: ssl_certfile needs ssl_keyfile"),
        ({"ssl_keyfile": "k.pem"}, "ssl_certfile: ssl_keyfile needs ssl_certfile"),
        ({"ssl_ca_certs": "ca.pem"}, "ssl_certfile: ssl_ca_certs is given without ssl_certfile and ssl_keyfile"),
        ({"ssl_min_version": "1.3"}, "ssl_min_version is given without ssl_certfile"),
        ({"ssl_sni": {"a.example": ("a.pem", "a.key")}}, "ssl_sni is given without ssl_certfile"),
    ],
)
def test_certfile_and_keyfile_go_together(settings, message):
    with pytest.raises(ValueError, match=message):
        ferroloop.Config(app, **settings)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"ssl_cert_reqs": 2}, "ssl_ca_certs: ssl_cert_reqs 2 needs ssl_ca_certs"),
        ({"ssl_cert_reqs": 3}, "ssl_cert_reqs: must be at least 0 and at most 2"),
        ({"ssl_crl": ["r.pem"]}, "ssl_crl: revocation lists apply to client certificates"),
        ({"ssl_version": 3}, r"ssl_version: 3 \(PROTOCOL_TLSv1\) is not available: rustls speaks TLS 1.2 and 1.3"),
        ({"ssl_version": 4}, r"ssl_version: 4 \(PROTOCOL_TLSv1_1\) is not available"),
        ({"ssl_version": 16}, r"ssl_version: 16 \(PROTOCOL_TLS_CLIENT\) is a client protocol"),
        ({"ssl_version": 5, "ssl_min_version": "1.3"}, "contradicts ssl_min_version 1.3"),
        ({"ssl_min_version": "1.1"}, "ssl_min_version: expected one of '1.2', '1.3'"),
        ({"ssl_handshake_timeout": 0}, "ssl_handshake_timeout: must be a positive"),
        ({"ssl_sni": "a.example"}, "ssl_sni: expected HOST=CERTFILE:KEYFILE strings"),
        ({"ssl_sni": {"a.example": "a.pem"}}, "ssl_sni: expected host: \\(certfile, keyfile\\)"),
        ({"ssl_sni": ["a.example=a.pem:a.key", "A.example=b.pem:b.key"]}, "ssl_sni: host 'a.example' is given twice"),
        ({"ssl_crl": [42]}, "ssl_crl: expected a list of paths"),
    ],
)
def test_bad_values_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        ferroloop.Config(app, ssl_certfile="c.pem", ssl_keyfile="k.pem", **settings)


def test_uvicorn_values_and_lists_are_kept():
    config = ferroloop.Config(
        app,
        ssl_certfile=Path("c.pem"),
        ssl_keyfile="k.pem",
        ssl_ca_certs="ca.pem",
        ssl_cert_reqs=ssl.CERT_OPTIONAL,
        ssl_version=ssl.PROTOCOL_TLS_SERVER,
        ssl_crl="r.pem",
        ssl_sni=["A.example=a.pem:a.key"],
    )
    assert config.ssl_certfile == "c.pem" and config.ssl_crl == ["r.pem"]
    assert config.ssl_sni == {"a.example": ("a.pem", "a.key")}
    for version in (ssl.PROTOCOL_TLS, ssl.PROTOCOL_TLS_SERVER, ssl.PROTOCOL_TLSv1_2):
        ferroloop.Config(app, ssl_certfile="c", ssl_keyfile="k", ssl_version=int(version))
    mapping = ferroloop.Config(app, ssl_certfile="c", ssl_keyfile="k", ssl_sni={"b.example": (Path("b.pem"), "b.key")})
    assert mapping.ssl_sni == {"b.example": ("b.pem", "b.key")}


def test_an_ssl_context_is_refused_by_name():
    context = _tls.server_context()
    with pytest.raises(TypeError, match=r"SSLContext's key cannot be taken out of it; pass ssl_certfile=\.\.\., ssl_keyfile="):
        ferroloop.Config(app, ssl=context)
    with pytest.raises(TypeError, match="ssl_certfile"):
        ferroloop.serve(app, port=free_port(), ssl=context)


# --- the files, read before anything binds --------------------------------


def test_good_files_load(files, tls_files):
    ferroloop.Config(app, **files).load_tls()
    ferroloop.Config(app, ssl_certfile=tls_files.server, ssl_keyfile=tls_files.server_enc_key,
                     ssl_keyfile_password=tls_files.PASSWORD).load_tls()
    ferroloop.Config(app, **files, ssl_ca_certs=tls_files.ca, ssl_cert_reqs=2).load_tls()


def test_bad_files_name_the_file(files, tls_files, tmp_path):
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(FileNotFoundError, match="missing.pem"):
        ferroloop.Config(app, ssl_certfile=missing, ssl_keyfile=files["ssl_keyfile"]).load_tls()
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(ValueError, match="garbage.pem"):
        ferroloop.Config(app, ssl_certfile=str(garbage), ssl_keyfile=files["ssl_keyfile"]).load_tls()
    with pytest.raises(ValueError, match="garbage.pem"):
        ferroloop.Config(app, ssl_certfile=files["ssl_certfile"], ssl_keyfile=str(garbage)).load_tls()
    certfile, keyfile = tls_files.server, tls_files.server_enc_key
    with pytest.raises(ValueError, match="server_enc_key.pem.*wrong password"):
        ferroloop.Config(app, ssl_certfile=certfile, ssl_keyfile=keyfile, ssl_keyfile_password="nope").load_tls()
    with pytest.raises(ValueError, match="server_enc_key.pem"):
        ferroloop.Config(app, ssl_certfile=certfile, ssl_keyfile=keyfile).load_tls()
    other = tls_files.rsa_key  # the RSA certificate's key, not the server's
    with pytest.raises(ValueError, match="does not match"):
        ferroloop.Config(app, ssl_certfile=files["ssl_certfile"], ssl_keyfile=other).load_tls()
    ca = tls_files.ca
    with pytest.raises(FileNotFoundError, match="no-crl.pem"):
        ferroloop.Config(
            app, **files, ssl_ca_certs=ca, ssl_cert_reqs=2, ssl_crl=[str(tmp_path / "no-crl.pem")]
        ).load_tls()
    with pytest.raises(ValueError, match="unknown cipher suite"):
        ferroloop.Config(app, **files, ssl_ciphers="NOT-A-SUITE").load_tls()


def test_server_fails_before_startup_and_bind(files, tmp_path):
    started = []

    async def lifespan_app(scope, receive, send):
        if scope["type"] == "lifespan":
            started.append(True)
            await receive()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})

    port = free_port()
    config = ferroloop.Config(
        lifespan_app, port=port, lifespan="on", ssl_certfile=str(tmp_path / "gone.pem"), ssl_keyfile=files["ssl_keyfile"]
    )
    with pytest.raises(FileNotFoundError, match="gone.pem"):
        ferroloop.run(Server(config).serve())
    assert started == []
    # Nothing was bound: the port is free.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


# --- the command line ------------------------------------------------------


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(FERROLOOP), *args],
        cwd=cwd,
        env=child_env(None),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def app_dir(tmp_path):
    (tmp_path / "tlsapp.py").write_text("async def app(scope, receive, send):\n    pass\n")
    return tmp_path


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ssl-certfile", "c.pem"], "Error: invalid value for '--ssl-keyfile': --ssl-certfile needs --ssl-keyfile"),
        (
            ["--ssl-certfile", "c", "--ssl-keyfile", "k", "--ssl-cert-reqs", "1"],
            "Error: invalid value for '--ssl-ca-certs': --ssl-cert-reqs 1 needs --ssl-ca-certs",
        ),
        (["--ssl-certfile", "c", "--ssl-keyfile", "k", "--ssl-version", "3"], "(PROTOCOL_TLSv1) is not available"),
        (["--ssl-cert-reqs", "7"], "invalid value '7' for '--ssl-cert-reqs': expected an integer from 0 to 2"),
        (["--ssl-sni", "nohost"], "invalid value 'nohost' for '--ssl-sni': expected HOST=CERTFILE:KEYFILE"),
        (["--ssl-min-version", "1.0"], "invalid value '1.0' for '--ssl-min-version': expected one of: 1.2, 1.3"),
        (["--ssl-handshake-timeout", "0"], "invalid value '0' for '--ssl-handshake-timeout'"),
    ],
)
def test_cli_usage_errors_name_the_flag(args, message, app_dir):
    result = cli("tlsapp:app", "--port", str(free_port()), *args, cwd=app_dir)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_bad_file_fails_at_startup_naming_it(files, tls_files, app_dir, tmp_path):
    port = free_port()
    result = cli("tlsapp:app", "--port", str(port), "--ssl-certfile", str(tmp_path / "nope.pem"),
                 "--ssl-keyfile", files["ssl_keyfile"], cwd=app_dir)
    assert result.returncode == 3, result.stderr
    assert "nope.pem" in result.stderr and "Traceback" not in result.stderr
    certfile, keyfile = tls_files.server, tls_files.server_enc_key
    result = cli("tlsapp:app", "--port", str(port), "--ssl-certfile", certfile, "--ssl-keyfile", keyfile,
                 "--ssl-keyfile-password", "wrong", cwd=app_dir)
    assert result.returncode == 3 and "server_enc_key.pem" in result.stderr and "Traceback" not in result.stderr


def test_cli_help_shows_the_tls_flags(app_dir):
    result = cli("--help", cwd=app_dir)
    flat = " ".join(result.stdout.split())
    for flag in ("--ssl-certfile", "--ssl-keyfile-password", "--ssl-crl", "--ssl-min-version",
                 "--ssl-handshake-timeout", "--ssl-sni HOST=CERTFILE:KEYFILE"):
        assert flag in flat, flag
    assert "TLS lands with issue 15" not in flat


def test_cli_env_lists(app_dir):
    # One SNI entry per line in the variable; a bad entry names the variable.
    env = {"FERROLOOP_SSL_SNI": "bad entry"}
    result = subprocess.run(
        [str(FERROLOOP), "tlsapp:app", "--ssl-certfile", "c", "--ssl-keyfile", "k"],
        cwd=app_dir, env=child_env(env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2 and "FERROLOOP_SSL_SNI (--ssl-sni)" in result.stderr, result.stderr

