"""Bad input to the real `ferroloop` command fails before binding, with a
message naming the flag (or variable) and the accepted form, exit code 2."""

from __future__ import annotations

import pytest

from cli_support import free_port, run, write_app

USAGE = 2


def usage_error(result) -> str:
    assert result.returncode == USAGE, result.stderr + result.stdout
    assert result.stderr.startswith("Usage: ferroloop [OPTIONS] APP\nTry 'ferroloop --help' for help.\n\nError: ")
    return result.stderr.rsplit("Error: ", 1)[1].strip()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--prot", "80"], "unknown option '--prot' (did you mean '--port'?)"),
        (["--worker", "2"], "unknown option '--worker' (did you mean '--workers'?)"),
        (["--port", "http"], "invalid value 'http' for '--port': expected an integer from 0 to 65535"),
        (["--timeout-keep-alive", "-1"], "invalid value '-1' for '--timeout-keep-alive': expected a positive number of seconds"),
        (["--limit-concurrency", "0"], "invalid value '0' for '--limit-concurrency': expected an integer of at least 1, or none"),
        (["--interface", "asgi1"], "invalid value 'asgi1' for '--interface': expected one of: auto, asgi3, asgi2, wsgi"),
        (["--header", "x-a:1\r\nx-b:2"], "for '--header': expected NAME:VALUE"),
        (["--header", "no colon"], "invalid value 'no colon' for '--header': expected NAME:VALUE"),
        (["--uds", "/tmp/a.sock", "--fd", "3"], "'--uds' and '--fd' cannot be used together"),
        (["--workers", "many"], "invalid value 'many' for '--workers': expected an integer of at least 0, or auto"),
        (["--uds-permissions", "0o999"], "invalid value '0o999' for '--uds-permissions': expected an octal file mode"),
        (["--ssl-certfile", "cert.pem"], "invalid value for '--ssl-keyfile': --ssl-certfile needs --ssl-keyfile"),
        (["--interface", "wsgi"], "option '--interface' with 'wsgi' is not supported yet: "),
        (["--http2"], "option '--http2' is not supported yet: "),
        (["--env-file", "/no/such/.env"], "invalid value for '--env-file': cannot read '/no/such/.env': "),
        (["--app-dir", "/no/such/dir"], "invalid value for '--app-dir': directory '/no/such/dir' does not exist"),
        (["--log-config", "/no/such.json"], "invalid value for '--log-config': file '/no/such.json' does not exist"),
        # Latin-1, as the server encodes it: the parser and Config agree.
        (["--header", "x:€"], "invalid value 'x:€' for '--header': expected NAME:VALUE"),
        # Framing headers: refused by loop-http's DefaultHeaders::new.
        (["--header", "content-length:0"], "invalid value 'content-length:0' for '--header': expected NAME:VALUE"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_usage_errors(args, message, tmp_path):
    port = free_port()
    result = run("cliapp:app", "--port", str(port), *args, cwd=tmp_path)
    error = usage_error(result)
    assert error.startswith(message) or ("for '--header'" in message and message in error), error


@pytest.mark.parametrize(
    "env, message",
    [
        ({"FERROLOOP_PORT": "eighty"}, "invalid value 'eighty' for environment variable FERROLOOP_PORT (--port): expected an integer"),
        ({"FERROLOOP_DATE_HEADER": "maybe"}, "environment variable FERROLOOP_DATE_HEADER (--date-header): expected true or false"),
        ({"WEB_CONCURRENCY": "three"}, "WEB_CONCURRENCY (--workers): expected an integer of at least 0, or auto"),
        ({"FERROLOOP_UDS": "/tmp/a.sock", "FERROLOOP_FD": "3"}, "'FERROLOOP_UDS' and 'FERROLOOP_FD' cannot be used together"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_environment_errors(env, message, tmp_path):
    assert message in usage_error(run("cliapp:app", cwd=tmp_path, env=env))


def test_a_bad_env_file_line_is_named(tmp_path):
    (tmp_path / ".env").write_text("GOOD=1\njust some words\n")
    message = usage_error(run("cliapp:app", "--env-file", ".env", cwd=tmp_path))
    assert message == "invalid value for '--env-file': '.env' line 2: expected KEY=VALUE"


def test_bad_env_file_setting_names_its_variable(tmp_path):
    (tmp_path / ".env").write_text("FERROLOOP_BACKLOG=lots\n")
    message = usage_error(run("cliapp:app", "--env-file", ".env", cwd=tmp_path))
    assert "environment variable FERROLOOP_BACKLOG (--backlog)" in message


def test_app_errors_are_not_usage_errors(tmp_path):
    write_app(tmp_path)
    result = run("cliapp:not_callable", "--factory", cwd=tmp_path)
    assert result.returncode == 1
    assert "Error loading ASGI app. the app factory 'cliapp:not_callable' is not callable" in result.stderr
    result = run("cliapp:broken_factory", "--factory", cwd=tmp_path)
    assert result.returncode == 1
    assert "the app factory 'cliapp:broken_factory' raised RuntimeError: no database" in result.stderr
    result = run("nosuchmodule:app", cwd=tmp_path)
    assert result.returncode == 1 and 'Could not import module "nosuchmodule"' in result.stderr


def test_log_config_from_the_environment_must_exist(tmp_path):
    message = usage_error(run("cliapp:app", cwd=tmp_path, env={"FERROLOOP_LOG_CONFIG": "/no/such.ini"}))
    assert message == "invalid value for '--log-config': file '/no/such.ini' does not exist"


def test_ignored_options_warn_once_and_serve_is_unaffected(tmp_path):
    result = run("cliapp:app", "--loop", "uvloop", "--http", "httptools", "--port", "http", cwd=tmp_path)
    # The bad --port still fails: warnings never hide an error.
    assert usage_error(result).startswith("invalid value 'http' for '--port'")
