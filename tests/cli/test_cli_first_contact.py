"""What a new user meets in the first hour with the real `ferroloop`
command: app factories found without --factory (as uvicorn finds them),
attributes that are not apps refused at startup, uvicorn's `UVICORN_*`
environment variables, one log format for every line the command prints,
messages that say what happened, and the HTTP/2 preface refused in words."""

from __future__ import annotations

import socket
import textwrap

import httpx
import pytest

from cli_support import free_port, run, write_app

APP_ERROR = 1

NOT_APPS = '''
def wsgi_app(environ, start_response):
    start_response("200 OK", [])
    return [b"wsgi"]


def three_args_but_sync(scope, receive, send):
    pass


def returns_a_number():
    return 42


async def async_factory():
    return None
'''


def get(port: int, path: str = "/") -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10.0)


def log_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


# --------------------------------------------------------------------------
# App factories


def test_a_factory_is_detected_without_the_flag(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd("cliapp:create_app", "--port", str(port), port=port, cwd=tmp_path)
    response = get(port)
    assert response.status_code == 200 and response.json()["path"] == "/"
    output = child.output()
    assert (
        "WARNING:  ASGI app factory detected. Using it, but please consider setting the --factory flag explicitly."
        in output
    ), output
    assert "lifespan unsupported" not in output.lower() or "TypeError" not in output, output
    assert child.stop() == 0


def test_an_explicit_factory_does_not_warn(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd("cliapp:create_app", "--factory", "--port", str(port), port=port, cwd=tmp_path)
    assert get(port).status_code == 200
    assert "factory detected" not in child.output()


@pytest.mark.parametrize(
    "attr, words",
    [
        ("not_callable", "is not an ASGI application: int object is not callable"),
        ("wsgi_app", "as a WSGI app does, and WSGI is not supported yet"),
        ("three_args_but_sync", "is not an ASGI application"),
        ("returns_a_number", "is not an ASGI application: int object is not callable"),
        ("async_factory", "is not an ASGI application"),
    ],
)
def test_what_is_not_an_app_fails_at_startup(tmp_path, attr, words):
    write_app(tmp_path)
    (tmp_path / "notapps.py").write_text(textwrap.dedent(NOT_APPS))
    module = "cliapp" if attr == "not_callable" else "notapps"
    result = run(f"{module}:{attr}", "--port", str(free_port()), cwd=tmp_path)
    assert result.returncode == APP_ERROR, result.stderr
    assert "running on" not in result.stderr
    [line] = [l for l in log_lines(result.stderr) if "Error loading ASGI app" in l]
    assert line.startswith("ERROR:    Error loading ASGI app. "), line
    assert words in line, line


# --------------------------------------------------------------------------
# uvicorn's environment variables


def test_uvicorn_variables_are_read_and_named_at_startup(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    env = {"UVICORN_PORT": str(port), "UVICORN_ROOT_PATH": "/api"}
    child = ferroloop_cmd("cliapp:app", port=port, cwd=tmp_path, env=env)
    assert get(port).status_code == 200
    output = child.output()
    [line] = [l for l in log_lines(output) if "UVICORN_" in l]
    assert line == "INFO:     Using uvicorn's environment variables: UVICORN_PORT, UVICORN_ROOT_PATH", output


def test_ferroloop_variables_and_flags_win_over_uvicorns(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port, other = free_port(), free_port()
    env = {"UVICORN_PORT": str(other), "FERROLOOP_PORT": str(port)}
    child = ferroloop_cmd("cliapp:app", port=port, cwd=tmp_path, env=env)
    assert get(port).status_code == 200
    assert "Using uvicorn's environment variables" not in child.output()
    child.stop()
    flag = free_port()
    child = ferroloop_cmd("cliapp:app", "--port", str(flag), port=flag, cwd=tmp_path, env=env)
    assert get(flag).status_code == 200


def test_the_app_from_uvicorn_app(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd("--port", str(port), port=port, cwd=tmp_path, env={"UVICORN_APP": "cliapp:app"})
    assert get(port).status_code == 200
    assert child.stop() == 0


def test_a_refused_option_from_a_uvicorn_variable_says_not_supported_yet(tmp_path):
    write_app(tmp_path)
    result = run("cliapp:app", cwd=tmp_path, env={"UVICORN_HTTP2": "true"})
    assert result.returncode == 2, result.stderr
    assert "UVICORN_HTTP2 (--http2) is not supported yet" in result.stderr, result.stderr


def test_uvicorn_variables_in_an_env_file_are_only_for_the_app(ferroloop_cmd, tmp_path):
    # uvicorn reads its variables before it loads the file.
    write_app(tmp_path)
    port = free_port()
    (tmp_path / ".env").write_text(f"UVICORN_PORT={free_port()}\n")
    child = ferroloop_cmd("cliapp:app", "--env-file", ".env", "--port", str(port), port=port, cwd=tmp_path)
    assert get(port).status_code == 200
    assert "UVICORN_PORT" not in child.output()


# --------------------------------------------------------------------------
# Messages


def test_startup_errors_and_warnings_use_the_log_format(tmp_path, tls_pair_mismatched):
    write_app(tmp_path)
    cert, key = tls_pair_mismatched
    result = run("cliapp:app", "--loop", "uvloop", "--ssl-certfile", cert, "--ssl-keyfile", key, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    lines = log_lines(result.stderr)
    assert lines[0].startswith("WARNING:  --loop is ignored: "), lines
    [error] = [l for l in lines if l.startswith("ERROR:")]
    # Both files, in words; no rustls names.
    assert key in error and cert in error and "does not match" in error, error
    assert "KeyMismatch" not in result.stderr
    assert all(l.startswith(("INFO:", "WARNING:", "ERROR:")) for l in lines), lines


def test_localhost_is_printed_as_given(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd("cliapp:app", "--host", "localhost", "--port", str(port), port=port, cwd=tmp_path)
    child.wait_for_output(f"ferroloop running on http://localhost:{port} (Press CTRL+C to quit)")


def test_a_file_name_suggests_the_app(tmp_path):
    (tmp_path / "myapp.py").write_text("async def app(scope, receive, send):\n    pass\n")
    result = run("myapp.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid APP 'myapp.py': expected 'module:attribute' (did you mean 'myapp:app'?)" in result.stderr


STARTUP_FAILS = '''
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "no database"})
'''


def test_workers_whose_app_fails_to_start_say_so_plainly(tmp_path):
    (tmp_path / "failing.py").write_text(textwrap.dedent(STARTUP_FAILS))
    result = run("failing:app", "--workers", "2", "--port", str(free_port()), cwd=tmp_path, timeout=60)
    assert result.returncode == 3, result.stderr
    assert "supervisor is gone" not in result.stderr, result.stderr
    assert ".." not in result.stderr, result.stderr
    assert "running on" not in result.stderr, result.stderr
    assert "failed to start: Application startup failed. Stopping the server." in result.stderr, result.stderr


def test_the_http2_preface_is_refused_in_words(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd("cliapp:app", "--port", str(port), port=port, cwd=tmp_path)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        # What curl --http2-prior-knowledge sends first: the preface and a SETTINGS frame.
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        assert s.recv(4096) == b""  # closed, no HTTP/1.1 response
    assert get(port).status_code == 200
    output = child.output()
    assert "WARNING:  HTTP/2 is not supported; use HTTP/1.1 or put an HTTP/2 proxy in front" in output, output
    assert " 505 " not in output


@pytest.fixture
def tls_pair_mismatched(tmp_path):
    import trustme

    ca = trustme.CA()
    one, other = ca.issue_cert("localhost"), ca.issue_cert("localhost")
    cert, key = tmp_path / "server.crt", tmp_path / "other.key"
    one.cert_chain_pems[0].write_to_path(str(cert))
    other.private_key_pem.write_to_path(str(key))
    return "server.crt", "other.key"
