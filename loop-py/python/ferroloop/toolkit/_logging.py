"""The toolkit's loggers: ``ferroloop.toolkit`` and its children."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import MutableMapping
from typing import Any

__all__ = ["get_logger", "set_log_level"]

_ROOT = "ferroloop.toolkit"


class _TaskFields(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Adds ``task_id`` (the current task's name, if any) and ``span``
    (given per call in ``extra``, else None) to every record."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        extra = dict(kwargs.get("extra") or {})
        if "task_id" not in extra:
            try:
                task = asyncio.current_task()
            except RuntimeError:
                task = None
            extra["task_id"] = task.get_name() if task is not None else None
        extra.setdefault("span", None)
        kwargs["extra"] = extra
        return msg, kwargs


def get_logger(name: str | None = None) -> logging.LoggerAdapter:  # type: ignore[type-arg]
    """The ``ferroloop.toolkit`` logger (or ``ferroloop.toolkit.<name>``)."""
    return _TaskFields(logging.getLogger(f"{_ROOT}.{name}" if name else _ROOT), {})


def set_log_level(level: int) -> None:
    """The minimum level of the toolkit's logger."""
    logging.getLogger(_ROOT).setLevel(level)
