"""Every option of the installed uvicorn (read from its click command, not
a copied list) is known to ferroloop's settings table with a status, and
behaves as that status says: a supported option sets its setting, an
ignored one warns, an unsupported one is refused. A new uvicorn option, or
a supported one that silently does nothing, fails here."""

from __future__ import annotations

import importlib
import os

import click
import pytest

from ferroloop import _native

ROWS = _native.server_settings()
BY_FLAG = {}
for _row in ROWS:
    if _row["cli"]:
        BY_FLAG[_row["flag"]] = _row
        if _row["off_flag"]:
            BY_FLAG[_row["off_flag"]] = _row
EAGER = {"--version", "--help"}


def uvicorn_options() -> list[click.Option]:
    command = importlib.import_module("uvicorn.main").main
    return [p for p in command.get_params(click.Context(command)) if isinstance(p, click.Option)]


TLS_ARGS = ("--ssl-certfile", "c.pem", "--ssl-keyfile", "k.pem", "--ssl-ca-certs", "ca.pem", "--ssl-cert-reqs", "2")


def parse(*args: str, environ: dict[bytes, bytes] | None = None):
    return _native.parse_cli("ferroloop", [os.fsencode(a) for a in ("m:app", *args)], environ or {})


def sample_args(option: click.Option, spelling: str, tmp_path) -> list[str]:
    """A command line giving `spelling` a value other than uvicorn's default."""
    if option.is_flag:
        return [spelling]
    name = option.name
    if name == "log_config":
        path = tmp_path / "log.json"
        path.write_text('{"version": 1, "disable_existing_loggers": false}')
        return [spelling, str(path)]
    if name == "env_file":
        path = tmp_path / ".env"
        path.write_text("X=1\n")
        return [spelling, str(path)]
    if isinstance(option.type, click.Choice):
        choice = next(c for c in option.type.choices if c != option.default)
        return [spelling, choice]
    if name == "ssl_version":
        return [spelling, "2"]  # PROTOCOL_TLS: negotiate (most others are refused by name)
    texts = {"header": "x-a:1", "headers": "x-a:1", "app_dir": ".", "forwarded_allow_ips": "*", "root_path": "/api",
             "host": "0.0.0.0", "uds": "/tmp/x.sock", "loop": "uvloop", "http": "h11", "ws": "websockets"}
    if name in texts:
        return [spelling, texts[name]]
    kind = option.type.name
    if kind in ("integer", "integer range"):
        default = option.default if isinstance(option.default, int) else 299
        return [spelling, str(default + 1)]
    if kind == "float":
        return [spelling, str(option.default + 1.0)]
    if kind == "boolean":
        return [spelling, str(not option.default).lower()]
    return [spelling, "x"]


def test_uvicorn_is_the_version_the_table_follows():
    import uvicorn

    # xtask/src/venv.rs pins this series, so a new uvicorn on PyPI does not
    # break CI; moving the pin means re-walking the options and this line.
    assert uvicorn.__version__.startswith("0.55."), "re-walk uvicorn's options for this version"


@pytest.mark.parametrize("option", uvicorn_options(), ids=lambda o: o.opts[0])
def test_every_uvicorn_option_is_known_and_behaves_as_its_status_says(option, tmp_path):
    for spelling in [*option.opts, *option.secondary_opts]:
        if spelling in EAGER:
            kind, _ = parse(spelling)
            assert kind in ("help", "version")
            continue
        assert spelling in BY_FLAG, f"uvicorn's {spelling} is unknown to ferroloop's settings table"
        row = BY_FLAG[spelling]
        args = sample_args(option, spelling, tmp_path)
        if row["name"].startswith("ssl_"):  # TLS needs a certificate (and a CA for client ones)
            args = [*TLS_ARGS, *args]
        kind, value = parse(*args)
        refused = row["refuse"] and args[-1] in row["refuse"]
        if row["status"] == "unsupported" or refused:
            assert kind == "error", (args, value)
            report, code = value
            assert code == 2 and "is not supported yet: " in report and spelling in report
        elif row["status"] == "ignored":
            assert kind == "run", (args, value)
            assert any(w.startswith(f"{spelling} is ignored: ") for w in value["warnings"]), value
            assert row["name"] not in value["values"]
        else:
            assert row["status"] == "supported"
            assert kind == "run", (args, value)
            target = "max_header_size" if row["name"] == "h11_max_incomplete_event_size" else row["name"]
            assert target in value["values"], f"{args} set nothing"


def test_unsupported_options_given_their_default_pass():
    for args in (["--reload-delay", "0.25"], ["--ssl-version", "17"]):
        kind, value = parse(*args)
        assert kind == "run" and value["warnings"] == [], args


def test_every_setting_has_a_variable(tmp_path):
    samples = {"int": "300", "seconds": "3", "rate": "3", "bool": "false", "bool_or_text": "edge", "text": "/x",
               "path": str(tmp_path), "headers": "x-a: 1", "path_list": str(tmp_path), "sni_list": "a.example=c.pem:k.pem"}
    for row in ROWS:
        if row["kind"] == "object" or row["status"] != "supported":
            continue
        text = row["choices"][1] if row["kind"] == "choice" else samples[row["kind"]]
        if row["name"] == "app_dir":
            text = str(tmp_path)
        if row["name"] == "env_file":
            (tmp_path / ".env").write_text("X=1\n")
            text = str(tmp_path / ".env")
        if row["name"] in ("port", "fd", "workers"):
            text = "1"
        if row["name"] == "uds_permissions":
            text = "660"
        if row["name"] == "ssl_version":
            text = "2"
        tls = TLS_ARGS if row["name"].startswith("ssl_") else ()
        kind, value = parse(*tls, environ={row["env"].encode(): text.encode()})
        assert kind == "run", (row["env"], value)
        target = "max_header_size" if row["name"] == "h11_max_incomplete_event_size" else row["name"]
        assert target in value["values"], row["env"]


def test_precedence_flag_environment_default():
    environ = {b"FERROLOOP_PORT": b"9001", b"FERROLOOP_BACKLOG": b"7"}
    kind, value = parse("--port", "9002", environ=environ)
    assert value["values"] == {"port": 9002, "backlog": 7}
    kind, value = parse(environ={b"FERROLOOP_MAX_BODY_SIZE": b"none", b"FERROLOOP_LIMIT_CONCURRENCY": b""})
    assert value["values"] == {"max_body_size": None, "limit_concurrency": None}


def test_bad_variable_names_itself_and_the_accepted_form():
    kind, (report, code) = parse(environ={b"FERROLOOP_PORT": b"http"})
    assert (kind, code) == ("error", 2)
    assert "invalid value 'http' for environment variable FERROLOOP_PORT (--port): expected an integer from 0 to 65535" in report


def test_forwarded_allow_ips_and_web_concurrency():
    kind, value = parse(environ={b"FORWARDED_ALLOW_IPS": b"10.0.0.1"})
    assert value["values"] == {"forwarded_allow_ips": "10.0.0.1"}
    kind, value = parse(environ={b"WEB_CONCURRENCY": b"4"})
    assert kind == "run" and value["values"] == {"workers": "4"}
    kind, value = parse("--workers", "auto", environ={b"WEB_CONCURRENCY": b"4"})
    assert value["values"] == {"workers": "auto"}  # the flag wins


def test_help_marks_what_is_not_implemented():
    kind, text = parse("--help")
    flat = " ".join(text.split())
    assert "[not supported yet]" in flat and "[ignored]" in flat and "[not supported yet: wsgi]" in flat
    assert "FERROLOOP_" in flat


def test_ws_takes_uvicorns_values_and_refuses_a_protocol_class():
    for ws in ("auto", "none", "websockets", "websockets-sansio", "wsproto"):
        kind, value = parse("--ws", ws)
        assert kind == "run" and value["values"] == {"ws": ws} and value["warnings"] == [], ws
    for args, environ, named in (
        (["--ws", "mypkg.ws:Protocol"], None, "option '--ws' with 'mypkg.ws:Protocol'"),
        ([], {b"FERROLOOP_WS": b"mypkg.ws:Protocol"}, "FERROLOOP_WS (--ws) with 'mypkg.ws:Protocol'"),
    ):
        kind, (report, code) = parse(*args, environ=environ)
        assert (kind, code) == ("error", 2)
        assert f"{named} is not supported: " in report and "native" in report
    kind, (report, code) = parse("--ws", "tornado")
    assert (kind, code) == ("error", 2) and "invalid value 'tornado' for '--ws'" in report
