"""The bench venv: one interpreter holding every contender.

Created with the interpreter running the bench (`python -m venv`) and reused
across runs: only missing peers are installed.  Peers come from PyPI as wheels
only (`--only-binary :all:`): a peer without a wheel for this platform is
reported as unavailable rather than compiled here (rsloop's sdist, for one,
needs a nightly Rust toolchain).  The ferroloop wheel under test, when given,
is always force-reinstalled without dependencies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from contenders import CONTENDERS, PEERS

PROBE = Path(__file__).with_name("contenders.py")


@dataclass
class BenchEnv:
    python: Path
    # contender -> why it could not be installed (pip's last words)
    install_failures: dict[str, str] = field(default_factory=dict)
    # what was done to the venv in this run, for the report
    log: list[str] = field(default_factory=list)

    def probe(self, names: list[str]) -> dict[str, dict]:
        """Which contenders import in the venv, their versions and loop classes.
        One process each, so a loop that crashes the interpreter on import
        only makes itself unavailable."""
        found = {}
        for name in names:
            proc = subprocess.run(
                [str(self.python), str(PROBE), name], capture_output=True, text=True
            )
            try:
                found[name] = json.loads(proc.stdout)[name]
            except (json.JSONDecodeError, KeyError):
                found[name] = {
                    "available": False,
                    "reason": f"probe exited {proc.returncode}: {_last_error_line(proc)}",
                }
        return found

    def python_version(self) -> str:
        return subprocess.run(
            [str(self.python), "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
    )


def _last_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["(no output)"])[-1].strip()


def _venv_matches_current_python(python: Path) -> bool:
    # A venv of another Python version could not load wheels built for this one.
    proc = subprocess.run(
        [str(python), "-c", f"import sys; print(sys.version_info[:2] == {sys.version_info[:2]!r})"],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() == "True"


def loop_dists(contenders: list[str]) -> dict[str, tuple[str, ...]]:
    """The PyPI distributions each event loop contender needs (the peers')."""
    return {name: (CONTENDERS[name].dist,) for name in contenders if name in PEERS}


def prepare(
    venv: Path, dists: dict[str, tuple[str, ...]], ferroloop_wheel: Path | None
) -> BenchEnv:
    """Create or reuse the venv and install what the requested contenders
    need: `dists` maps a contender to the PyPI distributions it needs
    (`loop_dists` for the loop suites, the servers' for the HTTP suite)."""
    python = venv / "bin" / "python"
    env = BenchEnv(python)
    if not python.exists() or not _venv_matches_current_python(python):
        env.log.append(f"created venv {venv} with {sys.executable}")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)

    listed = _pip(python, "list", "--format=json")
    installed = {p["name"].lower() for p in json.loads(listed.stdout or "[]")}
    for name, needed in dists.items():
        missing = [dist for dist in needed if dist.lower() not in installed]
        if not missing:
            continue
        proc = _pip(python, "install", "--only-binary", ":all:", *missing)
        if proc.returncode == 0:
            env.log.append(f"installed {' '.join(missing)}")
            installed.update(dist.lower() for dist in missing)
        else:
            env.install_failures[name] = (
                f"pip install {' '.join(missing)} failed: {_last_error_line(proc)}"
            )

    if ferroloop_wheel is not None:
        proc = _pip(python, "install", "--force-reinstall", "--no-deps", str(ferroloop_wheel))
        if proc.returncode == 0:
            env.log.append(f"installed {ferroloop_wheel.name}")
        else:
            env.install_failures["ferroloop"] = (
                f"pip install {ferroloop_wheel} failed: {_last_error_line(proc)}"
            )
    return env
