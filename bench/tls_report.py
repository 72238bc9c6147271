"""The TLS suite's summary and markdown: per workload requests (keep-alive)
or handshakes (new connections) per second and per server CPU-second, the
server's peak RSS per connection, and ferroloop's paired ratios."""

from __future__ import annotations

import report
from contenders import BASE
from http_report import per_cpu_table
from summary import SUBJECT, against_base, cells, subject_ratios
from tls_servers import PLAIN
from tls_workloads import KEEPALIVE, WORKLOADS

# The goal: ferroloop's keep-alive HTTPS at least this fraction
# of its own plaintext HTTP, per server CPU-second, in the same run.
TARGET = 0.75

METRICS = ("req_per_s", "server_cpu_pct", "req_per_cpu_s", "peak_rss_mib", "kib_per_conn")
RATIOS = ("req_per_cpu_s", "req_per_s")


def summarize(records: list[dict], servers: list[str], workloads: list[str]) -> dict:
    """workload -> {label, kind, contenders: cells, ferroloop_ratio: {other: {metric: r}}}."""
    summary = {}
    for workload in workloads:
        taken = [r for r in records if r["workload"] == workload]
        ran = [s for s in servers if any(r["contender"] == s for r in taken)]
        out, by_round = cells(taken, ran, METRICS)
        w = WORKLOADS[workload]
        entry = {"label": w.label, "kind": w.kind, "cert": w.cert, "contenders": out}
        if SUBJECT in by_round[RATIOS[0]]:
            ratios: dict[str, dict] = {}
            for metric in RATIOS:
                for other, r in subject_ratios(by_round[metric]).items():
                    ratios.setdefault(other, {})[metric] = r
            entry["ferroloop_ratio"] = ratios
        vs_base = against_base(by_round, RATIOS)
        if vs_base is not None:
            entry["ferroloop_vs_base"] = vs_base
        summary[workload] = entry
    return summary


def _label(entry: dict) -> str:
    return entry["label"]


def _header(result: dict) -> list[str]:
    m = result["method"]
    text = (
        f"{m['rounds']} round{'s' if m['rounds'] != 1 else ''}, servers rotated each round; per "
        f"measurement a fresh server process (one worker, TLS on) pinned to CPU "
        f"{m['server_cpu']}, the endpoint's response checked over HTTPS, then a "
        f"{m['warmup_s']} s warm-up and {m['duration_s']} s measured with the load pinned to "
        f"CPU {m['client_cpu']}: keep-alive rows `wrk -t{m['threads']} -c{m['conns']}` on "
        f"https:// ({m['wrk']}); handshake rows `xtask tls-client --conns "
        f"{m['handshake_conns']}` (rustls + ring; connect, handshake, `GET /` with "
        "`Connection: close`, read to EOF, close; resumption disabled in the client for "
        "\"full\", a shared ticket cache for \"resumed\")" + (" (--quick)" if m["quick"] else "")
    )
    notes = [
        "- certificates: self-signed ECDSA P-256 (keep-alive rows and the ecdsa handshake rows) "
        "and RSA 2048, made by `openssl req` at bench time",
        "- servers: " + "; ".join(f"**{n}**: `{how}`" for n, how in m["settings"].items()),
        f"- CPU share over the measured window (median): server "
        f"{report.cpu_share(result, 'server_cpu_s', 'window_s')}; load generator (wrk over "
        "the window, tls-client over its whole run) "
        f"{report.cpu_share(result, 'client_cpu_s', 'window_s')}",
        "- peak RSS per connection: (the server tree's VmHWM after the run − its RSS before "
        "the load) / connections (64 for wrk, the client's count for handshakes)",
        "- verified: keep-alive as in the HTTP suite (no socket error, no non-2xx, the app's "
        "call count); handshakes: every connection got a 200, none resumed in \"full\" rows, "
        "at least 90 % resumed in \"resumed\" rows",
    ]
    return report.header(result, "TLS benchmark (single worker)", text, notes)


def markdown(result: dict) -> str:
    servers = [n for n, c in result["contenders"].items() if c["available"]]
    lines = _header(result)
    lines += per_cpu_table(
        result,
        servers,
        "Requests (keep-alive) or handshakes per server CPU-second (server CPU %)",
        _label,
    )
    lines += report.table(
        result, servers, "Per second", _label, lambda got, _: report.ops(got["median_req_per_s"])
    )
    lines += report.table(
        result,
        servers,
        "Peak server RSS, MiB (KiB per connection)",
        _label,
        lambda got, _: f"{got['median_peak_rss_mib']:.1f} ({got['median_kib_per_conn']:.0f})",
    )
    if any(entry.get("ferroloop_ratio") for entry in result["workloads"].values()):
        lines += report.ratio_table(
            result,
            servers,
            "ferroloop / X: per server CPU-s · per second",
            _label,
            RATIOS,
            missing="–",
        )
    lines += _target_lines(result)
    lines += _must_lines(result, servers)
    lines.append(
        "Cells: medians over rounds; ratios: median over rounds of the paired ratio, above 1 = "
        "ferroloop ahead. The goal: ferroloop ≥ every peer per server CPU-second on "
        "the three keep-alive rows and on full handshakes."
    )
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"


def _ratio(entry: dict, other: str) -> float | None:
    return entry.get("ferroloop_ratio", {}).get(other, {}).get("req_per_cpu_s")


def _target_lines(result: dict) -> list[str]:
    """ferroloop TLS / ferroloop plaintext per server CPU-s, per keep-alive
    workload (the paired ratio with ferroloop-http)."""
    cells = []
    for entry in result["workloads"].values():
        x = _ratio(entry, PLAIN)
        if entry["kind"] == KEEPALIVE and x is not None:
            verdict = "meets" if x >= TARGET else "misses"
            cells.append(f"{entry['label']}: **{x:.2f}** ({verdict} {TARGET})")
    if not cells:
        return []
    return [
        "## ferroloop TLS / ferroloop plaintext per server CPU-s (goal ≥ 0.75)",
        "",
        *(f"- {c}" for c in cells),
        "",
    ]


def _must_lines(result: dict, servers: list[str]) -> list[str]:
    """Per goal row (keep-alive, full handshakes): ferroloop's smallest
    per-CPU ratio over the peers and whose it is."""
    peers = [s for s in servers if s not in (SUBJECT, BASE, PLAIN)]
    cells = []
    for entry in result["workloads"].values():
        resumed = entry["kind"] != KEEPALIVE and entry["label"].startswith("resumed")
        ratios = {p: _ratio(entry, p) for p in peers}
        known = {p: x for p, x in ratios.items() if x is not None}
        if resumed or not known:
            continue
        worst = min(known, key=known.__getitem__)
        verdict = "met" if known[worst] >= 1 and len(known) == len(peers) else "NOT met"
        cells.append(f"{entry['label']}: lowest ferroloop / {worst} = {known[worst]:.2f} ({verdict})")
    if not cells:
        return []
    return ["## Against every peer: ferroloop / X per server CPU-s ≥ 1", "", *(f"- {c}" for c in cells), ""]


__all__ = ["KEEPALIVE", "markdown", "summarize"]
