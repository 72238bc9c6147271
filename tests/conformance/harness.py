"""The loop under test and what a child installs before importing a test module.

``install()`` makes every way the suite obtains a loop build the loop under
test: the event-loop policy (``asyncio.new_event_loop``, ``asyncio.run``,
``asyncio.Runner``, ``IsolatedAsyncioTestCase``), a policy reset with
``set_event_loop_policy(None)``, and, through :mod:`substitute`, the test
classes that construct a concrete loop themselves.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import signal
import warnings
from collections.abc import Callable
from typing import Any

from scope import ForeignLoopDetector

LOOP_NAMES = ("ferroloop", "asyncio")


class LoopUnavailable(Exception):
    """The loop under test cannot be imported or lacks its entry points."""


@dataclasses.dataclass(frozen=True)
class LoopUnderTest:
    name: str
    # Builds a fresh loop; the generated test classes call it.
    new_loop: Callable[[], asyncio.AbstractEventLoop]
    policy_class: type[asyncio.AbstractEventLoopPolicy]


def load_loop(name: str) -> LoopUnderTest:
    if name == "asyncio":
        # The stdlib's own choice on Unix: SelectorEventLoop on the default
        # (epoll) selector, so the sanity run is the suite's EPoll classes.
        with warnings.catch_warnings():  # the policy classes are deprecated in 3.14
            warnings.simplefilter("ignore", DeprecationWarning)
            policy_class = asyncio.DefaultEventLoopPolicy
        return LoopUnderTest(name, asyncio.SelectorEventLoop, policy_class)
    if name == "ferroloop":
        try:
            ferroloop = importlib.import_module("ferroloop")
            lut = LoopUnderTest(name, ferroloop.new_event_loop, ferroloop.EventLoopPolicy)
            loop_class = ferroloop.Loop
        except (ImportError, AttributeError) as exc:
            raise LoopUnavailable(f"cannot use ferroloop: {exc!r}") from exc
        if not issubclass(loop_class, asyncio.AbstractEventLoop):
            raise LoopUnavailable("ferroloop.Loop is not an asyncio.AbstractEventLoop")
        return lut
    raise LoopUnavailable(f"unknown loop {name!r}; expected one of {LOOP_NAMES}")


def install(lut: LoopUnderTest, detector: ForeignLoopDetector) -> LoopUnderTest:
    """Install the loop under test process-wide; returns it with a marking factory.

    Must run before any test module is imported, so that names bound at import
    time (``from asyncio import set_event_loop_policy``) see the wrappers.
    """
    detector.install()

    def new_loop() -> asyncio.AbstractEventLoop:
        with detector.building_loop_under_test():
            return lut.new_loop()

    base: Any = lut.policy_class

    class LoopUnderTestPolicy(base):  # type: ignore[misc]
        """The product's policy, with its loops marked as the loop under test."""

        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            with detector.building_loop_under_test():
                loop: asyncio.AbstractEventLoop = super().new_event_loop()
            return loop

    _reinstall_policy_on_reset(LoopUnderTestPolicy)
    with warnings.catch_warnings():  # deprecated in 3.14, still what the suite calls
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_event_loop_policy(LoopUnderTestPolicy())
    _adapt_close_loop()
    return dataclasses.replace(lut, new_loop=new_loop, policy_class=LoopUnderTestPolicy)


def restore_default_sigint() -> None:
    """Adaptation 4: give the child the SIGINT handler a normally started interpreter has.

    An ignored SIGINT is inherited through ``exec``, and an interpreter that
    starts with it ignored keeps it so instead of installing
    ``signal.default_int_handler``. A background job of a non-interactive
    shell (``cmd &`` in a script, a CI step run that way) starts so, and so
    does everything it runs, this runner's children included. The suite
    assumes the default: ``asyncio.Runner`` installs its Ctrl-C handler only
    over it, and ``_thread.interrupt_main()`` does nothing while SIGINT is
    ignored, so ``test_runners``' interrupt tests (``RunTests.
    test_asyncio_run_without_uncancel``, ``RunnerTests.test_interrupt_call_soon``,
    ``RunnerTests.test_interrupt_wait``) would wait forever for an interrupt
    that never comes. Behaviour-neutral for both loops: it is the state of
    ``python -m unittest`` started from a terminal.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)


def before_test(policy_class: type[asyncio.AbstractEventLoopPolicy], *, after_listed_test: bool) -> None:
    """Called before each test: adaptations 2 and 3."""
    replace_leaked_policy(policy_class)
    if after_listed_test:
        stand_in_for_listed_tests()


def tears_down_the_event_loop(test: object) -> bool:
    """Whether ``test``'s tearDown is ``test_utils.TestCase``'s, which calls ``set_event_loop(None)``."""
    from test.test_asyncio import utils as test_utils  # type: ignore[import-not-found]

    return isinstance(test, test_utils.TestCase)


def stand_in_for_listed_tests() -> None:
    """Adaptation 3: what the tearDown of the listed (not run) tests before this one leaves behind.

    ``test_utils.TestCase.tearDown`` calls ``asyncio.set_event_loop(None)``,
    which on the default policies also sets the main thread's ``_set_called``
    flag; from then on the policy's ``get_event_loop()`` raises instead of
    creating a loop. Some tests rely on an earlier test having done that
    (3.12.1's ``GenericWatcherTests.test_create_subprocess_with_pidfd``, whose
    only predecessor is out of scope, fails without it on either loop, and
    also when CPython runs it alone). So the call is made in place of the
    tearDown of the scope.toml-listed tests, before the next test that runs.
    Behaviour-neutral for the stdlib loop: it is the state CPython's own run
    of the whole module gives that test.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_event_loop(None)


def replace_leaked_policy(policy_class: type[asyncio.AbstractEventLoopPolicy]) -> None:
    """Adaptation 2: called before each test; undoes a policy leaked by an earlier test.

    Some tests install a policy and never reset it (3.11's
    ``test_events.PolicyTests.test_set_event_loop_policy`` leaves a fresh
    ``DefaultEventLoopPolicy``), so every later test in the module would get
    stdlib loops from ``asyncio.new_event_loop()``. Behaviour-neutral for
    the stdlib loop: what leaks there is a stateless default policy, which is
    what ``policy_class`` is on ``--loop asyncio``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if not isinstance(asyncio.get_event_loop_policy(), policy_class):
            asyncio.set_event_loop_policy(policy_class())


def _reinstall_policy_on_reset(policy_class: type[asyncio.AbstractEventLoopPolicy]) -> None:
    """``set_event_loop_policy(None)`` installs ``policy_class()`` instead of the stdlib default.

    Every test module's ``tearDownModule`` and many cleanups reset the policy
    this way. 3.14 moved the implementation to ``_set_event_loop_policy`` (the
    public name warns and delegates to it); both are wrapped where present,
    on ``asyncio.events`` and on the ``asyncio`` package that re-exports them.
    """
    for name in ("set_event_loop_policy", "_set_event_loop_policy"):
        original = getattr(asyncio.events, name, None)
        if original is None:
            continue

        @functools.wraps(original)
        def wrapper(policy: Any, _original: Callable[[Any], None] = original) -> None:
            _original(policy_class() if policy is None else policy)

        setattr(asyncio.events, name, wrapper)
        if getattr(asyncio, name, None) is original:
            setattr(asyncio, name, wrapper)


class _ExecutorAlreadyShutDown:
    """A view of a loop whose ``_default_executor`` reads as ``None``."""

    _default_executor = None

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


def _adapt_close_loop() -> None:
    """Adaptation 1: ``test_utils.TestCase.close_loop`` without ``loop._default_executor``.

    The suite's helper reads the private ``loop._default_executor`` to decide
    whether to shut the default executor down. For a loop without that
    attribute, the executor is shut down through the public
    ``shutdown_default_executor()`` (when the loop is still open) and the
    helper then runs on a view where the attribute is ``None``, so everything
    else it does (close the loop, join child-watcher threads) is unchanged.
    Behaviour-neutral for the stdlib loop: it has the attribute, so the
    helper runs exactly as shipped.
    """
    from test.test_asyncio import utils as test_utils  # type: ignore[import-not-found]

    original = test_utils.TestCase.close_loop

    def close_loop(loop: asyncio.AbstractEventLoop) -> None:
        if hasattr(loop, "_default_executor"):
            original(loop)
            return
        if not loop.is_closed():
            loop.run_until_complete(loop.shutdown_default_executor())
        original(_ExecutorAlreadyShutDown(loop))

    test_utils.TestCase.close_loop = staticmethod(close_loop)
