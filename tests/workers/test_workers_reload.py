"""`--reload`: a changed file restarts the worker with the new code; a
syntax error keeps the watcher alive and logs the error, and fixing the
file brings the app back; `--reload-include`/`--reload-exclude` choose
the files; reload wins over `--workers` with a warning."""

from __future__ import annotations

import httpx

from workers_support import APP_SOURCE, wait_for


def version(server) -> str | None:
    try:
        response = httpx.get(server.base_url() + "/version", timeout=5.0)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


def wait_version(server, want: str) -> None:
    wait_for(lambda: version(server) == want, lambda: f"still {version(server)!r}, want {want!r}:\n{server.output()}")


def test_reload_on_change_and_survives_a_syntax_error(spawn, app_dir):
    server = spawn("--reload", "--reload-delay", "0.1", "--workers", "3")
    assert version(server) == "v1"
    # Reload wins over --workers (as uvicorn), with a warning.
    assert len(server.wait_workers(1)) == 1
    assert any("warn" in line.lower() and "workers" in line for line in server.output().splitlines()), server.output()
    app = app_dir / "wapp.py"
    app.write_text(APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v2"'))
    wait_version(server, "v2")
    assert "WatchFiles detected changes in 'wapp.py'. Reloading..." in server.output(), server.output()

    app.write_text(APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v3" +'))
    server.wait_output("SyntaxError")
    assert server.proc.poll() is None  # the watcher lives on

    app.write_text(APP_SOURCE.replace('VERSION = "v1"', 'VERSION = "v4"'))
    wait_version(server, "v4")
    assert server.stop() == 0


def test_reload_include_and_exclude(spawn, app_dir):
    server = spawn("--reload", "--reload-delay", "0.1", "--reload-include", "*.txt", "--reload-exclude", "skip*")
    first = server.wait_workers(1)
    # An excluded file changes: nothing restarts.
    (app_dir / "skip_me.py").write_text("x = 1\n")
    (app_dir / "notes.txt").write_text("changed\n")
    restarted = server.wait_workers(1, not_in=first)
    assert "notes.txt" in server.output()
    assert "skip_me.py" not in server.output()
    assert version(server) == "v1" and restarted
