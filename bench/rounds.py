"""The method every suite shares: contenders interleaved round by round with
rotation (A B C, B C A, ...), each measurement taken by a suite-specific
function (a fresh process per measurement).

Rounds are the outer loop, so each round covers every workload and a slow
drift of the machine (another tenant, thermal state) spreads over all cells
instead of landing on one.
"""

from __future__ import annotations

from collections.abc import Callable


def rotation(contenders: list[str], round_index: int) -> list[str]:
    k = round_index % len(contenders)
    return contenders[k:] + contenders[:k]


def run(
    contenders: list[str],
    workloads: list[str],
    rounds: int,
    measure: Callable[[str, str], dict],
    progress: Callable[[dict], None],
    takes_part: Callable[[str, str], bool] | None = None,
) -> list[dict]:
    """All measurements, in the order taken.  `measure(contender, workload)`
    returns a record with a "status" and never raises.  A contender that
    fails a workload is not run on it again: its cell is failed either way.
    `takes_part(contender, workload)`, when given, leaves out the pairs it
    is false for."""
    failed: set[tuple[str, str]] = set()
    records = []
    for round_index in range(rounds):
        for workload in workloads:
            for slot, contender in enumerate(rotation(contenders, round_index)):
                if (contender, workload) in failed:
                    continue
                if takes_part is not None and not takes_part(contender, workload):
                    continue
                record = {
                    "round": round_index,
                    "slot": slot,
                    "contender": contender,
                    "workload": workload,
                }
                record |= measure(contender, workload)
                if record["status"] != "ok":
                    failed.add((contender, workload))
                records.append(record)
                progress(record)
    return records
