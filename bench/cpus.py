"""Where benchmark processes run: bench/README.md ("Method") pins the measured process
(worker or server) to CPU 0 and the load generator to CPU 1."""

from __future__ import annotations

import os


def measured_cpu() -> int:
    """CPU 0, or the first CPU we may use if 0 is not ours."""
    allowed = os.sched_getaffinity(0)
    return 0 if 0 in allowed else min(allowed)


def load_cpu() -> int:
    """CPU 1, or another allowed CPU than measured_cpu(); the same one when
    it is the only CPU we have (then client and server share it)."""
    allowed = os.sched_getaffinity(0)
    others = sorted(allowed - {measured_cpu()})
    if 1 in others:
        return 1
    return others[0] if others else measured_cpu()


def pin_to(cpu: int):
    """A subprocess preexec_fn that pins the child before it execs, so the
    process is placed from its first instruction and keeps its pid."""
    return lambda: os.sched_setaffinity(0, {cpu})
