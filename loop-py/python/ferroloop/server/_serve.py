"""`ferroloop.serve()`: one process serving on a new loop, or, with
workers or reload, the supervisor that forks them."""

from __future__ import annotations

from typing import Any, Callable

from .._policy import run
from ._config import Config
from ._server import Server


def serve(app: Callable[..., Any] | str, host: str = "127.0.0.1", port: int = 8000, **kwargs: Any) -> None:
    """Serve `app` until SIGINT/SIGTERM, on a new ferroloop loop. Keyword
    arguments are `ferroloop.Config`'s. With `workers` above 1 (or
    `reload`) a supervisor forks the workers (see `_supervisor.py`);
    raises `SystemExit` with its exit code when it fails."""
    config = Config(app, host=host, port=port, **kwargs)
    if config.workers > 1 or config.reload:
        # Imported here: `import ferroloop` does not load the supervisor.
        from ._supervisor import supervise

        code = supervise(config)
        if code:
            raise SystemExit(code)
        return
    run(Server(config).serve(), backend=config.backend)
