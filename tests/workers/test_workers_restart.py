"""Restarts without dropping a request: SIGHUP's rolling restart and the
recycling of workers (`--limit-max-requests`, `--workers-max-rss`)
under load with zero failed requests; SIGHUPs during a rolling restart
queueing one more; SIGTERM draining slow requests in flight; one Ctrl-C
letting a worker that hands over finish; a second SIGINT stopping at
once."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import httpx

from workers_support import EVENT_TIMEOUT, Load, alive, wait_for


def assert_clean(load: Load) -> None:
    assert load.failures == [], f"{len(load.failures)} failed requests (of {load.ok} ok): {load.failures[:5]}"
    assert load.wrong == [], load.wrong[:5]


def test_sighup_rolling_restart_under_load_drops_nothing(spawn):
    server = spawn("--workers", "2")
    old = server.wait_workers(2)
    with Load(server.base_url(), keepalive=4, fresh=2) as load:
        load.wait_more(100)
        server.send_signal(signal.SIGHUP)
        new = server.wait_workers(2, not_in=old, timeout=60.0)
        load.wait_more(100)

        def only_new_workers_answer() -> bool:
            # A window of requests after the old workers exited.
            load.reset_pids()
            load.wait_more(20)
            return load.pids_seen() <= new

        wait_for(only_new_workers_answer, lambda: f"old workers still answer: {load.pids_seen()} vs {new}")
    assert_clean(load)
    assert server.proc.poll() is None
    assert server.stop() == 0


def test_sighups_during_a_rolling_restart_queue_one_more(spawn, tmp_path):
    hold = tmp_path / "hold"
    server = spawn("--workers", "2", env={"WAPP_HOLD": str(hold)})
    old = server.wait_workers(2)
    assert server.answering_pids(2) == old  # both started: only new workers are held
    hold.touch()  # new workers wait in their startup: the restart stays running
    server.send_signal(signal.SIGHUP)
    server.wait_workers(3)  # the first replacement, held
    for n in (1, 2):  # one at a time: the kernel merges a signal into a pending one
        server.send_signal(signal.SIGHUP)
        wait_for(lambda: server.output().count("a rolling restart is running; another one follows it") == n,
                 lambda: f"SIGHUP {n} during the restart not taken:\n{server.output()}")
    hold.unlink()
    # Two restarts (the second for both SIGHUPs): each retires two workers.
    wait_for(lambda: server.output().count("SIGHUP restart (exit code 0)") == 4,
             lambda: f"not two whole restarts:\n{server.output()}", timeout=90.0)
    out = server.output()
    assert out.count("Restarting the workers again") == 1, out
    assert out.count("Started server process") == 6, out
    assert not server.wait_workers(2) & old
    assert httpx.get(server.base_url() + "/", timeout=EVENT_TIMEOUT).text == "hello"
    assert server.stop() == 0


def test_limit_max_requests_recycles_workers_without_failures(spawn):
    server = spawn("--workers", "2", "--limit-max-requests", "150", "--limit-max-requests-jitter", "50")
    first = server.wait_workers(2)
    with Load(server.base_url(), keepalive=3, fresh=1) as load:
        # Well past two workers' limits: every first worker is recycled.
        server.wait_workers(2, not_in=first, timeout=90.0)
        load.wait_more(50)
    assert_clean(load)
    assert server.proc.poll() is None  # recycling never stops the server
    assert "Maximum request limit" in server.output()


def test_workers_lifetime_recycles_workers_without_failures(spawn):
    server = spawn("--workers", "2", "--workers-lifetime", "3")
    first = server.wait_workers(2)
    with Load(server.base_url(), keepalive=3, fresh=1) as load:
        server.wait_workers(2, not_in=first, timeout=60.0)
        load.wait_more(50)
    assert_clean(load)
    assert server.proc.poll() is None


def test_workers_max_rss_recycles_a_worker(spawn):
    server = spawn("--workers", "2", "--workers-max-rss", "150")
    pids = server.wait_workers(2)
    # One worker grows past the limit (written memory, so resident).
    hog = int(httpx.get(server.base_url() + "/alloc?200", timeout=30.0).text.split()[1])
    assert hog in pids
    now = server.wait_workers(2, not_in={hog}, timeout=60.0)
    assert pids - {hog} <= now  # the other worker was left alone
    assert str(hog) in server.output()
    assert httpx.get(server.base_url() + "/", timeout=10.0).text == "hello"


def slow_requests(server, n: int, marks) -> tuple[list[threading.Thread], list]:
    """`n` slow requests on their own connections, started and waited for
    until the app began each of them."""
    results: list = []

    def one(i: int) -> None:
        try:
            response = httpx.get(f"{server.base_url()}/slow?r{i}", timeout=EVENT_TIMEOUT)
            results.append((response.status_code, response.text))
        except httpx.HTTPError as exc:
            results.append(repr(exc))

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    wait_for(lambda: all((marks / f"r{i}").exists() for i in range(n)), lambda: f"slow requests not started:\n{server.output()}")
    return threads, results


def test_sigterm_drains_slow_requests_in_flight(spawn, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    server = spawn("--workers", "2", "--timeout-graceful-shutdown", "30", env={"WAPP_MARKS": str(marks), "WAPP_SLOW": "3"})
    server.wait_workers(2)
    threads, results = slow_requests(server, 4, marks)
    server.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(EVENT_TIMEOUT)
    assert results == [(200, "slow done")] * 4, f"{results}\n{server.output()}"
    assert server.wait_exit() == 0
    assert server.workers() == set()


def test_second_sigint_stops_at_once(spawn, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {"WAPP_MARKS": str(marks), "WAPP_SLOW": "600"}
    server = spawn("--workers", "2", "--timeout-graceful-shutdown", "600", env=env)
    pids = server.wait_workers(2)
    threads, results = slow_requests(server, 2, marks)
    server.send_signal(signal.SIGINT)
    # Draining: the slow requests hold the workers (far longer than this test waits).
    server.wait_output("Waiting for connections to close")
    assert server.proc.poll() is None
    server.send_signal(signal.SIGINT)
    server.wait_exit(timeout=EVENT_TIMEOUT)
    wait_for(lambda: not any(alive(p) for p in pids), lambda: f"workers left after the second SIGINT: {pids}")


def test_one_ctrl_c_lets_a_worker_handing_over_finish(spawn, tmp_path):
    """A Ctrl-C reaches the whole process group: the parent and every
    worker get SIGINT. A worker already draining (handing over after a
    SIGHUP) must not take it as a second Ctrl-C and cut its requests."""
    marks = tmp_path / "marks"
    marks.mkdir()
    gate = tmp_path / "gate"
    gate.touch()  # the slow request answers once this is gone
    env = {"WAPP_MARKS": str(marks), "WAPP_SLOW_GATE": str(gate)}
    server = spawn("--workers", "2", "--timeout-graceful-shutdown", "60", env=env)
    old = server.wait_workers(2)
    threads, results = slow_requests(server, 1, marks)
    slow_pid = int((marks / "r0").read_text())
    server.send_signal(signal.SIGHUP)
    # Both replaced; the slow request's worker drains, holding it.
    wait_for(lambda: len(server.workers() - old) == 2, lambda: f"no replacements:\n{server.output()}")
    server.wait_output("Waiting for connections to close")
    for pid in {server.pid} | server.workers():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
    # The parent stops every other worker; the one handing over still runs.
    wait_for(lambda: server.workers() <= {slow_pid}, lambda: f"{server.workers()} vs {slow_pid}:\n{server.output()}")
    gate.unlink()
    for thread in threads:
        thread.join(EVENT_TIMEOUT)
    assert results == [(200, "slow done")], f"{results}\n{server.output()}"
    assert server.wait_exit(timeout=EVENT_TIMEOUT) == 0
