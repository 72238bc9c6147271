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


def peak_rss_kib(pid: int) -> int:
    """The process's resident-set high-water mark (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")
