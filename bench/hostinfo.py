"""What the numbers were measured on: host, CPU, load, source revision."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def git_revision(repo: Path) -> str | None:
    """HEAD's commit, with "+dirty" when the work tree differs; None outside git
    or before the first commit."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return None
    dirty = git("status", "--porcelain").stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


def describe(repo: Path, python_version: str) -> dict:
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "nproc": os.cpu_count(),
        "python": python_version,
        "python_implementation": platform.python_implementation(),
        "git_revision": git_revision(repo),
    }
