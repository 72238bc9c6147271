"""`--reload`: a changed file restarts the worker with the new code; a
syntax error keeps the watcher alive and logs the error, and fixing the
file brings the app back; a change while a reload is starting its worker
reloads again; `--reload-include`/`--reload-exclude` choose the files;
reload wins over `--workers` with a warning; a watcher that exits leaves
no pipe open in the supervisor."""

from __future__ import annotations

import os
import signal
import time

import httpx

from workers_support import APP_SOURCE, fd_targets, wait_for


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


def reloading(spawn, *args: str, **kwargs):
    """A --reload server, once its reloader process said who it is (it
    is no worker; the port may accept before that line is written)."""
    server = spawn("--reload", "--reload-delay", "0.1", *args, **kwargs)
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


def test_a_change_while_a_reload_starts_its_worker_reloads_again(spawn, app_dir, tmp_path):
    hold = tmp_path / "hold"
    imports = tmp_path / "imports"
    imports.mkdir()
    server = reloading(spawn, env={"WAPP_HOLD": str(hold), "WAPP_IMPORTS": str(imports)})
    first = server.wait_workers(1)
    # Serving first: a worker still in its startup would be held too.
    wait_for(lambda: version(server) == "v1", lambda: f"not serving:\n{server.output()}")
    app = app_dir / "wapp.py"
    hold.touch()  # the reload's new worker imports v2, then waits in its startup
    keep_writing(app, APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v2"'), lambda: len(server.workers()) == 2,
                 lambda: f"no new worker for v2:\n{server.output()}")
    (new,) = server.workers() - first
    wait_for(lambda: (imports / f"import-{new}").exists(), lambda: f"worker {new} did not import:\n{server.output()}")
    # v3 while that worker is held; later.py after it, so once the
    # supervisor names later.py it has been told about v3 too.
    app.write_text(APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v3"'))
    (app_dir / "later.py").write_text("x = 1\n")
    server.wait_output("later.py")
    assert version(server) == "v1"  # the old worker serves until the new one is ready
    hold.unlink()
    wait_for(lambda: version(server) == "v3", lambda: f"still {version(server)!r}, want 'v3':\n{server.output()}")
    assert "Restarting the workers again" in server.output()
    assert server.stop() == 0


def test_a_watcher_that_exits_leaves_no_pipe_open(spawn):
    server = reloading(spawn)
    (worker,) = server.wait_workers(1)
    (watcher,) = server.reloaders()
    # The pipe the watcher writes its changes to: the supervisor reads it,
    # the worker has no end of it. Read until the fd tables settle (a
    # process just started can be listed before its tables are final).

    def shared_pipe():
        return (fd_targets(server.pid, "pipe") & fd_targets(watcher, "pipe")) - fd_targets(worker, "pipe")

    wait_for(lambda: len(shared_pipe()) == 1, lambda: f"{shared_pipe()}:\n{server.output()}")
    pipe = shared_pipe()
    os.kill(watcher, signal.SIGKILL)
    server.wait_output("The reload watcher process exited")
    wait_for(lambda: not pipe & fd_targets(server.pid, "pipe"), lambda: f"{pipe} still open in the supervisor")
    assert version(server) == "v1"  # the server lives on, without reload
    assert server.stop() == 0
