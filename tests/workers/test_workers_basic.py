"""`--workers N` as an operator uses it: how many workers run
(`--workers`, `WEB_CONCURRENCY`, `0`/`auto`), uvicorn's process log lines,
SIGTERM stopping every worker, SIGTTIN/SIGTTOU, `--pid-file`, `--uds`
with `--uds-permissions`, systemd socket activation (`LISTEN_FDS`), and
what a worker inherits (the listener, not the parent's signal sockets)."""

from __future__ import annotations

import os
import signal
import socket
import stat
import sys

import httpx
import pytest

from workers_support import alive, fd_targets, listening_socket, listening_sockets, server_command, wait_for


def test_two_workers_answer_and_sigterm_stops_them_all(spawn):
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    assert server.answering_pids(2) == pids  # each worker serves, none is the parent
    assert server.stop(signal.SIGTERM) == 0
    assert not any(alive(p) for p in pids)
    out = server.output()
    assert f"Started parent process [{server.pid}]" in out, out
    for pid in pids:
        assert f"Started server process [{pid}]" in out, out
    assert f"Stopping parent process [{server.pid}]" in out, out


def test_a_worker_shares_only_the_listener_with_the_parent(spawn):
    """After the fork a worker closes what is the parent's: its signal
    wake-up socketpair, its other workers' control channels. What stays
    shared is the listening socket the workers accept on."""
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    listeners = listening_sockets(server.port)
    assert len(listeners) == 1, listeners
    parent = fd_targets(server.pid, "socket")
    assert listeners <= parent
    for pid in pids:
        assert fd_targets(pid, "socket") & parent == listeners, (pid, server.output())


def test_web_concurrency_sets_the_default(spawn):
    server = spawn(env={"WEB_CONCURRENCY": "3"})
    server.wait_workers(3)


@pytest.mark.parametrize("value", ["0", "auto"])
def test_workers_auto_and_zero_mean_one_per_cpu(spawn, value):
    server = spawn("--workers", value)
    server.wait_workers(len(os.sched_getaffinity(0)))


def test_bad_workers_value_is_a_usage_error(spawn):
    server = spawn("--workers", "many", ready=False)
    assert server.wait_exit() == 2
    assert "--workers" in server.output()


def test_sigttin_adds_and_sigttou_removes_a_worker(spawn):
    server = spawn("--workers", "2")
    first = server.wait_workers(2)
    server.send_signal(signal.SIGTTIN)
    grown = server.wait_workers(3)
    assert first < grown
    server.send_signal(signal.SIGTTOU)
    server.wait_workers(2)
    server.send_signal(signal.SIGTTOU)
    server.wait_workers(1)
    assert httpx.get(server.base_url() + "/", timeout=10.0).text == "hello"


def test_pid_file_holds_the_parent_and_is_removed_at_exit(spawn, tmp_path):
    pid_file = tmp_path / "run" / "ferroloop.pid"
    pid_file.parent.mkdir()
    server = spawn("--workers", "2", "--pid-file", str(pid_file))
    # Written after binding: the port may accept a moment before.
    text = wait_for(lambda: pid_file.exists() and pid_file.read_text().strip().isdigit() and pid_file.read_text(),
                    lambda: f"no pid file:\n{server.output()}")
    assert int(text) == server.pid
    assert server.stop() == 0
    assert not pid_file.exists()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_uds_with_permissions(spawn, tmp_path, workers):
    path = str(tmp_path / "app.sock")
    server = spawn("--workers", workers, "--uds", path, "--uds-permissions", "0o600", port=None, uds=path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    transport = httpx.HTTPTransport(uds=path)
    with httpx.Client(transport=transport, base_url="http://x", timeout=10.0) as client:
        assert client.get("/").text == "hello"
    if workers == "2":
        pids = server.wait_workers(2)
        seen: set[int] = set()

        def both_answered() -> bool:
            # A new connection each time: both workers accept on the socket.
            with httpx.Client(transport=httpx.HTTPTransport(uds=path), timeout=10.0) as client:
                seen.add(int(client.get("http://x/pid").text))
            return seen == pids

        wait_for(both_answered, lambda: f"only {seen} of {pids} answered over the socket:\n{server.output()}")
    assert server.stop() == 0
    assert not os.path.exists(path)


# Sets LISTEN_PID to its own pid (exec keeps it) and moves the socket to
# fd 3, as systemd does, then runs the command.
ACTIVATE = """
import os, sys
fd = int(sys.argv[1])
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
"""


def test_systemd_socket_activation(spawn):
    sock = listening_socket()
    port = sock.getsockname()[1]
    try:
        argv = [sys.executable, "-c", ACTIVATE, str(sock.fileno()), *server_command(), "wapp:app", "--workers", "2"]
        server = spawn(argv=argv, port=port, pass_fds=(sock.fileno(),), ready=False)
    finally:
        sock.close()  # only the server holds it now
    server.wait_ready(timeout=40.0)
    server.wait_workers(2)
    assert len(server.answering_pids(2)) == 2
    assert server.stop() == 0


def test_listen_fds_for_another_process_is_ignored(spawn):
    # LISTEN_PID names some other process: the socket is not ours, bind the port.
    server = spawn("--workers", "1", env={"LISTEN_FDS": "1", "LISTEN_PID": "1"})
    assert httpx.get(server.base_url() + "/", timeout=10.0).text == "hello"


def test_fd_with_workers(spawn):
    sock = listening_socket()
    port = sock.getsockname()[1]
    fd = sock.fileno()
    try:
        argv = [*server_command(), "wapp:app", "--workers", "2", "--fd", str(fd)]
        server = spawn(argv=argv, port=port, pass_fds=(fd,), ready=False)
    finally:
        sock.close()
    server.wait_ready(timeout=40.0)
    assert len(server.answering_pids(2)) == 2


def test_single_process_has_no_workers(spawn):
    server = spawn("--workers", "1")
    pid = int(httpx.get(server.base_url() + "/pid", timeout=10.0).text)
    # One worker under the parent (or the parent serving itself): never two.
    assert pid == server.pid or server.workers() == {pid}


def test_second_bind_fails_with_exit_1(spawn):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    try:
        server = spawn("--workers", "2", "--host", "127.0.0.1", "--port", str(port), port=None, ready=False)
        assert server.wait_exit() == 1
        assert "error while attempting to bind" in server.output()
    finally:
        sock.close()


def imported_in(directory) -> set[int]:
    return {int(p.name.split("-")[1]) for p in directory.iterdir()}


@pytest.mark.parametrize("preload", [False, True])
def test_each_worker_imports_the_app_unless_preload(spawn, tmp_path, preload):
    imports = tmp_path / "imports"
    imports.mkdir()
    args = ["--workers", "2"] + (["--preload"] if preload else [])
    server = spawn(*args, env={"WAPP_IMPORTS": str(imports)})
    pids = server.wait_workers(2)
    server.answering_pids(2)
    if preload:
        # Once, in the parent, before forking: the workers share it.
        assert imported_in(imports) == {server.pid}
    else:
        # After the fork, in each worker (the parent never imports it).
        assert imported_in(imports) == pids


def test_sigterm_to_every_process_at_once_is_a_clean_stop(spawn):
    """systemd's default KillMode=control-group (and `pkill -f`) signal the
    parent and every worker at the same moment. Workers that exit before the
    parent sees its own signal are not crashes: nothing is logged as an
    error and no replacement starts."""
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    assert server.answering_pids(2) == pids
    for pid in sorted(pids):  # the workers first: their exits race the parent's signal
        os.kill(pid, signal.SIGTERM)
    os.kill(server.pid, signal.SIGTERM)
    assert server.proc.wait(timeout=30) == 0
    out = server.output()
    assert "ERROR" not in out, out
    assert out.count("Started server process") == 2, out
    assert not any(alive(p) for p in pids)


def test_a_worker_stopped_from_outside_is_replaced_without_an_error(spawn):
    """A worker sent SIGTERM on its own drains, exits 0 and is replaced;
    that is logged, but not as an error (a crash or kill -9 is)."""
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    assert server.answering_pids(2) == pids
    victim = min(pids)
    os.kill(victim, signal.SIGTERM)  # it drains and exits 0
    server.wait_workers(2, not_in={victim})
    out = server.output()
    assert f"Child process [{victim}] exited: worker" in out and "not asked to by the parent" in out, out
    assert "ERROR" not in out, out
    assert server.stop(signal.SIGTERM) == 0
