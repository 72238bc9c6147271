"""Settings are defined once (loop-cli's table, ``_native.server_settings()``):
the CLI, ``Config``, the defaults, the native server and the ``Config`` stub
must all agree with it."""

from __future__ import annotations

import ast
import inspect
import os
import re
from pathlib import Path

import pytest

import apps
import ferroloop
from ferroloop import _native
from ferroloop.server import _config

ROWS = _native.server_settings()
BY_NAME = {row["name"]: row for row in ROWS}
CONFIG_ROWS = [row for row in ROWS if row["config"]]
CLI_ROWS = [row for row in ROWS if row["cli"]]
STUB = Path(_config.__file__).with_suffix(".pyi")
# uvicorn's flags without a --no- form (--ws-per-message-deflate takes a value).
ONE_WAY_FLAGS = {"reload", "http2", "ws_per_message_deflate", "preload"}
SUPPORTED = [row for row in ROWS if row["status"] == "supported"]


#: An ssl_* setting asks for TLS, which needs a certificate (and, for the
#: client-certificate ones, a CA): given with each ssl_* row's value.
TLS_ARGS = ("--ssl-certfile", "c.pem", "--ssl-keyfile", "k.pem", "--ssl-ca-certs", "ca.pem", "--ssl-cert-reqs", "2")
TLS_KWARGS = {"ssl_certfile": "c.pem", "ssl_keyfile": "k.pem", "ssl_ca_certs": "ca.pem", "ssl_cert_reqs": 2}


def tls_base(row) -> tuple[tuple[str, ...], dict]:
    return (TLS_ARGS, TLS_KWARGS) if row["name"].startswith("ssl_") else ((), {})


def parse(*args: str) -> tuple[str, object]:
    return _native.parse_cli("ferroloop", [os.fsencode(a) for a in ("apps:app", *args)], {})


def stub_init() -> ast.FunctionDef:
    tree = ast.parse(STUB.read_text())
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    return next(n for n in config.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def test_rows_are_well_formed():
    assert len(BY_NAME) == len(ROWS), "duplicate names"
    for row in ROWS:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", row["name"]), row
        assert row["env"] == "FERROLOOP_" + row["name"].upper()
        assert row["help"]
        assert row["config"] or row["cli"], f"{row['name']} is reachable from nowhere"
        if row["flag"]:
            # uvicorn's spelling; its --header sets headers, --reload-dir reload_dirs, ...
            plural = row["name"] in ("headers", "reload_dirs", "reload_includes", "reload_excludes")
            assert row["flag"] == "--" + (row["name"][:-1] if plural else row["name"]).replace("_", "-")
        if row["kind"] == "bool" and row["cli"] and row["name"] not in ONE_WAY_FLAGS:
            assert row["off_flag"] == "--no-" + row["flag"][2:]


def test_stub_signature_is_the_table():
    init = stub_init()
    assert [a.arg for a in init.args.args] == ["self", "app"]
    kwonly = init.args.kwonlyargs
    assert [a.arg for a in kwonly] == [row["name"] for row in CONFIG_ROWS], "stale: run `cargo xtask gen-settings`"
    for arg, default, row in zip(kwonly, init.args.kw_defaults, CONFIG_ROWS):
        assert ast.unparse(arg.annotation) == row["py_type"], row["name"]
        assert ast.literal_eval(default) == row["default"], row["name"]
        assert type(ast.literal_eval(default)) is type(row["default"]), row["name"]


def test_stub_attributes_are_the_table():
    tree = ast.parse(STUB.read_text())
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    attrs = {n.target.id: ast.unparse(n.annotation) for n in config.body if isinstance(n, ast.AnnAssign)}
    for row in CONFIG_ROWS:
        assert attrs.get(row["name"]) == row["py_attribute_type"], row["name"]
    assert set(attrs) == {row["name"] for row in CONFIG_ROWS} | {"app"}


def test_runtime_signature_and_defaults_are_the_table():
    params = inspect.signature(ferroloop.Config).parameters
    assert list(params) == ["app"] + [row["name"] for row in CONFIG_ROWS]
    config = ferroloop.Config(apps.app)
    # Lists whose None is kept as an empty one.
    kept = {"ssl_crl": [], "ssl_sni": {}, "reload_dirs": [], "reload_includes": ["*.py"], "reload_excludes": [],
            "workers": 1}  # the table's text "1", checked
    for row in CONFIG_ROWS:
        assert params[row["name"]].default == row["default"], row["name"]
        assert params[row["name"]].kind is inspect.Parameter.KEYWORD_ONLY
        assert getattr(config, row["name"]) == kept.get(row["name"], row["default"]), row["name"]


def test_config_keywords_are_the_table():
    assert list(_config.SETTINGS) == [row["name"] for row in CONFIG_ROWS]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        ferroloop.Config(apps.app, bogus=1)
    for row in ROWS:
        if not row["config"]:
            with pytest.raises(TypeError, match=row["name"]):
                ferroloop.Config(apps.app, **{row["name"]: row["default"]})


def test_native_server_reads_the_native_rows():
    assert sorted(_native.HttpServer.SETTINGS) == sorted(row["name"] for row in ROWS if row["native"])
    for name in _native.HttpServer.SETTINGS:
        assert BY_NAME[name]["config"], f"the native server reads {name}, which Config does not have"


def test_help_lists_exactly_the_cli_rows():
    kind, text = _native.parse_cli("ferroloop", [b"--help"], {})
    assert kind == "help"
    shown = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    expected = {row["flag"] for row in CLI_ROWS} | {row["off_flag"] for row in CLI_ROWS if row["off_flag"]}
    # Flags mentioned in help prose (e.g. "--host 0.0.0.0") are table flags too.
    assert shown == expected | {"--version", "--help"}
    for row in CLI_ROWS:
        assert row["flag"] in text


# ssl_version's values are the stdlib's ssl.PROTOCOL_* numbers, most of
# them refused by name (tests/tls/test_tls_settings.py).
@pytest.mark.parametrize(
    "row", [r for r in SUPPORTED if r["kind"] == "int" and r["name"] != "ssl_version"], ids=lambda r: r["name"]
)
def test_int_bounds_agree_between_cli_and_config(row):
    name, low, high = row["name"], row["min"], row["max"]
    args, kwargs = tls_base(row)
    if row["config"]:
        ferroloop.Config(apps.app, **{**kwargs, name: low})
        with pytest.raises(ValueError, match=name):
            ferroloop.Config(apps.app, **{**kwargs, name: low - 1})
        if high is not None:
            ferroloop.Config(apps.app, **{**kwargs, name: high})
            with pytest.raises(ValueError, match=name):
                ferroloop.Config(apps.app, **{**kwargs, name: high + 1})
    if row["cli"]:
        assert parse(*args, row["flag"], str(low))[0] == "run"
        kind, (report, code) = parse(*args, row["flag"], str(low - 1))
        assert (kind, code) == ("error", 2)
        assert row["flag"] in report and row["expected"] in report
        if high is not None:
            assert parse(*args, row["flag"], str(high + 1))[0] == "error"


@pytest.mark.parametrize("row", [r for r in SUPPORTED if r["kind"] == "choice"], ids=lambda r: r["name"])
def test_choices_agree_between_cli_and_config(row):
    args, kwargs = tls_base(row)
    for choice in row["choices"]:
        if choice in (row["refuse"] or ()):
            with pytest.raises(ValueError, match="not supported yet"):
                ferroloop.Config(apps.app, **{row["name"]: choice})
            assert parse(row["flag"], choice)[0] == "error"
            continue
        ferroloop.Config(apps.app, **{**kwargs, row["name"]: choice})
        if row["cli"]:
            kind, value = parse(*args, row["flag"], choice)
            assert kind == "run" and value["values"][row["name"]] == choice
            assert set(value["values"]) == {row["name"]} | {n for n in TLS_KWARGS if args}
    with pytest.raises(ValueError, match=row["name"]):
        ferroloop.Config(apps.app, **{**kwargs, row["name"]: "no-such-choice"})


def test_cli_values_go_to_config_unchanged(tmp_path):
    log_config = tmp_path / "log.json"  # --log-config must exist
    log_config.write_text("{}")
    given = {
        "--host": ("0.0.0.0", "host", "0.0.0.0"),
        "--port": ("0", "port", 0),
        "--uds": ("/tmp/x.sock", "uds", "/tmp/x.sock"),
        "--root-path": ("/api", "root_path", "/api"),
        "--lifespan": ("off", "lifespan", "off"),
        "--log-level": ("DEBUG", "log_level", "debug"),
        "--backlog": ("10", "backlog", 10),
        "--timeout-keep-alive": ("7", "timeout_keep_alive", 7.0),
        "--max-body-size": ("none", "max_body_size", None),
        "--forwarded-allow-ips": ("*", "forwarded_allow_ips", "*"),
        "--header": ("x-a: 1", "headers", [("x-a", "1")]),
        "--interface": ("asgi2", "interface", "asgi2"),
        "--access-log-format": ("%(status_code)s", "access_log_format", "%(status_code)s"),
        "--log-config": (str(log_config), "log_config", str(log_config)),
    }
    for flag, (text, name, value) in given.items():
        kind, run = parse(flag, text)
        assert kind == "run" and run["values"] == {name: value}
        assert getattr(ferroloop.Config(run["app"], **run["values"]), name) == value
    assert parse("--fd", "3")[1]["values"] == {"fd": 3}
    assert parse("--access-log")[1]["values"] == {"access_log": True}
    assert parse("--no-access-log")[1]["values"] == {"access_log": False}
    assert parse("--use-colors")[1]["values"] == {"use_colors": True}
    assert parse("--no-use-colors")[1]["values"] == {"use_colors": False}
    assert parse("--no-server-header")[1]["values"] == {"server_header": False}
    assert parse()[1] == {"app": "apps:app", "values": {}, "warnings": [], "env_file": [], "uvicorn_env": []}


def test_non_utf8_uds_path_round_trips():
    kind, run = _native.parse_cli("ferroloop", [b"apps:app", b"--uds", b"/tmp/\xff.sock"], {})
    assert kind == "run"
    assert os.fsencode(run["values"]["uds"]) == b"/tmp/\xff.sock"


def test_status_rules_in_config(recwarn):
    row = dict(BY_NAME["backlog"], status="ignored", status_reason="not needed")
    assert _config._check(row, 5) == 5
    assert "backlog is ignored: not needed" in str(recwarn.pop(UserWarning).message)
    assert _config._check(row, row["default"]) == row["default"]  # the default never warns
    row = dict(row, status="unsupported", status_reason="later")
    with pytest.raises(ValueError, match="backlog: not supported yet: later"):
        _config._check(row, 5)


WS_DEFAULTS = {
    "max_message_size": 16 * 1024 * 1024,
    "max_frame_size": 16 * 1024 * 1024,
    "max_queue": 32,
    "max_queue_bytes": 16 * 1024 * 1024,
    "ping_interval": 20.0,
    "ping_timeout": 20.0,
    "close_timeout": 10.0,
    "per_message_deflate": True,
}


def test_ws_settings_reach_the_native_server():
    from ferroloop._native import _testing

    for ws in ("auto", "websockets", "websockets-sansio", "wsproto"):
        assert _testing.ws_settings(ferroloop.Config(apps.app, ws=ws)) == WS_DEFAULTS, ws
    assert _testing.ws_settings(ferroloop.Config(apps.app, ws="none")) is None
    config = ferroloop.Config(
        apps.app, ws_max_size=1000, ws_max_queue=3, ws_ping_interval=None, ws_ping_timeout=2.5,
        ws_per_message_deflate=False, ws_max_queue_bytes=5000, ws_close_timeout=0.5,
    )
    assert _testing.ws_settings(config) == {
        "max_message_size": 1000, "max_frame_size": 1000,  # not given: as large as a message
        "max_queue": 3, "max_queue_bytes": 5000, "ping_interval": None, "ping_timeout": 2.5,
        "close_timeout": 0.5, "per_message_deflate": False,
    }
    config = ferroloop.Config(apps.app, ws_max_frame_size=64 * 1024)
    assert _testing.ws_settings(config) == {**WS_DEFAULTS, "max_frame_size": 64 * 1024}


def test_ws_protocol_class_is_refused_by_config():
    import asyncio

    class Protocol(asyncio.Protocol):
        pass

    for value in ("mypkg.ws:Protocol", Protocol):
        with pytest.raises(ValueError, match=r"^ws: .* is not supported: ferroloop serves WebSocket with its native"):
            ferroloop.Config(apps.app, ws=value)
    with pytest.raises(ValueError, match="ws: expected one of"):
        ferroloop.Config(apps.app, ws="tornado")
