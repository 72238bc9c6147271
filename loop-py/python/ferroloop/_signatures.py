"""Loop methods whose parameters changed between CPython versions take the
running interpreter's signature.

asyncio added keywords over time (``create_connection(all_errors=)`` in
3.12, ``create_server(keep_alive=)`` and ``create_unix_server(cleanup_socket=)``
in 3.13). ferroloop
implements the newest parameter set once, privately, and exposes each method
with exactly the parameters, kinds and defaults that the running version's
asyncio gives it (read with ``inspect.signature``, see ``reference``), so
a keyword that version lacks is refused with ``TypeError`` when called, as
asyncio refuses it. The forwarder is generated once at import, like
dataclasses' ``__init__``.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

_P = inspect.Parameter


def reference(name: str) -> inspect.Signature:
    """The running asyncio's signature of the loop method ``name``:
    ``BaseEventLoop``'s (the documented API), or the Unix loop's where that
    one takes more parameters (3.13's ``create_unix_server(cleanup_socket=)``
    exists only on ``SelectorEventLoop``)."""
    documented = inspect.signature(getattr(asyncio.BaseEventLoop, name))
    concrete = inspect.signature(getattr(asyncio.SelectorEventLoop, name))
    if set(documented.parameters) < set(concrete.parameters):
        return concrete
    return documented


def follow_stdlib(name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` behind the running asyncio's signature of the loop method ``name``.

    Every parameter of the stdlib method must be one ``impl`` accepts by
    name; one it lacks is left out (so it is refused), which the signature
    parity test reports.
    """
    accepted = inspect.signature(impl).parameters
    params = [p for p in reference(name).parameters.values() if p.name in accepted or p.kind is _P.VAR_KEYWORD]
    self_param, *rest = params
    namespace: dict[str, Any] = {"_impl": impl}
    declared: list[str] = [self_param.name]
    passed: list[str] = [self_param.name]
    keyword_only_started = False
    for i, p in enumerate(rest):
        if p.kind is _P.POSITIONAL_ONLY:
            raise TypeError(f"{name}: positional-only parameter {p.name!r} is not supported")
        text = p.name
        if p.kind is _P.VAR_POSITIONAL:
            text, keyword_only_started = f"*{p.name}", True
            passed.append(f"*{p.name}")
        elif p.kind is _P.VAR_KEYWORD:
            text = f"**{p.name}"
            passed.append(f"**{p.name}")
        else:
            if p.kind is _P.KEYWORD_ONLY and not keyword_only_started:
                declared.append("*")
                keyword_only_started = True
            passed.append(f"{p.name}={p.name}")
        if p.default is not _P.empty:
            namespace[f"_default_{i}"] = p.default
            text += f"=_default_{i}"
        declared.append(text)
    prefix = "async " if inspect.iscoroutinefunction(impl) else ""
    await_ = "await " if prefix else ""
    source = f"{prefix}def {name}({', '.join(declared)}):\n    return {await_}_impl({', '.join(passed)})\n"
    exec(source, namespace)  # noqa: S102 (generated from inspect.signature, not from input)
    method = namespace[name]
    method.__doc__ = impl.__doc__
    method.__qualname__ = f"Loop.{name}"
    method.__module__ = "ferroloop._loop"
    return method
