"""`Config`: every server setting, validated once, with safe defaults.

The settings are defined once, in loop-cli's table
(`loop-cli/src/table/rows.rs`), which reaches Python as
`_native.server_settings()`: `Config`'s keywords,
defaults, bounds and choices are its rows. The checks here are the Python
side of each row's kind (`_check_kind`), plus `_CHECKS` for the settings
whose Python form is wider than their text form (a list, a socket, an int
log level). The typed signature is `_config.pyi` (generated from the table).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import math
import os
import socket
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Callable

from .. import _native
from ._logging import LOG_LEVELS, check_log_config, configure_logging

#: The settings `Config` takes, by name, in table order (rows of
#: `_native.server_settings()`).
SETTINGS: dict[str, dict[str, Any]] = {row["name"]: row for row in _native.server_settings() if row["config"]}

LIFESPAN_MODES = tuple(SETTINGS["lifespan"]["choices"])

assert tuple(LOG_LEVELS) == tuple(SETTINGS["log_level"]["choices"])


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


def _check_kind(row: dict[str, Any], value: Any) -> Any:
    """Check `value` against its row's kind; return the value to keep."""
    name, kind = row["name"], row["kind"]
    if kind == "int":
        _check_int(name, value, row["min"], maximum=row["max"])
        return value
    if kind == "seconds":
        _check_seconds(name, value, allow_zero=row["zero"])
        return float(value)
    if kind == "rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name}: expected bytes per second >= 0 or None, got {value!r}")
        return None if value == 0 else float(value)
    if kind == "bool":
        _check_bool(name, value)
        return value
    if kind == "choice":
        choices = row["choices"]
        if not (isinstance(value, str) and (value.lower() if row["ignore_case"] else value) in choices):
            raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    if kind == "path":
        if not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"{name}: expected a path, got {value!r}")
        return os.fspath(value)
    if kind == "bool_or_text":
        if not isinstance(value, (bool, str)) or (isinstance(value, str) and not value.isprintable()):
            raise ValueError(f"{name}: expected True, False or a printable string, got {value!r}")
        return value
    if kind == "text":
        if not isinstance(value, str):
            raise ValueError(f"{name}: expected a string, got {value!r}")
        return value
    raise ValueError(f"{name}: no Python check for kind {kind!r}")  # an `object` row needs a _CHECKS entry


def _check_host(row: dict[str, Any], value: Any) -> str:
    # Non-empty; the text form's other rules (no whitespace) are left to the bind.
    if not isinstance(value, str) or not value:
        raise ValueError(f"{row['name']}: expected a non-empty string, got {value!r}")
    return value


def _check_sock(row: dict[str, Any], value: Any) -> socket.socket:
    if not isinstance(value, socket.socket):
        raise ValueError(f"sock: expected a socket.socket, got {value!r}")
    return value


def _check_root_path(row: dict[str, Any], value: Any) -> str:
    if not isinstance(value, str) or (value and not value.startswith("/")):
        raise ValueError(f"root_path: expected '' or a path starting with '/', got {value!r}")
    return value.rstrip("/")


def _check_forwarded_allow_ips(row: dict[str, Any], value: Any) -> str:
    if isinstance(value, (list, tuple)):
        if not all(isinstance(x, str) for x in value):
            raise ValueError(f"forwarded_allow_ips: expected strings, got {value!r}")
        return ",".join(value)
    if not isinstance(value, str):
        raise ValueError(f"forwarded_allow_ips: expected a string or list of strings, got {value!r}")
    return value


def _check_headers(row: dict[str, Any], value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    ):
        raise ValueError(f"headers: expected a list of (name, value) string pairs, got {value!r}")
    pairs = [(name, field) for name, field in value]
    _native._check_headers(pairs)  # as the server encodes them: no CR/LF, token names
    return pairs


def _check_log_level(row: dict[str, Any], value: Any) -> str | int:
    if not (
        (isinstance(value, str) and value.lower() in LOG_LEVELS) or (isinstance(value, int) and not isinstance(value, bool))
    ):
        raise ValueError(f"log_level: expected one of {', '.join(LOG_LEVELS)} or an int, got {value!r}")
    return value


def _check_access_log_format(row: dict[str, Any], value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"access_log_format: expected a string, got {value!r}")
    _native._check_access_log_format(value)
    return value


def _check_ssl_crl(row: dict[str, Any], value: Any) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        value = [value]  # one file, as the command line's one flag
    if not isinstance(value, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) for p in value):
        raise ValueError(f"ssl_crl: expected a list of paths, got {value!r}")
    return [os.fspath(p) for p in value]


def _check_ssl_sni(row: dict[str, Any], value: Any) -> dict[str, tuple[str, str]]:
    """A mapping {host: (certfile, keyfile)}, or the command line's
    `HOST=CERTFILE:KEYFILE` strings (split as the command line splits them)."""
    if isinstance(value, str):
        value = [value]  # one entry, as the command line's one flag
    if isinstance(value, (list, tuple)):
        pairs = {}
        for entry in value:
            if not isinstance(entry, str) or "=" not in entry or ":" not in entry.partition("=")[2]:
                raise ValueError(f"ssl_sni: expected HOST=CERTFILE:KEYFILE strings, got {entry!r}")
            host, _, files = entry.partition("=")
            certfile, _, keyfile = files.rpartition(":")
            if host.lower() in pairs:
                raise ValueError(f"ssl_sni: host {host.lower()!r} is given twice")
            pairs[host.lower()] = (certfile, keyfile)
        value = pairs
    if not isinstance(value, Mapping):
        raise ValueError(f"ssl_sni: expected a mapping {{host: (certfile, keyfile)}}, got {value!r}")
    sni = {}
    for host, files in value.items():
        if (
            not isinstance(host, str)
            or not host.strip()
            or not isinstance(files, (list, tuple))
            or len(files) != 2
            or not all(isinstance(f, (str, os.PathLike)) and os.fspath(f) for f in files)
        ):
            raise ValueError(f"ssl_sni: expected host: (certfile, keyfile), got {host!r}: {files!r}")
        if host.strip().lower() in sni:
            raise ValueError(f"ssl_sni: host {host.strip().lower()!r} is given twice")
        sni[host.strip().lower()] = (os.fspath(files[0]), os.fspath(files[1]))
    return sni


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, as cadeloop's
    `workers=0`), not the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _check_workers(row: dict[str, Any], value: Any) -> int:
    """An int >= 0 or "auto" (the text form gives digits or "auto"); 0 and
    "auto" both mean one worker per CPU available to the process."""
    if isinstance(value, str) and (value == "auto" or (value.isascii() and value.isdigit())):
        value = 0 if value == "auto" else int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"workers: expected an integer of at least 0 or 'auto', got {value!r}")
    return value or cpu_count()


def _check_file_mode(row: dict[str, Any], value: Any) -> int:
    """An int (0o660) or octal text ("660", "0o660")."""
    if isinstance(value, str):
        digits = value[2:] if value.startswith("0o") else value
        if digits and len(digits) <= 5 and all(c in "01234567" for c in digits):
            value = int(digits, 8)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0o7777:
        raise ValueError(f"{row['name']}: expected a file mode such as 0o660 or '660', got {value!r}")
    return value


def _check_str_list(row: dict[str, Any], value: Any) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        value = [value]  # one entry, as the command line's one flag
    if not isinstance(value, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) and os.fspath(p) for p in value):
        raise ValueError(f"{row['name']}: expected a list of non-empty strings, got {value!r}")
    return [os.fspath(p) for p in value]


#: Settings whose Python values are not just their kind's.
_CHECKS: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "host": _check_host,
    "metrics_address": _check_host,
    "sock": _check_sock,
    "root_path": _check_root_path,
    "forwarded_allow_ips": _check_forwarded_allow_ips,
    "log_level": _check_log_level,
    "access_log_format": _check_access_log_format,
    "log_config": lambda row, value: check_log_config(value),
    "headers": _check_headers,
    "ssl_crl": _check_ssl_crl,
    "ssl_sni": _check_ssl_sni,
    "workers": _check_workers,
    "uds_permissions": _check_file_mode,
    "reload_dirs": _check_str_list,
    "reload_includes": _check_str_list,
    "reload_excludes": _check_str_list,
}

#: The variables read for a setting besides `prefix` + its name (the
#: table's `env_alias` rows, which `server_settings()` does not carry):
#: uvicorn's names.
ENV_ALIASES = ("FORWARDED_ALLOW_IPS", "WEB_CONCURRENCY")

#: What `None` means for a setting whose `None` is not kept as is.
_NONE = {
    "forwarded_allow_ips": lambda: os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    "ssl_crl": list,
    "ssl_sni": dict,
    "reload_dirs": list,  # the working directory
    "reload_includes": lambda: ["*.py"],
    "reload_excludes": list,
}


def _check(row: dict[str, Any], value: Any) -> Any:
    if value is None and row["null"] != "no":
        none = _NONE.get(row["name"])
        return None if none is None else _CHECKS.get(row["name"], _check_kind)(row, none())
    if row["refuse_import"] and (isinstance(value, type) or (isinstance(value, str) and _is_import_string(value))):
        # uvicorn's Config takes an implementation class (or its import string) here.
        raise ValueError(f"{row['name']}: {value!r} is not supported: {row['refuse_import']}")
    if row["refuse"] and value in row["refuse"]:
        raise ValueError(f"{row['name']}: {value!r} is not supported yet: {row['refuse_reason']}")
    if row["status"] == "unsupported" and value != row["default"]:
        raise ValueError(f"{row['name']}: not supported yet: {row['status_reason']}")
    if row["status"] == "ignored" and value != row["default"]:
        warnings.warn(f"{row['name']} is ignored: {row['status_reason']}", stacklevel=3)
    return _CHECKS.get(row["name"], _check_kind)(row, value)


def _is_import_string(value: str) -> bool:
    """`module:attr`, as the table's `is_refused_import` reads it."""
    module, sep, attr = value.partition(":")
    return bool(sep and module and attr)


# uvicorn's choice: inspect's from 3.14 on (asyncio's is deprecated there).
_iscoroutinefunction = inspect.iscoroutinefunction if sys.version_info >= (3, 14) else asyncio.iscoroutinefunction


def _asgi_interface(app: Any, interface: str) -> str:
    """uvicorn's detection: a class is ASGI 3 if its instances are
    awaitable, a function or a callable object if it is a coroutine
    function; ASGI 2 otherwise."""
    if interface != "auto":
        return interface
    if inspect.isclass(app):
        asgi3 = hasattr(app, "__await__")
    elif inspect.isfunction(app):
        asgi3 = _iscoroutinefunction(app)
    else:
        asgi3 = _iscoroutinefunction(app) or _iscoroutinefunction(getattr(app, "__call__", None))
    return "asgi3" if asgi3 else "asgi2"


class ASGI2App:
    """An ASGI 2 application (`app(scope)` returns `instance(receive,
    send)`) as ASGI 3."""

    def __init__(self, app: Callable[[Any], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        instance = self.app(scope)
        await instance(receive, send)


_SSL_CONTEXT = (
    "Config() got an unexpected keyword argument 'ssl': ferroloop serves TLS with rustls, and a Python "
    "SSLContext's key cannot be taken out of it; pass ssl_certfile=..., ssl_keyfile=... (and "
    "ssl_keyfile_password, ssl_ca_certs, ssl_cert_reqs, ssl_ciphers, ssl_crl, ssl_min_version, ssl_sni) instead"
)


class Config:
    """Settings of one `ferroloop.Server`. Unknown keywords raise
    `TypeError`; invalid values raise `ValueError` naming the setting.
    The keywords are `SETTINGS` (see `_config.pyi` for the signature)."""

    def __init__(self, app: Callable[..., Any] | str, **settings: Any) -> None:
        if "ssl" in settings and "ssl" not in SETTINGS:
            raise TypeError(_SSL_CONTEXT)
        for name in settings:
            if name not in SETTINGS:
                raise TypeError(f"Config.__init__() got an unexpected keyword argument {name!r}")
        if not (callable(app) or isinstance(app, str)):
            raise ValueError(f"app: expected an ASGI callable or a 'module:attr' string, got {app!r}")
        values = {}
        for name, row in SETTINGS.items():  # a loop, not a comprehension: _check's stacklevel
            values[name] = _check(row, settings.get(name, row["default"]))
        if sum(values[x] is not None for x in ("uds", "fd", "sock")) > 1:
            raise ValueError("uds, fd, sock: give at most one listener source")
        self.app = app
        self._logging_configured = False
        for name, value in values.items():
            setattr(self, name, value)
        # Checked here (not at start-up) so a bad list fails at construction.
        if self.proxy_headers:
            _native._check_forwarded_allow_ips(self.forwarded_allow_ips)
        # The ssl_* settings together (certfile with keyfile, ...); the
        # files are read at start-up, before binding (Server.serve).
        _native._check_tls(self)

    def load_tls(self) -> None:
        """Read and check the ssl_* files, as the server will: raises
        `FileNotFoundError` for a file that is not there and `ValueError`
        for one that cannot be used, the message naming the file."""
        _native._load_tls(self)

    @classmethod
    def from_env(cls, app: Callable[..., Any] | str, prefix: str = "FERROLOOP_", **overrides: Any) -> Config:
        """A `Config` with each setting read from the environment variable
        `prefix` + its name in upper case (`FERROLOOP_PORT`), parsed as the
        command line parses it (empty or `none`: `None` where allowed);
        `overrides` win over the environment. Raises `ValueError` naming a
        variable whose value does not parse or is not UTF-8."""
        values, ignored = _native.config_from_env(_settings_environ(prefix), prefix)
        for warning in ignored:
            warnings.warn(warning, stacklevel=2)
        return cls(app, **{**values, **overrides})

    def load_app(self) -> Callable[..., Any]:
        """The ASGI 3 callable: imported if given as a string, called if it
        is a `factory`, wrapped if it is ASGI 2 (`interface`). Loaded once."""
        loaded = getattr(self, "_loaded_app", None)
        if loaded is not None:
            return loaded
        app = import_app(self.app) if isinstance(self.app, str) else self.app
        if self.factory:
            if not callable(app):
                raise AppLoadError(f"the app factory {self.app!r} is not callable")
            try:
                app = app()
            except Exception as exc:
                raise AppLoadError(f"the app factory {self.app!r} raised {type(exc).__name__}: {exc}") from exc
        if not callable(app):
            raise AppLoadError(f"{self.app!r} is not callable")
        if _asgi_interface(app, self.interface) == "asgi2":
            app = ASGI2App(app)
        self._loaded_app = app
        return app

    def server_header_value(self) -> bytes | None:
        if self.server_header is True:
            return b"ferroloop"
        if self.server_header is False:
            return None
        return self.server_header.encode("latin-1")

    def configure_logging(self) -> None:
        """Apply `log_config` (or the default configuration, unless the
        application configured logging itself) and `log_level`, once: the
        command line does it before importing the app (as uvicorn), so
        `Server.serve` then leaves it alone."""
        if self._logging_configured:
            return
        configure_logging(self.log_config, self.log_level, self.use_colors)
        self._logging_configured = True


def _settings_environ(prefix: str) -> dict[str, str]:
    """The variables `Config.from_env` may read (`prefix`*, the aliases):
    an unrelated variable that is not UTF-8 is none of its business."""
    environ = {}
    for name, value in os.environ.items():
        if not (name.startswith(prefix) or name in ENV_ALIASES) or not _is_utf8(name):
            continue  # a name that is not UTF-8 names no setting
        if not _is_utf8(value):
            raise ValueError(f"invalid value for environment variable {name}: not valid UTF-8 ({os.fsencode(value)!r})")
        environ[name] = value
    return environ


def _is_utf8(text: str) -> bool:
    """False for the surrogate escapes `os.environ` makes of other bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


Config.__init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("app", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=row["default"]) for name, row in SETTINGS.items()),
    ],
    return_annotation=None,
)
