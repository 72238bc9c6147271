"""The metrics listener against a fake two-worker source (labels "1" and
"2", C1/C2-shaped dicts): the exposition as prometheus_client parses it,
the /stats totals, /healthz, 404 and 405, over real sockets."""

from __future__ import annotations

import asyncio
import copy
import threading

import httpx
import pytest

from metrics_support import CONTENT_TYPE, TIMEOUT, parse, scrape


def loop_stats(n: int) -> dict:
    return {
        "ticks": 100 * n,
        "polls": 90 * n,
        "blocking_polls": 80 * n,
        "poll_seconds": 3.0 * n,
        "busy_seconds": 1.0 * n,
        "utilization": 0.25,
        "callbacks": 500 * n,
        "timers_fired": 7 * n,
        "timers_cancelled": 2 * n,
        "threadsafe_calls": n,
        "ready": n,
        "timers": 3 * n,
        "fds": 4 * n,
        "backend": "io_uring" if n == 1 else "epoll",
    }


def server_stats(n: int) -> dict:
    return {
        "connections": {"open": n, "accepted": 10 * n, "closed": 9 * n, "reset": n},
        "requests": {
            "total": 30 * n,
            "in_flight": n,
            "by_method": {"GET": 20 * n, "POST": 10 * n, "other": 0},
            "by_status": {"1xx": 0, "2xx": 25 * n, "3xx": 0, "4xx": 4 * n, "5xx": n},
        },
        "bytes": {"in": 1000 * n, "out": 5000 * n},
        "rejections": {"400": n, "408": 0, "413": 2 * n, "414": 0, "431": 0, "503": 3 * n},
        "timeouts": {"keep_alive": 5 * n, "request_head": n, "body": 0, "tls_handshake": 0, "ws_close": 0, "ws_ping": 0},
        "app_exceptions": n,
        "client_disconnects": 7 * n,
        "websocket": {
            "sessions_open": n,
            "sessions_total": 2 * n,
            "messages_in": 11 * n,
            "messages_out": 12 * n,
            "close_codes": {"1000": n, "1001": 1},
        },
        "tls": {
            "handshakes": 6 * n,
            "handshakes_failed": 2 * n,
            "failed_not_tls": n,
            "failed_timeout": n,
            "resumptions": n,
            # A name needing the format's escapes in a label value.
            "alerts": {"bad_certificate": n, 'we"ird\\name\n': 1},
        },
    }


class FakeSource:
    def __init__(self) -> None:
        self.workers = [
            ("1", {"pid": 101, "loop": loop_stats(1), "server": server_stats(1)}),
            ("2", {"pid": 102, "loop": loop_stats(2), "server": server_stats(2)}),
        ]
        self.ok = True
        self.unhealthy: list[str] = []

    async def snapshot(self):
        await asyncio.sleep(0)  # the supervisor's asks its workers
        return copy.deepcopy(self.workers)

    def health(self):
        return self.ok, {"workers": len(self.workers), "unhealthy": list(self.unhealthy)}


@pytest.fixture
def listener():
    """A metrics listener over a FakeSource on a ferroloop loop in a thread."""
    import ferroloop
    from ferroloop.server._metrics import start_metrics_server

    source = FakeSource()
    started = threading.Event()
    state: dict = {}

    async def main():
        loop = asyncio.get_running_loop()
        state["stop"] = stop = asyncio.Event()
        state["loop"] = loop
        server = await start_metrics_server(ferroloop.Config(lambda *a: None, metrics_port=0), source)
        state["url"] = f"http://127.0.0.1:{server.port}"
        started.set()
        await stop.wait()
        await server.aclose()

    def run():
        try:
            ferroloop.run(main())
        except BaseException as exc:  # reported below
            state["error"] = exc
            started.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(TIMEOUT), "metrics listener did not start"
    assert "error" not in state, state.get("error")
    yield source, state["url"]
    state["loop"].call_soon_threadsafe(state["stop"].set)
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert "error" not in state, state.get("error")


def test_exposition_has_one_sample_per_worker(listener):
    source, url = listener
    samples, types = scrape(url)
    for worker, n in (("1", 1), ("2", 2)):
        w = {"worker": worker}
        assert samples.value("ferroloop_loop_ticks_total", **w) == 100 * n
        assert samples.value("ferroloop_loop_poll_seconds_total", **w) == 3.0 * n
        assert samples.value("ferroloop_loop_utilization", **w) == 0.25
        assert samples.value("ferroloop_loop_ready_depth", **w) == n
        assert samples.value("ferroloop_loop_timer_heap_depth", **w) == 3 * n
        assert samples.value("ferroloop_loop_fds", **w) == 4 * n
        backend = "io_uring" if n == 1 else "epoll"
        assert samples.value("ferroloop_loop_backend", backend=backend, **w) == 1
        assert samples.get_value("ferroloop_loop_backend", -1, backend="polling", **w) == -1
        assert samples.value("ferroloop_connections_open", **w) == n
        assert samples.value("ferroloop_connections_accepted_total", **w) == 10 * n
        assert samples.value("ferroloop_connections_reset_total", **w) == n
        assert samples.value("ferroloop_requests_total", method="GET", **w) == 20 * n
        assert samples.value("ferroloop_requests_total", method="POST", **w) == 10 * n
        assert samples.value("ferroloop_requests_total", method="other", **w) == 0
        assert samples.value("ferroloop_responses_total", status_class="4xx", **w) == 4 * n
        assert samples.value("ferroloop_requests_in_flight", **w) == n
        assert samples.value("ferroloop_received_bytes_total", **w) == 1000 * n
        assert samples.value("ferroloop_sent_bytes_total", **w) == 5000 * n
        assert samples.value("ferroloop_rejections_total", code="503", **w) == 3 * n
        assert samples.value("ferroloop_timeouts_total", kind="keep_alive", **w) == 5 * n
        assert samples.value("ferroloop_app_exceptions_total", **w) == n
        assert samples.value("ferroloop_client_disconnects_total", **w) == 7 * n
        assert samples.value("ferroloop_websocket_sessions_open", **w) == n
        assert samples.value("ferroloop_websocket_sessions_total", **w) == 2 * n
        assert samples.value("ferroloop_websocket_messages_received_total", **w) == 11 * n
        assert samples.value("ferroloop_websocket_messages_sent_total", **w) == 12 * n
        assert samples.value("ferroloop_websocket_closes_total", code="1001", **w) == 1
        assert samples.value("ferroloop_tls_handshakes_total", **w) == 6 * n
        assert samples.value("ferroloop_tls_handshakes_failed_total", **w) == 2 * n
        assert samples.value("ferroloop_tls_handshake_failures_total", kind="not_tls", **w) == n
        assert samples.value("ferroloop_tls_resumptions_total", **w) == n
        assert samples.value("ferroloop_tls_alerts_total", alert="bad_certificate", **w) == n
        # The format's escapes (\\, \", \n) round-trip through the parser.
        assert samples.value("ferroloop_tls_alerts_total", alert='we"ird\\name\n', **w) == 1
        assert samples.value("ferroloop_worker_healthy", **w) == 1
    # Every sample carries its worker; nothing is summed in the exposition.
    assert all(dict(labels).get("worker") in ("1", "2") for _, labels in samples)
    assert types["ferroloop_loop_ticks"] == "counter"
    assert types["ferroloop_requests"] == "counter"
    assert types["ferroloop_connections_open"] == "gauge"
    assert types["ferroloop_loop_utilization"] == "gauge"


def test_exposition_text_form(listener):
    _, url = listener
    response = httpx.get(url + "/metrics", timeout=TIMEOUT)
    assert response.headers["content-type"] == CONTENT_TYPE
    text = response.text
    assert text.endswith("\n")
    assert "# HELP ferroloop_requests_total HTTP requests received, by method.\n" in text
    assert "# TYPE ferroloop_requests_total counter\n" in text
    assert 'ferroloop_requests_total{worker="1",method="GET"} 20\n' in text
    assert 'alert="we\\"ird\\\\name\\n"' in text
    # A family's HELP and TYPE come once, before its samples.
    assert text.count("# TYPE ferroloop_loop_ticks_total ") == 1


def test_missing_keys_render_no_sample(listener):
    source, url = listener
    del source.workers[1][1]["server"]["tls"]
    source.workers[1][1]["server"]["tls"] = {}
    samples, _ = scrape(url)
    assert samples.value("ferroloop_tls_handshakes_total", worker="1") == 6
    assert ("ferroloop_tls_handshakes_total", frozenset({("worker", "2")})) not in samples


def test_unhealthy_worker(listener):
    source, url = listener
    source.ok = False
    source.unhealthy = ["2"]
    response = httpx.get(url + "/healthz", timeout=TIMEOUT)
    assert response.status_code == 503
    assert response.json() == {"status": "unhealthy", "workers": 2, "unhealthy": ["2"]}
    samples, _ = scrape(url)
    assert samples.value("ferroloop_worker_healthy", worker="1") == 1
    assert samples.value("ferroloop_worker_healthy", worker="2") == 0
    workers = httpx.get(url + "/stats", timeout=TIMEOUT).json()["workers"]
    assert (workers["1"]["healthy"], workers["2"]["healthy"]) == (True, False)


def test_a_worker_that_did_not_answer_is_unhealthy_everywhere(listener):
    """The supervisor's entry for a worker with no answer (or a slot whose
    worker restarts): a pid and `healthy: false`, no counters."""
    source, url = listener
    source.workers.append(("3", {"pid": 103, "healthy": False}))
    source.ok, source.unhealthy = False, ["3"]
    samples, _ = scrape(url)
    assert samples.value("ferroloop_worker_healthy", worker="3") == 0
    assert samples.value("ferroloop_worker_healthy", worker="1") == 1
    assert [name for name, labels in samples if ("worker", "3") in labels] == ["ferroloop_worker_healthy"]
    doc = httpx.get(url + "/stats", timeout=TIMEOUT).json()
    assert doc["workers"]["3"] == {"pid": 103, "healthy": False}
    assert doc["total"]["loop"]["ticks"] == 300  # the two that answered
    health = httpx.get(url + "/healthz", timeout=TIMEOUT)
    assert health.status_code == 503 and health.json()["unhealthy"] == ["3"]


def test_healthz_ok(listener):
    _, url = listener
    response = httpx.get(url + "/healthz", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "workers": 2, "unhealthy": []}


def test_stats_sums_the_workers(listener):
    _, url = listener
    response = httpx.get(url + "/stats", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    doc = response.json()
    assert set(doc["workers"]) == {"1", "2"}
    assert doc["workers"]["2"]["pid"] == 102
    assert doc["workers"]["2"]["server"] == server_stats(2)
    total = doc["total"]
    assert "pid" not in total
    assert total["server"]["requests"]["by_method"]["GET"] == 60
    assert total["server"]["websocket"]["close_codes"] == {"1000": 3, "1001": 2}
    assert total["loop"]["ticks"] == 300
    # Utilization of the whole: busy / (busy + poll) over the summed seconds.
    assert total["loop"]["utilization"] == pytest.approx(3.0 / 12.0)


def test_other_paths_and_methods(listener):
    _, url = listener
    assert httpx.get(url + "/", timeout=TIMEOUT).status_code == 404
    assert httpx.get(url + "/metrics/x", timeout=TIMEOUT).status_code == 404
    response = httpx.post(url + "/metrics", content=b"x", timeout=TIMEOUT)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"
    head = httpx.head(url + "/metrics", timeout=TIMEOUT)
    assert head.status_code == 200 and head.content == b""
    # Query strings are ignored (a scraper may add some).
    assert httpx.get(url + "/healthz?verbose=1", timeout=TIMEOUT).status_code == 200


def test_parse_of_a_rendered_snapshot_is_exact():
    """The renderer alone: every numeric leaf of a snapshot appears once."""
    from ferroloop.server import _prometheus

    snapshot = [("7", {"pid": 1, "loop": loop_stats(3), "server": server_stats(3)})]
    samples, _ = parse(_prometheus.render(snapshot))
    assert samples.value("ferroloop_loop_callbacks_total", worker="7") == 1500
    assert samples.value("ferroloop_tls_handshake_failures_total", worker="7", kind="timeout") == 3
    assert _prometheus.render([]) == ""
