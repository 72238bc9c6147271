"""ferroloop's ASGI server: HTTP/1.1 parsed, framed and serialized in Rust.

    ferroloop.serve(app, "127.0.0.1", 8000)          # blocking
    await ferroloop.Server(ferroloop.Config(app)).serve()   # embedded
"""

from ._config import Config
from ._serve import serve
from ._server import ClientDisconnected, Server, ServerStats

__all__ = ["ClientDisconnected", "Config", "Server", "ServerStats", "serve"]
