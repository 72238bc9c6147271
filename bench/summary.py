"""From raw measurements to the figures BENCHMARKS.md defines.

Per workload and contender: the median ops/s over rounds.  For comparisons:
the median over rounds of the *paired* ratio A/B, each round's A divided by
B's result in the same round, which cancels most of the machine's
round-to-round drift.  A cell with any failed round has no figures: a loop
that did the work wrong once is not ranked on its other rounds.
"""

from __future__ import annotations

from statistics import median

from sched_workloads import WORKLOADS

SUBJECT = "ferroloop"
BASELINE = "asyncio"


def paired_ratio(a: dict[int, float], b: dict[int, float]) -> float | None:
    """Median over the rounds both have of a[round] / b[round]."""
    rounds = sorted(a.keys() & b.keys())
    return median(a[r] / b[r] for r in rounds) if rounds else None


def summarize(records: list[dict], contenders: list[str], workloads: list[str]) -> dict:
    summary = {}
    for workload in workloads:
        taken = [r for r in records if r["workload"] == workload]
        cells: dict[str, dict] = {}
        by_round: dict[str, dict[int, float]] = {}
        for contender in contenders:
            mine = [r for r in taken if r["contender"] == contender]
            failure = next((r for r in mine if r["status"] != "ok"), None)
            if failure is not None:
                cells[contender] = {k: failure[k] for k in ("status", "error", "round")}
            elif mine:
                by_round[contender] = {r["round"]: r["ops_per_s"] for r in mine}
                cells[contender] = {
                    "status": "ok",
                    "median_ops_per_s": median(by_round[contender].values()),
                    "ops_per_s": [r["ops_per_s"] for r in mine],
                }
        if BASELINE in by_round:
            for contender, rounds in by_round.items():
                cells[contender]["x_asyncio"] = paired_ratio(rounds, by_round[BASELINE])
        entry = {
            "n": taken[0]["n"] if taken else None,
            "unit": WORKLOADS[workload].unit,
            "contenders": cells,
        }
        if SUBJECT in by_round:
            entry["ferroloop_ratio"] = {
                other: paired_ratio(by_round[SUBJECT], rounds)
                for other, rounds in by_round.items()
                if other != SUBJECT
            }
        summary[workload] = entry
    return summary
