"""The HTTP suite's Python side, run with the bench venv's interpreter.

    <venv>/bin/python bench/http_serve.py serve ferroloop|ferroloop-base|cadeloop PORT [APP_MODULE]
    <venv>/bin/python bench/http_serve.py probe NAME...

`serve` runs `http_app.app` (or APP_MODULE's `app`: the WebSocket suite's
`ws_app`) on 127.0.0.1:PORT with the loop project's own
server function, in this process, until SIGTERM/SIGINT (the harness owns
placement and measures from outside).  Before serving it prints
`SERVE_MODULE {"module_file": PATH}`: where the module came from, which the
harness checks (ferroloop-base must be the baseline wheel's).  granian,
uvicorn and picows are started by their own command lines instead
(`http_servers.py`, `ws_servers.py`).

`probe` prints one JSON object: name -> {"available": true, "version", ...,
"module_file"} or {"available": false, "reason"}.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path

# The servers `serve` runs: name -> module with serve().  ferroloop-base is
# ferroloop imported from the baseline wheel's directory (first on PYTHONPATH).
SERVE_MODULES = {"ferroloop": "ferroloop", "ferroloop-base": "ferroloop", "cadeloop": "cadeloop"}
# ferroloop's access log in `serve` (off, null or devnull; `http_callgrind.py --access-log`).
ACCESS_LOG_ENV = "BENCH_ACCESS_LOG"
# The line `serve` prints before serving, followed by JSON.
MODULE_LINE = "SERVE_MODULE "
# Distributions whose versions each Python server's result records.
VERSIONS = {
    "ferroloop": ("ferroloop",),
    "ferroloop-base": ("ferroloop",),
    "cadeloop": ("cadeloop",),
    "granian": ("granian", "uvloop"),
    "uvicorn": ("uvicorn", "httptools", "uvloop"),
    # The WebSocket suite's (ws_servers.py).
    "uvicorn-sansio": ("uvicorn", "websockets", "httptools", "uvloop"),
    "uvicorn-wsproto": ("uvicorn", "wsproto", "httptools", "uvloop"),
    "picows": ("picows", "uvloop"),
}
# Modules that must import for the server to run as the suite starts it.
MODULES = {
    "ferroloop": ("ferroloop",),
    "ferroloop-base": ("ferroloop",),
    "cadeloop": ("cadeloop",),
    "granian": ("granian", "uvloop"),
    "uvicorn": ("uvicorn", "httptools", "uvloop"),
    "uvicorn-sansio": ("uvicorn", "websockets", "httptools", "uvloop"),
    "uvicorn-wsproto": ("uvicorn", "wsproto", "httptools", "uvloop"),
    "picows": ("picows", "uvloop"),
}


def serve(name: str, port: int, app_module: str = "http_app") -> int:
    app = importlib.import_module(app_module).app
    module = importlib.import_module(SERVE_MODULES[name])
    print(MODULE_LINE + json.dumps({"module_file": module.__file__}), flush=True)
    run = getattr(module, "serve", None)
    if run is None:
        print(
            f"{name} {importlib.metadata.version(module.__name__)} has no serve() "
            f"(installed at {Path(module.__file__).parent})",
            file=sys.stderr,
        )
        return 3
    access = os.environ.get(ACCESS_LOG_ENV, "off")
    if access == "off":
        run(app, host="127.0.0.1", port=port, access_log=False)
    else:
        _access_handlers(access)
        run(app, host="127.0.0.1", port=port, access_log=True)
    return 0


def _access_handlers(kind: str) -> None:
    """ferroloop's access log on, to a NullHandler (`null`: the cost of
    making the line and the logging call) or through `AccessFormatter` and
    a StreamHandler to /dev/null (`devnull`: what a real handler adds)."""
    import logging

    logging.getLogger("ferroloop").addHandler(logging.NullHandler())  # keeps the default config out
    access = logging.getLogger("ferroloop.access")
    access.propagate = False
    if kind == "null":
        access.addHandler(logging.NullHandler())
    elif kind == "devnull":
        from ferroloop.logging import AccessFormatter

        handler = logging.StreamHandler(open(os.devnull, "w"))
        handler.setFormatter(AccessFormatter("%(levelprefix)s %(message)s", use_colors=False))
        access.addHandler(handler)
    else:
        raise SystemExit(f"{ACCESS_LOG_ENV}: expected off, null or devnull, got {kind!r}")


def probe(name: str) -> dict:
    try:
        for module in MODULES[name]:
            importlib.import_module(module)
        versions = {dist: importlib.metadata.version(dist) for dist in VERSIONS[name]}
    except Exception as exc:  # any failure means "unavailable", with its reason
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}
    found = {"available": True, "version": versions[VERSIONS[name][0]], "versions": versions}
    if name in SERVE_MODULES:
        # ferroloop's server is being written: without serve() the
        # contender still runs, and each measurement reports the error.
        module = importlib.import_module(SERVE_MODULES[name])
        found["serve"] = hasattr(module, "serve")
        found["module_file"] = module.__file__
    if name == "granian" and shutil.which("granian", path=str(Path(sys.executable).parent)) is None:
        return {"available": False, "reason": "no granian executable in the venv"}
    return found


def main() -> int:
    command, *rest = sys.argv[1:] or [""]
    if command == "serve" and len(rest) in (2, 3) and rest[0] in SERVE_MODULES:
        return serve(rest[0], int(rest[1]), *rest[2:])
    if command == "probe":
        print(json.dumps({name: probe(name) for name in rest}))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
