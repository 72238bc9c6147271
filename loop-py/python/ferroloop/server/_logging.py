"""Logging as uvicorn does it, with ferroloop's names.

`ferroloop.error` carries the server's messages and `ferroloop.access` one
line per response (rendered by the native server: the record's message is
the finished line, made from `Config.access_log_format`). Without a
`log_config`, `LOGGING_CONFIG` applies (uvicorn's `LOGGING_CONFIG` with
`ferroloop` for `uvicorn`) unless the application configured logging
itself; a uvicorn log configuration works once its `uvicorn` names read
`ferroloop` (`uvicorn.logging.DefaultFormatter` becomes
`ferroloop.logging.DefaultFormatter`).

Unlike uvicorn's, `AccessFormatter` does not colour the status code inside
the message (the line is formatted in Rust before any formatter runs), and
its records carry no `client_addr`/`request_line`/`status_code`
attributes: an access format names `%(message)s`.
"""

from __future__ import annotations

import configparser
import copy
import json
import logging
import logging.config
import os
import sys
from typing import Any, Literal

TRACE_LOG_LEVEL = 5
logging.addLevelName(TRACE_LOG_LEVEL, "TRACE")

LOG_LEVELS: dict[str, int] = {
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": TRACE_LOG_LEVEL,
}

#: The loggers `log_level` sets.
LOGGERS = ("ferroloop", "ferroloop.error", "ferroloop.access")

_RESET = "\x1b[0m"
_LEVEL_COLORS = {
    TRACE_LOG_LEVEL: "\x1b[34m",  # blue
    logging.DEBUG: "\x1b[36m",  # cyan
    logging.INFO: "\x1b[32m",  # green
    logging.WARNING: "\x1b[33m",  # yellow
    logging.ERROR: "\x1b[31m",  # red
    logging.CRITICAL: "\x1b[91m",  # bright red
}


class ColourizedFormatter(logging.Formatter):
    """A formatter with `%(levelprefix)s` (`INFO:     `, the level name
    coloured when `use_colors` is on). `use_colors=None`: on when the
    stream it logs to (`should_use_colors`) is a terminal."""

    def __init__(
        self,
        fmt: str | None = None,
        datefmt: str | None = None,
        style: Literal["%", "{", "$"] = "%",
        use_colors: bool | None = None,
    ) -> None:
        self.use_colors = use_colors if use_colors in (True, False) else self.should_use_colors()
        super().__init__(fmt=fmt, datefmt=datefmt, style=style)

    def should_use_colors(self) -> bool:
        return sys.stderr.isatty()

    def color_level_name(self, level_name: str, level_no: int) -> str:
        color = _LEVEL_COLORS.get(level_no)
        return f"{color}{level_name}{_RESET}" if color else level_name

    def formatMessage(self, record: logging.LogRecord) -> str:
        recordcopy = copy.copy(record)
        levelname = recordcopy.levelname
        separator = " " * (8 - len(levelname))
        if self.use_colors:
            levelname = self.color_level_name(levelname, recordcopy.levelno)
        recordcopy.__dict__["levelprefix"] = levelname + ":" + separator
        return super().formatMessage(recordcopy)


class DefaultFormatter(ColourizedFormatter):
    """The server's messages (to stderr)."""


class AccessFormatter(ColourizedFormatter):
    """Access lines (to stdout)."""

    def should_use_colors(self) -> bool:
        return sys.stdout.isatty()


LOGGING_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {
            "()": "ferroloop.logging.DefaultFormatter",
            "fmt": "%(levelprefix)s %(message)s",
            "use_colors": None,
        },
        "access": {
            "()": "ferroloop.logging.AccessFormatter",
            "fmt": "%(levelprefix)s %(message)s",
            "use_colors": None,
        },
    },
    "handlers": {
        "default": {"formatter": "default", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        "access": {"formatter": "access", "class": "logging.StreamHandler", "stream": "ext://sys.stdout"},
    },
    "loggers": {
        "ferroloop": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "ferroloop.error": {"level": "INFO"},
        "ferroloop.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}


class LogConfigError(RuntimeError):
    """A `log_config` that cannot be applied: `reason` says why, `path`
    names its file (None for a dict)."""

    def __init__(self, reason: str, path: str | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"log_config {path!r}: {reason}" if path is not None else f"log_config: {reason}")


#: What loading and applying a wrong configuration raises: dictConfig wraps
#: most problems in ValueError; fileConfig raises configparser errors,
#: KeyError for a missing section and (3.12+) RuntimeError.
_CONFIG_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    TypeError,
    AttributeError,
    ImportError,
    KeyError,
    RuntimeError,
    configparser.Error,
)


def _reason(exc: BaseException) -> str:
    """One line: dictConfig's message and the error it wraps."""
    text = f"{exc}: {exc.__cause__}" if exc.__cause__ is not None else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def check_log_config(value: object) -> dict[str, Any] | str | None:
    """`log_config`: a dictConfig dict, a path, or None."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not isinstance(path, str) or not path:
            raise ValueError(f"log_config: expected a dict or a file path, got {value!r}")
        return path
    raise ValueError(f"log_config: expected a dict or a file path, got {value!r}")


def _dict_config(config: object) -> None:
    if not isinstance(config, dict):
        raise ValueError(f"expected a mapping of dictConfig keys, got {type(config).__name__}")
    logging.config.dictConfig(config)


def _load_file(path: str) -> None:
    """Apply a JSON, YAML or INI file as uvicorn does (JSON and YAML to
    dictConfig as they are; INI keeping existing loggers)."""
    lower = path.lower()
    errors = _CONFIG_ERRORS
    try:
        if lower.endswith(".json"):
            with open(path) as f:
                config = json.load(f)
            _dict_config(config)
        elif lower.endswith((".yaml", ".yml")):
            try:
                import yaml
            except ImportError:
                raise LogConfigError("a YAML file needs PyYAML (pip install pyyaml)", path) from None
            errors = (*errors, yaml.YAMLError)
            with open(path) as f:
                config = yaml.safe_load(f)
            _dict_config(config)
        else:
            logging.config.fileConfig(path, disable_existing_loggers=False)
    except LogConfigError:
        raise
    except errors as exc:
        raise LogConfigError(_reason(exc), path) from exc


def configure_logging(
    log_config: dict[str, Any] | str | None,
    log_level: str | int | None,
    use_colors: bool | None,
) -> None:
    """Apply `log_config` (or `LOGGING_CONFIG`, unless the application
    configured logging itself), then `log_level` to ferroloop's loggers."""
    if isinstance(log_config, dict):
        try:
            logging.config.dictConfig(log_config)
        except _CONFIG_ERRORS as exc:
            raise LogConfigError(_reason(exc)) from exc
    elif isinstance(log_config, str):
        if not os.path.exists(log_config):
            raise FileNotFoundError(2, f"log_config: no such file: {log_config!r}")
        _load_file(log_config)
    elif not logging.getLogger("ferroloop").handlers and not logging.getLogger().handlers:
        config = copy.deepcopy(LOGGING_CONFIG)
        if use_colors in (True, False):
            for formatter in config["formatters"].values():
                formatter["use_colors"] = use_colors
        logging.config.dictConfig(config)
    if log_level is not None:
        level = LOG_LEVELS[log_level.lower()] if isinstance(log_level, str) else log_level
        for name in LOGGERS:
            logging.getLogger(name).setLevel(level)
