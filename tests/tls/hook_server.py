"""Stand-in for `python -m ferroloop APP --ssl-certfile ...` while the
CLI's TLS settings have not landed: the test build's ``Config._test_tls``
hook (certificate and key only). Used with ``FERROLOOP_TLS_TEST_HOOK=1``
(see tls_support.py); a setting it cannot pass exits 2 naming it, so the
tests that need it fail saying why. Remove once ``--ssl-*`` is served."""

from __future__ import annotations

import sys

import ferroloop
from ferroloop._policy import run
from ferroloop.server._server import Server

TAKEN = {"--port", "--ssl-certfile", "--ssl-keyfile", "--ssl-handshake-timeout", "--log-level", "--backlog", "--max-body-size"}


def main(argv: list[str]) -> int:
    app, rest = argv[0], argv[1:]
    values: dict[str, str] = {}
    while rest:
        flag = rest.pop(0)
        if flag not in TAKEN or not rest:
            print(f"Error: hook_server cannot pass {flag} (needs the CLI's TLS settings)", file=sys.stderr)
            return 2
        values[flag] = rest.pop(0)
    config = ferroloop.Config(
        app,
        port=int(values["--port"]),
        log_level=values.get("--log-level", "info"),
        backlog=int(values.get("--backlog", "2048")),
        max_body_size=None if values.get("--max-body-size") == "none" else int(values.get("--max-body-size", 16 << 20)),
    )
    config._test_tls = (values["--ssl-certfile"], values["--ssl-keyfile"])
    if "--ssl-handshake-timeout" in values:
        config.ssl_handshake_timeout = float(values["--ssl-handshake-timeout"])
    config.configure_logging()
    config.load_app()
    run(Server(config).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
