"""Human-readable views of a scheduling result: the markdown table, and the
comparison of ferroloop's ratios between two results."""

from __future__ import annotations

from statistics import median

from summary import BASELINE, SUBJECT

# ferroloop's figure against "the best Rust peer" picks per workload whichever
# of these had the higher median.
RUST_PEERS = ("rloop", "cadeloop")


def ops(x: float) -> str:
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _cell(cell: dict | None, show_x_asyncio: bool) -> str:
    if cell is None:
        return "–"
    if cell["status"] != "ok":
        return f"**{cell['status']}**"
    text = ops(cell["median_ops_per_s"])
    if show_x_asyncio and cell.get("x_asyncio") is not None:
        text += f" (×{cell['x_asyncio']:.2f})"
    return text


def _best_rust_peer(entry: dict) -> tuple[str | None, float | None]:
    ok = [
        (entry["contenders"][name]["median_ops_per_s"], name)
        for name in RUST_PEERS
        if entry["contenders"].get(name, {}).get("status") == "ok"
    ]
    if not ok:
        return None, None
    best = max(ok)[1]
    return best, entry.get("ferroloop_ratio", {}).get(best)


def _header(result: dict) -> list[str]:
    host = result["host"]
    available = [f"{n} {c['version']}" for n, c in result["contenders"].items() if c["available"]]
    unavailable = [
        f"{n} ({c['reason']})" for n, c in result["contenders"].items() if not c["available"]
    ]
    method = result["method"]
    lines = [
        f"# Scheduling benchmark, {result['started']}",
        "",
        f"- host: {host['cpu_model']}, {host['nproc']} CPUs, {host['platform']}; "
        f"Python {host['python']}; git {host['git_revision'] or 'n/a'}",
        f"- method: {method['rounds']} rounds, contenders rotated each round, one fresh process "
        f"per measurement (pinned to CPU {method['cpu']}) after an in-process warm-up; "
        + ("n = spec / 4 (--quick)" if method["quick"] else "n as in BENCHMARKS.md"),
        f"- contenders: {', '.join(available)}",
    ]
    if unavailable:
        lines.append(f"- unavailable: {'; '.join(unavailable)}")
    shares = [m["cpu_s"] / m["elapsed"] for m in result["measurements"] if m["status"] == "ok"]
    if shares:
        lines.append(
            f"- worker CPU share (CPU time / wall time, median over measurements): "
            f"{median(shares):.0%}; well below 100% means workers waited for their CPU"
        )
    if result["load_before"][0] >= host["nproc"] / 2:
        lines.append(
            f"- **busy host**: 1-minute load {result['load_before'][0]} on {host['nproc']} CPUs "
            "before the run; paired ratios are less reliable than on an idle machine"
        )
    lines += [
        f"- load average before {result['load_before']}, after {result['load_after']}; "
        f"took {result['duration_s']:.0f} s",
        "",
    ]
    return lines


def markdown(result: dict) -> str:
    contenders = [n for n, c in result["contenders"].items() if c["available"]]
    with_subject = SUBJECT in contenders
    show_x_asyncio = BASELINE in contenders
    columns = ["workload", "n"] + [f"{c} ops/s" for c in contenders]
    if with_subject:
        columns += ["ferroloop/uvloop", "ferroloop/best of rloop, cadeloop"]
    lines = _header(result)
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" + "---:|" * (len(columns) - 1))

    failures = []
    for workload, entry in result["workloads"].items():
        cells = entry["contenders"]
        row = [workload, f"{entry['n']:,} {entry['unit']}" + ("s" if entry["n"] != 1 else "")]
        row += [_cell(cells.get(c), show_x_asyncio and c != BASELINE) for c in contenders]
        if with_subject:
            row.append(ratio(entry.get("ferroloop_ratio", {}).get("uvloop")))
            best, best_ratio = _best_rust_peer(entry)
            row.append(f"{ratio(best_ratio)} ({best})" if best else "n/a")
        lines.append("| " + " | ".join(row) + " |")
        failures += [
            f"- {workload} / {c}: {cell['status']} in round {cell['round'] + 1}: {cell['error']}"
            for c, cell in cells.items()
            if cell["status"] != "ok"
        ]

    lines += [
        "",
        "Cells: median ops/s over rounds; (×N) = median over rounds of the paired ratio "
        "to asyncio. Ratio columns: median over rounds of the paired ratio ferroloop/X "
        "(above 1 = ferroloop ahead). threadsafe_throughput is noisy: read it as an "
        "order of magnitude.",
    ]
    if failures:
        lines += ["", "Failures:", *failures]
    return "\n".join(lines) + "\n"


def compare(old: dict, new: dict, threshold: float) -> str:
    """ferroloop/X ratios that moved by `threshold` (relative) or more, and
    workloads where ferroloop had ratios before and has none now."""
    moved, compared = [], 0
    for workload, entry in new["workloads"].items():
        before = old.get("workloads", {}).get(workload, {}).get("ferroloop_ratio", {})
        for other, now in entry.get("ferroloop_ratio", {}).items():
            was = before.get(other)
            if now is None or was is None:
                continue
            compared += 1
            change = now / was - 1
            if abs(change) >= threshold:
                moved.append(
                    f"- {workload}, ferroloop/{other}: {was:.2f} → {now:.2f} ({change:+.1%})"
                )
        if before and not entry.get("ferroloop_ratio"):
            status = entry["contenders"].get(SUBJECT, {}).get("status", "not run")
            moved.append(f"- {workload}: ferroloop had ratios before, none now ({status})")
    head = f"Compared with {old.get('started', '?')}: {compared} ferroloop ratios"
    if not moved:
        return f"{head}, none moved by {threshold:.0%} or more.\n"
    return f"{head}; changes of {threshold:.0%} or more:\n" + "\n".join(moved) + "\n"
