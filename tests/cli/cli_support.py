"""The `ferroloop` console script run to completion (``run``), and apps
for it. A serving child is ``_helpers.ServerProcess`` (the
``ferroloop_cmd`` fixture), with ``_helpers.child_env``: no
``PYTHONPATH``, so the app is found as a user's would be (working
directory, ``--app-dir``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _helpers import PROJECT_ROOT, child_env, free_port  # noqa: F401 - re-exported

FERROLOOP = Path(sys.executable).parent / "ferroloop"

#: An app module: a greeting from the environment at import, the request's
#: context variable, and an ASGI 2 class for --interface.
APP_SOURCE = '''
import contextvars, json, os

GREETING = os.environ.get("APP_GREETING", "unset")
var = contextvars.ContextVar("var", default="fresh")
var.set("from import")


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = json.dumps({"greeting": GREETING, "var": var.get(), "path": scope["path"]}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def create_app():
    return app


def broken_factory():
    raise RuntimeError("no database")


not_callable = 42


class ASGI2App:
    def __init__(self, scope):
        self.scope = scope

    async def __call__(self, receive, send):
        if self.scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"asgi2"})
'''


def write_app(directory: Path, name: str = "cliapp") -> str:
    (directory / f"{name}.py").write_text(textwrap.dedent(APP_SOURCE))
    return name


def run(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Run the console script to completion (usage errors, app errors)."""
    return subprocess.run(
        [str(FERROLOOP), *args],
        cwd=cwd or PROJECT_ROOT,
        env=child_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
