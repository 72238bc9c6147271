"""The `ferroloop` command (and `python -m ferroloop`): argv is parsed by
the Rust `loop-cli` crate; this module imports the app and serves it."""

from __future__ import annotations

import logging
import os
import sys

from . import _native
from .server._config import SETTINGS, AppLoadError, Config
from .server._lifespan import LifespanFailed
from .server._logging import LogConfigError

# Exit codes: usage errors 2 (as click/argparse), a broken app 1, startup
# failure 3 (as uvicorn).
EXIT_APP_ERROR = 1
EXIT_STARTUP_FAILED = 3


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if prog is None:
        prog = "python -m ferroloop" if sys.argv and sys.argv[0].endswith("__main__.py") else "ferroloop"
    kind, value = _native.parse_cli(prog, [os.fsencode(a) for a in args])
    if kind == "help":
        print(value, end="")
        return 0
    if kind == "version":
        print(f"ferroloop {value}")
        return 0
    if kind == "error":
        text, code = value
        print(text, end="", file=sys.stderr)
        return code
    # Only what the command line gave: Config has the defaults (both come
    # from loop-cli's settings table). CLI-only settings stay here.
    for warning in value["warnings"]:
        print(f"Warning: {warning}", file=sys.stderr)
    config_values = {name: v for name, v in value["values"].items() if name in SETTINGS}
    config = Config(value["app"], **config_values)
    # The app's directory is importable, as with uvicorn.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")
    try:
        app = config.load_app()  # before binding: a typo fails fast
    except AppLoadError as exc:
        print(f"Error loading ASGI app. {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    config.app = app
    from ._policy import run
    from .server._server import Server

    try:
        run(Server(config).serve())
    except LifespanFailed:
        return EXIT_STARTUP_FAILED
    except LogConfigError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    except OSError as exc:
        # Once, through the configured logging (uvicorn's form:
        # `[Errno 98] error while attempting to bind on address …`).
        logging.getLogger("ferroloop.error").error("%s", exc)
        return EXIT_APP_ERROR
    except KeyboardInterrupt:
        pass
    return 0


def entry_point() -> None:
    sys.exit(main())
