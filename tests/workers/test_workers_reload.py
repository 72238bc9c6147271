"""`--reload`: a changed file restarts the worker with the new code; a
syntax error keeps the watcher alive and logs the error, and fixing the
file brings the app back; `--reload-include`/`--reload-exclude` choose
the files; reload wins over `--workers` with a warning."""

from __future__ import annotations

import time

import httpx

from workers_support import APP_SOURCE, wait_for


def version(server) -> str | None:
    try:
        response = httpx.get(server.base_url() + "/version", timeout=5.0)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


def keep_writing(path, text: str, done, what) -> None:
    """Write `path` until `done()`: the watcher may not watch yet when the
    server first answers (nothing says when it does), so one write could
    be missed; every write is a change once it watches."""
    last = 0.0

    def check():
        nonlocal last
        if time.monotonic() - last > 2.0:
            path.write_text(text)
            last = time.monotonic()
        return done()

    wait_for(check, what)


def wait_version(server, want: str, app, text: str) -> None:
    keep_writing(app, text, lambda: version(server) == want,
                 lambda: f"still {version(server)!r}, want {want!r}:\n{server.output()}")


def reloading(spawn, *args: str):
    """A --reload server, once its reloader process said who it is (it
    is no worker; the port may accept before that line is written)."""
    server = spawn("--reload", "--reload-delay", "0.1", *args)
    server.wait_output("Started reloader process")
    return server


def test_reload_on_change_and_survives_a_syntax_error(spawn, app_dir):
    server = reloading(spawn, "--workers", "3")
    assert version(server) == "v1"
    # Reload wins over --workers (as uvicorn), with a warning.
    assert len(server.wait_workers(1)) == 1
    assert any("warn" in line.lower() and "workers" in line for line in server.output().splitlines()), server.output()
    app = app_dir / "wapp.py"
    wait_version(server, "v2", app, APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v2"'))
    assert "WatchFiles detected changes in 'wapp.py'. Reloading..." in server.output(), server.output()

    keep_writing(app, APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v3" +'), lambda: "SyntaxError" in server.output(),
                 lambda: f"no SyntaxError logged:\n{server.output()}")
    assert server.proc.poll() is None  # the watcher lives on

    wait_version(server, "v4", app, APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v4"'))
    assert server.stop() == 0


def test_reload_include_and_exclude(spawn, app_dir):
    server = reloading(spawn, "--reload-include", "*.txt", "--reload-exclude", "skip*")
    first = server.wait_workers(1)
    # An included file: restarts once the watcher watches.
    keep_writing(app_dir / "notes.txt", "changed\n", lambda: server.workers() - first and len(server.workers()) == 1,
                 lambda: f"no restart for notes.txt:\n{server.output()}")
    second = server.wait_workers(1)
    server.wait_output("notes.txt")
    # An excluded file changes with an included one: only the latter is named.
    (app_dir / "skip_me.py").write_text("x = 1\n")
    (app_dir / "notes.txt").write_text("changed again\n")
    server.wait_workers(1, not_in=second)
    assert "skip_me.py" not in server.output(), server.output()
    assert version(server) == "v1"
