"""The WebSocket suite's markdown: per echo figure a table (messages/s,
messages per server CPU-second, latency, peak RSS), the memory per idle
connection, ferroloop's paired ratios, and issue 14's bar (messages per
server CPU-second at least every ASGI peer's, memory per idle connection at
most theirs; the target: picows)."""

from __future__ import annotations

import report
from summary import SUBJECT
from ws_servers import CEILINGS
from ws_workloads import IDLE


def _label(entry: dict) -> str:
    return entry["label"]


def _only(result: dict, idle: bool) -> dict:
    """`result` with only the echo (or only the idle) workloads."""
    chosen = {w: e for w, e in result["workloads"].items() if (e["kind"] == IDLE) == idle}
    return result | {"workloads": chosen}


def _deflate_mark(got: dict) -> str:
    """Whether a server negotiated deflate, where it was offered."""
    if got.get("deflate") is None:
        return ""
    return " (deflate)" if got["deflate"] else " (no deflate)"


def _comparable(result: dict) -> dict:
    """`result` with ferroloop's ratios kept only where they compare like
    with like: on a workload offering deflate, against servers that
    negotiated it as ferroloop did (the others did less work)."""
    workloads = {}
    for name, entry in result["workloads"].items():
        cells = entry["contenders"]
        ours = cells.get(SUBJECT, {}).get("deflate")
        if ours is None or "ferroloop_ratio" not in entry or entry["kind"] == IDLE:
            workloads[name] = entry
            continue
        kept = {
            other: r
            for other, r in entry["ferroloop_ratio"].items()
            if cells.get(other, {}).get("deflate") == ours
        }
        workloads[name] = entry | {"ferroloop_ratio": kept}
    return result | {"workloads": workloads}


def _header(result: dict) -> list[str]:
    m = result["method"]
    text = (
        f"{m['rounds']} round{'s' if m['rounds'] != 1 else ''}, servers rotated each round; per "
        f"measurement a fresh server process (one worker) pinned to CPU {m['server_cpu']} and "
        f"one Rust client (`xtask ws-client`: masked frames, every echoed byte verified) "
        f"pinned to CPU {m['client_cpu']}; echo: 10 connections with one message in flight "
        f"each, {m['warmup_s']:g} s warm-up, {m['duration_s']:g} s measured; idle: RSS of the "
        f"server's processes before and while {m['idle_conns']:,} WebSockets are open"
        + (" (--quick)" if m["quick"] else "")
    )
    notes = [
        "- app: raw ASGI 3 (`bench/ws_app.py`): accept, echo bytes as bytes and text as text; "
        "picows (`bench/ws_picows.py`) is the non-ASGI ceiling",
        "- servers: " + "; ".join(f"**{name}**: `{how}`" for name, how in m["settings"].items()),
        f"- CPU share over the measured window (median over echo measurements): server "
        f"{report.cpu_share(_echo_only(result), 'server_cpu_s', 'seconds')}, client "
        f"{report.cpu_share(_echo_only(result), 'client_cpu_s', 'seconds')}; the server near "
        "100% means it set the pace",
        "- verified in every measurement: each echo byte for byte (inflated where deflate was "
        "negotiated), opcodes, RSV bits, the closing handshake; the app's count of echoed "
        "messages equal to the client's (ASGI servers)",
    ]
    noted = _close_notes(result)
    if noted:
        notes.append(
            "- closing handshake not completed as RFC 6455 asks (noted, not failed): " + noted
        )
    return report.header(result, "WebSocket benchmark (single worker)", text, notes)


def _echo_only(result: dict) -> dict:
    kept = [m for m in result["measurements"] if "seconds" in m or m["status"] != "ok"]
    return result | {"measurements": kept}


def _close_notes(result: dict) -> str:
    found = []
    for entry in result["workloads"].values():
        for server, cell in entry["contenders"].items():
            if cell["status"] == "ok" and (cell["unclosed"] or cell["bad_close"]):
                found.append(
                    f"{server} on {entry['label']}: {cell['unclosed']} unclosed, "
                    f"{cell['bad_close']} closed otherwise, of {cell['connections']:,} connections"
                )
    return "; ".join(found)


def _bar(result: dict, servers: list[str]) -> list[str]:
    """The goals (ahead of every ASGI peer; at or above the non-ASGI
    ceiling), read from the paired ratios."""
    if SUBJECT not in servers:
        return []
    peers = [s for s in servers if s != SUBJECT and s not in CEILINGS and not s.endswith("-base")]
    comparable = _comparable(result)["workloads"]
    lines = ["## Goals (paired ratios, ferroloop / X)", ""]
    for name, entry in comparable.items():
        ratios = entry.get("ferroloop_ratio")
        if ratios is None:
            lines.append(f"- {entry['label']}: ferroloop has no figures")
            continue
        idle = entry["kind"] == IDLE
        metric = "idle_kib_per_conn" if idle else "msgs_per_cpu_s"
        held = lambda r: r is not None and (r <= 1 if idle else r >= 1)  # noqa: E731
        shown = [(p, ratios.get(p, {}).get(metric)) for p in peers if p in ratios]
        verdict = all(held(r) for _, r in shown) if shown else None
        what = "memory per idle connection ≤" if idle else "messages per server CPU-s ≥"
        mark = {True: "met", False: "**not met**", None: "no comparable peer"}[verdict]
        cells = ", ".join(f"{p} {report.ratio(r)}" for p, r in shown)
        line = f"- {entry['label']}: {what} every ASGI peer: {mark}" + (
            f" ({cells})" if cells else ""
        )
        if not idle:
            for ceiling in CEILINGS:
                r = ratios.get(ceiling, {}).get(metric)
                if r is not None:
                    line += f"; ≥ {ceiling}: {'met' if r >= 1 else 'not met'} ({r:.2f})"
        lines.append(line)
    return lines + [""]


def markdown(result: dict) -> str:
    servers = [n for n, c in result["contenders"].items() if c["available"]]
    echo, idle = _only(result, idle=False), _only(result, idle=True)
    lines = _header(result)
    lines += report.table(
        echo,
        servers,
        "Messages/s (MiB/s)",
        _label,
        lambda got, _: (
            f"{report.ops(got['median_msgs_per_s'])} ({report.amount(got['median_mib_per_s'])})"
        ),
    )
    lines += report.table(
        echo,
        servers,
        "Messages per server CPU-second",
        _label,
        lambda got, _: report.ops(got["median_msgs_per_cpu_s"]) + _deflate_mark(got),
    )
    lines += report.table(
        echo,
        servers,
        "Latency p50 / p99 (ms, round trip of one message)",
        _label,
        lambda got, _: f"{got['median_p50_ms']:.2f} / {got['median_p99_ms']:.2f}",
    )
    lines += report.table(
        echo,
        servers,
        "Peak server RSS (VmHWM of the server's processes, MiB)",
        _label,
        lambda got, _: f"{got['median_peak_rss_mib']:.1f}",
    )
    lines += report.table(
        idle,
        servers,
        "Memory per idle WebSocket (KiB of server RSS per open connection)",
        _label,
        lambda got, _: f"{got['median_idle_kib_per_conn']:.1f}" + _deflate_mark(got),
    )
    if any(entry.get("ferroloop_ratio") for entry in result["workloads"].values()):
        lines += report.ratio_table(
            _comparable(echo),
            servers,
            "ferroloop / X: messages/s · messages per server CPU-s",
            _label,
            ("msgs_per_s", "msgs_per_cpu_s"),
            missing="–",
        )
        lines += report.ratio_table(
            idle,
            servers,
            "ferroloop / X: memory per idle connection (below 1: ferroloop smaller)",
            _label,
            ("idle_kib_per_conn",),
            missing="–",
        )
    lines += _bar(result, servers)
    lines += report.base_table(
        echo,
        _label,
        (("msgs_per_cpu_s", "messages per server CPU-s"), ("msgs_per_s", "messages/s")),
    )
    lines.append(
        "Cells: medians over rounds; ratios: median over rounds of the paired ratio (each "
        "round's figure divided by the other's in the same round). On the deflate workload a "
        "ratio is given only against servers that negotiated deflate as ferroloop did (the "
        "others sent the text uncompressed: less work): `–`."
    )
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"
