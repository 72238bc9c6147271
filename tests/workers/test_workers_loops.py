"""`--loops N`: N event loops, each in its own thread of the process,
serving the same listeners; each runs the app's lifespan; stopping drains
them all; a worker's counters are the sum of its loops'."""

from __future__ import annotations

import contextlib
import re
import signal

import httpx
import pytest

import ferroloop
from workers_support import free_port, server_command, wait_for, write_app

APP = '''
import os
import threading

STARTS = []
FAIL_ON = int(os.environ.get("LOOPS_APP_FAIL_ON", "0"))


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                STARTS.append(threading.get_ident())
                if len(STARTS) == FAIL_ON:
                    await send({"type": "lifespan.startup.failed", "message": "no"})
                    return
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = f"{os.getpid()} {threading.get_ident()} {len(STARTS)}".encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
'''


@pytest.fixture
def loops_app(app_dir):
    write_app(app_dir, APP, name="lapp")
    return app_dir


def _answers(url: str, want: int) -> dict[tuple[int, int], int]:
    """Poll with a new connection each time until `want` (pid, thread)
    pairs answered; what each saw as the process's lifespan count."""
    seen: dict[tuple[int, int], int] = {}

    def check():
        with contextlib.suppress(httpx.HTTPError):
            pid, thread, starts = map(int, httpx.get(url, timeout=10.0).text.split())
            seen[(pid, thread)] = starts
        return len(seen) >= want

    wait_for(check, lambda: f"only {sorted(seen)} answered, want {want}")
    return seen


def test_each_loop_serves_and_runs_the_lifespan(spawn, loops_app):
    server = _spawn(spawn, "--loops", "3")
    # The primary loop accepts once it listens, before the other loops
    # have run their lifespans; the "running on" line follows all three.
    server.wait_for_output("running on", timeout=40.0)
    seen = _answers(server.base_url() + "/", 3)
    assert len({pid for pid, _ in seen}) == 1, seen
    assert set(seen.values()) == {3}, "one lifespan startup per loop"
    assert server.stop(signal.SIGTERM) == 0
    out = server.output()
    assert out.count("Application startup complete.") == 3, out
    assert out.count("Application shutdown complete.") == 3, out


def test_workers_times_loops_and_summed_counters(spawn, loops_app):
    metrics = free_port()
    server = _spawn(spawn, "--workers", "2", "--loops", "2", "--metrics-port", str(metrics))
    seen = _answers(server.base_url() + "/", 4)
    assert len({pid for pid, _ in seen}) == 2 and len(seen) == 4, seen
    made = 20
    for _ in range(made):
        httpx.get(server.base_url() + "/", timeout=10.0)
    text = httpx.get(f"http://127.0.0.1:{metrics}/metrics", timeout=10.0).text
    accepted = [int(v) for v in re.findall(r'^ferroloop_connections_accepted_total\{worker="\d+"\} (\d+)', text, re.M)]
    assert len(accepted) == 2 and sum(accepted) >= made + len(seen), text
    assert server.stop(signal.SIGTERM) == 0
    assert server.output().count("Application shutdown complete.") == 4


def test_a_loop_whose_startup_fails_stops_the_process(spawn, loops_app):
    server = _spawn(spawn, "--loops", "3", env={"LOOPS_APP_FAIL_ON": "2"}, ready=False)
    assert server.wait_exit() == 3
    assert "no" in server.output()


def test_loops_is_validated():
    with pytest.raises(ValueError, match="loops"):
        ferroloop.Config("lapp:app", loops=0)
    assert ferroloop.Config("lapp:app", loops=4).loops == 4


def _spawn(spawn, *args: str, **kwargs):
    """`ferroloop lapp:app *args` on a free port (see the `spawn` fixture)."""
    port = free_port()
    argv = [*server_command(), "lapp:app", "--host", "127.0.0.1", "--port", str(port), *args]
    return spawn(argv=argv, port=port, **kwargs)
