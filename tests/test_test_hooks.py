"""The test hooks are where they belong: in the test build the project venvs
hold, and not in a shipped wheel.

``cargo xtask test`` runs this suite against the test build (loop-py's
``test-hooks`` feature); its smoke test checks the shipped wheel of the same
commit in a fresh venv (``xtask/src/wheel.rs``).  Run against a venv holding a
shipped wheel with ``FERROLOOP_SHIPPED_WHEEL=1``, this checks that the hooks
are absent instead.
"""

from __future__ import annotations

import importlib

import pytest

from _helpers import ferroloop_test_hooks, shipped_wheel_venv


def test_hooks_are_in_the_test_build_only():
    from ferroloop import _native

    hook_names = [name for name in dir(_native) if name.startswith("_test")]
    if shipped_wheel_venv():
        assert hook_names == []
        with pytest.raises(ImportError):
            importlib.import_module("ferroloop._native._testing")
        return
    hooks = ferroloop_test_hooks()  # fails, naming the fix, when the venv lacks them
    assert hooks is importlib.import_module("ferroloop._native._testing")
    assert hooks.__name__ == "ferroloop._native._testing"
    assert callable(hooks.panic)
    # Nothing test-only in _native itself: the submodule is the one addition.
    assert hook_names == ["_testing"]
