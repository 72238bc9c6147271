"""Command-line tools a suite runs (wrk, nginx), installed from Debian's
packages when missing."""

from __future__ import annotations

import os
import shutil
import subprocess


def ensure_tool(binary: str, package: str) -> str:
    """`binary`'s path, installing Debian's `package` when it is missing
    (as root, or through sudo); raises RuntimeError saying what to do
    otherwise."""

    def which() -> str | None:
        return shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")

    found = which()
    if found:
        return found
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo"):
        prefix = ["sudo", "-n"]
    else:
        raise RuntimeError(
            f"{binary} is not installed and neither root nor sudo is available to install it: "
            f"install it (Debian/Ubuntu: apt-get install {package}) and run again"
        )
    if shutil.which("apt-get") is None:
        raise RuntimeError(f"{binary} is not installed and there is no apt-get here: install {package}")
    for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", package]):
        proc = subprocess.run(prefix + step, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise RuntimeError(f"`{' '.join(prefix + step)}` failed: {tail}; install {package} by hand")
    found = which()
    if not found:
        raise RuntimeError(f"apt-get installed {package}, but {binary} is not on PATH")
    return found
