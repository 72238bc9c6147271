"""ferroloop: a Rust-powered, drop-in asyncio event loop.

    import ferroloop
    ferroloop.run(main())                      # like asyncio.run
    asyncio.Runner(loop_factory=ferroloop.new_event_loop)
    ferroloop.install()                        # policy, before asyncio.run
"""

from ._loop import Loop
from ._native import __version__
from ._policy import EventLoopPolicy, install, new_event_loop, run

__all__ = ["EventLoopPolicy", "Loop", "__version__", "install", "new_event_loop", "run"]
