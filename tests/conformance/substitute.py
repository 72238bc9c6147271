"""Run CPython's per-loop test classes against the loop under test.

Several modules do not get their loop from the policy: CPython defines one
concrete class per loop implementation (``SelectEventLoopTests``,
``EPollEventLoopTests``, ``PollEventLoopTests``, ``ProactorEventLoopTests``,
...), each combining the same test mixins with a hook that builds that loop.
Swapping the policy leaves those classes on the stdlib loop.

So, as CPython itself does per loop, this module derives one class from the
portable member of each family (the selector one, defined on every platform)
and overrides its hook to build the loop under test; the original family is
removed from the module so that none of it runs. Subclassing the template
(rather than re-listing its mixins) keeps the tests and overrides that the
template declares itself (``test_server.SelectorStartServerTests`` has one).

The generated class names do not depend on the loop, so test ids are the same
for ``--loop asyncio`` and ``--loop ferroloop`` and the sanity run checks the
exact classes that ferroloop runs.

Modules not listed here build their loops through the policy
(``asyncio.new_event_loop()``, ``policy.new_event_loop()``,
``asyncio.Runner``, ``IsolatedAsyncioTestCase``): ``test_streams``,
``test_ssl``, ``test_subprocess``, ``test_sslproto.SslProtoHandshakeTests``,
the IsolatedAsyncioTestCase modules and the rest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
import unittest
from collections.abc import Callable
from typing import Any
from unittest import mock

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


@dataclasses.dataclass(frozen=True)
class LoopMethod:
    """The template builds its loop in a method (``create_event_loop``, ``new_loop``)."""

    name: str

    def members(self, template: type[unittest.TestCase], new_loop: LoopFactory) -> dict[str, Any]:
        def build(test: unittest.TestCase) -> asyncio.AbstractEventLoop:
            return new_loop()

        build.__name__ = build.__qualname__ = self.name
        return {self.name: build}

    def family(self, module: types.ModuleType, template: type[unittest.TestCase]) -> list[str]:
        """The per-loop siblings: TestCases defining the hook over the same mixin."""
        mixin = template.__bases__[0]
        return [
            name
            for name, obj in vars(module).items()
            if isinstance(obj, type)
            and issubclass(obj, unittest.TestCase)
            and issubclass(obj, mixin)
            and self.name in vars(obj)
        ]


@dataclasses.dataclass(frozen=True)
class SetUpConstructor:
    """The template's ``setUp`` calls ``asyncio.<attr>()`` itself.

    The generated ``setUp`` runs the template's with that name patched to the
    loop factory, for the duration of ``setUp`` only.
    """

    attr: str

    def members(self, template: type[unittest.TestCase], new_loop: LoopFactory) -> dict[str, Any]:
        attr = self.attr

        def setUp(test: unittest.TestCase) -> None:
            with mock.patch.object(asyncio, attr, new_loop):
                template.setUp(test)

        return {"setUp": setUp}

    def family(self, module: types.ModuleType, template: type[unittest.TestCase]) -> list[str]:
        return [template.__name__]


@dataclasses.dataclass(frozen=True)
class LoopFactoryAttribute:
    """The template (an ``IsolatedAsyncioTestCase``) sets ``loop_factory`` to
    ``asyncio.EventLoop``, or to a function building one (3.14's
    ``test_taskgroups``).

    The generated class keeps the template's factory, run with
    ``asyncio.EventLoop`` patched to the loop factory, so what it adds (an
    eager task factory) stays. Templates that do not set ``loop_factory``
    (3.11-3.13) get their loops from the policy and are left alone.
    """

    def applies(self, template: type[unittest.TestCase]) -> bool:
        return "loop_factory" in vars(template)

    def members(self, template: type[unittest.TestCase], new_loop: LoopFactory) -> dict[str, Any]:
        original = template.loop_factory  # type: ignore[attr-defined]

        def loop_factory() -> asyncio.AbstractEventLoop:
            if original is asyncio.EventLoop:
                return new_loop()
            with mock.patch.object(asyncio, "EventLoop", new_loop):
                return original()

        return {"loop_factory": staticmethod(loop_factory)}

    def family(self, module: types.ModuleType, template: type[unittest.TestCase]) -> list[str]:
        return [template.__name__]


@dataclasses.dataclass(frozen=True)
class Substitution:
    module: str
    template: str
    hook: LoopMethod | SetUpConstructor | LoopFactoryAttribute
    generated: str


SUBSTITUTIONS: tuple[Substitution, ...] = (
    # EventLoopTestsMixin + SubprocessTestsMixin (Unix): Select/EPoll/Poll/Kqueue/Proactor.
    Substitution("test_events", "SelectEventLoopTests", LoopMethod("create_event_loop"), "EventLoopTests"),
    Substitution("test_sendfile", "SelectEventLoopTests", LoopMethod("create_event_loop"), "SendfileTests"),
    Substitution("test_sock_lowlevel", "SelectEventLoopTests", LoopMethod("create_event_loop"), "SockTests"),
    # FunctionalTestCaseMixin classes: Selector*/Proactor*.
    Substitution("test_server", "SelectorStartServerTests", LoopMethod("new_loop"), "StartServerTests"),
    Substitution("test_sslproto", "SelectorStartTLSTests", LoopMethod("new_loop"), "StartTLSTests"),
    Substitution(
        "test_buffered_proto", "BufferedProtocolSelectorTests", LoopMethod("new_loop"), "BufferedProtocolTests"
    ),
    # Classes whose setUp does `self.loop = asyncio.SelectorEventLoop()`.
    Substitution(
        "test_base_events", "BaseEventLoopWithSelectorTests", SetUpConstructor("SelectorEventLoop"), "EventLoopAPITests"
    ),
    Substitution(
        "test_unix_events", "SelectorEventLoopUnixSocketTests", SetUpConstructor("SelectorEventLoop"), "UnixSocketTests"
    ),
    # IsolatedAsyncioTestCase classes with `loop_factory = asyncio.EventLoop`
    # (3.14+); same class names, as on the versions where they use the policy.
    Substitution("test_taskgroups", "TestTaskGroup", LoopFactoryAttribute(), "TestTaskGroup"),
    Substitution("test_taskgroups", "TestEagerTaskTaskGroup", LoopFactoryAttribute(), "TestEagerTaskTaskGroup"),
)


def apply(module: types.ModuleType, short_name: str, new_loop: LoopFactory) -> list[str]:
    """Substitute the loop classes of ``module`` in place; returns notes for the report."""
    notes = []
    for sub in SUBSTITUTIONS:
        if sub.module != short_name:
            continue
        template = getattr(module, sub.template, None)
        if not (isinstance(template, type) and issubclass(template, unittest.TestCase)):
            notes.append(
                f"{sub.template} not found: not substituted (its siblings, if any, run on the "
                "stdlib loop and are counted out of scope)"
            )
            continue
        if isinstance(sub.hook, LoopFactoryAttribute) and not sub.hook.applies(template):
            continue
        replaced = sub.hook.family(module, template)
        for name in replaced:
            delattr(module, name)
        attrs = {
            "__module__": module.__name__,
            "__qualname__": sub.generated,
            "__doc__": f"{sub.template}, on the loop under test.",
            **sub.hook.members(template, new_loop),
        }
        setattr(module, sub.generated, type(sub.generated, (template,), attrs))
        notes.append(f"{', '.join(sorted(replaced))} -> {sub.generated}")
    return notes
