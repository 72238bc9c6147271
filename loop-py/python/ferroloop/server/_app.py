"""The application a server serves: imported from `"module:attr"`, called
when it is a factory (given `factory=True`, or detected as uvicorn detects
one), classified as ASGI 3 or ASGI 2, and refused at startup when it is
neither, so a wrong attribute never becomes a 500 at request time.

Detection, for an app that is not a factory by `factory=True`:

- an ASGI 3 app (a coroutine function, an object whose `__call__` is one, a
  class whose instances are awaitable) is served as it is, if it takes
  `(scope, receive, send)`;
- any other callable that takes no arguments is a factory (uvicorn calls
  every app once with none and keeps what a call that succeeds returns):
  it is called, with uvicorn's warning, and what it returns is classified;
- a callable that takes one positional argument is ASGI 2 (`app(scope)`
  returns the coroutine-making instance);
- anything else is refused: a WSGI app (`app(environ, start_response)`) is
  named as one.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import sys
from typing import Any, Callable

logger = logging.getLogger("ferroloop.error")

FACTORY_WARNING = "ASGI app factory detected. Using it, but please consider setting the --factory flag explicitly."


class AppLoadError(Exception):
    """The ASGI app named by a `"module:attr"` string could not be loaded."""


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


# uvicorn's choice: inspect's from 3.14 on (asyncio's is deprecated there).
_iscoroutinefunction = inspect.iscoroutinefunction if sys.version_info >= (3, 14) else asyncio.iscoroutinefunction


def is_asgi3(app: Any) -> bool:
    """uvicorn's test: a class is ASGI 3 if its instances are awaitable, a
    function or a callable object if it is a coroutine function."""
    if inspect.isclass(app):
        return hasattr(app, "__await__")
    if inspect.isfunction(app):
        return _iscoroutinefunction(app)
    return _iscoroutinefunction(app) or _iscoroutinefunction(getattr(app, "__call__", None))


def _takes(app: Any, count: int) -> bool | None:
    """`app` can be called with `count` positional arguments; None when its
    signature cannot be read (a builtin)."""
    try:
        signature = inspect.signature(app)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _call_factory(app: Callable[..., Any], name: str) -> Any:
    try:
        made = app()
    except Exception as exc:
        raise AppLoadError(f"the app factory {name} raised {type(exc).__name__}: {exc}") from exc
    if inspect.isawaitable(made):
        if inspect.iscoroutine(made):
            made.close()  # never awaited: no "was never awaited" warning
        raise AppLoadError(f"the app factory {name} returned an awaitable; an app factory must be a plain function")
    return made


def load(app: Any, *, name: str, factory: bool, interface: str) -> Callable[..., Any]:
    """The ASGI 3 callable to serve: `app` (imported when a string) called
    when it is a factory, wrapped when it is ASGI 2. Raises `AppLoadError`
    naming `name` when it is neither an app nor a factory."""
    if isinstance(app, str):
        app = import_app(app)
    if factory:
        if not callable(app):
            raise AppLoadError(f"the app factory {name} is not callable")
        app = _call_factory(app, name)
    elif interface == "auto" and callable(app) and not is_asgi3(app) and _takes(app, 0):
        logger.warning(FACTORY_WARNING)
        app = _call_factory(app, name)
        name = f"what the factory {name} returned"
    if not callable(app):
        raise AppLoadError(f"{name} is not an ASGI application: {type(app).__name__} object is not callable")
    if interface == "asgi3" or (interface == "auto" and is_asgi3(app)):
        if _takes(app, 3) is False:
            no_args = "; an app factory must be a plain function" if _takes(app, 0) else ""
            raise AppLoadError(
                f"{name} is not an ASGI application: its coroutine function does not take (scope, receive, send)"
                + no_args
            )
        return app
    if _takes(app, 1) is False:
        if _takes(app, 2):
            raise AppLoadError(
                f"{name} is not an ASGI application: it takes (environ, start_response), as a WSGI app "
                "does, and WSGI is not supported yet"
            )
        raise AppLoadError(
            f"{name} is not an ASGI application: neither a coroutine function taking (scope, receive, send) "
            "nor a callable taking (scope)"
        )
    return ASGI2App(app)


class ASGI2App:
    """An ASGI 2 application (`app(scope)` returns `instance(receive,
    send)`) as ASGI 3."""

    def __init__(self, app: Callable[[Any], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        instance = self.app(scope)
        await instance(receive, send)
