"""``ferroloop.Config`` validation, ``Server`` attributes, ``serve()`` and
the CLI (``python -m ferroloop`` and the ``ferroloop`` script): usage
errors, bad APP, options, signals and exit codes."""

from __future__ import annotations

import signal
import threading

import httpx
import pytest

import apps
import ferroloop
from http_support import RawConn, free_port, request_bytes, run_cli

DEFAULTS = dict(
    host="127.0.0.1", port=8000, uds=None, fd=None, sock=None, root_path="", lifespan="auto",
    access_log=False, proxy_headers=True, forwarded_allow_ips="127.0.0.1", server_header=True,
    date_header=True, backlog=2048, limit_concurrency=None, max_request_line=8192,
    max_header_size=65536, max_header_count=100, max_body_size=16 * 1024 * 1024,
    timeout_request_head=10.0, timeout_keep_alive=5.0, min_body_rate=240.0, body_rate_grace=5.0,
    timeout_graceful_shutdown=30.0, log_level=None,
)


# --------------------------------------------------------------------------
# Config


def test_config_accepts_every_documented_keyword():
    ferroloop.Config(apps.app, **DEFAULTS)
    ferroloop.Config(apps.app)
    ferroloop.Config("apps:app")


def test_config_unknown_keyword_is_type_error():
    with pytest.raises(TypeError, match="bogus_option"):
        ferroloop.Config(apps.app, bogus_option=1)


@pytest.mark.parametrize(
    "field, value",
    [
        ("port", -1),
        ("port", 70000),
        ("backlog", -1),
        ("limit_concurrency", 0),
        ("limit_concurrency", -5),
        ("max_request_line", 0),
        ("max_request_line", -1),
        ("max_header_size", -1),
        ("max_header_count", -1),
        ("max_body_size", -1),
        ("timeout_request_head", -1.0),
        ("timeout_keep_alive", -1.0),
        ("min_body_rate", -1.0),
        ("body_rate_grace", -1.0),
        ("timeout_graceful_shutdown", -1.0),
        ("lifespan", "sometimes"),
        ("log_level", "loudest"),
        ("forwarded_allow_ips", "not-an-address"),
        ("forwarded_allow_ips", "10.0.0.0/99"),
    ],
)
def test_config_invalid_value_is_value_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ferroloop.Config(apps.app, **{field: value})


def test_server_not_started_before_serve():
    server = ferroloop.Server(ferroloop.Config(apps.app, port=0))
    assert server.started is False
    assert server.should_exit is False


def test_app_given_as_import_string(start_server):
    srv = start_server("apps:app")
    assert httpx.get(f"{srv.url}/").text == "hello, world"


def test_serve_in_thread_without_signal_handlers(start_server):
    """Serving from a non-main thread works (no signal handlers there) and
    leaves the main thread's handlers alone."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    srv = start_server(apps.app)
    assert httpx.get(f"{srv.url}/").status_code == 200
    srv.stop()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_two_servers_side_by_side(start_server):
    a = start_server(apps.app)
    b = start_server(apps.app, root_path="/b")
    assert a.port != b.port
    assert httpx.get(f"{a.url}/scope").json()["root_path"] == ""
    assert httpx.get(f"{b.url}/scope").json()["root_path"] == "/b"


def test_serve_on_busy_port_fails(start_server):
    srv = start_server(apps.app)
    server = ferroloop.Server(ferroloop.Config(apps.app, port=srv.port))
    errors = []

    def target():
        try:
            ferroloop.run(server.serve())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "serve() on a busy port hangs"
    assert errors, "serve() on a busy port must raise"
    assert not server.started


# --------------------------------------------------------------------------
# serve() in a child process


def test_serve_function_sigint_returns_none(serve_process):
    proc = serve_process("apps:app")
    assert httpx.get(f"{proc.url}/").text == "hello, world"
    assert proc.stop(signal.SIGINT) == 0
    assert "serve() returned None" in proc.output()


def test_serve_function_sigterm_drains_in_flight_request(serve_process):
    proc = serve_process("apps:app")
    with RawConn.open(proc.port, timeout=10) as conn:
        conn.send(request_bytes("GET", "/stream?chunks=4&size=3&delay=0.3"))
        conn.wait_for_response_start(timeout=10)  # in flight (see the CLI twin below)
        proc.send_signal(signal.SIGTERM)
        response = conn.read_response(timeout=10)
        assert (response.status, response.body) == (200, b"000111222333")
    assert proc.wait_exit() == 0
    assert "serve() returned None" in proc.output()


def test_serve_function_startup_failure_raises(serve_process):
    proc = serve_process("apps:startup_fails_app", wait=False)
    rc = proc.proc.wait(30)
    assert rc != 0
    assert "serve() returned" not in proc.output()
    assert "startup-failed-on-purpose" in proc.output()


# --------------------------------------------------------------------------
# CLI


def test_cli_help():
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    for option in ("--host", "--port", "--uds", "--fd", "--root-path", "--lifespan", "--access-log", "--log-level"):
        assert option in result.stdout


def test_console_script_help():
    result = run_cli("--help", console_script=True)
    assert result.returncode == 0, result.stderr
    assert "--port" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["tests.http.apps:app", "--port", "not-a-number"],
        ["tests.http.apps:app", "--bogus-flag"],
        ["tests.http.apps:app", "--lifespan", "sometimes"],
        ["tests.http.apps:app", "--port"],
        ["tests.http.apps:app", "--log-level", "loudest"],
    ],
    ids=["no-app", "port-not-int", "unknown-flag", "bad-lifespan", "missing-value", "bad-log-level"],
)
def test_cli_usage_errors_exit_2(args):
    result = run_cli(*args)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stderr.strip(), "a usage error must say what is wrong"


@pytest.mark.parametrize(
    "app, needle",
    [
        ("no_such_module_xyz:app", "no_such_module_xyz"),
        ("tests.http.apps:does_not_exist", "does_not_exist"),
        ("tests.http.apps", "tests.http.apps"),
    ],
    ids=["missing-module", "missing-attribute", "no-colon"],
)
def test_cli_bad_app_exits_nonzero_with_message(app, needle):
    port = free_port()
    result = run_cli(app, "--port", str(port))
    assert result.returncode != 0
    assert needle in result.stderr
    assert "running on" not in result.stderr + result.stdout


def test_cli_serves_and_exits_0_on_sigterm(cli_server):
    proc = cli_server("tests.http.apps:app", "--log-level", "info")
    assert httpx.get(f"{proc.url}/").text == "hello, world"
    pid = int(httpx.get(f"{proc.url}/pid").text)
    assert pid == proc.pid
    assert proc.stop(signal.SIGTERM) == 0
    output = proc.output()
    assert f"ferroloop running on http://127.0.0.1:{proc.port} (Press CTRL+C to quit)" in output


def test_console_script_serves_and_exits_0_on_sigterm(cli_server):
    proc = cli_server("tests.http.apps:app", console_script=True)
    assert httpx.get(f"{proc.url}/").text == "hello, world"
    assert proc.stop(signal.SIGTERM) == 0


def test_cli_sigterm_drains_in_flight_request(cli_server):
    proc = cli_server("tests.http.apps:app")
    with RawConn.open(proc.port, timeout=10) as conn:
        conn.send(request_bytes("GET", "/stream?chunks=4&size=3&delay=0.3"))
        # Signalled once the response has started (a request the server has
        # not read yet is not in flight, and a loaded host may take a while).
        conn.wait_for_response_start(timeout=10)
        proc.send_signal(signal.SIGTERM)
        response = conn.read_response(timeout=10)
        assert (response.status, response.body) == (200, b"000111222333")
    assert proc.wait_exit() == 0


def test_cli_access_log_and_root_path(cli_server):
    """The access line shows scope["path"] (root_path included), as uvicorn's does."""
    proc = cli_server("tests.http.apps:app", "--access-log", "--root-path", "/api", "--log-level", "info")
    with httpx.Client() as client:
        scope = client.get(f"{proc.url}/scope?x=1").json()
    assert scope["root_path"] == "/api"
    assert scope["path"] == "/api/scope"
    assert proc.stop() == 0
    assert '"GET /api/scope?x=1 HTTP/1.1" 200' in proc.output()


def test_cli_host_option(cli_server):
    proc = cli_server("tests.http.apps:app", "--host", "127.0.0.1")
    assert httpx.get(f"{proc.url}/").status_code == 200
    assert proc.stop() == 0


def test_cli_lifespan_startup_failure_exits_nonzero(cli_server):
    proc = cli_server("tests.http.apps:startup_fails_app", wait=False)
    rc = proc.proc.wait(30)
    assert rc != 0
    assert "startup-failed-on-purpose" in proc.output()


def test_cli_lifespan_on_with_unsupported_app_exits_nonzero(cli_server):
    proc = cli_server("tests.http.apps:no_lifespan_app", "--lifespan", "on", wait=False)
    assert proc.proc.wait(30) != 0


def test_cli_lifespan_off_and_auto_with_unsupported_app_serve(cli_server):
    for mode in ("off", "auto"):
        proc = cli_server("tests.http.apps:no_lifespan_app", "--lifespan", mode)
        assert httpx.get(f"{proc.url}/").status_code == 200
        assert proc.stop() == 0


def test_cli_children_ignore_the_developers_server_variables(cli_server, monkeypatch):
    """What the command reads from the environment comes from the test,
    never from the shell that runs pytest."""
    monkeypatch.setenv("FERROLOOP_ROOT_PATH", "/from-the-shell")
    monkeypatch.setenv("WEB_CONCURRENCY", "4")  # --workers 4: a supervisor if it reached the child
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.0/8")
    srv = cli_server()
    assert httpx.get(f"{srv.url}/scope").json()["root_path"] == ""
    assert srv.stop() == 0
