"""The toolkit suite's figures and markdown: per workload each
implementation's ops/s, ferroloop's paired ratios to the others, the
requirements (bench/README.md, "Toolkit suite") and the floor per
cross-thread round trip."""

from __future__ import annotations

from statistics import median

import report
from summary import SUBJECT, cells, subject_ratios
from toolkit_workloads import IMPLS, WORKLOADS

# ferroloop / X at least this on every cross-thread workload X runs in.
REQUIRED = {"janus": 2.0, "culsans": 1.2, "rcts": 2.0, "rcts-asyncio": 2.0}
FLOOR = "floor"
# multiloop's own figures (its README; Apple M1, 8 cores, CPython 3.14.6
# free-threaded): it needs 3.14t, so it cannot run on this machine.
MULTILOOP_PUBLISHED = (
    "multiloop 0.1.3 publishes (Apple M1, 8 cores, CPython 3.14t, its own harness): "
    "cross-thread channel ping-pong 185k msgs/s with 1 worker loop, 340k with 4, 410k "
    "with 8. It needs free-threaded 3.14, which is not on this machine, so it is not "
    "measured here."
)


def summarize(records: list[dict], impls: list[str], workloads: list[str]) -> dict:
    """workload -> {n, unit, cross_thread, contenders: cells,
    ferroloop_ratio: {other: r}, floor_us: µs per round trip}."""
    summary = {}
    for workload in workloads:
        taken = [r for r in records if r["workload"] == workload]
        mine = [i for i in impls if i in WORKLOADS[workload].impls]
        out, by_round = cells(taken, mine, ("ops_per_s",))
        entry = {
            "n": taken[0]["n"] if taken else None,
            "unit": WORKLOADS[workload].unit,
            "cross_thread": WORKLOADS[workload].cross_thread,
            "contenders": out,
            "ferroloop_ratio": subject_ratios(by_round["ops_per_s"]),
        }
        cell = out.get(SUBJECT if workload != FLOOR else FLOOR, {})
        if cell.get("status") == "ok":
            entry["us_per_op"] = 1e6 / cell["median_ops_per_s"]
        summary[workload] = entry
    return summary


def _cell(cell: dict | None) -> str:
    if cell is None:
        return "–"
    if cell["status"] != "ok":
        return f"**{cell['status']}**"
    return report.ops(cell["median_ops_per_s"])


def gates(entry: dict) -> list[tuple[str, float | None, float, bool]]:
    """(other, ferroloop/other, required, met) for each requirement that
    applies to this workload."""
    if not entry["cross_thread"]:
        return []
    found = []
    for other, needed in REQUIRED.items():
        if other in entry["contenders"]:
            r = entry["ferroloop_ratio"].get(other)
            found.append((other, r, needed, r is not None and r >= needed))
    return found


def markdown(result: dict) -> str:
    method = result["method"]
    text = (
        f"{method['rounds']} rounds, implementations rotated each round, one fresh process per "
        f"measurement (all its threads pinned to CPU {method['cpu']}) after a warm-up of n/10; "
        + (f"n = spec / {method['n_divisor']} (--quick)" if method["quick"] else "n as in bench/README.md")
        + "; async sides on ferroloop's loop"
    )
    lines = report.header(result, "Toolkit benchmark", text, [f"- {MULTILOOP_PUBLISHED}"])
    shown = [i for i in IMPLS if any(i in e["contenders"] for e in result["workloads"].values())]
    lines += [
        "## Throughput",
        "",
        "| workload | unit | " + " | ".join(shown) + " |",
        "|---|---|" + "---:|" * len(shown),
    ]
    for name, entry in result["workloads"].items():
        row = [_cell(entry["contenders"].get(i)) for i in shown]
        lines.append(f"| {name} | {entry['unit']} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Cells: median ops/s over rounds. floor: two plain threads answering each other "
        "through pipes, the least a cross-thread round trip costs (two wake-ups, two GIL "
        "hand-offs).",
        "",
        "## ferroloop against the others",
        "",
        "| workload | ferroloop / each other (paired median) | requirements | µs per op | × floor |",
        "|---|---|---|---:|---:|",
    ]
    floor_us = result["workloads"].get(FLOOR, {}).get("us_per_op")
    for name, entry in result["workloads"].items():
        if name == FLOOR:
            continue
        ratios = ", ".join(f"{other} {report.ratio(r)}" for other, r in entry["ferroloop_ratio"].items())
        required = ", ".join(
            f"{'met' if met else '**missed**'}: {other} {report.ratio(r)} ≥ {needed:g}"
            for other, r, needed, met in gates(entry)
        ) or "–"
        us = entry.get("us_per_op")
        times_floor = (
            f"{us / floor_us:.1f}" if us is not None and floor_us and entry["unit"] == "round trip" else "–"
        )
        timing = f"{us:.1f}" if us is not None else "–"
        lines.append(f"| {name} | {ratios or '–'} | {required} | {timing} | {times_floor} |")
    if floor_us is not None:
        lines += ["", f"The floor per cross-thread round trip: {floor_us:.1f} µs (median)."]
    shares = [m["cpu_s"] / m["elapsed"] for m in result["measurements"] if m["status"] == "ok"]
    if shares:
        lines += ["", f"Worker CPU share (CPU time / wall time, median): {median(shares):.0%}."]
    failed = report.failures(result)
    if failed:
        lines += ["", "## Failures", "", *failed]
    return "\n".join(lines) + "\n"
