"""Supervision under load: a worker killed with SIGKILL is replaced while
the others keep answering correctly; a crash loop and a worker failing
at startup stop the server with the right exit code and message; a
worker whose loop is blocked fails its health check and is replaced."""

from __future__ import annotations

import os
import signal
import socket

import httpx

from workers_support import Load, wait_for


def test_kill_9_a_worker_under_load(spawn):
    server = spawn("--workers", "2")
    pids = server.wait_workers(2)
    victim = min(pids)
    with Load(server.base_url()) as load:
        load.wait_more(50)
        os.kill(victim, signal.SIGKILL)
        replaced = server.wait_workers(2, not_in={victim})
        load.wait_more(50)
        # The survivor kept answering and the replacement answers too.
        load.reset_pids()
        wait_for(lambda: replaced <= load.pids_seen(), lambda: f"not every worker answered: {load.pids_seen()} vs {replaced}")
    # Only connections the dead worker held may fail; no response is ever wrong.
    assert load.wrong == []
    assert server.wait_output(f"Child process [{victim}] died")
    assert "SIGKILL" in server.output(), server.output()
    assert server.proc.poll() is None  # the supervisor lives on


def test_crash_loop_stops_the_server(spawn):
    # Every worker dies half a second after it started serving.
    server = spawn("--workers", "2", env={"WAPP_EXIT_AFTER": "0.5"}, ready=False)
    code = server.wait_exit(timeout=90.0)
    out = server.output()
    assert code not in (0, None), out
    # The message names the cause.
    assert "crash" in out.lower() or "in a row" in out.lower(), out


def test_import_error_in_the_workers_exits_1(spawn):
    server = spawn("--workers", "2", env={"WAPP_IMPORT_FAIL": "1"}, ready=False)
    assert server.wait_exit() == 1
    out = server.output()
    assert "Error loading ASGI app" in out and "wapp refuses to import" in out, out


def test_lifespan_failure_in_the_workers_exits_3(spawn):
    server = spawn("--workers", "2", "--lifespan", "on", env={"WAPP_STARTUP_FAIL": "no database here"}, ready=False)
    assert server.wait_exit() == 3
    assert "no database here" in server.output()


def test_blocked_worker_fails_its_health_check_and_is_replaced(spawn):
    server = spawn("--workers", "2", "--timeout-worker-healthcheck", "2")
    pids = server.wait_workers(2)
    # The request never gets an answer: the worker that takes it spins
    # for good (the connection stays open until that worker is killed).
    spinner = socket.create_connection(("127.0.0.1", server.port), timeout=10.0)
    spinner.sendall(b"GET /spin HTTP/1.1\r\nHost: x\r\n\r\n")

    def replaced():
        now = server.workers()
        return now if len(now) == 2 and pids - now else None

    survivors = wait_for(replaced, lambda: f"no worker replaced: {server.workers()} vs {pids}:\n{server.output()}", timeout=60.0)
    spinner.close()
    dead = pids - survivors
    assert len(dead) == 1, (pids, survivors)
    (victim,) = dead
    line = server.wait_output("failed its health check")
    assert any("failed its health check" in l and str(victim) in l for l in line.splitlines()), line
    assert httpx.get(server.base_url() + "/", timeout=10.0).text == "hello"
