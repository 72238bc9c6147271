"""The toolkit's tests run their async bodies on each loop the toolkit
supports: ferroloop's, the stdlib's and uvloop's (``on_loop``)."""

from __future__ import annotations

import asyncio

import pytest
from toolkit_loops import LOOPS


@pytest.fixture(params=sorted(LOOPS))
def run(request):
    """``run(coro)``: run it to completion on a fresh loop of each kind."""

    def runner(coro):
        with asyncio.Runner(loop_factory=LOOPS[request.param]) as r:
            return r.run(coro)

    runner.kind = request.param
    return runner
