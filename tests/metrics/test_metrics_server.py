"""`--metrics-port` on a single-process server (worker "0"): known
traffic, then the exposition (parsed by prometheus_client), /stats and
/healthz checked against it; /healthz while the app is at its
limit_concurrency; the settings' errors."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys

import httpx
import websockets

from _helpers import free_port
from metrics_support import TIMEOUT, hold_slots, release, scrape

N_GET, M_POST, K_404 = 7, 3, 2
POST_BODY = b"x" * 1000


def send_traffic(url: str) -> None:
    with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
        for _ in range(N_GET):
            response = client.get("/")
            assert response.status_code == 200 and response.content == b"Hello, World!"
        for _ in range(M_POST):
            response = client.post("/echo", content=POST_BODY)
            assert response.status_code == 200 and response.content == POST_BODY
        for _ in range(K_404):
            assert client.get("/missing").status_code == 404

    async def ws_session():
        async with websockets.connect(url.replace("http://", "ws://") + "/ws", open_timeout=TIMEOUT) as ws:
            await ws.send("one")
            assert await asyncio.wait_for(ws.recv(), TIMEOUT) == "one"
            await ws.send(b"two")
            assert await asyncio.wait_for(ws.recv(), TIMEOUT) == b"two"

    asyncio.run(ws_session())


def poll(check, timeout: float = TIMEOUT):
    """Scrape until `check(samples)` holds (counters of a closing
    connection land when the server has seen it close)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _closed_all(url: str):
    samples, types = scrape(url)
    assert samples.value("ferroloop_connections_open", worker="0") == 0
    return samples, types


def test_metrics_match_the_traffic(metrics_cli):
    child = metrics_cli()
    # The fixture's readiness probe was a connection: count from here.
    before, _ = poll(lambda: _closed_all(child.metrics_url))
    accepted = before.value("ferroloop_connections_accepted_total", worker="0")
    send_traffic(child.url)

    def check():
        samples, _ = scrape(child.metrics_url)
        w = {"worker": "0"}
        # The upgrade request is a GET too.
        assert samples.value("ferroloop_requests_total", method="GET", **w) == N_GET + K_404 + 1
        assert samples.value("ferroloop_requests_total", method="POST", **w) == M_POST
        assert samples.value("ferroloop_requests_total", method="PUT", **w) == 0
        assert samples.value("ferroloop_responses_total", status_class="2xx", **w) == N_GET + M_POST
        assert samples.value("ferroloop_responses_total", status_class="4xx", **w) == K_404
        assert samples.value("ferroloop_responses_total", status_class="5xx", **w) == 0
        assert samples.value("ferroloop_requests_in_flight", **w) == 0
        # One keep-alive connection for the HTTP requests, one for the WebSocket.
        assert samples.value("ferroloop_connections_accepted_total", **w) == accepted + 2
        assert samples.value("ferroloop_connections_closed_total", **w) == accepted + 2
        assert samples.value("ferroloop_connections_open", **w) == 0
        assert samples.value("ferroloop_received_bytes_total", **w) > M_POST * len(POST_BODY)
        assert samples.value("ferroloop_sent_bytes_total", **w) > M_POST * len(POST_BODY)
        assert samples.value("ferroloop_websocket_sessions_total", **w) == 1
        assert samples.value("ferroloop_websocket_sessions_open", **w) == 0
        assert samples.value("ferroloop_websocket_messages_received_total", **w) == 2
        assert samples.value("ferroloop_websocket_messages_sent_total", **w) == 2
        assert samples.value("ferroloop_websocket_closes_total", code="1000", **w) == 1
        assert samples.value("ferroloop_app_exceptions_total", **w) == 0
        assert samples.value("ferroloop_rejections_total", code="503", **w) == 0
        assert samples.value("ferroloop_loop_ticks_total", **w) > 0
        assert samples.value("ferroloop_loop_callbacks_total", **w) > 0
        assert 0.0 < samples.value("ferroloop_loop_utilization", **w) <= 1.0
        assert samples.value("ferroloop_loop_fds", **w) >= 2  # the two listeners at least
        assert samples.value("ferroloop_worker_healthy", **w) == 1
        return samples

    samples = poll(check)
    # Scraping does not count as app traffic: a second scrape sees the same.
    again, _ = scrape(child.metrics_url)
    for name, labels in [("ferroloop_requests_total", {"method": "GET"}), ("ferroloop_connections_accepted_total", {})]:
        assert again.value(name, worker="0", **labels) == samples.value(name, worker="0", **labels)

    doc = httpx.get(child.metrics_url + "/stats", timeout=TIMEOUT).json()
    assert list(doc["workers"]) == ["0"]
    worker = doc["workers"]["0"]
    assert worker["pid"] == child.proc.pid
    assert worker["server"]["requests"]["by_method"]["POST"] == M_POST
    assert worker["server"]["requests"]["total"] == N_GET + K_404 + 1 + M_POST
    assert worker["server"]["websocket"]["close_codes"]["1000"] == 1
    assert doc["total"]["server"] == worker["server"]
    assert doc["total"]["loop"]["ticks"] > 0

    health = httpx.get(child.metrics_url + "/healthz", timeout=TIMEOUT)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert child.proc.stop(signal.SIGTERM) == 0


def test_healthz_answers_while_the_app_is_at_its_limit(metrics_cli):
    child = metrics_cli("--limit-concurrency", "4")
    held = hold_slots(child.url, "/slow")
    try:
        # The app's listener is full: it answers 503 itself ...
        with httpx.Client(timeout=TIMEOUT) as client:
            assert client.get(child.url + "/").status_code == 503
            # ... while the metrics listener, with its own limit, answers.
            health = client.get(child.metrics_url + "/healthz")
            assert health.status_code == 200, health.text
            assert health.json()["status"] == "ok"
            samples, _ = scrape(child.metrics_url)
            assert 1 <= samples.value("ferroloop_requests_in_flight", worker="0") <= len(held)
            assert samples.value("ferroloop_rejections_total", code="503", worker="0") >= 1
    finally:
        release(held)
    assert child.proc.stop(signal.SIGTERM) == 0


def test_metrics_address(metrics_cli):
    child = metrics_cli("--metrics-address", "127.0.0.2", metrics_host="127.0.0.2")
    assert httpx.get(child.metrics_url + "/healthz", timeout=TIMEOUT).status_code == 200
    with socket.socket() as s:
        s.settimeout(TIMEOUT)
        assert s.connect_ex(("127.0.0.1", child.metrics_port)) != 0  # not on the other address


def test_metrics_port_in_use_fails_startup(metrics_cli):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        child = metrics_cli(metrics_port=port, wait=False)
        code = child.proc.wait_exit()
        output = child.proc.output()
    assert code == 1, output
    assert f"error while attempting to bind on address ('127.0.0.1', {port}): address already in use" in output


def test_bad_metrics_port_is_a_usage_error(tmp_path):
    from _helpers import PROJECT_ROOT, child_env
    import subprocess

    for value in ("70000", "abc", "-1"):
        result = subprocess.run(
            [sys.executable, "-m", "ferroloop", "tests.metrics.metrics_apps:app", "--metrics-port", value],
            cwd=PROJECT_ROOT,
            env=child_env(pythonpath=(str(PROJECT_ROOT),)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert f"invalid value '{value}' for '--metrics-port'" in result.stderr


def test_config_checks_the_settings():
    import pytest

    import ferroloop

    app = lambda *a: None  # noqa: E731
    assert ferroloop.Config(app).metrics_port is None
    assert ferroloop.Config(app, metrics_port=9100, metrics_address="::1").metrics_address == "::1"
    for bad in (-1, 65536, "9100", True):
        with pytest.raises(ValueError, match="metrics_port"):
            ferroloop.Config(app, metrics_port=bad)
    with pytest.raises(ValueError, match="metrics_address"):
        ferroloop.Config(app, metrics_address="")
    assert free_port()  # the helper the fixtures use


def test_healthz_reports_draining_until_the_listener_closes(metrics_cli):
    child = metrics_cli()
    held = socket.create_connection(("127.0.0.1", child.port), timeout=TIMEOUT)
    try:
        held.sendall(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")

        def slow_request_running():
            text = httpx.get(child.metrics_url + "/metrics", timeout=TIMEOUT).text
            assert re.search(r"^ferroloop_requests_in_flight\{[^}]*\} 1$", text, re.M), text

        # Signalled before the server has read the request, the drain would
        # have nothing to wait for (a slow machine, as the debug build is).
        poll(slow_request_running)
        child.proc.send_signal(signal.SIGTERM)

        def draining():
            response = httpx.get(child.metrics_url + "/healthz", timeout=TIMEOUT)
            assert response.status_code == 503, response.text
            return response.json()

        body = poll(draining)
        assert body["status"] == "draining"
    finally:
        held.close()  # the slow request ends: the drain completes
    assert child.proc.wait_exit() == 0
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", child.metrics_port)) != 0
