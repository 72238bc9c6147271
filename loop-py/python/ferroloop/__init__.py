"""ferroloop: a Rust-powered, drop-in asyncio event loop.

    import ferroloop
    ferroloop.run(main())                      # like asyncio.run
    asyncio.Runner(loop_factory=ferroloop.new_event_loop)
    ferroloop.install()                        # policy, before asyncio.run
    ferroloop.serve(app, "127.0.0.1", 8000)    # the native ASGI server
"""

from ._loop import Loop, LoopStats
from ._native import __version__
from ._policy import EventLoopPolicy, install, new_event_loop, run
from .server import ClientDisconnected, Config, Server, ServerStats, serve

__all__ = [
    "ClientDisconnected",
    "Config",
    "EventLoopPolicy",
    "Loop",
    "LoopStats",
    "Server",
    "ServerStats",
    "__version__",
    "install",
    "new_event_loop",
    "run",
    "serve",
]
