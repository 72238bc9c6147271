"""Logging of the real `ferroloop` command, set up as uvicorn does it:
before the app is imported (loggers the app makes at import survive a
`--log-config`, an app's own `basicConfig()` does not replace the default),
and a `--log-config` file that cannot be applied is bad input: one line
naming the file, exit code 2."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest

import ferroloop
from cli_support import free_port, run

USAGE = 2

#: An app whose logger exists from its import on, and one that configures
#: logging itself at import.
LOGGING_APP = '''
import logging

log = logging.getLogger("myapp")
if {basic_config}:
    logging.basicConfig(level=logging.INFO, format="BASIC %(name)s %(message)s")


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    log.warning("handled %s", scope["path"])
    await send({{"type": "http.response.start", "status": 200, "headers": []}})
    await send({{"type": "http.response.body", "body": b"ok"}})
'''

#: uvicorn's shape of a user file, without `disable_existing_loggers`
#: (dictConfig's default: True).
ROOT_TO_STDERR = {
    "version": 1,
    "formatters": {"plain": {"format": "LOGGED %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}},
    "root": {"handlers": ["stderr"], "level": "INFO"},
}


def _serve(ferroloop_cmd, tmp_path, *args: str, basic_config: bool = False):
    (tmp_path / "logapp.py").write_text(LOGGING_APP.format(basic_config=basic_config))
    port = free_port()
    child = ferroloop_cmd("logapp:app", "--port", str(port), *args, port=port, cwd=tmp_path)
    assert httpx.get(f"http://127.0.0.1:{port}/hello", timeout=10.0).text == "ok"
    assert child.stop() == 0
    return child.output()


def test_log_config_does_not_disable_the_apps_import_time_loggers(ferroloop_cmd, tmp_path):
    (tmp_path / "logging.json").write_text(json.dumps(ROOT_TO_STDERR))
    output = _serve(ferroloop_cmd, tmp_path, "--log-config", "logging.json")
    assert "LOGGED myapp handled /hello" in output, output


def test_an_apps_basic_config_does_not_replace_the_default(ferroloop_cmd, tmp_path):
    output = _serve(ferroloop_cmd, tmp_path, basic_config=True)
    # The app's own logger goes to its handler; the server's keep theirs.
    assert "BASIC myapp handled /hello" in output, output
    assert re.search(r'INFO: +127\.0\.0\.1:\d+ - "GET /hello HTTP/1\.1" 200 OK', output), output
    assert "BASIC ferroloop" not in output, output


BROKEN_INI = """\
[loggers]
keys=root

[logger_root]
level=INFO
handlers=nowhere
"""

#: Files that cannot be applied, and a piece of the reason each gives.
BROKEN = [
    ("broken.json", '{"version": 1, "handlers": {', "Expecting property name"),
    ("broken.ini", BROKEN_INI, "formatters"),
    ("notini.conf", "just words\n", "no section"),
    ("handler.yaml", "version: 1\nhandlers:\n  out:\n    class: logging.NoSuchHandler\n", "Unable to configure handler 'out'"),
    ("list.json", "[1, 2]", "expected a mapping of dictConfig keys, got list"),
]


@pytest.mark.parametrize(("name", "text", "reason"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_log_config_file_is_one_line_and_exit_2(tmp_path, name, text, reason):
    if name.endswith(".yaml"):
        pytest.importorskip("yaml")
    (tmp_path / name).write_text(text)
    result = run("cliapp:app", "--log-config", name, "--port", str(free_port()), cwd=tmp_path)
    assert result.returncode == USAGE, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ERROR:    invalid --log-config {name}: "), line
    assert reason.lower() in line.lower(), line
    assert "Traceback" not in result.stderr


def test_a_broken_yaml_file(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / "bad.yaml").write_text("version: 1\n  handlers: [\n")
    result = run("cliapp:app", "--log-config", "bad.yaml", cwd=tmp_path)
    assert result.returncode == USAGE, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("ERROR:    invalid --log-config bad.yaml: "), line


def test_log_config_errors_from_python_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{")
    config = ferroloop.Config(lambda scope, receive, send: None, log_config=str(path))
    with pytest.raises(ferroloop.server._logging.LogConfigError) as info:
        config.configure_logging()
    assert info.value.path == str(path) and str(path) in str(info.value)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def test_configure_logging_applies_once_per_config():
    """The command line configures before importing the app; Server.serve
    then leaves the configuration alone (and configures it itself when
    nothing did)."""
    config = ferroloop.Config(
        lambda scope, receive, send: None,
        log_config={"version": 1, "disable_existing_loggers": False, "loggers": {"ferroloop.test-once": {"level": "ERROR"}}},
    )
    logger = logging.getLogger("ferroloop.test-once")
    config.configure_logging()
    assert logger.level == logging.ERROR
    logger.setLevel(logging.DEBUG)  # as an app might, after the first call
    config.configure_logging()
    assert logger.level == logging.DEBUG
    logger.setLevel(logging.NOTSET)
