"""The supervisor's metrics listener (`--workers 2 --metrics-port`): a
worker whose loop is blocked (it answers no scrape) is reported with
`ferroloop_worker_healthy` 0, `"healthy": false` in /stats and in
/healthz's `unhealthy`, while the other still reports its counters; and a
scrape cancelled while it waits for the workers stops waiting."""

from __future__ import annotations

import asyncio
import threading
import types

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from workers_support import EVENT_TIMEOUT, free_port, wait_for

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def healthy_gauge(metrics_url: str) -> dict[str, float]:
    response = httpx.get(metrics_url + "/metrics", timeout=EVENT_TIMEOUT)
    assert response.status_code == 200 and response.headers["content-type"] == CONTENT_TYPE
    out = {}
    for family in text_string_to_metric_families(response.text):
        if family.name == "ferroloop_worker_healthy":
            out = {sample.labels["worker"]: sample.value for sample in family.samples}
    return out


def test_a_worker_that_does_not_answer_is_reported_unhealthy(spawn):
    mport = free_port()
    # A health check that takes longer than this test: the blocked worker
    # stays (it is not killed) and only the scrapes see it silent.
    server = spawn("--workers", "2", "--metrics-port", str(mport), "--timeout-worker-healthcheck", "600")
    pids = server.wait_workers(2)
    metrics_url = f"http://127.0.0.1:{mport}"
    wait_for(lambda: healthy_gauge(metrics_url) == {"1": 1, "2": 1},
             lambda: f"gauge {healthy_gauge(metrics_url)}:\n{server.output()}")
    doc = httpx.get(metrics_url + "/stats", timeout=EVENT_TIMEOUT).json()
    assert {label: entry["healthy"] for label, entry in doc["workers"].items()} == {"1": True, "2": True}
    by_pid = {entry["pid"]: label for label, entry in doc["workers"].items()}
    assert set(by_pid) == pids

    def spin() -> None:
        try:
            httpx.get(server.base_url() + "/spin", timeout=EVENT_TIMEOUT)
        except httpx.HTTPError:
            pass  # its worker never answers

    threading.Thread(target=spin, daemon=True).start()

    def one_silent() -> str | None:
        gauge = healthy_gauge(metrics_url)
        silent = [label for label, value in gauge.items() if value == 0]
        return silent[0] if sorted(gauge.values()) == [0, 1] else None

    blocked = wait_for(one_silent, lambda: f"gauge {healthy_gauge(metrics_url)}:\n{server.output()}")
    other = "2" if blocked == "1" else "1"
    doc = httpx.get(metrics_url + "/stats", timeout=EVENT_TIMEOUT).json()
    assert doc["workers"][blocked]["healthy"] is False
    assert "server" not in doc["workers"][blocked]  # no counters from a worker that did not answer
    assert doc["workers"][blocked]["pid"] in pids
    assert doc["workers"][other]["healthy"] is True
    assert doc["total"]["server"] == doc["workers"][other]["server"]
    health = httpx.get(metrics_url + "/healthz", timeout=EVENT_TIMEOUT)
    assert health.status_code == 503
    assert health.json()["unhealthy"] == [blocked]
    assert health.json()["workers"] == 2  # both still run; one does not answer
    # The other worker still serves the app.
    response = httpx.get(server.base_url() + "/pid", timeout=EVENT_TIMEOUT)
    assert int(response.text) == next(pid for pid, label in by_pid.items() if label == other)


def test_a_cancelled_scrape_is_not_swallowed():
    """MetricsSource.snapshot waits for the workers' answers; cancelling it
    (the scrape went away, the listener closes) cancels it, and it forgets
    its requests."""
    from ferroloop.server._supervisor import MetricsSource, Worker

    async def main() -> None:
        loop = asyncio.get_running_loop()
        worker = Worker(1, 12345, -1, loop)
        worker.ready.set_result(True)
        sent: list[dict] = []
        worker.channel = types.SimpleNamespace(send=lambda m: sent.append(m) or True)  # never answers
        sup = types.SimpleNamespace(
            slots={1: worker}, procs={12345: worker}, target=1, unhealthy={}, stopping=False, _loop=loop,
            _ids=iter(range(1, 100)), config=types.SimpleNamespace(timeout_worker_healthcheck=5),
        )
        task = loop.create_task(MetricsSource(sup).snapshot())  # type: ignore[arg-type]
        while not sent:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert worker.pending == {}

    import ferroloop

    ferroloop.run(main())
