"""The HTTP suite's markdown: one table per figure (requests/s, requests per
server CPU-second, latency, peak RSS), then ferroloop's paired ratios and
each server's fraction of the pure-Rust plaintext ceiling."""

from __future__ import annotations

import report
from summary import CEILING


def _label(entry: dict) -> str:
    body = f", {entry['body_size']:,} B body" if entry["body_size"] else ""
    return f"{entry['method']} {entry['path']}{body}"


def _header(result: dict) -> list[str]:
    m = result["method"]
    text = (
        f"{m['rounds']} round{'s' if m['rounds'] != 1 else ''}, servers rotated each round; "
        f"per measurement a fresh server "
        f"process (one worker) pinned to CPU {m['server_cpu']}, every endpoint's response "
        f"checked byte for byte, then `wrk -t{m['threads']} -c{m['conns']} -d{m['warmup_s']}s` "
        f"warm-up and `wrk -t{m['threads']} -c{m['conns']} -d{m['duration_s']}s --latency` "
        f"measured (keep-alive; {m['wrk']}) pinned to CPU {m['client_cpu']}"
        + (" (--quick)" if m["quick"] else "")
    )
    notes = [
        "- app: raw ASGI 3 (`bench/http_app.py`): `GET /` 13-byte text/plain, `GET /json` "
        "51 bytes from `json.dumps` per request, `POST /post` reads the 4,096-byte body and "
        "answers its length; every response sets content-length",
        "- servers: "
        + "; ".join(f"**{name}**: `{how}`" for name, how in m["settings"].items()),
        f"- CPU share over the measured window (CPU time / wall time, median over "
        f"measurements): server {report.cpu_share(result, 'server_cpu_s', 'window_s')}, wrk "
        f"{report.cpu_share(result, 'client_cpu_s', 'window_s')}; the server near 100% means it set the pace "
        "(wrk near 100%: the load generator did, as it may for rust-plaintext)",
        "- verified in every measurement: no socket error and no non-2xx response; the "
        "app's call count over the run between wrk's completed requests and that plus one "
        "per connection (wrk stops with up to one request in flight per connection)",
    ]
    return report.header(result, "HTTP benchmark (single worker)", text, notes)


def _ceiling_lines(result: dict, servers: list[str]) -> list[str]:
    entry = result["workloads"].get("plaintext")
    if entry is None or entry["contenders"].get(CEILING, {}).get("status") != "ok":
        return []
    cells = []
    for s in servers:
        x = entry["contenders"].get(s, {}).get("x_ceiling")
        if s != CEILING and x:
            cells.append(
                f"{s} {report.ratio(x.get('req_per_s'))} · {report.ratio(x.get('req_per_cpu_s'))}"
            )
    if not cells:
        return []
    return [
        f"## Fraction of {CEILING} on plaintext: requests/s · requests per server CPU-s",
        "",
        "- " + "; ".join(cells),
        "",
    ]


def per_cpu_table(result: dict, servers: list[str], title: str, label) -> list[str]:
    """Requests per server CPU-second with the server's CPU % (shared with
    the TLS suite's report)."""
    return report.table(
        result,
        servers,
        title,
        label,
        lambda got, _: (
            f"{report.ops(got['median_req_per_cpu_s'])} ({got['median_server_cpu_pct']:.0f}%)"
        ),
    )


def markdown(result: dict) -> str:
    servers = [n for n, c in result["contenders"].items() if c["available"]]
    lines = _header(result)
    lines += report.table(
        result, servers, "Requests/s", _label, lambda got, _: report.ops(got["median_req_per_s"])
    )
    lines += per_cpu_table(
        result, servers, "Requests per server CPU-second (server CPU %)", _label
    )
    lines += report.table(
        result,
        servers,
        "Latency p50 / p99 (ms)",
        _label,
        lambda got, _: f"{got['median_p50_ms']:.2f} / {got['median_p99_ms']:.2f}",
    )
    lines += report.table(
        result,
        servers,
        "Peak server RSS (VmHWM of the server's processes, MiB)",
        _label,
        lambda got, _: f"{got['median_peak_rss_mib']:.1f}",
    )
    if any(entry.get("ferroloop_ratio") for entry in result["workloads"].values()):
        lines += report.ratio_table(
            result,
            servers,
            "ferroloop / X: requests/s · requests per server CPU-s",
            _label,
            ("req_per_s", "req_per_cpu_s"),
            missing="–",
        )
    lines += report.base_table(
        result,
        _label,
        (("req_per_cpu_s", "requests per server CPU-s"), ("req_per_s", "requests/s")),
    )
    lines += _ceiling_lines(result, servers)
    lines.append(
        "Cells: medians over rounds; ratios: median over rounds of the paired ratio (each "
        "round's figure divided by the other's in the same round), above 1 = ferroloop "
        "ahead. On a shared host raw requests/s moves a lot between runs; requests per "
        "server CPU-second is the steadier figure."
    )
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"
