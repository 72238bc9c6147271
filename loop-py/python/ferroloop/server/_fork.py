"""Forking a child of the supervisor (a worker, the reload watcher): the one
fork sequence both use.

The supervisor is a running ferroloop loop with signal handlers installed
(a Python handler per signal and `signal.set_wakeup_fd` on the loop's
wake-up socketpair). Its signals are blocked around the fork, so none
reaches the child while it still has the parent's handlers; the child then
drops the wake-up fd (a signal to the child must never be written into the
parent's socket, where the parent would take it for its own), closes its
copies of the wake-up pair, sets its dispositions (`CHILD_SIGNALS`), and
only then unblocks and runs its body, before anything imports the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from typing import Callable

logger = logging.getLogger("ferroloop.error")

#: The signals the supervisor handles, and their dispositions in a child
#: until it installs its own. Ctrl-C and a terminal's hang-up reach the
#: whole process group; the supervisor decides what they mean, so a child
#: ignores SIGINT, SIGHUP, SIGTTIN and SIGTTOU for good: a supervised
#: worker's `Server` installs SIGTERM only (a graceful drain, the
#: supervisor's stop and retire requests), and the supervisor answers a
#: second SIGINT/SIGTERM with SIGKILL. SIGTERM is at its default until the
#: worker's loop runs (a worker told to stop while it imports the app just
#: ends). SIGQUIT is at its default everywhere (the process ends at once,
#: with a core where enabled), as uvicorn's.
CHILD_SIGNALS = {
    signal.SIGINT: signal.SIG_IGN,
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGHUP: signal.SIG_IGN,
    signal.SIGTTIN: signal.SIG_IGN,
    signal.SIGTTOU: signal.SIG_IGN,
}

#: Exit status of a child whose body raised (or returned no status).
EXIT_CHILD_FAILED = 1


def fork_child(loop: asyncio.AbstractEventLoop, body: Callable[[], int]) -> int:
    """Fork; return the child's pid (in the parent). The child resets its
    signals (above), runs `body()` and exits with the status it returns;
    it never returns into the caller's code. `loop` is the parent's
    running loop, whose wake-up pair the child closes (never touching the
    loop otherwise)."""
    if threading.active_count() > 1:
        # A fork copies only this thread: a lock another thread holds stays held in the child.
        logger.warning("Forking a child while %d threads run", threading.active_count())
    for handler in logging.getLogger().handlers + logger.handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, CHILD_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_SIGNALS)
        raise
    if pid == 0:  # the child: never returns
        code = EXIT_CHILD_FAILED
        try:
            _reset_signals_in_child(loop)
            code = body()
        except BaseException:  # noqa: BLE001 - the process ends here either way
            logger.exception("Child process [%d] failed", os.getpid())
        finally:
            os._exit(code)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_SIGNALS)
    return pid


def _reset_signals_in_child(loop: asyncio.AbstractEventLoop) -> None:
    """Right after fork, signals still blocked: drop the parent's wake-up
    fd and close the child's copies of the parent loop's wake-up pair, set
    `CHILD_SIGNALS`, then unblock."""
    from .._loop import Loop

    signal.set_wakeup_fd(-1)
    if isinstance(loop, Loop):
        loop._signal_handlers.forget()
    for sig, disposition in CHILD_SIGNALS.items():
        signal.signal(sig, disposition)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_SIGNALS)
