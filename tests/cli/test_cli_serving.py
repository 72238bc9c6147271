"""The real `ferroloop` command serving with uvicorn's options: --env-file,
--factory, --app-dir from another directory, --header (on the app's
responses and the server's own), --limit-max-requests, --interface asgi2,
--reset-contextvars, --ws; and the environment."""

from __future__ import annotations

import json
import socket

import httpx

from cli_support import free_port, write_app


def get(port: int, path: str = "/") -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10.0)


def serve(ferroloop_cmd, app: str, *args: str, cwd=None, env=None):
    port = free_port()
    child = ferroloop_cmd(app, "--port", str(port), *args, port=port, cwd=cwd, env=env)
    return child, port


def test_env_file_is_loaded_before_the_app_and_sets_options(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    (tmp_path / "app.env").write_text(
        f'# settings and app variables\nexport APP_GREETING="hello\\nworld"\nFERROLOOP_PORT={port}\nKEPT=from-file\n'
    )
    child = ferroloop_cmd("cliapp:app", "--env-file", "app.env", port=port, cwd=tmp_path)
    assert get(port).json()["greeting"] == "hello\nworld"
    assert child.stop() == 0


def test_env_file_does_not_override_the_environment(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    (tmp_path / ".env").write_text("APP_GREETING=from-file\n")
    child, port = serve(ferroloop_cmd, "cliapp:app", "--env-file", ".env", cwd=tmp_path, env={"APP_GREETING": "from-env"})
    assert get(port).json()["greeting"] == "from-env"


def test_env_file_expands_braces_like_python_dotenv(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    (tmp_path / ".env").write_text(
        "BASE=from-file\n"
        "FERROLOOP_PORT=${PORT}\n"
        'APP_GREETING="${WHO}/${BASE}/${NOPE:-dflt}/$BASE"\n'
    )
    # The process environment wins over the file, for expansion too.
    env = {"PORT": str(port), "WHO": "env", "BASE": "from-env"}
    ferroloop_cmd("cliapp:app", "--env-file", ".env", port=port, cwd=tmp_path, env=env)
    assert get(port).json()["greeting"] == "env/from-env/dflt/$BASE"


def test_a_flag_wins_over_the_environment_for_unsupported_and_ignored_options(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    env = {"WEB_CONCURRENCY": "4", "FERROLOOP_LOOP": "y"}
    child, port = serve(ferroloop_cmd, "cliapp:app", "--workers", "1", "--loop", "x", cwd=tmp_path, env=env)
    assert get(port).status_code == 200
    child.stop()
    warnings = [line for line in child.output().splitlines() if "is ignored" in line]
    assert len(warnings) == 1 and warnings[0].startswith("WARNING:  --loop is ignored: "), child.output()


def test_ferroloop_variables_and_precedence(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    port = free_port()
    env = {"FERROLOOP_PORT": str(port), "FERROLOOP_ROOT_PATH": "/env", "FERROLOOP_HEADERS": "x-env: 1"}
    child = ferroloop_cmd("cliapp:app", "--root-path", "/flag", port=port, cwd=tmp_path, env=env)
    response = get(port, "/x")
    assert response.headers["x-env"] == "1"
    assert response.json()["path"] == "/flag/x"  # root_path + path: the flag won over FERROLOOP_ROOT_PATH


def test_factory(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    child, port = serve(ferroloop_cmd, "cliapp:create_app", "--factory", cwd=tmp_path)
    assert get(port).json()["greeting"] == "unset"


def test_app_dir_from_another_directory(ferroloop_cmd, tmp_path):
    app_dir = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    app_dir.mkdir()
    elsewhere.mkdir()
    write_app(app_dir)
    child, port = serve(ferroloop_cmd, "cliapp:app", "--app-dir", "../project", cwd=elsewhere)
    assert get(port).status_code == 200


def test_headers_on_app_and_server_responses(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    child, port = serve(
        ferroloop_cmd, "cliapp:app", "--header", "X-Frame-Options:DENY", "--header", "server: edge/1", "--no-date-header",
        cwd=tmp_path,
    )
    response = get(port)
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers.get_list("server") == ["edge/1"]  # replaces the default, once
    assert "date" not in response.headers
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n")
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(4096)
            if not chunk:
                break
            raw += chunk
    head = raw.split(b"\r\n\r\n")[0].decode().lower().split("\r\n")
    assert head[0].startswith("http/1.1 400")
    assert "x-frame-options: deny" in head and "server: edge/1" in head
    assert sum(line.startswith("server:") for line in head) == 1


def test_custom_date_header_replaces_the_default(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    child, port = serve(ferroloop_cmd, "cliapp:app", "--header", "date: Thu, 01 Jan 1970 00:00:00 GMT", cwd=tmp_path)
    assert get(port).headers.get_list("date") == ["Thu, 01 Jan 1970 00:00:00 GMT"]


def test_limit_max_requests_shuts_down_gracefully(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    child, port = serve(ferroloop_cmd, "cliapp:app", "--limit-max-requests", "3", cwd=tmp_path)
    with httpx.Client(timeout=10.0) as client:
        for _ in range(3):
            assert client.get(f"http://127.0.0.1:{port}/").status_code == 200
    assert child.wait_exit() == 0
    assert "Maximum request limit of 3 exceeded. Terminating process." in child.output()


def test_interface_asgi2_explicit_and_detected(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    for args in ([], ["--interface", "asgi2"]):
        child, port = serve(ferroloop_cmd, "cliapp:ASGI2App", *args, cwd=tmp_path)
        assert get(port).text == "asgi2"
        assert child.stop() == 0


def test_reset_contextvars(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    child, port = serve(ferroloop_cmd, "cliapp:app", cwd=tmp_path)
    assert get(port).json()["var"] == "from import"
    child.stop()
    child, port = serve(ferroloop_cmd, "cliapp:app", "--reset-contextvars", cwd=tmp_path)
    assert get(port).json()["var"] == "fresh"


def test_uvicorn_command_line_unchanged(ferroloop_cmd, tmp_path):
    """A typical uvicorn deployment line, word for word."""
    write_app(tmp_path)
    port = free_port()
    child = ferroloop_cmd(
        "cliapp:app", "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--proxy-headers",
        "--forwarded-allow-ips", "*", "--timeout-keep-alive", "30", "--limit-concurrency", "100", "--backlog", "512",
        "--lifespan", "auto", "--log-level", "warning", "--no-server-header", "--loop", "uvloop", "--http", "httptools",
        port=port, cwd=tmp_path,
    )
    response = httpx.get(f"http://127.0.0.1:{port}/", headers={"x-forwarded-for": "10.1.2.3"}, timeout=10.0)
    assert response.status_code == 200 and "server" not in response.headers
    assert json.loads(response.text)["greeting"] == "unset"
    output = child.output()
    assert "WARNING:  --loop is ignored" in output and "WARNING:  --http is ignored" in output


FASTAPI_APP = '''
from fastapi import FastAPI

def create():
    app = FastAPI()

    @app.get("/items/{n}")
    async def item(n: int):
        return {"n": n}

    return app
'''


def test_fastapi_app_with_a_uvicorn_command_line(ferroloop_cmd, tmp_path):
    (tmp_path / "fastmain.py").write_text(FASTAPI_APP)
    port = free_port()
    child = ferroloop_cmd(
        "fastmain:create", "--factory", "--port", str(port), "--host", "127.0.0.1", "--proxy-headers",
        "--timeout-keep-alive", "5", "--header", "x-served-by:ferroloop", "--interface", "auto", port=port, cwd=tmp_path,
    )
    response = get(port, "/items/3")
    assert response.json() == {"n": 3} and response.headers["x-served-by"] == "ferroloop"
    assert get(port, "/items/x").status_code == 422
    assert child.stop() == 0


def test_uvicorns_ws_implementations_are_the_native_one_noted_once(ferroloop_cmd, tmp_path):
    write_app(tmp_path)
    note = "WebSocket implementation 'wsproto' is served by ferroloop's native WebSocket"
    child, port = serve(ferroloop_cmd, "cliapp:app", "--ws", "wsproto", cwd=tmp_path)
    assert get(port).status_code == 200  # the note comes before the first request is served
    assert child.output().count(note) == 1
    assert child.stop() == 0
    for ws in ("auto", "none"):
        child, port = serve(ferroloop_cmd, "cliapp:app", "--ws", ws, cwd=tmp_path)
        assert get(port).status_code == 200
        assert "WebSocket implementation" not in child.output()
        assert child.stop() == 0
