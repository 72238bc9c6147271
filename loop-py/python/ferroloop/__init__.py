"""ferroloop: a Rust-powered, drop-in asyncio event loop.

    import ferroloop
    ferroloop.run(main())                      # like asyncio.run
    asyncio.Runner(loop_factory=ferroloop.new_event_loop)
    ferroloop.install()                        # policy, before asyncio.run
    ferroloop.serve(app, "127.0.0.1", 8000)    # the native ASGI server
    ferroloop.Queue()                          # asyncio.Queue in Rust, any loop
    ferroloop.EventLoopThreadPool()            # loops in threads (ferroloop.toolkit)
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._loop import Loop, LoopStats
from ._native import __version__
from ._policy import EventLoopPolicy, install, new_event_loop, run
from ._queue import LifoQueue, PriorityQueue, Queue, QueueShutDown

if TYPE_CHECKING:
    from .server import ClientDisconnected, Config, Server, ServerStats, serve

# The server's names are imported on first use: a program that only runs
# the loop does not load the server's modules (logging.config, json, the
# metrics renderer, ...), about 3.5 MiB of resident memory.
_SERVER = ("ClientDisconnected", "Config", "Server", "ServerStats", "serve")

__all__ = [
    "ClientDisconnected",
    "Config",
    "EventLoopPolicy",
    "LifoQueue",
    "Loop",
    "LoopStats",
    "PriorityQueue",
    "Queue",
    "QueueShutDown",
    "Server",
    "ServerStats",
    "__version__",
    "install",
    "new_event_loop",
    "run",
    "serve",
]

# The toolkit's main names, here too; imported on first use so that
# `import ferroloop` stays light.
_TOOLKIT = (
    "AsyncWaitGroup",
    "CancelScope",
    "Channel",
    "ChannelClosedError",
    "EventLoopThreadPool",
    "PoolOptions",
    "ReceiveChannel",
    "SendChannel",
    "TaskGroup",
    "ThreadPoolClosedError",
    "WouldBlock",
    "create_pool",
    "run_in_pool",
    "select",
    "select_channel",
)
__all__ += _TOOLKIT


def __getattr__(name: str) -> Any:
    if name in _SERVER:
        value = getattr(importlib.import_module("ferroloop.server"), name)
        globals()[name] = value
        return value
    # The main names are listed above; the rest of the toolkit is reachable
    # here too, so `import ferroloop as multiloop` finds every name.
    if not name.startswith("_") and name != "toolkit":
        toolkit = importlib.import_module("ferroloop.toolkit")
        if name in toolkit.__all__:
            return getattr(toolkit, name)
    raise AttributeError(f"module 'ferroloop' has no attribute {name!r}")
