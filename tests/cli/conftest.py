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

from cli_support import Ferroloop  # noqa: E402


@pytest.fixture
def ferroloop_cmd(tmp_path):
    """Factory: ``ferroloop_cmd(*args, cwd=..., env=...)`` → a ``Ferroloop``
    child (not waited for); killed at teardown."""
    children: list[Ferroloop] = []

    def spawn(*args: str, cwd: Path | None = None, env: dict | None = None) -> Ferroloop:
        child = Ferroloop(list(args), cwd=cwd or tmp_path, env=env, log_dir=tmp_path)
        children.append(child)
        return child

    yield spawn
    for child in children:
        child.kill()
