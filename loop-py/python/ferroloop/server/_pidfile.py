"""The pid file (`--pid-file`): written once the process handles SIGTERM,
removed at exit only while it still names this process."""

from __future__ import annotations

import os


def write_pid_file(path: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")


def remove_pid_file(path: str) -> None:
    """Remove it if it still holds our pid (not a later server's)."""
    try:
        with open(path, encoding="ascii") as f:
            if f.read().strip() != str(os.getpid()):
                return
        os.unlink(path)
    except (OSError, ValueError):
        pass
