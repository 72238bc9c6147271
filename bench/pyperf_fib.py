"""fib(21) on each loop under pyperf: a second, independent harness.

    <bench venv>/bin/python bench/pyperf_fib.py --loop NAME -o OUT.json [pyperf options]
    <bench venv>/bin/python -m pyperf compare_to asyncio.json ferroloop.json ...

`cargo xtask bench sched` measures fib21 with its own process rotation and
warm-up. This runs the same tree under pyperf's `Runner`, which spawns its
own worker processes, calibrates, warms up and discards its warm-up values
its own way, so a lead that shows in both is not an artefact of one
harness. One loop per invocation (pyperf's workers re-run this script with
the same `--loop`); the tree's value and node count are verified each time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyperf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contenders import CONTENDERS, loop_factory  # noqa: E402
from sched_workloads import FIB_DEPTH, _fib_tree  # noqa: E402


def fib_tree(loops: int, new_loop) -> float:
    """`loops` fib(21) trees, each on a new loop; seconds in the trees
    (the suite's own tree, timed and verified by `_fib_tree`)."""
    total = 0.0
    for _ in range(loops):
        loop = new_loop()
        try:
            total += _fib_tree(loop, FIB_DEPTH)
        finally:
            loop.close()
    return total


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.extend(["--loop", args.loop]))
    runner.argparser.add_argument("--loop", required=True, choices=sorted(CONTENDERS))
    args = runner.parse_args()
    # One name for every loop, so `pyperf compare_to` pairs the files.
    runner.metadata["loop"] = args.loop
    runner.bench_time_func("fib21", fib_tree, loop_factory(args.loop))


if __name__ == "__main__":
    main()
