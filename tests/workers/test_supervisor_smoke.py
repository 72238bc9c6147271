"""Smoke tests of the worker supervisor (`--workers`, `--reload`): the real
`python -m ferroloop` command, real worker processes, real signals and
sockets. (The full black-box suite is tests/workers/test_workers_*.py.)"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from _helpers import ServerProcess, child_env, free_port

APP = textwrap.dedent(
    """
    import asyncio, os, time

    MODE = os.environ.get("WAPP_MODE", "")
    if MODE == "import_error":
        raise RuntimeError("boom at import")

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if MODE == "startup_fail":
                        await send({"type": "lifespan.startup.failed", "message": "no database"})
                        return
                    if MODE == "crash":
                        asyncio.get_running_loop().call_later(0.3, os._exit, 7)
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        if path == "/block":
            time.sleep(3600)  # blocks the worker's loop
        if path == "/slow":
            open("slow-started", "w").close()
            await asyncio.sleep(2.0)
        body = f"{os.getpid()} {VERSION}".encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    VERSION = "v1"
    """
)

DEADLINE = 60.0  # generous: a loaded 2-core machine


def write_app(tmp_path: Path, version: str = "v1") -> None:
    (tmp_path / "wapp.py").write_text(APP.replace('VERSION = "v1"', f'VERSION = "{version}"'))


def start(tmp_path: Path, *args: str, env: dict | None = None, port: int | None = None, wait: bool = True) -> ServerProcess:
    port = free_port() if port is None else port
    argv = [sys.executable, "-m", "ferroloop", "wapp:app", "--port", str(port), *args]
    server = ServerProcess(argv, log_dir=tmp_path, port=port, cwd=tmp_path, env=child_env(env))
    if wait:
        server.wait_ready(timeout=DEADLINE)
    return server


def children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def worker_pids(server: ServerProcess) -> set[int]:
    """The server's children that are workers (not the reload watcher)."""
    out = set()
    for pid in children(server.pid):
        try:
            cmdline = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if "State:\tZ" not in cmdline:
            out.add(pid)
    return out


def poll(predicate, what: str, server: ServerProcess, timeout: float = DEADLINE):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}:\n{server.output()}")


def get(server: ServerProcess, path: str = "/") -> httpx.Response:
    return httpx.get(server.url + path, timeout=30.0)


@pytest.fixture
def servers(tmp_path):
    started: list[ServerProcess] = []
    yield started
    for server in started:
        pids = children(server.pid)
        server.kill()
        for pid in pids:  # workers end on their own when the supervisor dies; be sure
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        server.close_files()


def test_two_workers_serve_write_a_pid_file_and_stop_on_sigterm(tmp_path, servers):
    write_app(tmp_path)
    pid_file = tmp_path / "server.pid"
    server = start(tmp_path, "--workers", "2", "--pid-file", str(pid_file))
    servers.append(server)
    workers = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    assert pid_file.read_text().strip() == str(server.pid)
    answered = {int(get(server).text.split()[0]) for _ in range(20)}
    assert answered <= workers and answered
    assert server.stop(timeout=DEADLINE) == 0
    out = server.output()
    assert f"Started parent process [{server.pid}]" in out
    assert out.count("Started server process") == 2
    assert f"Stopping parent process [{server.pid}]" in out
    assert not pid_file.exists()
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()


def test_a_killed_worker_is_replaced_and_the_others_keep_answering(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2")
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    after = poll(lambda: len(worker_pids(server) - {victim}) == 2 and worker_pids(server), "a replacement", server)
    assert victim not in after
    for _ in range(10):
        assert get(server).status_code == 200
    out = poll(lambda: f"Child process [{victim}] died" in server.output() and server.output(), "the log line", server)
    assert "killed by SIGKILL" in out


@pytest.mark.parametrize(
    ("mode", "code", "message"),
    [("import_error", 1, "boom at import"), ("startup_fail", 3, "Application startup failed")],
)
def test_a_worker_failing_at_startup_stops_the_server(tmp_path, servers, mode, code, message):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2", env={"WAPP_MODE": mode}, wait=False)
    servers.append(server)
    assert server.wait_exit(timeout=DEADLINE) == code
    out = server.output()
    assert "failed to start" in out and message in out


def test_a_crash_loop_stops_the_server_with_a_message(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2", env={"WAPP_MODE": "crash"}, wait=False)
    servers.append(server)
    assert server.wait_exit(timeout=DEADLINE) == 1
    out = server.output()
    assert "crash loop" in out and "exit code 7" in out


def test_sighup_replaces_every_worker_without_failed_requests(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2")
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    errors: list[BaseException] = []
    statuses: list[int] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=30.0) as client:  # keep-alive connections
            while not stop.is_set():
                try:
                    statuses.append(client.get(server.url).status_code)
                except httpx.HTTPError as exc:
                    errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        poll(lambda: len(statuses) > 20, "load running", server)
        server.send_signal(signal.SIGHUP)
        poll(lambda: not (worker_pids(server) & before) and len(worker_pids(server)) == 2, "new workers", server)
        seen = len(statuses)
        poll(lambda: len(statuses) > seen + 20, "load on the new workers", server)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == [] and set(statuses) == {200}, (errors[:3], server.output())


def test_a_worker_with_a_blocked_loop_fails_its_health_check(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2", "--timeout-worker-healthcheck", "1")
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)

    def block() -> None:
        try:
            httpx.get(server.url + "/block", timeout=DEADLINE)
        except httpx.HTTPError:
            pass  # its worker is killed

    t = threading.Thread(target=block, daemon=True)
    t.start()
    out = poll(lambda: "failed its health check" in server.output() and server.output(), "the health check", server)
    assert "killing it" in out
    poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server) != before, "a replacement", server)
    assert get(server).status_code == 200


def test_limit_max_requests_recycles_a_worker(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2", "--limit-max-requests", "5")
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    for _ in range(30):
        assert get(server).status_code == 200
    poll(lambda: worker_pids(server) - before, "a recycled worker", server)
    assert "Recycling worker" in server.output()


def test_reload_restarts_on_change_and_survives_a_syntax_error(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--reload", "--reload-dir", str(tmp_path), "--reload-delay", "0.1")
    servers.append(server)
    poll(lambda: "v1" in get(server).text, "v1", server)
    write_app(tmp_path, "v2")
    poll(lambda: "v2" in get(server).text, "v2 after the change", server)
    assert "WatchFiles detected changes in 'wapp.py'. Reloading..." in server.output()
    (tmp_path / "wapp.py").write_text("def broken(:\n")
    poll(lambda: "SyntaxError" in server.output(), "the syntax error reported", server)
    assert server.proc.poll() is None
    write_app(tmp_path, "v3")
    poll(lambda: "v3" in get(server).text, "v3 after the fix", server)


def test_systemd_socket_activation(tmp_path, servers):
    write_app(tmp_path)
    port = free_port()
    launcher = textwrap.dedent(
        f"""
        import os, socket, sys
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", {port}))
        s.listen(128)
        if s.fileno() == 3:
            os.set_inheritable(3, True)
        else:
            os.dup2(s.fileno(), 3)  # inheritable
        os.environ["LISTEN_FDS"] = "1"
        os.environ["LISTEN_PID"] = str(os.getpid())
        os.execv(sys.executable, [sys.executable, "-m", "ferroloop", "wapp:app", "--workers", "2", "--port", "1"])
        """
    )
    argv = [sys.executable, "-c", launcher]
    server = ServerProcess(argv, log_dir=tmp_path, port=port, cwd=tmp_path, env=child_env())
    servers.append(server)
    server.wait_ready(timeout=DEADLINE)
    poll(lambda: len(worker_pids(server)) == 2, "two workers", server)
    assert get(server).status_code == 200
    assert server.stop(timeout=DEADLINE) == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_uds_permissions(tmp_path, servers, workers):
    write_app(tmp_path)
    path = str(tmp_path / "s.sock")
    argv = [sys.executable, "-m", "ferroloop", "wapp:app", "--uds", path, "--uds-permissions", "0o640", "--workers", workers]
    server = ServerProcess(argv, log_dir=tmp_path, uds=path, cwd=tmp_path, env=child_env())
    servers.append(server)
    server.wait_ready(timeout=DEADLINE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    transport = httpx.HTTPTransport(uds=path)
    with httpx.Client(transport=transport, timeout=30.0) as client:
        assert client.get("http://x/").status_code == 200
    assert server.stop(timeout=DEADLINE) == 0
    assert not os.path.exists(path)


def test_server_serve_refuses_workers(tmp_path):
    code = textwrap.dedent(
        """
        import ferroloop
        from ferroloop.server._server import Server
        async def app(scope, receive, send): pass
        try:
            ferroloop.run(Server(ferroloop.Config(app, workers=2)).serve())
        except RuntimeError as exc:
            print("refused:", exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE, env=child_env())
    assert "refused: Server.serve() runs one process" in out.stdout, out.stderr


def test_a_signal_to_a_worker_stays_in_the_worker(tmp_path, servers):
    """Fork safety: a worker forked from inside the supervisor's running
    loop must not write its signals into the supervisor's wake-up fd (the
    supervisor would take a worker's SIGTERM for its own and stop)."""
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2")
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    victim = min(before)
    os.kill(victim, signal.SIGTERM)  # the worker drains and exits 0
    poll(lambda: len(worker_pids(server) - {victim}) == 2, "a replacement", server)
    assert server.proc.poll() is None
    assert "Stopping parent process" not in server.output()
    assert get(server).status_code == 200


def test_sigttin_and_sigttou_add_and_remove_a_worker(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2")
    servers.append(server)
    poll(lambda: len(worker_pids(server)) == 2, "two workers", server)
    server.send_signal(signal.SIGTTIN)
    poll(lambda: len(worker_pids(server)) == 3, "three workers", server)
    server.send_signal(signal.SIGTTOU)
    poll(lambda: len(worker_pids(server)) == 2, "two workers again", server)
    assert get(server).status_code == 200


def test_sigterm_lets_in_flight_requests_finish(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2")
    servers.append(server)
    poll(lambda: len(worker_pids(server)) == 2, "two workers", server)
    results: list[int] = []
    t = threading.Thread(target=lambda: results.append(get(server, "/slow").status_code))
    t.start()
    poll(lambda: (tmp_path / "slow-started").exists(), "the request in the app", server)
    server.send_signal(signal.SIGTERM)
    t.join(DEADLINE)
    assert results == [200], server.output()
    assert server.wait_exit(timeout=DEADLINE) == 0


def test_workers_max_rss_recycles(tmp_path, servers):
    write_app(tmp_path)
    server = start(tmp_path, "--workers", "2", "--workers-max-rss", "1")  # every worker is above 1 MiB
    servers.append(server)
    before = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    poll(lambda: worker_pids(server) - before, "a recycled worker", server)
    assert "above workers_max_rss=1" in server.output()
    assert get(server).status_code == 200


@pytest.mark.parametrize("preload", [False, True])
def test_preload_imports_the_app_in_the_parent_only(tmp_path, servers, preload):
    write_app(tmp_path)
    marks = tmp_path / "imports"
    with open(tmp_path / "wapp.py", "a") as f:
        f.write(f"\nwith open({str(marks)!r}, 'a') as _f:\n    _f.write(f'{{os.getpid()}}\\n')\n")
    server = start(tmp_path, "--workers", "2", *(["--preload"] if preload else []))
    servers.append(server)
    workers = poll(lambda: len(worker_pids(server)) == 2 and worker_pids(server), "two workers", server)
    poll(lambda: get(server).status_code == 200, "serving", server)
    importers = {int(p) for p in marks.read_text().split()}
    assert importers == ({server.pid} if preload else workers)
