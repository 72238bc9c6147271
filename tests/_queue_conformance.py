"""Run CPython's own asyncio queue tests against ferroloop.Queue.

    python tests/_queue_conformance.py --loop asyncio|uvloop|ferroloop

Replaces asyncio.Queue, LifoQueue and PriorityQueue (and asyncio.queues.*)
with ferroloop's before importing ``test.test_asyncio.test_queues`` of the
running interpreter, runs the module with the event-loop policy of the given
loop, and prints one JSON line: {"run", "failures": [ids], "errors": [ids],
"skipped", "queue_class", "loop_class"}. Exit status 0 when everything ran
and passed.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.queues
import json
import sys
import unittest

import ferroloop


def substitute() -> None:
    for module in (asyncio, asyncio.queues):
        module.Queue = ferroloop.Queue  # type: ignore[misc]
        module.LifoQueue = ferroloop.LifoQueue  # type: ignore[misc]
        module.PriorityQueue = ferroloop.PriorityQueue  # type: ignore[misc]


def policy(loop: str) -> asyncio.AbstractEventLoopPolicy:
    if loop == "ferroloop":
        return ferroloop.EventLoopPolicy()
    if loop == "uvloop":
        import uvloop

        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()




def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=("asyncio", "uvloop", "ferroloop"), default="ferroloop")
    args = parser.parse_args()

    substitute()
    asyncio.set_event_loop_policy(policy(args.loop))
    from test.test_asyncio import test_queues

    # The module's tearDownModule resets the policy; the tests build their
    # loops with asyncio.Runner, i.e. from the policy set here.
    seen: set[str] = set()
    runner_init = asyncio.Runner._lazy_init

    def lazy_init(self: asyncio.Runner) -> None:
        runner_init(self)
        loop = self._loop
        seen.add(f"{type(loop).__module__}.{type(loop).__qualname__}")

    asyncio.Runner._lazy_init = lazy_init  # type: ignore[method-assign]

    suite = unittest.defaultTestLoader.loadTestsFromModule(test_queues)
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    record = {
        "python": sys.version.split()[0],
        "run": result.testsRun,
        "failures": [test.id() for test, _ in result.failures],
        "errors": [test.id() for test, _ in result.errors],
        "skipped": len(result.skipped),
        "queue_class": f"{asyncio.Queue.__module__}.{asyncio.Queue.__qualname__}",
        "loop_classes": sorted(seen),
    }
    print(json.dumps(record), flush=True)
    ok = result.wasSuccessful() and not result.skipped and result.testsRun > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
