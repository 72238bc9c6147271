"""Helpers for the metrics tests: scrape and parse ``/metrics`` with
prometheus_client's own parser, a child server with a metrics port."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Generous: a loaded 2-core machine.
TIMEOUT = 10.0


@dataclass
class MetricsChild:
    proc: object  # _helpers.ServerProcess
    port: int
    metrics_host: str
    metrics_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        host = f"[{self.metrics_host}]" if ":" in self.metrics_host else self.metrics_host
        return f"http://{host}:{self.metrics_port}"


def wait_listening(proc, host: str, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.proc.returncode}:\n{proc.output()}")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"metrics port {port} not listening within {timeout} s:\n{proc.output()}") from None
            time.sleep(0.05)


class Samples(dict):
    """{(sample name, frozenset of labels): value}, with lookups."""

    def value(self, name: str, **labels: str) -> float:
        key = (name, frozenset(labels.items()))
        if key not in self:
            raise AssertionError(f"no sample {name}{labels}; have: {sorted(n for n, _ in self)}")
        return self[key]

    def get_value(self, name: str, default: float = 0.0, **labels: str) -> float:
        return self.get((name, frozenset(labels.items())), default)


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Samples and each family's type, by family name (prometheus_client
    names a counter's family without ``_total``)."""
    samples = Samples()
    types = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = sample.value
    return samples, types


def scrape(base_url: str) -> tuple[Samples, dict[str, str]]:
    response = httpx.get(base_url + "/metrics", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CONTENT_TYPE
    return parse(response.text)


def hold_slots(url: str, path: str, most: int = 16) -> list[socket.socket]:
    """Open connections each holding a request to `path` (the app keeps
    it until the client leaves) until the server answers a new request
    503: the app's limit_concurrency is reached. Returns the held sockets."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    held: list[socket.socket] = []
    for _ in range(most):
        sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        sock.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
        held.append(sock)
        if httpx.get(url + "/", timeout=TIMEOUT).status_code == 503:
            return held
    release(held)
    raise AssertionError(f"no 503 after holding {most} requests")


def release(held: list[socket.socket]) -> None:
    for sock in held:
        sock.close()
