"""The poller backend: chosen per loop (``backend=``, ``FERROLOOP_BACKEND``,
the CLI's ``--backend``), visible (``loop.stats()``, ``Server.stats()``,
``/metrics``), and the same behaviour on io_uring and epoll. Where io_uring
is refused (a seccomp filter as Docker's default profile installs), ``auto``
runs on epoll and says why in one INFO line, and a forced ``io_uring`` is an
error naming the reason.

ferroloop only: asyncio's loop has no backends.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import ferroloop
from _helpers import ServerProcess, child_env, free_port
from _seccomp import io_uring_setup_works

BACKENDS = ["io_uring", "epoll"]
SECCOMP = str(Path(__file__).resolve().parent / "_seccomp.py")
FERROLOOP = str(Path(sys.executable).parent / "ferroloop")
#: What auto gives on this machine, found with the raw system call.
AUTO = "io_uring" if io_uring_setup_works() else "epoll"

APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})
"""


@pytest.fixture(autouse=True)
def no_backend_env(monkeypatch):
    monkeypatch.delenv("FERROLOOP_BACKEND", raising=False)


async def exercise(loop: asyncio.AbstractEventLoop) -> list[str]:
    """Readiness both ways, level-triggered readers, a timer, and a
    wake-up from another thread."""
    seen = []
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    try:
        await loop.sock_sendall(a, b"ping")
        seen.append((await loop.sock_recv(b, 16)).decode())
        # A reader on data not read yet fires tick after tick.
        fired = []
        b.send(b"x")
        loop.add_reader(a.fileno(), fired.append, 1)
        for _ in range(20):
            await asyncio.sleep(0)
            if len(fired) >= 3:
                break
        loop.remove_reader(a.fileno())
        seen.append(f"level x{min(len(fired), 3)}")
        await asyncio.sleep(0.01)
        seen.append("timer")
        done = loop.create_future()
        threading.Timer(0.02, loop.call_soon_threadsafe, (done.set_result, "woken")).start()
        seen.append(await asyncio.wait_for(done, 10))
    finally:
        a.close()
        b.close()
    return seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_runs_on_the_backend_asked_for(backend):
    loop = ferroloop.new_event_loop(backend=backend)
    try:
        assert loop.stats()["backend"] == backend
        assert loop._poller_backend == backend
        assert loop._backend_fallback is None
        assert loop.run_until_complete(exercise(loop)) == ["ping", "level x3", "timer", "woken"]
    finally:
        loop.close()


def test_auto_runs_io_uring_where_the_kernel_allows_it():
    for loop in (ferroloop.new_event_loop(), ferroloop.new_event_loop(backend="auto"), ferroloop.Loop()):
        try:
            assert loop.stats()["backend"] == AUTO
            assert (loop._backend_fallback is None) == (AUTO == "io_uring")
        finally:
            loop.close()


def test_run_takes_a_backend():
    async def main():
        return asyncio.get_running_loop().stats()["backend"]

    assert ferroloop.run(main(), backend="epoll") == "epoll"
    assert ferroloop.run(main()) == AUTO


def test_the_environment_picks_the_backend_of_loops_made_without_one(monkeypatch):
    monkeypatch.setenv("FERROLOOP_BACKEND", "epoll")
    loop = ferroloop.new_event_loop()
    other = ferroloop.new_event_loop(backend="io_uring")
    try:
        assert loop.stats()["backend"] == "epoll"
        assert other.stats()["backend"] == "io_uring", "an explicit choice wins"
    finally:
        loop.close()
        other.close()
    monkeypatch.setenv("FERROLOOP_BACKEND", "kqueue")
    with pytest.raises(ValueError, match=r"^unknown event loop backend 'kqueue' \(from FERROLOOP_BACKEND\): expected auto, io_uring or epoll$"):
        ferroloop.new_event_loop()


@pytest.mark.parametrize("value", ["kqueue", "", "IO_URING", "io-uring"])
def test_an_unknown_backend_is_a_value_error(value):
    with pytest.raises(ValueError, match=r"^unknown event loop backend '.*': expected auto, io_uring or epoll$"):
        ferroloop.new_event_loop(backend=value)


def test_a_backend_that_is_not_a_string_is_a_type_error():
    with pytest.raises(TypeError):
        ferroloop.Loop(backend=1)  # type: ignore[arg-type]


FORK = """
import asyncio, os, socket, sys
import ferroloop

loop = ferroloop.new_event_loop(backend=sys.argv[1])
a, b = socket.socketpair()
a.setblocking(False)

async def echo(tag):
    b.send(tag)
    return await loop.sock_recv(a, 16)

assert loop.run_until_complete(echo(b"before")) == b"before"
pid = os.fork()
if pid == 0:
    # The child's loop has a ring (or epoll) of its own, registrations kept.
    ok = loop.run_until_complete(echo(b"child")) == b"child" and loop.stats()["backend"] == sys.argv[1]
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
print(loop.run_until_complete(echo(b"parent")).decode(), loop.stats()["backend"])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forked_child_builds_its_own_poller(backend):
    proc = subprocess.run(
        [sys.executable, "-c", FORK, backend], capture_output=True, text=True, timeout=60, env=child_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["child 0", f"parent {backend}"]


UNDER_FILTER = """
import asyncio, logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
import ferroloop

first = ferroloop.new_event_loop()
second = ferroloop.new_event_loop()
print(first.stats()["backend"], second.stats()["backend"])
print(first.run_until_complete(asyncio.sleep(0.01, result="ran")))
first.close()
second.close()
try:
    ferroloop.new_event_loop(backend="io_uring")
except RuntimeError as exc:
    print("forced:", exc)
"""


def test_auto_runs_on_epoll_under_a_seccomp_filter_and_says_why_once():
    proc = subprocess.run(
        [sys.executable, SECCOMP, sys.executable, "-c", UNDER_FILTER],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["epoll epoll", "ran"]
    reason = "io_uring_setup failed with EPERM: refused by a seccomp filter"
    assert out[2].startswith(f"forced: the io_uring backend is unavailable: {reason}")
    lines = [line for line in proc.stderr.splitlines() if "io_uring" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ferroloop INFO Event loop backend: epoll (io_uring unavailable: {reason}")


def serve(tmp_path: Path, *args: str, seccomp: bool) -> ServerProcess:
    (tmp_path / "backend_app.py").write_text(APP)
    port = free_port()
    argv = [FERROLOOP, "backend_app:app", "--port", str(port), *args]
    if seccomp:
        argv = [sys.executable, SECCOMP, *argv]
    return ServerProcess(argv, port=port, cwd=tmp_path, log_dir=tmp_path, env=child_env())


def test_the_server_runs_on_epoll_under_a_seccomp_filter(tmp_path):
    server = serve(tmp_path, "--workers", "2", "--metrics-port", str(free_port()), seccomp=True)
    try:
        server.wait_ready()
        assert httpx.get(server.url, timeout=10).text == "served"
        metrics = metrics_text(server, 'ferroloop_loop_backend{worker="1",backend="epoll"} 1')
        assert 'backend="io_uring"' not in metrics
        lines = [line for line in server.output().splitlines() if "io_uring unavailable" in line]
        assert len(lines) == 1, server.output()
        assert "Event loop backend: epoll (io_uring unavailable: io_uring_setup failed with EPERM" in lines[0]
    finally:
        server.kill()
        server.close_files()


def metrics_text(server: ServerProcess, wanted: str = "ferroloop_loop_backend") -> str:
    """The metrics, once they hold `wanted` (a worker answers its first
    scrape only once it is up)."""
    port = next(int(a) for a, b in zip(server.argv[1:], server.argv) if b == "--metrics-port")
    deadline = time.monotonic() + 20
    while True:
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            if wanted in text:
                return text
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no {wanted!r} in the metrics:\n{server.output()}")
        time.sleep(0.1)


def test_a_forced_io_uring_server_under_a_seccomp_filter_is_an_error(tmp_path):
    (tmp_path / "backend_app.py").write_text(APP)
    proc = subprocess.run(
        [sys.executable, SECCOMP, FERROLOOP, "backend_app:app", "--port", str(free_port()), "--backend", "io_uring"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert proc.returncode == 3, proc.stderr
    assert "--backend io_uring: the io_uring backend is unavailable: io_uring_setup failed with EPERM" in proc.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_server_and_its_metrics_name_the_backend(tmp_path, backend):
    server = serve(tmp_path, "--backend", backend, "--metrics-port", str(free_port()), seccomp=False)
    try:
        server.wait_ready()
        assert httpx.get(server.url, timeout=10).text == "served"
        wanted = f'ferroloop_loop_backend{{worker="0",backend="{backend}"}} 1'
        assert wanted in metrics_text(server, wanted)
        assert "io_uring unavailable" not in server.output()
    finally:
        server.kill()
        server.close_files()


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_stats_name_the_backend(backend):
    async def app(scope, receive, send):
        pass

    server = ferroloop.Server(ferroloop.Config(app, port=0, lifespan="off", log_level="warning"))

    async def main():
        task = asyncio.ensure_future(server.serve())
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        stats = server.stats()
        server.should_exit = True
        await task
        return stats["backend"]

    assert ferroloop.run(main(), backend=backend) == backend
