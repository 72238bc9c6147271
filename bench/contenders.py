"""The event loops under comparison: where each comes from and how to get a loop.

Imported by the driver (names, PyPI distributions) and by the worker inside the
bench venv (loop factories).  Run as a script with the venv's interpreter it
probes which contenders import there:

    <venv>/bin/python bench/contenders.py NAME...

and prints one JSON object: name -> {"available": true, "version", "loop_class",
"module_file"} or {"available": false, "reason"}.

`ferroloop-base` is ferroloop as built by another wheel (`--baseline-wheel`):
the same module, imported from a directory the harness puts first on the
PYTHONPATH of that contender's processes (`benchenv.py`), so that a change
is measured against the code before it in the same run.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Contender:
    name: str
    module: str
    # PyPI distribution; None for the stdlib loop (its version is Python's).
    dist: str | None


# Every contender exposes a module-level new_event_loop(); asyncio's builds the
# default policy's loop (the selector loop on Linux).
CONTENDERS: dict[str, Contender] = {
    c.name: c
    for c in (
        Contender("asyncio", "asyncio", None),
        Contender("ferroloop", "ferroloop", "ferroloop"),
        Contender("ferroloop-base", "ferroloop", "ferroloop"),
        Contender("uvloop", "uvloop", "uvloop"),
        Contender("rloop", "rloop", "rloop"),
        Contender("cadeloop", "cadeloop", "cadeloop"),
        Contender("rsloop", "rsloop", "rsloop"),
    )
}

# ferroloop before the change under test: only with --baseline-wheel.
BASE = "ferroloop-base"
# The loops whose failure is ours to fix: they fail the run; peers only get noted.
CORE = ("asyncio", "ferroloop", BASE)
# Peers installed from PyPI into the bench venv.
PEERS = tuple(name for name in CONTENDERS if name not in CORE)


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    return importlib.import_module(CONTENDERS[name].module).new_event_loop


def version(name: str) -> str:
    dist = CONTENDERS[name].dist
    return platform.python_version() if dist is None else importlib.metadata.version(dist)


def module_file(name: str) -> str:
    """Where this process imported the contender's module from (for
    ferroloop-base the harness checks it is the baseline's directory)."""
    return importlib.import_module(CONTENDERS[name].module).__file__


def probe(name: str) -> dict:
    """Import the contender, build and close one loop; report what happened."""
    try:
        loop = loop_factory(name)()
        loop_class = f"{type(loop).__module__}.{type(loop).__qualname__}"
        loop.close()
        return {
            "available": True,
            "version": version(name),
            "loop_class": loop_class,
            "module_file": module_file(name),
        }
    except Exception as exc:  # any failure means "unavailable", with its reason
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}


if __name__ == "__main__":
    print(json.dumps({name: probe(name) for name in sys.argv[1:]}))
