"""Subprocesses: ``subprocess_exec``/``subprocess_shell`` (and so
``asyncio.create_subprocess_*``), on asyncio's own subprocess transport with
the pipe transports of this loop.

Children are reaped without the child-watcher API (deprecated in 3.12,
removed in 3.14): a pidfd (Linux ≥ 5.3) turns readable when the child
exits and is watched like any fd; elsewhere a thread blocks in ``waitid``
for that one child, leaving the reaping to the loop.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from asyncio import base_subprocess, unix_events
from typing import Any, Callable

logger = logging.getLogger("asyncio")


class SubprocessTransport(base_subprocess.BaseSubprocessTransport):
    def _start(self, args: Any, shell: bool, stdin: Any, stdout: Any, stderr: Any, bufsize: int, **kwargs: Any) -> None:
        self._proc = subprocess.Popen(args, shell=shell, stdin=stdin, stdout=stdout, stderr=stderr,
                                      universal_newlines=False, bufsize=bufsize, **kwargs)

    # 3.14's own (gh-127049), on every version: os.kill unless the exit is
    # known. Before 3.14 asyncio went through Popen.send_signal, whose poll()
    # reaps an exited child itself: the loop's watcher then found no child
    # (returncode 255), and the pid was free for reuse meanwhile.
    def send_signal(self, signal: int) -> None:
        self._check_proc()
        if self._returncode is not None or self._proc.returncode is not None:
            return  # exited (and reaped: the pid may be another process's now)
        try:
            os.kill(self._proc.pid, signal)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _exit_code(pid: int) -> int:
    """Reap ``pid`` (which has exited or will) and return its returncode."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        # Someone else reaped it (another waitpid(-1) user in the process).
        logger.warning("Unknown child process pid %d, will report returncode 255", pid)
        return 255
    return os.waitstatus_to_exitcode(status)


def _exit_hops() -> int:
    """How many loop iterations the running version's asyncio lets pass
    between noticing a child's exit and calling the transport's
    ``_process_exited`` (its ``_child_watcher_callback``): 3.11 does
    ``call_soon_threadsafe(call_soon, ...)`` ("skip one iteration for
    callbacks to be executed"), 3.12 and 3.13 a single
    ``call_soon_threadsafe``, 3.14+ none (gh-127049). Read from the names
    that callback uses, so a patch release that changes it is followed."""
    names = unix_events._UnixSelectorEventLoop._child_watcher_callback.__code__.co_names
    if "call_soon" in names:
        return 2
    return 1 if "call_soon_threadsafe" in names else 0


# The pipes' EOF takes as many hops to become ``pipe_connection_lost``, so a
# child that writes and exits gets its ``pipe_connection_lost`` calls before
# ``process_exited`` where asyncio gives them that order.
_EXIT_HOPS = _exit_hops()


def _reap_and_publish(loop: Any, transport: Any, hops: int) -> None:
    """Reap the transport's child and hand it the returncode after ``hops``
    loop iterations (``_EXIT_HOPS``; none from 3.14 on, where reaping and
    publishing are one step, asyncio's gh-127049). The child's ``Popen``
    learns the returncode at once, so ``send_signal()`` never reaches the
    pid once it is reaped and may be recycled: before 3.14 it goes through
    ``Popen.send_signal``, which checks that returncode."""
    returncode = _exit_code(transport.get_pid())
    proc = transport._proc
    if proc is not None and proc.returncode is None:
        proc.returncode = returncode
    _publish_exit(loop, transport._process_exited, returncode, hops)


def _publish_exit(loop: Any, on_exit: Callable[[int], object], returncode: int, hops: int) -> None:
    if hops:
        loop.call_soon(_publish_exit, loop, on_exit, returncode, hops - 1)
    else:
        on_exit(returncode)


def watch_child(loop: Any, transport: Any) -> None:
    """Reap the subprocess transport's child once it exits, and tell the
    transport (``_process_exited``) on the loop."""
    pid = transport.get_pid()
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is None:
        _wait_in_thread(loop, pid, transport)
        return

    def exited() -> None:
        del loop._child_pidfds[pidfd]
        loop._remove_reader(pidfd)
        os.close(pidfd)
        _reap_and_publish(loop, transport, _EXIT_HOPS)

    loop._child_pidfds[pidfd] = pid
    loop._add_reader(pidfd, exited)


def _wait_in_thread(loop: Any, pid: int, transport: Any | None) -> None:
    """Wait for ``pid`` in a thread without reaping it, then have the loop
    reap it and tell ``transport``; reap it in the thread when there is no
    transport or the loop has been closed meanwhile (then warn, as
    asyncio's child watcher does)."""

    def orphaned() -> None:
        _exit_code(pid)
        logger.warning("Loop %r that handles pid %r is closed", loop, pid)

    def wait() -> None:
        if transport is None:
            orphaned()
            return
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # reaped elsewhere: _exit_code reports it
        if loop.is_closed():
            orphaned()
            return
        try:
            # The thread's wake-up is the first hop.
            loop.call_soon_threadsafe(_reap_and_publish, loop, transport, max(_EXIT_HOPS - 1, 0))
        except RuntimeError:
            orphaned()  # closed concurrently

    threading.Thread(target=wait, name=f"ferroloop-waitpid-{pid}", daemon=True).start()


def abandon_children(loop: Any) -> None:
    """For ``Loop.close()``: children still running lose their watcher. Their
    pidfds are closed now (not leaked with the loop) and each is reaped by a
    thread, so none is left a zombie."""
    watched, loop._child_pidfds = loop._child_pidfds, {}
    for pidfd, pid in watched.items():
        loop._remove_reader(pidfd)
        os.close(pidfd)
        _wait_in_thread(loop, pid, None)


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
        watch_child(loop, transport)
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
