"""ferroloop's formatters and default logging configuration, under the
name a uvicorn log configuration uses (`uvicorn.logging` → `ferroloop.logging`)."""

from .server._logging import (
    LOGGING_CONFIG,
    TRACE_LOG_LEVEL,
    AccessFormatter,
    ColourizedFormatter,
    DefaultFormatter,
)

__all__ = ["LOGGING_CONFIG", "TRACE_LOG_LEVEL", "AccessFormatter", "ColourizedFormatter", "DefaultFormatter"]
