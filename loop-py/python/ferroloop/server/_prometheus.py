"""The metrics' two renderings: Prometheus text exposition format 0.0.4
(`/metrics`) and the JSON document with per-worker totals (`/stats`).

Both render what a metrics source's `snapshot()` returns: one
`(worker label, {"pid": .., "loop": loop.stats(), "server":
Server.stats()})` per worker. Prometheus gets one sample per worker (label
`worker`), never a sum: a query sums with `sum without (worker)`. A key a
snapshot lacks (TLS off, an older worker) renders no sample. An entry may
say `"healthy": False` (the supervisor's, for a worker that did not answer
or a slot whose worker is restarting: then it has no counters); every
entry gets its `ferroloop_worker_healthy` sample.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

PREFIX = "ferroloop_"


@dataclass(frozen=True)
class Family:
    """One metric family, read from `path` in a worker's entry. With
    `label`, the value there is a mapping whose keys become that label's
    values (only keys starting with `prefix`, which is stripped)."""

    name: str
    type: str  # "counter" or "gauge"
    help: str
    path: tuple[str, ...]
    label: str | None = None
    prefix: str = ""
    #: An info gauge: the value at `path` is a string, given as this label
    #: of a sample whose value is 1.
    info: str | None = None


def _counter(name: str, help: str, *path: str, label: str | None = None, prefix: str = "") -> Family:
    return Family(name + "_total", "counter", help, path, label, prefix)


def _gauge(name: str, help: str, *path: str) -> Family:
    return Family(name, "gauge", help, path)


def _info(name: str, help: str, label: str, *path: str) -> Family:
    return Family(name, "gauge", help, path, info=label)


#: Every family, in exposition order: the loop's (`loop.stats()`), then the
#: server's (`Server.stats()`). docs/server.md, "Stats and metrics", lists them.
FAMILIES: tuple[Family, ...] = (
    _counter("loop_ticks", "Event loop iterations.", "loop", "ticks"),
    _counter("loop_polls", "Poller waits.", "loop", "polls"),
    _counter("loop_blocking_polls", "Poller waits with a non-zero timeout.", "loop", "blocking_polls"),
    _counter("loop_poll_seconds", "Wall time the loop spent blocked in polls.", "loop", "poll_seconds"),
    _counter("loop_busy_seconds", "Wall time the loop ran, not blocked in a poll.", "loop", "busy_seconds"),
    _gauge("loop_utilization", "Busy share of the loop's time since it first ran (0 to 1).", "loop", "utilization"),
    _counter("loop_callbacks", "Callbacks (handles) run.", "loop", "callbacks"),
    _counter("loop_timers_fired", "Timers fired.", "loop", "timers_fired"),
    _counter("loop_timers_cancelled", "Timers cancelled.", "loop", "timers_cancelled"),
    _counter("loop_threadsafe_calls", "call_soon_threadsafe items received.", "loop", "threadsafe_calls"),
    _gauge("loop_ready_depth", "Callbacks in the ready queue.", "loop", "ready"),
    _gauge("loop_timer_heap_depth", "Timers scheduled and not cancelled.", "loop", "timers"),
    _gauge("loop_fds", "File descriptors registered with the poller.", "loop", "fds"),
    _info("loop_backend", "The event loop's poller backend (label backend), always 1.", "backend", "loop", "backend"),
    _gauge("connections_open", "Connections open.", "server", "connections", "open"),
    _counter("connections_accepted", "Connections accepted.", "server", "connections", "accepted"),
    _counter("connections_closed", "Connections closed.", "server", "connections", "closed"),
    _counter("connections_reset", "Connections ended by a reset or error from the peer.", "server", "connections", "reset"),
    _counter("requests", "HTTP requests received, by method.", "server", "requests", "by_method", label="method"),
    _counter("responses", "HTTP responses sent, by status class.", "server", "requests", "by_status", label="status_class"),
    _gauge("requests_in_flight", "App calls running: HTTP requests and WebSocket sessions.", "server", "requests", "in_flight"),
    _counter("received_bytes", "Bytes received on the wire (ciphertext with TLS).", "server", "bytes", "in"),
    _counter("sent_bytes", "Bytes sent on the wire (ciphertext with TLS).", "server", "bytes", "out"),
    _counter("rejections", "Requests the server answered itself, by status code.", "server", "rejections", label="code"),
    _counter("timeouts", "Timeouts, by kind.", "server", "timeouts", label="kind"),
    _counter("app_exceptions", "Exceptions raised by the application.", "server", "app_exceptions"),
    _counter(
        "client_disconnects",
        "App calls that ended because their client disconnected.",
        "server",
        "client_disconnects",
    ),
    _gauge("websocket_sessions_open", "WebSocket sessions open.", "server", "websocket", "sessions_open"),
    _counter("websocket_sessions", "WebSocket sessions accepted.", "server", "websocket", "sessions_total"),
    _counter("websocket_messages_received", "WebSocket messages received.", "server", "websocket", "messages_in"),
    _counter("websocket_messages_sent", "WebSocket messages sent.", "server", "websocket", "messages_out"),
    _counter("websocket_closes", "WebSocket sessions closed, by close code.", "server", "websocket", "close_codes", label="code"),
    _counter("tls_handshakes", "TLS handshakes completed.", "server", "tls", "handshakes"),
    _counter("tls_handshakes_failed", "TLS handshakes failed.", "server", "tls", "handshakes_failed"),
    _counter(
        "tls_handshake_failures", "TLS handshakes failed, by kind.", "server", "tls", label="kind", prefix="failed_"
    ),
    _counter("tls_resumptions", "TLS sessions resumed.", "server", "tls", "resumptions"),
    _counter("tls_alerts", "TLS alerts received that ended sessions, by alert.", "server", "tls", "alerts", label="alert"),
    _counter("tls_alerts_sent", "TLS alerts sent, by alert.", "server", "tls", "alerts_sent", label="alert"),
    _counter("tls_protocol_errors", "TLS errors after the handshake.", "server", "tls", "protocol_errors"),
    _counter("tls_truncated", "TLS connections ended without close_notify.", "server", "tls", "truncated"),
    _counter("tls_reloads", "TLS certificate reloads.", "server", "tls", "reloads"),
    _counter("tls_reload_errors", "TLS certificate reloads that failed.", "server", "tls", "reload_errors"),
)

Snapshot = list[tuple[str, Mapping[str, Any]]]


def render(snapshot: Snapshot, unhealthy: Iterable[str] = ()) -> str:
    """The exposition text of `snapshot`; `unhealthy` are the labels of
    workers that failed their health check."""
    failed = set(unhealthy)
    lines: list[str] = []
    _family(
        lines,
        Family("worker_healthy", "gauge", "1 if the worker is ready and answers its health checks, else 0.", ()),
        [((("worker", label),), int(is_healthy(label, entry, failed))) for label, entry in snapshot],
    )
    for family in FAMILIES:
        samples = []
        for label, entry in snapshot:
            value = _lookup(entry, family.path)
            worker = (("worker", label),)
            if family.info is not None:
                if isinstance(value, str) and value:
                    samples.append((worker + ((family.info, value),), 1))
            elif family.label is None:
                if _is_number(value):
                    samples.append((worker, value))
            elif isinstance(value, Mapping):
                for key in sorted(value, key=str):
                    key = str(key)
                    if key.startswith(family.prefix) and _is_number(value[key]):
                        samples.append((worker + ((family.label, key[len(family.prefix) :]),), value[key]))
        _family(lines, family, samples)
    return "".join(lines)


def is_healthy(label: str, entry: Mapping[str, Any], unhealthy: Collection[str]) -> bool:
    """A worker's verdict, the same in /metrics and /stats: its entry's
    `healthy` (true when it has none) and not among `unhealthy`."""
    return entry.get("healthy", True) is not False and label not in unhealthy


def _family(lines: list[str], family: Family, samples: list[tuple[tuple[tuple[str, str], ...], Any]]) -> None:
    if not samples:
        return
    name = PREFIX + family.name
    lines.append(f"# HELP {name} {_escape_help(family.help)}\n")
    lines.append(f"# TYPE {name} {family.type}\n")
    for labels, value in samples:
        text = ",".join(f'{key}="{_escape_label(val)}"' for key, val in labels)
        lines.append(f"{name}{{{text}}} {_format(value)}\n")


def _lookup(entry: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = entry
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _format(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def stats_document(snapshot: Snapshot, unhealthy: Iterable[str] = ()) -> dict[str, Any]:
    """`/stats`: {"workers": {label: entry with its `healthy`}, "total":
    the entries' numbers summed (loop utilization recomputed from the
    summed seconds), names such as the backend kept where all agree
    ("mixed" where they do not)}."""
    failed = set(unhealthy)
    workers = {label: {**entry, "healthy": is_healthy(label, entry, failed)} for label, entry in snapshot}
    total: dict[str, Any] = {}
    for entry in workers.values():
        _add(total, {key: value for key, value in entry.items() if key not in ("pid", "healthy")})
    loop = total.get("loop")
    if isinstance(loop, dict) and "utilization" in loop:
        spent = loop.get("busy_seconds", 0.0) + loop.get("poll_seconds", 0.0)
        loop["utilization"] = loop.get("busy_seconds", 0.0) / spent if spent > 0 else 0.0
    return {"workers": workers, "total": total}


def _add(total: dict[str, Any], entry: Mapping[str, Any]) -> None:
    for key, value in entry.items():
        if isinstance(value, Mapping):
            _add(total.setdefault(key, {}), value)
        elif _is_number(value):
            total[key] = total.get(key, 0) + value
        elif isinstance(value, str):
            # A name (the loop's backend): kept when the workers agree.
            total[key] = value if total.get(key, value) == value else "mixed"
