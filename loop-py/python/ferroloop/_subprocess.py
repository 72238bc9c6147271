"""Subprocesses: ``subprocess_exec``/``subprocess_shell`` (and so
``asyncio.create_subprocess_*``), on asyncio's own subprocess transport with
the pipe transports of this loop.

Children are reaped without the child-watcher API (deprecated in 3.12,
removed in 3.14): a pidfd (Linux ≥ 5.3) turns readable when the child
exits and is watched like any fd; elsewhere a thread blocks in
``waitpid`` for that one child.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from asyncio import base_subprocess
from typing import Any, Callable

logger = logging.getLogger("asyncio")


class SubprocessTransport(base_subprocess.BaseSubprocessTransport):
    def _start(self, args: Any, shell: bool, stdin: Any, stdout: Any, stderr: Any, bufsize: int, **kwargs: Any) -> None:
        self._proc = subprocess.Popen(args, shell=shell, stdin=stdin, stdout=stdout, stderr=stderr,
                                      universal_newlines=False, bufsize=bufsize, **kwargs)


def _exit_code(pid: int) -> int:
    """Reap ``pid`` (which has exited or will) and return its returncode."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        # Someone else reaped it (another waitpid(-1) user in the process).
        logger.warning("Unknown child process pid %d, will report returncode 255", pid)
        return 255
    return os.waitstatus_to_exitcode(status)


# How many loop iterations asyncio's default child watcher lets pass between
# noticing the exit and calling the transport's ``_process_exited``: 3.11's
# ThreadedChildWatcher does ``call_soon_threadsafe(call_soon, ...)`` ("skip
# one iteration for callbacks to be executed"), 3.12+'s PidfdChildWatcher a
# single ``call_soon_threadsafe``. The pipes' EOF takes as many hops to
# become ``pipe_connection_lost``, so a child that writes and exits gets its
# ``pipe_connection_lost`` calls before ``process_exited``, as on asyncio.
_EXIT_HOPS = 2 if sys.version_info < (3, 12) else 1


def _deliver_exit(loop: Any, on_exit: Callable[[int], object], returncode: int, threadsafe: bool) -> None:
    call: Any = loop.call_soon_threadsafe if threadsafe else loop.call_soon
    if _EXIT_HOPS == 2:
        call(loop.call_soon, on_exit, returncode)
    else:
        call(on_exit, returncode)


def watch_child(loop: Any, pid: int, on_exit: Callable[[int], object]) -> None:
    """Call ``on_exit(returncode)`` on the loop once child ``pid`` exits."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is None:
        _reap_in_thread(loop, pid, on_exit)
        return

    def exited() -> None:
        del loop._child_pidfds[pidfd]
        loop._remove_reader(pidfd)
        os.close(pidfd)
        _deliver_exit(loop, on_exit, _exit_code(pid), threadsafe=False)

    loop._child_pidfds[pidfd] = pid
    loop._add_reader(pidfd, exited)


def _reap_in_thread(loop: Any, pid: int, on_exit: Callable[[int], object] | None) -> None:
    """Wait for ``pid`` in a thread; call ``on_exit`` on the loop unless it
    has been closed meanwhile (then warn, as asyncio's child watcher does)."""

    def wait() -> None:
        returncode = _exit_code(pid)
        if on_exit is None or loop.is_closed():
            logger.warning("Loop %r that handles pid %r is closed", loop, pid)
        else:
            _deliver_exit(loop, on_exit, returncode, threadsafe=True)

    threading.Thread(target=wait, name=f"ferroloop-waitpid-{pid}", daemon=True).start()


def abandon_children(loop: Any) -> None:
    """For ``Loop.close()``: children still running lose their watcher. Their
    pidfds are closed now (not leaked with the loop) and each is reaped by a
    thread, so none is left a zombie."""
    watched, loop._child_pidfds = loop._child_pidfds, {}
    for pidfd, pid in watched.items():
        loop._remove_reader(pidfd)
        os.close(pidfd)
        _reap_in_thread(loop, pid, None)


class SubprocessOps:
    """``subprocess_exec``/``subprocess_shell`` for ``Loop`` (a mixin)."""

    async def subprocess_shell(self, protocol_factory: Callable[[], Any], cmd: Any, *, stdin: Any = subprocess.PIPE,
                               stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
                               universal_newlines: bool = False, shell: bool = True, bufsize: int = 0,
                               encoding: Any = None, errors: Any = None, text: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        if not isinstance(cmd, (bytes, str)):
            raise ValueError("cmd must be a string")
        if universal_newlines:
            raise ValueError("universal_newlines must be False")
        if not shell:
            raise ValueError("shell must be True")
        _check_byte_streams(bufsize, text, encoding, errors)
        protocol = protocol_factory()
        transport = await self._make_subprocess_transport(protocol, cmd, True, stdin, stdout, stderr, bufsize, **kwargs)
        return transport, protocol

    async def subprocess_exec(self, protocol_factory: Callable[[], Any], program: Any, *args: Any,
                              stdin: Any = subprocess.PIPE, stdout: Any = subprocess.PIPE,
                              stderr: Any = subprocess.PIPE, universal_newlines: bool = False, shell: bool = False,
                              bufsize: int = 0, encoding: Any = None, errors: Any = None, text: Any = None,
                              **kwargs: Any) -> tuple[Any, Any]:
        if universal_newlines:
            raise ValueError("universal_newlines must be False")
        if shell:
            raise ValueError("shell must be False")
        _check_byte_streams(bufsize, text, encoding, errors)
        protocol = protocol_factory()
        transport = await self._make_subprocess_transport(protocol, (program, *args), False, stdin, stdout, stderr,
                                                          bufsize, **kwargs)
        return transport, protocol

    async def _make_subprocess_transport(self, protocol: Any, args: Any, shell: bool, stdin: Any, stdout: Any,
                                         stderr: Any, bufsize: int, extra: Any = None, **kwargs: Any) -> Any:
        loop: Any = self
        waiter = loop.create_future()
        transport = SubprocessTransport(loop, protocol, args, shell, stdin, stdout, stderr, bufsize,
                                        waiter=waiter, extra=extra, **kwargs)
        watch_child(loop, transport.get_pid(), transport._process_exited)
        try:
            await waiter
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException:
            transport.close()
            await transport._wait()
            raise
        return transport


def _check_byte_streams(bufsize: int, text: Any, encoding: Any, errors: Any) -> None:
    if bufsize != 0:
        raise ValueError("bufsize must be 0")
    if text:
        raise ValueError("text must be False")
    if encoding is not None:
        raise ValueError("encoding must be None")
    if errors is not None:
        raise ValueError("errors must be None")
