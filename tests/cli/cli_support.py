"""The `ferroloop` console script in a child process (``Ferroloop``), and
apps for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERROLOOP_")}
    for name in ("PYTHONASYNCIODEBUG", "PYTHONDEVMODE", "FORWARDED_ALLOW_IPS", "WEB_CONCURRENCY", "PYTHONPATH"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


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


class Ferroloop:
    """A running `ferroloop` child; output goes to files."""

    def __init__(self, args: list[str], *, cwd: Path, env: dict | None, log_dir: Path) -> None:
        self.out_path = log_dir / f"ferroloop-{id(self)}.log"
        self._out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(
            [str(FERROLOOP), *args],
            cwd=cwd,
            env=child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        self._out.flush()
        return self.out_path.read_text(errors="replace")

    def wait_port(self, port: int, timeout: float = 20.0) -> "Ferroloop":
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"ferroloop exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"not listening on {port} within {timeout} s:\n{self.output()}")
                time.sleep(0.05)

    def wait_exit(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"ferroloop did not exit within {timeout} s:\n{self.output()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.wait_exit()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
