"""`Config`: every server setting, validated once, with safe defaults."""

from __future__ import annotations

import importlib
import logging
import math
import os
import socket
import sys
from typing import Any, Callable

LIFESPAN_MODES = ("auto", "on", "off")
LOG_LEVELS = {
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": 5,
}


class AppLoadError(Exception):
    """The ASGI app named by a `"module:attr"` string could not be loaded."""


def _check_int(name: str, value: object, minimum: int, *, optional: bool = False, maximum: int | None = None) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ValueError(f"{name}: must be at least {minimum}{upper}, got {value!r}")


def _check_seconds(name: str, value: object, *, optional: bool = False, allow_zero: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name}: expected a number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero) or math.isinf(value):
        raise ValueError(f"{name}: must be a positive, finite number, got {value!r}")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name}: expected True or False, got {value!r}")


def import_app(spec: str) -> Callable[..., Any]:
    """`"package.module:attr.path"` → the object, with clear errors."""
    module_name, sep, attrs = spec.partition(":")
    if not sep or not module_name or not attrs:
        raise AppLoadError(f'Import string "{spec}" must be in format "<module>:<attribute>".')
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name and not module_name.startswith(f"{exc.name}."):
            raise  # the app's own import failed: show its traceback
        raise AppLoadError(f'Could not import module "{module_name}".') from None
    obj: Any = module
    try:
        for attr in attrs.split("."):
            obj = getattr(obj, attr)
    except AttributeError:
        raise AppLoadError(f'Attribute "{attrs}" not found in module "{module_name}".') from None
    return obj


class Config:
    """Settings of one `ferroloop.Server`. Unknown keywords raise
    `TypeError`; invalid values raise `ValueError` naming the setting."""

    def __init__(
        self,
        app: Callable[..., Any] | str,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        uds: str | os.PathLike[str] | None = None,
        fd: int | None = None,
        sock: socket.socket | None = None,
        root_path: str = "",
        lifespan: str = "auto",
        access_log: bool = False,
        proxy_headers: bool = True,
        forwarded_allow_ips: str | list[str] | None = "127.0.0.1",
        server_header: bool | str = True,
        date_header: bool = True,
        backlog: int = 2048,
        limit_concurrency: int | None = None,
        max_request_line: int = 8192,
        max_header_size: int = 65536,
        max_header_count: int = 100,
        max_body_size: int | None = 16 * 1024 * 1024,
        timeout_request_head: float = 10.0,
        timeout_keep_alive: float = 5.0,
        min_body_rate: float | None = 240.0,
        body_rate_grace: float = 5.0,
        timeout_graceful_shutdown: float = 30.0,
        log_level: str | int | None = "info",
    ) -> None:
        if not (callable(app) or isinstance(app, str)):
            raise ValueError(f"app: expected an ASGI callable or a 'module:attr' string, got {app!r}")
        if not isinstance(host, str) or not host:
            raise ValueError(f"host: expected a non-empty string, got {host!r}")
        _check_int("port", port, 0, maximum=65535)
        if uds is not None and not isinstance(uds, (str, os.PathLike)):
            raise ValueError(f"uds: expected a path, got {uds!r}")
        _check_int("fd", fd, 0, optional=True)
        if sock is not None and not isinstance(sock, socket.socket):
            raise ValueError(f"sock: expected a socket.socket, got {sock!r}")
        if sum(x is not None for x in (uds, fd, sock)) > 1:
            raise ValueError("uds, fd, sock: give at most one listener source")
        if not isinstance(root_path, str) or (root_path and not root_path.startswith("/")):
            raise ValueError(f"root_path: expected '' or a path starting with '/', got {root_path!r}")
        if lifespan not in LIFESPAN_MODES:
            raise ValueError(f"lifespan: expected one of 'auto', 'on', 'off', got {lifespan!r}")
        for name, flag in (("access_log", access_log), ("proxy_headers", proxy_headers), ("date_header", date_header)):
            _check_bool(name, flag)
        if isinstance(forwarded_allow_ips, (list, tuple)):
            if not all(isinstance(x, str) for x in forwarded_allow_ips):
                raise ValueError(f"forwarded_allow_ips: expected strings, got {forwarded_allow_ips!r}")
            forwarded_allow_ips = ",".join(forwarded_allow_ips)
        elif forwarded_allow_ips is None:
            forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
        elif not isinstance(forwarded_allow_ips, str):
            raise ValueError(f"forwarded_allow_ips: expected a string or list of strings, got {forwarded_allow_ips!r}")
        if not isinstance(server_header, (bool, str)) or (isinstance(server_header, str) and not server_header.isprintable()):
            raise ValueError(f"server_header: expected True, False or a printable string, got {server_header!r}")
        _check_int("backlog", backlog, 1)
        _check_int("limit_concurrency", limit_concurrency, 1, optional=True)
        _check_int("max_request_line", max_request_line, 64)
        _check_int("max_header_size", max_header_size, 256)
        _check_int("max_header_count", max_header_count, 1)
        _check_int("max_body_size", max_body_size, 0, optional=True)
        _check_seconds("timeout_request_head", timeout_request_head)
        _check_seconds("timeout_keep_alive", timeout_keep_alive)
        if min_body_rate is not None:
            if isinstance(min_body_rate, bool) or not isinstance(min_body_rate, (int, float)) or not min_body_rate >= 0:
                raise ValueError(f"min_body_rate: expected bytes per second >= 0 or None, got {min_body_rate!r}")
            if min_body_rate == 0:
                min_body_rate = None
        _check_seconds("body_rate_grace", body_rate_grace, allow_zero=True)
        _check_seconds("timeout_graceful_shutdown", timeout_graceful_shutdown, allow_zero=True)
        if log_level is not None and not (
            (isinstance(log_level, str) and log_level.lower() in LOG_LEVELS)
            or (isinstance(log_level, int) and not isinstance(log_level, bool))
        ):
            raise ValueError(f"log_level: expected one of {', '.join(LOG_LEVELS)} or an int, got {log_level!r}")

        self.app = app
        self.host = host
        self.port = port
        self.uds = os.fspath(uds) if uds is not None else None
        self.fd = fd
        self.sock = sock
        self.root_path = root_path.rstrip("/")
        self.lifespan = lifespan
        self.access_log = access_log
        self.proxy_headers = proxy_headers
        self.forwarded_allow_ips = forwarded_allow_ips
        self.server_header = server_header
        self.date_header = date_header
        self.backlog = backlog
        self.limit_concurrency = limit_concurrency
        self.max_request_line = max_request_line
        self.max_header_size = max_header_size
        self.max_header_count = max_header_count
        self.max_body_size = max_body_size
        self.timeout_request_head = float(timeout_request_head)
        self.timeout_keep_alive = float(timeout_keep_alive)
        self.min_body_rate = None if min_body_rate is None else float(min_body_rate)
        self.body_rate_grace = float(body_rate_grace)
        self.timeout_graceful_shutdown = float(timeout_graceful_shutdown)
        self.log_level = log_level
        # Checked here (not at start-up) so a bad list fails at construction.
        from .._native import _check_forwarded_allow_ips

        if proxy_headers:
            _check_forwarded_allow_ips(forwarded_allow_ips)

    def load_app(self) -> Callable[..., Any]:
        """The ASGI callable (imported if given as a string)."""
        app = import_app(self.app) if isinstance(self.app, str) else self.app
        if not callable(app):
            raise AppLoadError(f"{self.app!r} is not callable")
        return app

    def server_header_value(self) -> bytes | None:
        if self.server_header is True:
            return b"ferroloop"
        if self.server_header is False:
            return None
        return self.server_header.encode("latin-1")

    def configure_logging(self) -> None:
        """Give ferroloop's loggers a handler and level unless the
        application configured logging itself."""
        if self.log_level is None:
            return
        level = LOG_LEVELS[self.log_level.lower()] if isinstance(self.log_level, str) else self.log_level
        logger = logging.getLogger("ferroloop")
        logger.setLevel(level)
        if not logger.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(levelname)-9s %(message)s"))
            logger.addHandler(handler)
