"""ferroloop: a Rust-powered, drop-in asyncio event loop.

    import ferroloop
    ferroloop.run(main())                      # like asyncio.run
    asyncio.Runner(loop_factory=ferroloop.new_event_loop)
    ferroloop.install()                        # policy, before asyncio.run
    ferroloop.serve(app, "127.0.0.1", 8000)    # the native ASGI server
    ferroloop.Queue()                          # asyncio.Queue in Rust, any loop
"""

from ._loop import Loop, LoopStats
from ._native import __version__
from ._policy import EventLoopPolicy, install, new_event_loop, run
from ._queue import LifoQueue, PriorityQueue, Queue, QueueShutDown
from .server import ClientDisconnected, Config, Server, ServerStats, serve

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
