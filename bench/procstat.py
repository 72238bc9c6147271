"""What Linux's /proc says about another process: its CPU time and peak RSS.

Read from outside, so a server is measured the same way whatever loop it runs
and without code of ours in its hot path.
"""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of all the process's threads so far (clock-tick
    resolution, 10 ms on usual kernels)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may hold spaces and parentheses; the fields
    # after its closing parenthesis start at field 3, so utime (field 14) and
    # stime (15) are at indexes 11 and 12.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def peak_rss_kib(pid: int) -> int:
    """The process's resident-set high-water mark (VmHWM), in KiB."""
    return _status_kib(pid, "VmHWM")


def rss_kib(pid: int) -> int:
    """The process's resident set now (VmRSS), in KiB."""
    return _status_kib(pid, "VmRSS")


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat from field 3 (state) on; raises OSError once the
    process is gone."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (a server that runs its app in a
    worker process, granian's, is measured as the whole tree)."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            # Field 4, the parent's pid, is index 1 after the command name.
            parent = int(_stat_fields(int(entry.name))[1])
        except (OSError, ValueError, IndexError):
            continue  # exited while we looked
        parents.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, ()))
    return tree


def tree_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes, each with its reaped
    children's (cutime + cstime), so a worker that exits and is waited for
    keeps counting.  A process already gone counts nothing."""
    ticks = 0
    for pid in pids:
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ticks / CLOCK_TICKS_PER_S


def tree_peak_rss_kib(pids: list[int]) -> int:
    """The sum of the processes' VmHWM: for one process its peak RSS, for
    a tree an upper bound of the peak of the whole (each peaked on its own)."""
    return _tree_sum(pids, peak_rss_kib)


def tree_rss_kib(pids: list[int]) -> int:
    """The sum of the processes' VmRSS now (the WebSocket suite's memory
    per idle connection is the difference of two such readings)."""
    return _tree_sum(pids, rss_kib)


def _tree_sum(pids: list[int], read) -> int:
    total = 0
    for pid in pids:
        try:
            total += read(pid)
        except (OSError, RuntimeError):
            continue  # exited while we looked
    return total
