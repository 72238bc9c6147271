"""Signature parity: every public loop method takes exactly the parameters
the running interpreter's asyncio gives it, and refuses the same calls.

The reference is ``asyncio.BaseEventLoop``'s signature (the documented
API), or the Unix loop's where that one takes more parameters (3.13's
``create_unix_server(cleanup_socket=)`` is only on ``SelectorEventLoop``).
Annotations are not compared, nor the kind of ``self``.
"""

from __future__ import annotations

import asyncio
import inspect
import sys

import pytest

import ferroloop

PUBLIC = sorted(
    name
    for name in dir(asyncio.BaseEventLoop)
    if not name.startswith("_") and callable(getattr(asyncio.BaseEventLoop, name))
)

# Keywords asyncio added in one version or another: each is accepted exactly
# where the running version's asyncio accepts it.
VERSIONED_KEYWORDS = [
    ("create_connection", "all_errors", False),  # 3.12
    ("create_server", "keep_alive", None),  # 3.13
    ("create_unix_server", "cleanup_socket", True),  # 3.13
    ("shutdown_default_executor", "timeout", None),  # 3.12
]


def reference(name):
    documented = inspect.signature(getattr(asyncio.BaseEventLoop, name))
    concrete = inspect.signature(getattr(asyncio.SelectorEventLoop, name))
    return concrete if set(documented.parameters) < set(concrete.parameters) else documented


def shape(signature):
    """Names, kinds and defaults of the parameters after ``self``."""
    return [(p.name, p.kind.name, p.default) for p in list(signature.parameters.values())[1:]]


@pytest.mark.parametrize("name", PUBLIC)
def test_same_parameters_as_asyncio(name):
    ours = getattr(ferroloop.Loop, name)
    assert shape(inspect.signature(ours)) == shape(reference(name)), (
        f"{name}: ferroloop {inspect.signature(ours)} vs asyncio {reference(name)} on {sys.version.split()[0]}"
    )


@pytest.mark.parametrize("name", PUBLIC)
def test_coroutine_methods_are_coroutine_functions(name):
    expected = inspect.iscoroutinefunction(getattr(asyncio.BaseEventLoop, name))
    assert inspect.iscoroutinefunction(getattr(ferroloop.Loop, name)) == expected


def _placeholders(signature):
    """A ``None`` for each required positional parameter after ``self``."""
    params = list(signature.parameters.values())[1:]
    return [
        None
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]


def _outcome(method, *args, **kwargs):
    """'TypeError' if the call itself is refused, else 'accepted' (a
    returned coroutine is closed unrun; other errors mean the arguments were
    taken and the method went on to reject the placeholder values)."""
    try:
        result = method(*args, **kwargs)
    except TypeError as exc:
        if "argument" in str(exc) or "keyword" in str(exc) or "positional" in str(exc):
            return "TypeError"
        return "accepted"
    except Exception:  # noqa: BLE001 (the placeholder values were refused)
        return "accepted"
    if inspect.iscoroutine(result):
        result.close()
    return "accepted"


@pytest.fixture
def loops():
    pair = (asyncio.new_event_loop(), ferroloop.new_event_loop())
    yield pair
    for loop in pair:
        loop.close()


@pytest.mark.parametrize("name", [n for n in PUBLIC if n not in ("run_forever", "run_until_complete", "close")])
def test_unknown_keyword_refused_when_called(loops, name):
    signature = reference(name)
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        pytest.skip(f"asyncio's {name} takes **kwargs")
    args = _placeholders(signature)
    outcomes = [_outcome(getattr(loop, name), *args, _no_such_parameter=1) for loop in loops]
    assert outcomes == ["TypeError", "TypeError"]


@pytest.mark.parametrize("name", [n for n in PUBLIC if n not in ("run_forever", "run_until_complete", "close")])
def test_too_many_positional_arguments_refused(loops, name):
    signature = reference(name)
    if any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values()):
        pytest.skip(f"asyncio's {name} takes *args")
    positional = [
        p for p in list(signature.parameters.values())[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    args = [None] * (len(positional) + 1)
    outcomes = [_outcome(getattr(loop, name), *args) for loop in loops]
    assert outcomes == ["TypeError", "TypeError"]


@pytest.mark.parametrize(("name", "keyword", "value"), VERSIONED_KEYWORDS)
def test_versioned_keyword_accepted_where_asyncio_accepts_it(loops, name, keyword, value):
    args = _placeholders(reference(name))
    outcomes = [_outcome(getattr(loop, name), *args, **{keyword: value}) for loop in loops]
    assert outcomes[1] == outcomes[0], f"{name}({keyword}=) on {sys.version.split()[0]}"


def test_versioned_keywords_follow_the_release_that_added_them():
    # The table above, read from the running interpreter: a sanity check
    # that the reference itself is what the release notes say.
    have = {(n, k) for n, k, _ in VERSIONED_KEYWORDS if k in reference(n).parameters}
    expected = set()
    if sys.version_info >= (3, 12):
        expected |= {("create_connection", "all_errors"), ("shutdown_default_executor", "timeout")}
    if sys.version_info >= (3, 13):
        expected |= {("create_server", "keep_alive"), ("create_unix_server", "cleanup_socket")}
    assert have == expected


def test_sock_recv_takes_nbytes_by_keyword():
    import socket

    async def main():
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        with a, b:
            a.setblocking(False)
            b.send(b"hello")
            return await loop.sock_recv(a, nbytes=5)

    assert ferroloop.run(main()) == b"hello"
