"""`ferroloop.gunicorn.Worker` under real gunicorn: both workers answer
(the app's lifespan runs in each), a worker killed with SIGKILL is
replaced by gunicorn's arbiter, SIGHUP replaces every worker, SIGTERM
drains a slow request in flight and exits 0; gunicorn's `--max-requests`
recycles workers; a lifespan failure stops gunicorn (boot error)."""

from __future__ import annotations

import os
import signal
import threading

import httpx

from workers_support import EVENT_TIMEOUT, Load, free_port, wait_for


def test_gunicorn_serves_respawns_and_restarts(gunicorn):
    second_port = free_port()
    server = gunicorn("-w", "2", "--graceful-timeout", "30", "-b", f"127.0.0.1:{second_port}")
    pids = server.wait_workers(2)
    assert server.answering_pids(2) == pids
    # Every --bind is served.
    assert httpx.get(f"http://127.0.0.1:{second_port}/", timeout=10.0).text == "hello"
    response = httpx.get(server.base_url() + "/", timeout=10.0)
    assert response.text == "hello" and response.headers["server"] == "ferroloop"

    victim = min(pids)
    os.kill(victim, signal.SIGKILL)
    after_kill = server.wait_workers(2, not_in={victim})
    assert server.answering_pids(2) == after_kill

    server.send_signal(signal.SIGHUP)
    restarted = server.wait_workers(2, not_in=after_kill, timeout=60.0)
    assert server.answering_pids(2) == restarted
    assert server.stop() == 0
    assert "Booting worker with pid" in server.output()


def test_gunicorn_sigterm_drains_a_slow_request(gunicorn, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    server = gunicorn("-w", "2", "--graceful-timeout", "30", env={"WAPP_MARKS": str(marks), "WAPP_SLOW": "3"})
    server.wait_workers(2)
    results: list = []
    thread = threading.Thread(
        target=lambda: results.append(httpx.get(server.base_url() + "/slow?held", timeout=EVENT_TIMEOUT).text), daemon=True
    )
    thread.start()
    wait_for(lambda: (marks / "held").exists(), lambda: f"slow request not started:\n{server.output()}")
    server.send_signal(signal.SIGTERM)
    thread.join(EVENT_TIMEOUT)
    assert results == ["slow done"], server.output()
    assert server.wait_exit() == 0


def test_gunicorn_max_requests_recycles_without_failures(gunicorn):
    server = gunicorn("-w", "2", "--max-requests", "100", "--max-requests-jitter", "20")
    first = server.wait_workers(2)
    with Load(server.base_url(), keepalive=3, fresh=1) as load:
        server.wait_workers(2, not_in=first, timeout=90.0)
        load.wait_more(50)
    assert load.failures == [] and load.wrong == [], (load.failures[:5], load.wrong[:5])


def test_gunicorn_lifespan_failure_is_a_boot_error(app_dir):
    from workers_support import GUNICORN, Supervised, child_env, free_port

    port = free_port()
    argv = [str(GUNICORN), "-k", "ferroloop.gunicorn.Worker", "-b", f"127.0.0.1:{port}", "-w", "1", "wapp:app"]
    server = Supervised(argv, port=port, cwd=app_dir, env=child_env({"WAPP_STARTUP_FAIL": "no database"}), log_dir=app_dir)
    try:
        code = server.wait_exit(timeout=EVENT_TIMEOUT)
        assert code == 3, server.output()  # gunicorn: "Worker failed to boot."
        assert "no database" in server.output()
    finally:
        server.kill()
        server.close_files()


def test_gunicorn_sighup_under_load_drops_nothing(gunicorn):
    # gunicorn's reload: new workers first, then SIGTERM to the old ones,
    # which hand over (idle keep-alive connections answer once more, closing).
    server = gunicorn("-w", "2", "--graceful-timeout", "30")
    old = server.wait_workers(2)
    with Load(server.base_url(), keepalive=4, fresh=2) as load:
        load.wait_more(100)
        server.send_signal(signal.SIGHUP)
        server.wait_workers(2, not_in=old, timeout=60.0)
        load.wait_more(100)
    assert load.failures == [] and load.wrong == [], (len(load.failures), load.failures[:5], load.wrong[:5])
