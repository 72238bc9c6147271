"""Fixtures for the `ferroloop` command's tests: the real console script in
a child process, with the working directory and environment each test
chooses (``ferroloop_cmd``), and apps written into ``tmp_path``.

"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import pytest  # noqa: E402

from _helpers import ServerProcess, child_env  # noqa: E402
from cli_support import FERROLOOP  # noqa: E402


@pytest.fixture
def ferroloop_cmd(tmp_path):
    """Factory: ``ferroloop_cmd(*args, port=..., cwd=..., env=...)`` → a
    ``ServerProcess`` running the console script with ``env`` added to
    ``child_env()``, ready once listening on ``port`` (not waited for
    without one); killed at teardown."""
    children: list[ServerProcess] = []

    def spawn(*args: str, port: int | None = None, cwd: Path | None = None, env: dict | None = None) -> ServerProcess:
        child = ServerProcess([str(FERROLOOP), *args], port=port, cwd=cwd or tmp_path, env=child_env(env), log_dir=tmp_path)
        children.append(child)
        if port is not None:
            child.wait_ready()
        return child

    yield spawn
    for child in children:
        child.kill()
        child.close_files()
