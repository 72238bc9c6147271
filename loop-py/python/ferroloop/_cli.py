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
    # The environment is read in Rust, with the command line: a flag wins
    # over FERROLOOP_<NAME>, which wins over the default.
    kind, value = _native.parse_cli(prog, [os.fsencode(a) for a in args], dict(os.environb))
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
    # --env-file: into the environment before the app is imported; what is
    # already set wins (python-dotenv's default).
    for key, env_value in value["env_file"]:
        os.environ.setdefault(key, env_value)
    values = value["values"]
    config_values = {name: v for name, v in values.items() if name in SETTINGS}
    try:
        config = Config(value["app"], **config_values)
    except ValueError as exc:  # a value the table's text form allows but Config's checks refuse
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    # The app's directory is importable, as with uvicorn: --app-dir (checked
    # to exist by the parser), else the working directory.
    app_dir = values.get("app_dir", "")
    if app_dir:
        sys.path.insert(0, os.path.abspath(app_dir))
    elif "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")
    # Logging before the app is imported, as uvicorn: loggers the app makes
    # at import survive a --log-config, and an app's own basicConfig() does
    # not replace the default (Server.serve does not configure it again).
    try:
        config.configure_logging()
    except LogConfigError as exc:
        print(f"Error: invalid --log-config {exc.path}: {exc.reason}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file that went missing
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    try:
        config.load_tls()  # before the app is imported and anything binds
    except (OSError, ValueError) as exc:  # the message names the file
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILED
    if config.workers > 1 or config.reload:
        return _supervise(config)
    try:
        config.load_app()  # before binding: a typo fails fast (Server reuses it)
    except AppLoadError as exc:
        print(f"Error loading ASGI app. {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    from ._policy import run
    from .server._server import Server

    try:
        run(Server(config).serve())
    except LifespanFailed:
        return EXIT_STARTUP_FAILED
    except OSError as exc:
        # Once, through the configured logging (uvicorn's form:
        # `[Errno 98] error while attempting to bind on address …`).
        logging.getLogger("ferroloop.error").error("%s", exc)
        return EXIT_APP_ERROR
    except KeyboardInterrupt:
        pass
    return 0


def _supervise(config: Config) -> int:
    """Workers (or reload) under the supervisor. The app is imported by
    each worker after the fork, unless --preload (then here, once)."""
    from .server._reload import ReloadUnavailable
    from .server._supervisor import supervise

    try:
        return supervise(config)
    except ReloadUnavailable as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    except AppLoadError as exc:  # --preload
        print(f"Error loading ASGI app. {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    except OSError as exc:
        logging.getLogger("ferroloop.error").error("%s", exc)
        return EXIT_APP_ERROR
    except KeyboardInterrupt:
        return 0


def entry_point() -> None:
    sys.exit(main())
