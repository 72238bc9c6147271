"""The `ferroloop` command (and `python -m ferroloop`): argv is parsed by
the Rust `loop-cli` crate; this module imports the app and serves it."""

from __future__ import annotations

import ast
import logging
import os
import sys

from . import _native
from .server._app import AppLoadError
from .server._config import SETTINGS, Config
from .server._lifespan import LifespanFailed
from .server._logging import DefaultFormatter, LogConfigError

logger = logging.getLogger("ferroloop.error")

# Exit codes: usage errors 2 (as click/argparse), a broken app 1, startup
# failure 3 (as uvicorn).
EXIT_APP_ERROR = 1
EXIT_STARTUP_FAILED = 3


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if prog is None:
        prog = "python -m ferroloop" if sys.argv and sys.argv[0].endswith("__main__.py") else "ferroloop"
    # The environment is read in Rust, with the command line: a flag wins
    # over FERROLOOP_<NAME>, which wins over UVICORN_<NAME>, which wins
    # over the default.
    kind, value = _native.parse_cli(prog, [os.fsencode(a) for a in args], dict(os.environb))
    if kind == "help":
        print(value, end="")
        return 0
    if kind == "version":
        print(f"ferroloop {value}")
        return 0
    if kind == "error":
        # A usage error: click's block (usage, hint, error), as uvicorn's.
        text, code = value
        print(_with_app_hint(text, args), end="", file=sys.stderr)
        return code
    # Only what the command line gave: Config has the defaults (both come
    # from loop-cli's settings table). CLI-only settings stay here.
    for warning in value["warnings"]:
        say(logging.WARNING, warning)
    # --env-file: into the environment before the app is imported; what is
    # already set wins (python-dotenv's default).
    for key, env_value in value["env_file"]:
        os.environ.setdefault(key, env_value)
    values = value["values"]
    config_values = {name: v for name, v in values.items() if name in SETTINGS}
    try:
        config = Config(value["app"], **config_values)
    except ValueError as exc:  # a value the table's text form allows but Config's checks refuse
        say(logging.ERROR, str(exc))
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
        say(logging.ERROR, f"invalid --log-config {exc.path}: {exc.reason}")
        return 2
    except OSError as exc:  # a file that went missing
        say(logging.ERROR, str(exc))
        return EXIT_APP_ERROR
    if value["uvicorn_env"]:
        logger.info("Using uvicorn's environment variables: %s", ", ".join(value["uvicorn_env"]))
    try:
        config.load_tls()  # before the app is imported and anything binds
    except (OSError, ValueError) as exc:  # the message names the file
        logger.error("%s", exc)
        return EXIT_STARTUP_FAILED
    try:
        # The backend asked for can run here (a forced io_uring in a
        # container that refuses it), before anything binds or forks; with
        # auto, the loop logs why it runs on epoll, once.
        from ._loop import _log_fallback

        # The native loop alone: no Python attributes, so no reference
        # cycle for the collector to finalize later; freed at once.
        probe = _native.Loop(backend=config.backend)
        if probe._backend_fallback is not None:
            _log_fallback(probe._backend_fallback)
        probe._close()
        del probe
    except (RuntimeError, ValueError) as exc:
        logger.error("--backend %s: %s", config.backend or os.environ.get("FERROLOOP_BACKEND") or "auto", exc)
        return EXIT_STARTUP_FAILED
    if config.workers > 1 or config.reload:
        return _supervise(config)
    try:
        config.load_app()  # before binding: a typo fails fast (Server reuses it)
    except AppLoadError as exc:
        logger.error("Error loading ASGI app. %s", exc)
        return EXIT_APP_ERROR
    from ._policy import run
    from .server._server import Server

    try:
        run(Server(config).serve(), backend=config.backend)
    except LifespanFailed:
        return EXIT_STARTUP_FAILED
    except OSError as exc:
        # Once, through the configured logging (uvicorn's form:
        # `[Errno 98] error while attempting to bind on address …`).
        logger.error("%s", exc)
        return EXIT_APP_ERROR
    except KeyboardInterrupt:
        pass
    return 0


def say(level: int, message: str) -> None:
    """One of the command's own lines before logging is configured (an
    ignored option, a bad value), in the log's default format: `WARNING:  …`
    on stderr, as every later line."""
    record = logging.LogRecord("ferroloop.error", level, __file__, 0, message, None, None)
    print(DefaultFormatter("%(levelprefix)s %(message)s").format(record), file=sys.stderr)


def _with_app_hint(report: str, args: list[str]) -> str:
    """A usage error about an APP given as a file (`myapp.py`): the error
    line names the `module:attribute` that file defines (`myapp:app`)."""
    hint = next((h for h in map(_app_hint, args) if h), None)
    if hint is None:
        return report
    return report.rstrip("\n") + f" (did you mean '{hint}'?)\n"


def _app_hint(arg: str) -> str | None:
    """`module:attr` for a Python file that defines one of the usual app
    names at its top level (read, never imported)."""
    if not arg.endswith(".py") or ":" in arg or not os.path.isfile(arg):
        return None
    try:
        with open(arg, "rb") as f:
            tree = ast.parse(f.read(), arg)
    except (OSError, SyntaxError, ValueError):
        return None
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    relative = os.path.relpath(arg[: -len(".py")])
    if relative.startswith(os.pardir):
        return None  # outside the working directory: --app-dir's case
    module = relative.replace(os.sep, ".")
    for name in ("app", "application", "api", "create_app"):
        if name in defined:
            return f"{module}:{name}" + (" --factory" if name == "create_app" else "")
    return None


def _supervise(config: Config) -> int:
    """Workers (or reload) under the supervisor. The app is imported by
    each worker after the fork, unless --preload (then here, once)."""
    from .server._reload import ReloadUnavailable
    from .server._supervisor import supervise

    try:
        return supervise(config)
    except ReloadUnavailable as exc:
        logger.error("%s", exc)
        return EXIT_APP_ERROR
    except AppLoadError as exc:  # --preload
        logger.error("Error loading ASGI app. %s", exc)
        return EXIT_APP_ERROR
    except OSError as exc:
        logger.error("%s", exc)
        return EXIT_APP_ERROR
    except KeyboardInterrupt:
        return 0


def entry_point() -> None:
    sys.exit(main())
