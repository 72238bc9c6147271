"""The scheduling suite's markdown: one row per workload, ops/s per contender
and ferroloop's paired ratios to uvloop and to the better Rust peer."""

from __future__ import annotations

from statistics import median

import report
from summary import BASELINE, SUBJECT

# ferroloop's figure against "the best Rust peer" picks per workload whichever
# of these had the higher median.
RUST_PEERS = ("rloop", "cadeloop", "rsloop")


def _cell(cell: dict | None, show_x_asyncio: bool) -> str:
    if cell is None:
        return "–"
    if cell["status"] != "ok":
        return f"**{cell['status']}**"
    text = report.ops(cell["median_ops_per_s"])
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
    method = result["method"]
    text = (
        f"{method['rounds']} rounds, contenders rotated each round, one fresh process "
        f"per measurement (pinned to CPU {method['cpu']}) after an in-process warm-up; "
        + ("n = spec / 4 (--quick)" if method["quick"] else "n as in bench/README.md")
    )
    notes = []
    shares = [m["cpu_s"] / m["elapsed"] for m in result["measurements"] if m["status"] == "ok"]
    if shares:
        notes.append(
            f"- worker CPU share (CPU time / wall time, median over measurements): "
            f"{median(shares):.0%}; well below 100% means workers waited for their CPU"
        )
    return report.header(result, "Scheduling benchmark", text, notes)


# The Queue comparison: the same round trips on ferroloop.Queue and on
# cadeloop.Queue, on each contender's loop.
QUEUE_PAIR = ("queue_pingpong_native", "queue_pingpong_cadeloop")


def queue_table(result: dict) -> list[str]:
    """ferroloop.Queue / cadeloop.Queue on each loop: the median over rounds
    of the per-round ratio (both workloads measured in the same round);
    [] when the two workloads did not both run."""
    native, cade = QUEUE_PAIR
    by_key = {
        (m["round"], m["contender"], m["workload"]): m["ops_per_s"]
        for m in result["measurements"]
        if m["status"] == "ok" and m["workload"] in QUEUE_PAIR
    }
    rows = []
    for contender in result["contenders"]:
        ratios = [
            by_key[(r, c, native)] / by_key[(r, c, cade)]
            for (r, c, w) in by_key
            if c == contender and w == native and (r, c, cade) in by_key
        ]
        if ratios:
            rows.append(
                f"| {contender} | {median(ratios):.3f} ({min(ratios):.2f}–{max(ratios):.2f}) | {len(ratios)} |"
            )
    if not rows:
        return []
    return [
        "## ferroloop.Queue / cadeloop.Queue, on each loop",
        "",
        "Median over rounds of the paired ratio of `queue_pingpong_native` to "
        "`queue_pingpong_cadeloop` (above 1 = ferroloop.Queue ahead); (low–high) "
        "is the range of the per-round ratios.",
        "",
        "| loop | ratio | rounds |",
        "|---|---:|---:|",
        *rows,
    ]


def markdown(result: dict) -> str:
    contenders = [n for n, c in result["contenders"].items() if c["available"]]
    with_subject = SUBJECT in contenders
    show_x_asyncio = BASELINE in contenders
    columns = ["workload", "n"] + [f"{c} ops/s" for c in contenders]
    if with_subject:
        columns += ["ferroloop/uvloop", "ferroloop/best of rloop, cadeloop, rsloop"]
    lines = _header(result)
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" + "---:|" * (len(columns) - 1))

    for workload, entry in result["workloads"].items():
        cells = entry["contenders"]
        row = [workload, f"{entry['n']:,} {entry['unit']}" + ("s" if entry["n"] != 1 else "")]
        row += [_cell(cells.get(c), show_x_asyncio and c != BASELINE) for c in contenders]
        if with_subject:
            row.append(report.ratio(entry.get("ferroloop_ratio", {}).get("uvloop")))
            best, best_ratio = _best_rust_peer(entry)
            row.append(f"{report.ratio(best_ratio)} ({best})" if best else "n/a")
        lines.append("| " + " | ".join(row) + " |")

    lines += [
        "",
        "Cells: median ops/s over rounds; (×N) = median over rounds of the paired ratio "
        "to asyncio. Ratio columns: median over rounds of the paired ratio ferroloop/X "
        "(above 1 = ferroloop ahead). threadsafe_throughput is noisy: read it as an "
        "order of magnitude.",
    ]
    queue = queue_table(result)
    if queue:
        lines += ["", *queue]
    base = report.base_table(result, None, (("ops_per_s", "ops/s"),))
    if base:
        lines += ["", *base]
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"
