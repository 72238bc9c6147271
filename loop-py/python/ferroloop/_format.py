"""Text for handles: reprs, callback sources, slow-callback log lines.

Called from the native loop only off the hot path (errors, debug mode,
``repr``), so it is plain Python.
"""

from __future__ import annotations

import functools
import inspect
import logging
import reprlib
import sys
import traceback
from typing import Any

logger = logging.getLogger("asyncio")


def _function_source(func: Any) -> tuple[str, int] | None:
    func = inspect.unwrap(func)
    if inspect.isfunction(func):
        code = func.__code__
        return code.co_filename, code.co_firstlineno
    if isinstance(func, functools.partial):
        return _function_source(func.func)
    if isinstance(func, functools.partialmethod):
        return _function_source(func.func)
    return None


def _format_args(args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None = None) -> str:
    items = [reprlib.repr(arg) for arg in args or ()]
    items.extend(f"{key}={reprlib.repr(value)}" for key, value in (kwargs or {}).items())
    return "(" + ", ".join(items) + ")"


def _format_callback(func: Any, args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None = None, suffix: str = "") -> str:
    if isinstance(func, functools.partial):
        suffix = _format_args(args, kwargs) + suffix
        return _format_callback(func.func, func.args, func.keywords, suffix)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    return name + _format_args(args, kwargs) + suffix


def format_callback_source(func: Any, args: tuple[Any, ...] | None) -> str:
    """``Task.task_wakeup(<Future …>) at file.py:12``, as asyncio prints it."""
    text = _format_callback(func, args)
    source = _function_source(func)
    if source:
        text += f" at {source[0]}:{source[1]}"
    return text


def handle_repr(handle: Any) -> str:
    info = [type(handle).__name__]
    if handle._cancelled:
        info.append("cancelled")
    when = getattr(handle, "_when", None)
    if when is not None:
        info.append(f"when={when}")
    if handle._callback is not None:
        info.append(format_callback_source(handle._callback, handle._args))
    tb = handle._source_traceback
    if tb:
        frame = tb[-1]
        info.append(f"created at {frame[0]}:{frame[1]}")
    return "<{}>".format(" ".join(info))


def extract_stack() -> traceback.StackSummary:
    """The caller's stack (debug mode's ``_source_traceback``), innermost
    last, without frames of this module."""
    frame = sys._getframe(1)
    stack = traceback.StackSummary.extract(traceback.walk_stack(frame), limit=None, lookup_lines=False)
    stack.reverse()
    return stack


def log_slow_callback(handle: Any, took: float) -> None:
    logger.warning("Executing %s took %.3f seconds", _shown_handle(handle), took)


def _shown_handle(handle: Any) -> str:
    """asyncio's ``_format_handle``: the task a callback steps, else the
    handle; for the native handle running a 3.14+ ``_ThreadSafeHandle``
    (see ``Loop.call_soon_threadsafe``), that handle."""
    import asyncio

    callback = handle._callback
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        return repr(owner)
    if isinstance(owner, asyncio.Handle) and getattr(callback, "__func__", None) is type(owner)._run:
        return _shown_handle(owner)
    return repr(handle)
