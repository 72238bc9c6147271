"""`--reload`: a file watcher (`watchfiles`, inotify through Rust's
`notify`) that tells the supervisor which files changed.

The watcher runs in its own process, forked by the supervisor before any
worker: watchfiles watches from threads, and a process that forks workers
must have none (a fork copies only the forking thread; a lock another
thread holds stays held in the child forever). Its changes reach the
supervisor as JSON lines on a pipe; it exits when the supervisor does.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import os
import signal
from pathlib import PurePath
from typing import Any, Callable

from ._config import Config

logger = logging.getLogger("ferroloop.error")

#: uvicorn's default excludes: hidden files and directories, compiled
#: Python, editor swap and backup files.
DEFAULT_EXCLUDES = (".*", ".py[cod]", ".sw.*", "~*")

INSTALL_HINT = "--reload needs the watchfiles package: pip install 'ferroloop[reload]'"


class ReloadUnavailable(RuntimeError):
    """watchfiles is not installed."""


def check_available() -> None:
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        raise ReloadUnavailable(INSTALL_HINT) from None


class GlobFilter:
    """watchfiles' `watch_filter`: a file matching an include glob, not an
    exclude glob, in no directory an exclude glob matches."""

    def __init__(self, includes: list[str], excludes: list[str]) -> None:
        self.includes = list(includes) or ["*.py"]
        self.excludes = [*DEFAULT_EXCLUDES, *excludes]

    def __call__(self, change: Any, path: str) -> bool:
        p = PurePath(path)
        if not any(p.match(glob) for glob in self.includes):
            return False
        if any(p.match(glob) for glob in self.excludes):
            return False
        return not any(fnmatch.fnmatch(part, glob) for part in p.parent.parts for glob in self.excludes)


def display_path(path: str) -> str:
    """Relative to the working directory when under it (uvicorn's)."""
    try:
        return str(PurePath(path).relative_to(os.getcwd()))
    except ValueError:
        return path


def watch_forever(config: Config, out_fd: int) -> None:
    """The watcher process's body: write each batch of changed paths as one
    JSON line to `out_fd` until the supervisor goes."""
    import watchfiles

    dirs = config.reload_dirs or [os.getcwd()]
    parent = os.getppid()
    debounce = max(50, int(config.reload_delay * 1000))
    for changes in watchfiles.watch(
        *dirs,
        watch_filter=GlobFilter(config.reload_includes, config.reload_excludes),
        debounce=debounce,
        step=min(50, debounce),
        rust_timeout=1000,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        if os.getppid() != parent:
            return  # the supervisor is gone
        if not changes:
            continue
        paths = sorted({display_path(path) for _, path in changes})
        try:
            os.write(out_fd, json.dumps(paths).encode() + b"\n")
        except OSError:
            return


class Watcher:
    """The supervisor's handle on the watcher process."""

    def __init__(
        self,
        config: Config,
        loop: asyncio.AbstractEventLoop,
        on_changes: Callable[[list[str]], None],
        forget_in_child: Callable[[], None],
    ) -> None:
        self._config = config
        self._loop = loop
        self._on_changes = on_changes
        self._forget_in_child = forget_in_child
        self._read_fd = -1
        self._pidfd = -1
        self._pid = 0
        self._buffer = b""

    def start(self) -> None:
        from ._fork import fork_child

        read_fd, write_fd = os.pipe()

        def watcher() -> int:
            os.close(read_fd)
            self._forget_in_child()
            try:
                watch_forever(self._config, write_fd)
            except Exception:
                logger.exception("The reload watcher failed")
                return 1
            return 0

        try:
            pid = fork_child(self._loop, watcher)
        except BaseException:
            os.close(read_fd)
            os.close(write_fd)
            raise
        os.close(write_fd)
        self._pid = pid
        self._pidfd = os.pidfd_open(pid)
        self._read_fd = read_fd
        os.set_blocking(read_fd, False)
        self._loop.add_reader(read_fd, self._readable)
        dirs = self._config.reload_dirs or [os.getcwd()]
        logger.info("Will watch for changes in these directories: %s", sorted(dirs))
        logger.info("Started reloader process [%d] using WatchFiles", pid)

    def _readable(self) -> None:
        try:
            data = os.read(self._read_fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            logger.error("The reload watcher process exited: files are no longer watched")
            self._close_pipe()
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            with contextlib.suppress(ValueError):
                paths = json.loads(line)
                if isinstance(paths, list) and paths:
                    self._on_changes([str(p) for p in paths])

    def _close_pipe(self) -> None:
        if self._read_fd < 0:
            return
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            self._loop.remove_reader(self._read_fd)
        os.close(self._read_fd)
        self._read_fd = -1

    def stop(self) -> None:
        """Stop watching and end the watcher process (also after it exited
        on its own: it is reaped here)."""
        self._close_pipe()
        if self._pidfd < 0:
            return
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGTERM)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self._pid, 0)
        os.close(self._pidfd)
        self._pidfd = -1

    def forget(self) -> None:
        """In a forked worker: close the pipe and pidfd, loop untouched."""
        for fd in (self._read_fd, self._pidfd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._read_fd = self._pidfd = -1
