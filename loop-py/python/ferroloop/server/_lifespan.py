"""The ASGI lifespan protocol: startup and shutdown events, and the state
dict copied into every request scope."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

logger = logging.getLogger("ferroloop.error")


class LifespanFailed(RuntimeError):
    """Application startup failed (or lifespan="on" and the app does not
    support the lifespan protocol)."""


class Lifespan:
    def __init__(self, app: Callable[..., Any], mode: str) -> None:
        self.app = app
        self.mode = mode
        self.state: dict[str, Any] = {}
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._startup_done = asyncio.Event()
        self._shutdown_done = asyncio.Event()
        self._startup_failed = False
        self._shutdown_failed = False
        self._unsupported = False
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        if self.mode == "off":
            return
        logger.info("Waiting for application startup.")
        self._task = asyncio.get_running_loop().create_task(self._main())
        await self._queue.put({"type": "lifespan.startup"})
        await self._startup_done.wait()
        if self._startup_failed or (self._error is not None and self.mode == "on"):
            # The summary after the traceback, as uvicorn.
            logger.error("Application startup failed. Exiting.")
            raise LifespanFailed("Application startup failed")
        if not self._unsupported:
            logger.info("Application startup complete.")

    async def shutdown(self) -> None:
        if self.mode == "off" or self._unsupported or self._task is None:
            return
        logger.info("Waiting for application shutdown.")
        await self._queue.put({"type": "lifespan.shutdown"})
        await self._shutdown_done.wait()
        if self._shutdown_failed or self._error is not None:
            logger.error("Application shutdown failed. Exiting.")
        else:
            logger.info("Application shutdown complete.")

    async def _main(self) -> None:
        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.0"},
            "state": self.state,
        }
        try:
            await self.app(scope, self._receive, self._send)
        except BaseException as exc:
            self._error = exc
            if self._startup_failed or self._shutdown_failed:
                pass
            elif self.mode == "auto" and not self._startup_done.is_set():
                self._unsupported = True
                logger.info("ASGI 'lifespan' protocol appears unsupported.")
            else:
                logger.error("Exception in 'lifespan' protocol", exc_info=exc)
        finally:
            self._startup_done.set()
            self._shutdown_done.set()

    async def _receive(self) -> dict[str, Any]:
        return await self._queue.get()

    async def _send(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "lifespan.startup.complete":
            self._check(not self._startup_done.is_set(), kind)
            self._startup_done.set()
        elif kind == "lifespan.startup.failed":
            self._check(not self._startup_done.is_set(), kind)
            self._startup_failed = True
            self._startup_done.set()
            if message.get("message"):
                logger.error(message["message"])
        elif kind == "lifespan.shutdown.complete":
            self._check(self._startup_done.is_set() and not self._shutdown_done.is_set(), kind)
            self._shutdown_done.set()
        elif kind == "lifespan.shutdown.failed":
            self._check(self._startup_done.is_set() and not self._shutdown_done.is_set(), kind)
            self._shutdown_failed = True
            self._shutdown_done.set()
            if message.get("message"):
                logger.error(message["message"])
        else:
            raise RuntimeError(f"Unexpected ASGI lifespan message type {kind!r}")

    @staticmethod
    def _check(ok: bool, kind: object) -> None:
        if not ok:
            raise RuntimeError(f"Unexpected ASGI lifespan message {kind!r} at this point")
