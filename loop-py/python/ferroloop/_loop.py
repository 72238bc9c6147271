"""``ferroloop.Loop``: the native loop plus asyncio's long tail.

The hot methods (``call_soon``, ``call_later``, ``call_at``, ``time``,
``create_future``, ``create_task``, fd callbacks, the tick) are native and
found on the native base class with no Python frame in between. What runs
once per ``run_forever`` or off the hot path lives here: running-loop
bookkeeping, asyncgen hooks, executors, signals, DNS, exception handlers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import os
import socket
import sys
import threading
import traceback
import warnings
import weakref
from asyncio import base_events, coroutines, events, futures, tasks
from typing import Any, Awaitable, Callable, TypedDict, TypeVar

from . import _native
from ._signals import SignalHandlers
from ._signatures import follow_stdlib
from ._datagram import DatagramOps
from ._pipes import PipeOps
from ._sockets import SocketOps
from ._streams import StreamOps
from ._subprocess import SubprocessOps, abandon_children

logger = logging.getLogger("asyncio")
#: The poller backend's one INFO line (why `auto` did not give io_uring) and
#: the warning of a ring that failed mid-run. Not asyncio's logger: asyncio
#: has no backends, and the server's logging configuration shows
#: `ferroloop` at INFO (a plain program, unconfigured, stays quiet).
backend_logger = logging.getLogger("ferroloop")
#: The INFO line was logged in this process (inherited by a forked child).
_fallback_logged = False

_T = TypeVar("_T")


class LoopStats(TypedDict):
    """What ``Loop.stats()`` returns: always-on counters since the loop was
    made, and gauges read now. Times are wall-clock seconds inside
    ``run_forever`` (time between runs counts as neither busy nor polling)."""

    ticks: int  #: loop iterations
    polls: int  #: poller waits (a tick with no fds and nothing to wait for makes none)
    blocking_polls: int  #: waits with a non-zero timeout
    poll_seconds: float  #: time blocked in those waits
    busy_seconds: float  #: time running and not blocked in a poll
    utilization: float  #: busy / (busy + poll), 0.0 before the first run
    callbacks: int  #: handles taken from the ready queue to run (cancelled ones included)
    timers_fired: int  #: due timers moved to the ready queue
    timers_cancelled: int  #: scheduled timers cancelled
    threadsafe_calls: int  #: call_soon_threadsafe items received through the cross-thread queue (not from the running loop's own thread)
    ready: int  #: handles queued for the next tick now
    timers: int  #: scheduled timers not known to be cancelled, now
    fds: int  #: registered fds now
    backend: str  #: the poller backend: "io_uring", "epoll" (or "polling" in a build with only it)

# The stdlib's own callback, not a copy: anyio finds the root task (for
# worker threads) by looking for exactly this function among a task's
# done callbacks.
_run_until_complete_cb = base_events._run_until_complete_cb


def _bind_call_soon(loop: Any) -> Any:
    """On 3.11, make ``loop.call_soon`` an instance attribute, bound,
    while the loop runs; returns what it set, or None.

    3.11's C ``Task`` and ``Future`` fetch ``loop.call_soon`` as an
    attribute for every task step and done callback (to pass
    ``context=``), which binds a new method object each time: an
    allocation and a free per callback that the instance attribute
    avoids. 3.12+ call the method without binding it. The attribute is a
    reference cycle through the loop, so it exists only while the loop
    runs; a ``call_soon`` a subclass overrides, or one set on the instance
    (a test's mock), is left alone.
    """
    if not _BIND_CALL_SOON or type(loop).call_soon is not _native.Loop.call_soon:
        return None
    bound = loop.call_soon
    # Binding makes a new object every time; an instance attribute is the
    # same one twice. (Not `"call_soon" in loop.__dict__`: asking for
    # `__dict__` turns the instance's inline attribute values into a dict,
    # which slows every other attribute access on the loop.)
    if bound is loop.call_soon:
        return None
    loop.call_soon = bound
    return bound


_BIND_CALL_SOON = sys.version_info < (3, 12)

#: asyncio's own check (legacy ``@coroutine`` markers included), without the
#: DeprecationWarning the public name gives from 3.14 on.
_iscoroutinefunction = getattr(coroutines, "_iscoroutinefunction", coroutines.iscoroutinefunction)


class Loop(_native.Loop, StreamOps, DatagramOps, PipeOps, SubprocessOps, SocketOps, asyncio.AbstractEventLoop):
    """A ferroloop event loop; use it wherever an asyncio loop is expected."""

    def __init__(self, *, backend: str | None = None) -> None:
        # `backend` was taken by the native constructor (`__new__`).
        super().__init__()
        if self._backend_fallback is not None:
            _log_fallback(self._backend_fallback)
        self._default_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_shutdown_called = False
        self._exception_handler: Callable[[Any, dict[str, Any]], object] | None = None
        self._asyncgens: weakref.WeakSet[Any] = weakref.WeakSet()
        self._asyncgens_shutdown_called = False
        self._signal_handlers = SignalHandlers(self)
        self._thread_id: int | None = None
        #: fd -> live stream transport (asyncio's ``_transports``), so fd
        #: callbacks cannot be added behind a transport's back.
        self._transports: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        #: listening socket -> its native accept loop (see _streams._start_serving).
        self._listeners: dict[socket.socket, Any] = {}
        #: pidfd -> pid of the children being watched (see _subprocess).
        self._child_pidfds: dict[int, int] = {}
        self._coroutine_origin_tracking_enabled = False
        self._coroutine_origin_tracking_saved_depth: int | None = None
        #: listening Unix socket -> inode of its file, removed on close (3.13's cleanup_socket).
        self._unix_server_sockets: dict[socket.socket, int] = {}
        # Decided as asyncio's loop decides it (-X dev, PYTHONASYNCIODEBUG,
        # and the hook tools patch).
        self.set_debug(coroutines._is_debug_mode())
        _live_loops.add(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} running={self.is_running()} closed={self.is_closed()} debug={self.get_debug()}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if not self.is_closed():
            _warn(f"unclosed event loop {self!r}", ResourceWarning, source=self)
            if not self.is_running():
                # Garbage: the handles it queues are too (see _native's _close).
                self._finalizing = True
                self.close()

    # -- private attributes asyncio's loop has ----------------------------
    # Test utilities and libraries read some of asyncio's private loop
    # attributes (``loop._closed`` in aiohttp-style fixtures, anyio's
    # ``loop._default_executor``); each here means what asyncio's does.
    # Plain attributes set in __init__ already: _thread_id,
    # _default_executor, _executor_shutdown_called, _asyncgens,
    # _asyncgens_shutdown_called, _exception_handler; native: _stopping,
    # _task_factory. Not provided: _ready/_scheduled (the queues are
    # native: there is no deque or heap to show).

    @property
    def _closed(self) -> bool:
        return self.is_closed()

    @property
    def _debug(self) -> bool:
        return self.get_debug()

    @_debug.setter
    def _debug(self, enabled: bool) -> None:
        # Like assigning asyncio's attribute: the flag alone (set_debug()
        # also switches a running loop's coroutine origin tracking).
        _native.Loop.set_debug(self, bool(enabled))

    # -- end of private attributes asyncio's loop has ---------------------

    # -- running ---------------------------------------------------------

    def _check_running(self) -> None:
        if self.is_running():
            raise RuntimeError("This event loop is already running")
        if events._get_running_loop() is not None:
            raise RuntimeError("Cannot run the event loop while another loop is running")

    def run_forever(self) -> None:
        self._check_closed()
        self._check_running()
        self._set_coroutine_origin_tracking(self.get_debug())
        old_hooks = sys.get_asyncgen_hooks()
        bound = _bind_call_soon(self)
        try:
            self._thread_id = threading.get_ident()
            sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
            events._set_running_loop(self)
            self._run()
        finally:
            if bound is not None and getattr(self, "call_soon", None) is bound:
                del self.call_soon
            self._thread_id = None
            events._set_running_loop(None)
            self._set_coroutine_origin_tracking(False)
            sys.set_asyncgen_hooks(*old_hooks)

    def run_until_complete(self, future: Awaitable[_T]) -> _T:
        self._check_closed()
        self._check_running()
        new_task = not futures.isfuture(future)
        fut = tasks.ensure_future(future, loop=self)
        if new_task:
            # An exception raised out of run_forever is reported there;
            # don't log "Task exception was never retrieved" as well.
            fut._log_destroy_pending = False  # type: ignore[attr-defined]
        fut.add_done_callback(_run_until_complete_cb)
        try:
            self.run_forever()
        except BaseException:
            if new_task and fut.done() and not fut.cancelled():
                fut.exception()
            raise
        finally:
            fut.remove_done_callback(_run_until_complete_cb)
        if not fut.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return fut.result()

    def close(self) -> None:
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if self.is_closed():
            return
        if self.get_debug():
            logger.debug("Close %r", self)
        if self._signal_handlers:
            if sys.is_finalizing() or threading.current_thread() is not threading.main_thread():
                warnings.warn(f"Closing the loop {self!r} on interpreter shutdown stage, skipping signal handlers removal", ResourceWarning, source=self)
                self._signal_handlers = SignalHandlers(self)
            else:
                self._signal_handlers.close()
        self._executor_shutdown_called = True
        executor = self._default_executor
        self._default_executor = None
        if self._child_pidfds:
            abandon_children(self)
        self._close(finalizing=getattr(self, "_finalizing", False))
        if executor is not None:
            executor.shutdown(wait=False)

    def set_debug(self, enabled: bool) -> None:
        super().set_debug(enabled)
        if self.is_running():
            self.call_soon_threadsafe(self._set_coroutine_origin_tracking, bool(enabled))

    if sys.version_info >= (3, 14):

        def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any,
                                 context: contextvars.Context | None = None) -> asyncio.Handle:
            """Like call_soon(), from any thread. From 3.14 on the handle is
            asyncio's own ``_ThreadSafeHandle``: its lock makes a
            ``cancel()`` or ``cancelled()`` from another thread wait while the
            callback runs, and a handle cancelled before it runs never
            calls back. The loop queues the handle's ``_run`` natively (in
            an empty context: ``_run`` enters the handle's own)."""
            self._check_closed()
            if self.get_debug():
                self._check_callback(callback, "call_soon_threadsafe")
            handle = events._ThreadSafeHandle(callback, args, self, context)  # type: ignore[attr-defined]
            _native.Loop.call_soon_threadsafe(self, handle._run, context=contextvars.Context())
            # asyncio's own trimming: drop this frame and _ThreadSafeHandle's.
            if handle._source_traceback:
                del handle._source_traceback[-1]
            if handle._source_traceback:
                del handle._source_traceback[-1]
            return handle

    def _set_coroutine_origin_tracking(self, enabled: bool) -> None:
        if bool(enabled) == bool(self._coroutine_origin_tracking_enabled):
            return
        if enabled:
            self._coroutine_origin_tracking_saved_depth = sys.get_coroutine_origin_tracking_depth()
            sys.set_coroutine_origin_tracking_depth(10)  # asyncio's constants.DEBUG_STACK_DEPTH
        else:
            sys.set_coroutine_origin_tracking_depth(self._coroutine_origin_tracking_saved_depth or 0)
        self._coroutine_origin_tracking_enabled = enabled

    # -- fd callbacks (public ones refuse fds a transport owns) -------------------

    _remove_reader = _native.Loop.remove_reader
    _remove_writer = _native.Loop.remove_writer

    def add_reader(self, fd: Any, callback: Callable[..., object], *args: Any) -> None:
        self._ensure_fd_no_transport(fd)
        self._add_reader(fd, callback, *args)

    def add_writer(self, fd: Any, callback: Callable[..., object], *args: Any) -> None:
        self._ensure_fd_no_transport(fd)
        self._add_writer(fd, callback, *args)

    def remove_reader(self, fd: Any) -> bool:
        self._ensure_fd_no_transport(fd)
        return self._remove_reader(fd)

    def remove_writer(self, fd: Any) -> bool:
        self._ensure_fd_no_transport(fd)
        return self._remove_writer(fd)

    # -- asyncgens ---------------------------------------------------------

    def _asyncgen_firstiter_hook(self, agen: Any) -> None:
        if self._asyncgens_shutdown_called:
            warnings.warn(f"asynchronous generator {agen!r} was scheduled after loop.shutdown_asyncgens() call", ResourceWarning, source=self)
        self._asyncgens.add(agen)

    def _asyncgen_finalizer_hook(self, agen: Any) -> None:
        self._asyncgens.discard(agen)
        if not self.is_closed():
            self.call_soon_threadsafe(self.create_task, agen.aclose())

    async def shutdown_asyncgens(self) -> None:
        self._asyncgens_shutdown_called = True
        if not len(self._asyncgens):
            return
        closing = list(self._asyncgens)
        self._asyncgens.clear()
        results = await asyncio.gather(*[agen.aclose() for agen in closing], return_exceptions=True)
        for result, agen in zip(results, closing):
            if isinstance(result, Exception):
                self.call_exception_handler(
                    {
                        "message": f"an error occurred during closing of asynchronous generator {agen!r}",
                        "exception": result,
                        "asyncgen": agen,
                    }
                )

    # -- executors ---------------------------------------------------------

    def run_in_executor(self, executor: concurrent.futures.Executor | None, func: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        self._check_closed()
        if self.get_debug():
            self._check_callback(func, "run_in_executor")
        if executor is None:
            executor = self._default_executor
            if self._executor_shutdown_called:
                raise RuntimeError("Executor shutdown has been called")
            if executor is None:
                executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio")
                self._default_executor = executor
        return futures.wrap_future(executor.submit(func, *args), loop=self)

    def _check_callback(self, callback: Any, method: str) -> None:
        if asyncio.iscoroutine(callback) or _iscoroutinefunction(callback):
            raise TypeError(f"coroutines cannot be used with {method}()")
        if not callable(callback):
            raise TypeError(f"a callable object was expected by {method}(), got {callback!r}")

    def set_default_executor(self, executor: concurrent.futures.ThreadPoolExecutor) -> None:
        if not isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            raise TypeError("executor must be ThreadPoolExecutor instance")
        self._default_executor = executor

    # asyncio's own: the timeout= parameter (3.12) and what it bounds
    # (3.12 only the thread join, 3.13 the wait too) differ by version.
    shutdown_default_executor = base_events.BaseEventLoop.shutdown_default_executor
    _do_shutdown = base_events.BaseEventLoop._do_shutdown

    # -- DNS -----------------------------------------------------------------

    async def getaddrinfo(self, host: Any, port: Any, *, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> list[Any]:
        return await self.run_in_executor(None, socket.getaddrinfo, host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: Any, flags: int = 0) -> tuple[str, str]:
        return await self.run_in_executor(None, socket.getnameinfo, sockaddr, flags)

    # -- signals -------------------------------------------------------------

    def add_signal_handler(self, sig: int, callback: Callable[..., object], *args: Any) -> None:
        if asyncio.iscoroutine(callback) or _iscoroutinefunction(callback):
            raise TypeError("coroutines cannot be used with add_signal_handler()")
        self._signal_handlers.add(sig, callback, args)

    def remove_signal_handler(self, sig: int) -> bool:
        return self._signal_handlers.remove(sig)

    # -- errors ----------------------------------------------------------------

    def get_exception_handler(self) -> Callable[[Any, dict[str, Any]], object] | None:
        return self._exception_handler

    def set_exception_handler(self, handler: Callable[[Any, dict[str, Any]], object] | None) -> None:
        if handler is not None and not callable(handler):
            raise TypeError(f"A callable object or None is expected, got {handler!r}")
        self._exception_handler = handler

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        message = context.get("message") or "Unhandled exception in event loop"
        exception = context.get("exception")
        exc_info: Any = (type(exception), exception, exception.__traceback__) if exception is not None else False
        lines = [message]
        for key in sorted(context):
            if key in {"message", "exception"}:
                continue
            value = context[key]
            if key == "source_traceback":
                text = "".join(traceback.format_list(value))
                value = "Object created at (most recent call last):\n" + text.rstrip()
            elif key == "handle_traceback":
                text = "".join(traceback.format_list(value))
                value = "Handle created at (most recent call last):\n" + text.rstrip()
            else:
                value = repr(value)
            lines.append(f"{key}: {value}")
        logger.error("\n".join(lines), exc_info=exc_info)

    # asyncio's own: it calls the handler in the failing task's or handle's
    # context from 3.12 on, and each version's way is the reference.
    call_exception_handler = base_events.BaseEventLoop.call_exception_handler


def _log_fallback(reason: str) -> None:
    """`auto` runs on epoll because io_uring cannot be used: say why, once
    per process."""
    global _fallback_logged
    if not _fallback_logged:
        _fallback_logged = True
        backend_logger.info("Event loop backend: epoll (io_uring unavailable: %s)", reason)


# Loops alive in this process, for the fork hook.
_live_loops: weakref.WeakSet[Loop] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # The child must not share the parent's epoll instance or wake-up fd,
    # and is not inside any running loop as far as asyncio is concerned
    # (asyncio itself does the latter from 3.12 on).
    for loop in list(_live_loops):
        if not loop.is_closed():
            loop._after_fork()
    events._set_running_loop(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# What the native create_task defers to when a task factory is set, and
# create_task itself where asyncio's takes **kwargs (3.13 patch releases
# after 3.13.0, 3.14): the running version's own decides what a factory gets.
_stdlib_create_task = base_events.BaseEventLoop.create_task
if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(_stdlib_create_task).parameters.values()):
    Loop.create_task = _stdlib_create_task  # type: ignore[method-assign,assignment]

# Methods whose parameters differ between Python versions get the running
# version's signature (see _signatures).
for _name, _impl in (
    ("create_connection", StreamOps._create_connection),
    ("create_server", StreamOps._create_server),
    ("create_unix_server", StreamOps._create_unix_server),
):
    setattr(Loop, _name, follow_stdlib(_name, _impl))
del _name, _impl
