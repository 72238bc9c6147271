"""`Config.from_env` (the command line's parser, through `_native`; only
its own variables, so an unrelated one that is not UTF-8 does not matter),
`Config` never reading `FERROLOOP_*` implicitly, and `headers` checks."""

from __future__ import annotations

import os
import re

import pytest

import ferroloop
from _helpers import PROJECT_ROOT
from ferroloop import _native
from ferroloop.server._config import ENV_ALIASES


async def app(scope, receive, send):  # pragma: no cover - never served
    pass


def test_from_env_parses_as_the_command_line(monkeypatch):
    monkeypatch.setenv("FERROLOOP_PORT", "9005")
    monkeypatch.setenv("FERROLOOP_TIMEOUT_KEEP_ALIVE", "7")
    monkeypatch.setenv("FERROLOOP_MAX_BODY_SIZE", "none")
    monkeypatch.setenv("FERROLOOP_HEADERS", "x-a: 1\nx-b: 2")
    monkeypatch.setenv("FERROLOOP_PROXY_HEADERS", "off")
    config = ferroloop.Config.from_env(app, backlog=9)
    assert (config.port, config.timeout_keep_alive, config.max_body_size) == (9005, 7.0, None)
    assert config.headers == [("x-a", "1"), ("x-b", "2")]
    assert config.proxy_headers is False and config.backlog == 9
    assert ferroloop.Config.from_env(app, port=1).port == 1  # keywords win


def test_config_does_not_read_the_environment(monkeypatch):
    monkeypatch.setenv("FERROLOOP_PORT", "9005")
    assert ferroloop.Config(app).port == 8000


def test_from_env_prefix_and_errors(monkeypatch):
    monkeypatch.setenv("MYAPP_PORT", "9006")
    monkeypatch.setenv("MYAPP_APP_DIR", "/x")  # a command-line-only setting: not Config's
    assert ferroloop.Config.from_env(app, prefix="MYAPP_").port == 9006
    monkeypatch.setenv("MYAPP_BACKLOG", "many")
    with pytest.raises(ValueError, match=r"MYAPP_BACKLOG \(--backlog\): expected an integer of at least 1"):
        ferroloop.Config.from_env(app, prefix="MYAPP_")


def test_from_env_ignored_and_unsupported(monkeypatch):
    monkeypatch.setenv("FERROLOOP_LOOP", "uvloop")
    with pytest.warns(UserWarning, match="FERROLOOP_LOOP is ignored"):
        ferroloop.Config.from_env(app)
    monkeypatch.setenv("FERROLOOP_HTTP2", "true")
    with pytest.raises(ValueError, match="not supported yet"):
        ferroloop.Config.from_env(app)


def test_headers_are_checked_at_config_time():
    assert ferroloop.Config(app, headers=[("x-a", "1")]).headers == [("x-a", "1")]
    for bad in ([("x-a", "1\r\nx-b: 2")], [("bad name", "1")], [("x", "\u20ac")], "x-a:1", [("x",)]):
        with pytest.raises(ValueError, match="headers"):
            ferroloop.Config(app, headers=bad)
    # The server frames every response itself.
    for framing in ("Content-Length", "transfer-encoding", "connection", "trailer", "upgrade"):
        with pytest.raises(ValueError, match="cannot be a default header"):
            ferroloop.Config(app, headers=[(framing, "0")])


def test_interface_wsgi_and_unsupported_keywords():
    with pytest.raises(ValueError, match="'wsgi' is not supported yet"):
        ferroloop.Config(app, interface="wsgi")
    with pytest.raises(ValueError, match="ssl_keyfile: ssl_certfile needs ssl_keyfile"):
        ferroloop.Config(app, ssl_certfile="c.pem")
    ferroloop.Config(app, ws="auto", ws_max_size=16 * 1024 * 1024)  # defaults pass


def test_parse_dotenv_is_exposed():
    assert _native.parse_dotenv("A=1\nexport B='2 3'\n") == [("A", "1"), ("B", "2 3")]
    assert _native.parse_dotenv("A=${X}\nB=${A}-${Y:-y}\n", {"X": "x"}) == [("A", "x"), ("B", "x-y")]
    with pytest.raises(ValueError, match="line 1"):
        _native.parse_dotenv("=x")


def test_from_env_ignores_unrelated_variables_that_are_not_utf8(monkeypatch):
    monkeypatch.setitem(os.environb, b"UNRELATED_BYTES", b"caf\xe9")
    monkeypatch.setitem(os.environb, b"FERROLOOP_\xff", b"1")  # a name that is not UTF-8 names no setting
    monkeypatch.setenv("FERROLOOP_PORT", "9007")
    assert ferroloop.Config.from_env(app).port == 9007


def test_from_env_names_a_setting_variable_that_is_not_utf8(monkeypatch):
    monkeypatch.setitem(os.environb, b"FERROLOOP_ROOT_PATH", b"/caf\xe9")
    with pytest.raises(ValueError, match=r"environment variable FERROLOOP_ROOT_PATH: not valid UTF-8"):
        ferroloop.Config.from_env(app)
    monkeypatch.delitem(os.environb, b"FERROLOOP_ROOT_PATH")
    monkeypatch.setitem(os.environb, b"FORWARDED_ALLOW_IPS", b"\xff")
    with pytest.raises(ValueError, match=r"environment variable FORWARDED_ALLOW_IPS: not valid UTF-8"):
        ferroloop.Config.from_env(app)


def test_from_env_reads_the_aliases(monkeypatch):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.1")
    assert ferroloop.Config.from_env(app).forwarded_allow_ips == "10.0.0.1"


def test_env_aliases_are_the_tables():
    """`server_settings()` does not carry a row's `env_alias`: the list in
    _config.py follows the table's source."""
    rows = (PROJECT_ROOT / "loop-cli" / "src" / "table" / "rows.rs").read_text()
    assert sorted(re.findall(r'\.env_alias\("([A-Z_]+)"\)', rows)) == sorted(ENV_ALIASES)
