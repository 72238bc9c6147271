"""The server's logs as a uvicorn user expects them: a client that left is
not an application error, the server's own answers are in the access log
and a rate-limited warning, the connection lifecycle at debug, the access
log on by default with its format, bind and lifespan failures, and
`--log-config` / `--use-colors`. Real clients over real sockets, and the
real `ferroloop` command where the CLI is involved."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import subprocess
import sys
import threading

import httpx
import pytest

import apps
import ferroloop
import ferroloop.logging
from http_support import chunked, free_port, request_bytes, run_cli, wait_until

# --------------------------------------------------------------------------
# A client that goes away


def test_client_gone_is_not_an_app_error(start_server, capture_logs):
    srv = start_server(apps.app, log_level="debug")
    errors = capture_logs("error")
    # curl gives up after 0.5 s; the app answers after 1.5 s.
    subprocess.run(["curl", "-s", "-m", "0.5", f"{srv.url}/sleep?t=1.5"], capture_output=True)
    wait_until(
        lambda: any("client disconnected" in m for m in errors.messages()),
        timeout=5,
        message="no debug line for the app that lost its client",
    )
    gone = [r for r in errors.records if "client disconnected" in r.getMessage()]
    assert [r.levelno for r in gone] == [logging.DEBUG]
    assert "ClientDisconnected" in gone[0].getMessage() and gone[0].exc_info is None
    assert not [r for r in errors.records if r.levelno >= logging.ERROR], errors.text()


def _processed(srv, access) -> None:
    """Wait until the server has handled what came before: a later
    request's access line is logged after it."""
    marker = f"/processed-{len(access.records)}"
    httpx.get(f"{srv.url}{marker}")
    wait_until(lambda: any(marker in m for m in access.messages()), timeout=5, message="no access line for the marker")


def test_client_gone_logs_nothing_at_info(start_server, capture_logs):
    finished = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] != "/wait":
            await apps.app(scope, receive, send)
            return
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
            await send({"type": "http.response.start", "status": 200, "headers": []})  # raises: the client left
        finally:
            finished.set()

    srv = start_server(app, log_level="info")
    errors, access = capture_logs("error"), capture_logs("access")
    errors.logger.setLevel(logging.INFO)
    subprocess.run(["curl", "-s", "-m", "0.3", f"{srv.url}/wait"], capture_output=True)
    assert finished.wait(5), "the app never saw its client leave"
    _processed(srv, access)
    assert not [r for r in errors.records if r.levelno >= logging.WARNING], errors.text()


def test_send_after_the_servers_own_413_raises_client_disconnected(start_server, capture_logs):
    seen: list[BaseException | None] = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] != "/":  # _processed's request
            await apps.app(scope, receive, send)
            return
        while (await receive())["type"] != "http.disconnect":
            pass
        try:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        except BaseException as exc:
            seen.append(exc)
            raise
        seen.append(None)

    srv = start_server(app, max_body_size=100, log_level="info")
    errors = capture_logs("error")
    with srv.raw() as conn:
        head = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        conn.send(head + b"40\r\n" + b"x" * 64 + b"\r\n")
        conn.send(b"40\r\n" + b"x" * 64 + b"\r\n")
        assert conn.read_response().status == 413
    wait_until(lambda: seen, timeout=5)
    assert isinstance(seen[0], ferroloop.ClientDisconnected), seen
    _processed(srv, capture_logs("access"))
    assert "Unexpected ASGI message" not in errors.text()
    assert not [r for r in errors.records if r.levelno >= logging.ERROR], errors.text()


# --------------------------------------------------------------------------
# The server's own answers

BAD_REQUESTS = [
    (400, {}, b"GET / HTTP/1.1\r\n\r\n", "Invalid HTTP request received: "),
    (413, {"max_body_size": 10}, b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n", "request body too large"),
    (414, {"max_request_line": 64}, b"GET /" + b"a" * 100 + b" HTTP/1.1\r\nHost: a\r\n\r\n", "request line too long (414)"),
    (431, {"max_header_count": 1}, b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n", "too many header fields (431)"),
    (501, {}, b"CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n", "CONNECT is not supported (501)"),
    (505, {}, b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", "unsupported HTTP version (505)"),
]

PHRASES = {
    400: "Bad Request",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
}


def _warnings(cap) -> list[str]:
    return [r.getMessage() for r in cap.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(("status", "config", "request_", "reason"), BAD_REQUESTS, ids=[str(c[0]) for c in BAD_REQUESTS])
def test_server_answers_are_logged(start_server, capture_logs, status, config, request_, reason):
    srv = start_server(apps.app, log_level="info", **config)
    errors, access = capture_logs("error"), capture_logs("access")
    with srv.raw() as conn:
        conn.send(request_)
        assert conn.read_response().status == status
    wait_until(lambda: access.records and _warnings(errors), timeout=3)
    [line] = access.messages()
    assert line.endswith(f'" {status} {PHRASES[status]}'), line
    [warning] = _warnings(errors)
    assert reason in warning and f"({status})" in warning, warning


def test_408_is_logged(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info", timeout_request_head=0.3)
    errors, access = capture_logs("error"), capture_logs("access")
    with srv.raw() as conn:
        port = conn.local_port
        conn.send(b"GET / HT")
        assert conn.read_response().status == 408
    wait_until(lambda: access.records and _warnings(errors), timeout=3)
    assert access.messages() == [f'127.0.0.1:{port} - "-" 408 Request Timeout']
    assert "Request timeout" in _warnings(errors)[0]


def test_503_is_logged_with_its_request(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info", limit_concurrency=1)
    errors, access = capture_logs("error"), capture_logs("access")
    with srv.raw() as idle, srv.raw() as conn:
        idle.send(b"")
        wait_until(lambda: srv.server._native.connection_count == 2, timeout=3)
        port = conn.local_port
        conn.send(request_bytes("GET", "/x?y=1"))
        assert conn.read_response().status == 503
    wait_until(lambda: access.records and _warnings(errors), timeout=3)
    assert access.messages() == [f'127.0.0.1:{port} - "GET /x?y=1 HTTP/1.1" 503 Service Unavailable']
    assert "Exceeded concurrency limit (503)" in _warnings(errors)


def _suppressed(messages: list[str]) -> int:
    total = 0
    for m in messages:
        for n in re.findall(r"(\d+) similar warnings?", m):
            total += int(n)
    return total


def test_bad_request_warnings_are_rate_limited(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info")
    errors = capture_logs("error")
    sent = 30
    for _ in range(sent):
        with srv.raw() as conn:
            conn.send(b"GET / HTTP/1.1\r\n\r\n")
            assert conn.read_response().status == 400
    # The count of the suppressed ones comes with the next warning or from
    # the sweep once the second is over.
    wait_until(lambda: len(_individual(errors)) + _suppressed(_warnings(errors)) == sent, timeout=5)
    assert len(_warnings(errors)) < sent / 2, _warnings(errors)


def _individual(cap) -> list[str]:
    return [m for m in _warnings(cap) if m.startswith("Invalid HTTP request received")]


# --------------------------------------------------------------------------
# The connection lifecycle at debug


def _lifecycle(cap) -> list[str]:
    return [r.getMessage() for r in cap.records if r.levelno == logging.DEBUG and "Connection" in r.getMessage()]


def test_lifecycle_lines_at_debug(start_server, capture_logs):
    srv = start_server(apps.app, log_level="debug", timeout_keep_alive=0.3, timeout_request_head=0.3)
    # The client that closes first gets a keep-alive long enough for any pause.
    patient = start_server(apps.app, log_level="debug", timeout_keep_alive=60)
    errors = capture_logs("error")
    with srv.raw() as conn:  # a request, then idle: the keep-alive timeout
        conn.send(request_bytes("GET", "/"))
        conn.read_response()
        port = conn.local_port
        assert conn.wait_closed()
    with srv.raw() as silent:  # nothing sent: the head timeout
        silent_port = silent.local_port
        assert silent.wait_closed()
    with patient.raw() as leaving:  # the client closes
        leaving_port = leaving.local_port
        leaving.send(request_bytes("GET", "/"))
        leaving.read_response()
    wait_until(lambda: len(_lifecycle(errors)) >= 6, timeout=5)
    lines = _lifecycle(errors)
    assert f"127.0.0.1:{port} - Connection accepted" in lines
    assert f"127.0.0.1:{port} - Connection closed (keep-alive timeout)" in lines
    assert f"127.0.0.1:{silent_port} - Connection closed (request head timeout)" in lines
    assert f"127.0.0.1:{leaving_port} - Connection closed (closed by the client)" in lines


def test_body_rate_timeout_at_debug(start_server, capture_logs):
    srv = start_server(apps.app, log_level="debug", min_body_rate=1_000_000, body_rate_grace=0.2)
    errors = capture_logs("error")
    with srv.raw() as conn:
        conn.send(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\nxx")
        assert conn.wait_closed(timeout=5)
    wait_until(lambda: any("request body too slow" in m for m in _lifecycle(errors)), timeout=5)


@pytest.mark.parametrize("level", ["debug", "trace"])
def test_cli_log_level_shows_the_lifecycle(cli_server, level):
    srv = cli_server("tests.http.apps:app", "--log-level", level)
    httpx.get(f"{srv.url}/")
    wait_until(lambda: "Connection closed (closed by the client)" in srv.output(), timeout=5)
    assert re.search(r"DEBUG: +127\.0\.0\.1:\d+ - Connection accepted", srv.output()), srv.output()
    srv.stop()


def test_no_lifecycle_lines_at_info(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info")
    errors, access = capture_logs("error"), capture_logs("access")
    errors.logger.setLevel(logging.INFO)
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        conn.read_response()
    _processed(srv, access)  # the first connection's close was handled
    assert _lifecycle(errors) == []


# --------------------------------------------------------------------------
# The access log


def test_access_log_on_by_default_with_the_reason_phrase(start_server, capture_logs):
    srv = start_server(apps.app)
    access = capture_logs("access")
    with srv.raw() as conn:
        port = conn.local_port
        conn.send(request_bytes("GET", "/status?code=404"))
        conn.read_response()
    wait_until(lambda: access.records, timeout=3)
    assert access.messages() == [f'127.0.0.1:{port} - "GET /status?code=404 HTTP/1.1" 404 Not Found']
    assert [r.args for r in access.records] == [()], "one finished line, no arguments to format"


def test_access_log_quotes_in_the_target_are_escaped(start_server, capture_logs):
    # As uvicorn 0.55: the raw target, with '"' as %22 so the line stays parseable.
    srv = start_server(apps.app)
    access = capture_logs("access")
    with srv.raw() as conn:
        port = conn.local_port
        conn.send(b'GET /status"x?code=404&q="y HTTP/1.1\r\nHost: t\r\n\r\n')
        conn.read_response()
    wait_until(lambda: access.records, timeout=3)
    assert access.messages() == [f'127.0.0.1:{port} - "GET /status%22x?code=404&q=%22y HTTP/1.1" 404 Not Found']


def test_access_log_format_fields(start_server, capture_logs):
    fmt = "%(method)s|%(path)s|%(query)s|%(full_path)s|%(http_version)s|%(status_code)s|%(status_phrase)s|%(user_agent)s|%(referer)s|%(duration_ms)s 100%%"
    srv = start_server(apps.app, access_log_format=fmt, root_path="/api")
    access = capture_logs("access")
    httpx.get(f"{srv.url}/status?code=201", headers={"user-agent": "ua/1"})
    wait_until(lambda: access.records, timeout=3)
    fields = access.messages()[0].split("|")
    assert fields[:9] == ["GET", "/api/status", "code=201", "/api/status?code=201", "1.1", "201", "Created", "ua/1", "-"]
    duration, tail = fields[9].split(" ")
    assert float(duration) >= 0 and tail == "100%"


def test_access_log_format_is_checked():
    with pytest.raises(ValueError, match=r"access_log_format: unknown field 'nope'.*client_addr"):
        ferroloop.Config(apps.app, access_log_format="%(nope)s")
    with pytest.raises(ValueError, match="access_log_format"):
        ferroloop.Config(apps.app, access_log_format="%d")
    result = run_cli("tests.http.apps:app", "--access-log-format", "%(nope)s")
    assert result.returncode == 2
    assert "--access-log-format" in result.stderr


def test_cli_access_log_default_and_off(cli_server):
    srv = cli_server()
    httpx.get(f"{srv.url}/")
    wait_until(lambda: '"GET / HTTP/1.1" 200 OK' in srv.output(), timeout=5)
    assert re.search(r'INFO: +127\.0\.0\.1:\d+ - "GET / HTTP/1\.1" 200 OK', srv.output()), srv.output()
    srv.stop()
    quiet = cli_server("tests.http.apps:app", "--no-access-log")
    httpx.get(f"{quiet.url}/")
    # The response was sent, so a line for it would have been logged before
    # the shutdown, whose own line shows that logging works.
    assert quiet.stop() == 0
    assert "Shutting down" in quiet.output(), quiet.output()
    assert '"GET / HTTP/1.1"' not in quiet.output()


# --------------------------------------------------------------------------
# Bind and lifespan failures


def _count(text: str, needle: str) -> int:
    return text.count(needle)


def test_bind_failure_tcp_is_one_line_naming_the_address():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("tests.http.apps:app", "--port", str(port), "--lifespan", "off")
    message = f"[Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): address already in use"
    assert result.returncode == 1, result.stderr
    assert _count(result.stderr, message) == 1, result.stderr
    assert _count(result.stderr, "Errno 98") == 1, result.stderr


def test_bind_failure_uds_names_the_path(tmp_path):
    path = str(tmp_path / "missing" / "x.sock")
    result = run_cli("tests.http.apps:app", "--uds", path, "--lifespan", "off")
    assert result.returncode == 1, result.stderr
    message = f"[Errno 2] error while attempting to bind on path {path!r}: no such file or directory"
    assert _count(result.stderr, message) == 1, result.stderr


def test_serve_raises_the_bind_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = ferroloop.Server(ferroloop.Config(apps.app, port=port, lifespan="off"))
        with pytest.raises(OSError, match=re.escape(f"bind on address ('127.0.0.1', {port}): address already in use")):
            ferroloop.run(server.serve())


def test_lifespan_startup_failure_ends_with_a_summary():
    result = run_cli("tests.http.apps:startup_fails_app", "--port", str(free_port()))
    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1].endswith("Application startup failed. Exiting."), result.stderr


# --------------------------------------------------------------------------
# --log-config and colours

ACCESS_TO_FILE = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {"()": "ferroloop.logging.DefaultFormatter", "fmt": "%(levelprefix)s %(message)s"},
        "access": {"()": "ferroloop.logging.AccessFormatter", "fmt": "ACCESS %(message)s", "use_colors": False},
    },
    "handlers": {
        "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
        "access": {"class": "logging.FileHandler", "formatter": "access", "filename": "ACCESS_FILE"},
    },
    "loggers": {
        "ferroloop.error": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "ferroloop.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}

INI = """\
[loggers]
keys=root,access

[handlers]
keys=access

[formatters]
keys=plain

[logger_root]
level=WARNING
handlers=

[logger_access]
level=INFO
handlers=access
qualname=ferroloop.access
propagate=0

[handler_access]
class=FileHandler
formatter=plain
args=({file!r},)

[formatter_plain]
format=ACCESS %(message)s
"""


def _write_config(tmp_path, kind: str) -> tuple[str, str]:
    access_file = str(tmp_path / "access.log")
    config = json.loads(json.dumps(ACCESS_TO_FILE).replace("ACCESS_FILE", access_file))
    path = tmp_path / f"logging.{kind}"
    if kind == "json":
        path.write_text(json.dumps(config))
    elif kind == "yaml":
        yaml = pytest.importorskip("yaml")
        path.write_text(yaml.safe_dump(config))
    else:
        path.write_text(INI.format(file=access_file))
    return str(path), access_file


@pytest.mark.parametrize("kind", ["json", "yaml", "ini"])
def test_log_config_file_sends_access_to_a_file(cli_server, tmp_path, kind):
    config, access_file = _write_config(tmp_path, kind)
    srv = cli_server("tests.http.apps:app", "--log-config", config)
    httpx.get(f"{srv.url}/status?code=202")
    srv.stop()
    with open(access_file) as f:
        text = f.read()
    assert re.search(r'^ACCESS 127\.0\.0\.1:\d+ - "GET /status\?code=202 HTTP/1\.1" 202 Accepted$', text, re.M), text
    assert "202 Accepted" not in srv.output()


def test_log_config_dict(start_server, tmp_path):
    config, access_file = _write_config(tmp_path, "json")
    with open(config) as f:
        as_dict = json.load(f)
    srv = start_server(apps.app, log_config=as_dict)
    try:
        httpx.get(f"{srv.url}/")
        wait_until(lambda: "200 OK" in open(access_file).read(), timeout=3)
    finally:
        for name in ("ferroloop.error", "ferroloop.access"):
            logger = logging.getLogger(name)
            for handler in logger.handlers[:]:
                logger.removeHandler(handler)
                handler.close()
            logger.propagate = True


def test_log_config_errors(tmp_path):
    with pytest.raises(ValueError, match="log_config"):
        ferroloop.Config(apps.app, log_config=42)
    result = run_cli("tests.http.apps:app", "--log-config", str(tmp_path / "nope.json"), "--port", str(free_port()))
    # A usage error naming the flag, as uvicorn's click.Path(exists=True).
    assert result.returncode == 2 and "'--log-config'" in result.stderr and "nope.json" in result.stderr, result.stderr


def test_colours_only_when_asked(cli_server):
    plain = cli_server()
    httpx.get(f"{plain.url}/")
    plain.stop()
    assert "\x1b[" not in plain.output(), "colours on a file"
    coloured = cli_server("tests.http.apps:app", "--use-colors")
    httpx.get(f"{coloured.url}/")
    coloured.stop()
    assert "\x1b[32mINFO\x1b[0m:" in coloured.output()


def test_formatters_match_uvicorns():
    uvicorn_logging = pytest.importorskip("uvicorn.logging")
    record = logging.LogRecord("ferroloop.error", logging.WARNING, __file__, 1, "careful", (), None)
    for colours in (False, True):
        ours = ferroloop.logging.DefaultFormatter("%(levelprefix)s %(message)s", use_colors=colours)
        theirs = uvicorn_logging.DefaultFormatter("%(levelprefix)s %(message)s", use_colors=colours)
        assert ours.format(record) == theirs.format(record)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
