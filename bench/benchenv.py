"""The bench venv: one interpreter holding every contender.

Created with the interpreter running the bench (`python -m venv`) and reused
across runs: only missing peers are installed.  Peers come from PyPI as wheels
only (`--only-binary :all:`): a peer without a wheel for this platform is
reported as unavailable rather than compiled here (rsloop's sdist, for one,
needs a nightly Rust toolchain).  The ferroloop wheel under test, when given,
is always force-reinstalled without dependencies.

A baseline wheel (`--baseline-wheel`, the code before the change under test)
is not installed into the venv, which can hold one ferroloop only: `pip
install --no-deps --target` unpacks it once into a cache directory keyed by
the wheel's SHA-256 (`target/bench-baseline/<hash>`), and the
`ferroloop-base` contender's processes run with that directory first on
their PYTHONPATH.  Every such process reports where it imported ferroloop
from, and `check_origin` holds it to that directory (and ferroloop's own
processes to anywhere but it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from contenders import BASE, CONTENDERS, PEERS

PROBE = Path(__file__).with_name("contenders.py")
REPO = Path(__file__).resolve().parent.parent
# Unpacked baseline wheels, one directory per wheel content.
BASELINE_CACHE = REPO / "target" / "bench-baseline"


@dataclass
class BenchEnv:
    python: Path
    # contender -> why it could not be installed (pip's last words)
    install_failures: dict[str, str] = field(default_factory=dict)
    # what was done to the venv in this run, for the report
    log: list[str] = field(default_factory=list)
    # contender -> directory first on the PYTHONPATH of its processes
    # (ferroloop-base: the unpacked baseline wheel)
    overlays: dict[str, Path] = field(default_factory=dict)
    # contender -> {"wheel", "sha256"} of the wheel it runs, for the report
    wheels: dict[str, dict] = field(default_factory=dict)

    def environ(self, contender: str) -> dict[str, str] | None:
        """The environment for `contender`'s processes: None (inherit ours)
        unless it has an overlay, which goes first on PYTHONPATH."""
        overlay = self.overlays.get(contender)
        if overlay is None:
            return None
        rest = os.environ.get("PYTHONPATH")
        return os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, (str(overlay), rest)))}

    def check_origin(self, contender: str, module_file: str | None) -> str | None:
        """Why a process of `contender` that imported its module from
        `module_file` did not run the intended build; None when it did.
        A contender with an overlay must import from it, any other contender
        must not import from any overlay. A process that does not say (a
        peer's own server command: granian, uvicorn) passes unless it has an
        overlay: only an overlay's contender gets one on its PYTHONPATH."""
        if not self.overlays:
            return None
        overlay = self.overlays.get(contender)
        if module_file is None:
            if overlay is None:
                return None
            return "the process did not say where it imported its loop from"
        where = Path(module_file).resolve()
        if overlay is not None and not where.is_relative_to(overlay.resolve()):
            return f"imported {where}, not the baseline wheel's copy under {overlay}"
        for other, path in self.overlays.items():
            if other != contender and where.is_relative_to(path.resolve()):
                return f"imported {where}, from {other}'s directory {path}"
        return None

    def probe(self, names: list[str]) -> dict[str, dict]:
        """Which contenders import in the venv, their versions and loop classes.
        One process each, so a loop that crashes the interpreter on import
        only makes itself unavailable."""
        found = {}
        for name in names:
            proc = subprocess.run(
                [str(self.python), str(PROBE), name],
                capture_output=True,
                text=True,
                env=self.environ(name),
            )
            try:
                found[name] = json.loads(proc.stdout)[name]
            except (json.JSONDecodeError, KeyError):
                found[name] = {
                    "available": False,
                    "reason": f"probe exited {proc.returncode}: {_last_error_line(proc)}",
                }
        return self.checked(found)

    def checked(self, found: dict[str, dict]) -> dict[str, dict]:
        """Probe results with the wheels recorded, and a contender whose probe
        imported the wrong build made unavailable."""
        for name, info in found.items():
            if not info.get("available"):
                continue
            if name in self.wheels:
                info["wheel"] = self.wheels[name]
            wrong = self.check_origin(name, info.get("module_file"))
            if wrong is not None:
                found[name] = {"available": False, "reason": wrong}
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


def wheel_sha256(wheel: Path) -> str:
    digest = hashlib.sha256()
    with wheel.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def unpack_baseline(python: Path, wheel: Path, env: BenchEnv) -> Path | None:
    """The directory holding `wheel` unpacked (`pip install --no-deps
    --target`, with the venv's pip, so the wheel's tags are checked against
    the venv's interpreter), made once per wheel content and Python
    version; None (and an install failure recorded) when pip refuses it."""
    sha = wheel_sha256(wheel)
    # The interpreter's version is in the key too: --target checks tags.
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    target = BASELINE_CACHE / f"{sha[:16]}-py{version}"
    env.wheels[BASE] = {"wheel": wheel.name, "sha256": sha, "dir": str(target)}
    done = target / ".unpacked"  # written last: a half-made directory is redone
    if done.is_file() and (target / "ferroloop").is_dir():
        env.log.append(f"baseline {wheel.name} (sha256 {sha[:16]}) reused from {target}")
        return target
    shutil.rmtree(target, ignore_errors=True)
    # Compiled to bytecode as pip does in the venv (a process importing from
    # source under PYTHONDONTWRITEBYTECODE would start slower and bigger),
    # in place, so code objects name the files that run.
    proc = _pip(python, "install", "--no-deps", "--target", str(target), str(wheel))
    if proc.returncode != 0 or not (target / "ferroloop").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        env.install_failures[BASE] = (
            f"pip install --target of {wheel} failed: {_last_error_line(proc)}"
        )
        return None
    done.write_text(sha + "\n")
    env.log.append(f"baseline {wheel.name} (sha256 {sha[:16]}) unpacked into {target}")
    return target


def prepare(
    venv: Path,
    dists: dict[str, tuple[str, ...]],
    ferroloop_wheel: Path | None,
    baseline_wheel: Path | None = None,
) -> BenchEnv:
    """Create or reuse the venv and install what the requested contenders
    need: `dists` maps a contender to the PyPI distributions it needs
    (`loop_dists` for the loop suites, the servers' for the HTTP suite);
    `baseline_wheel` becomes ferroloop-base's overlay."""
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
            env.wheels["ferroloop"] = {
                "wheel": ferroloop_wheel.name,
                "sha256": wheel_sha256(ferroloop_wheel),
            }
        else:
            env.install_failures["ferroloop"] = (
                f"pip install {ferroloop_wheel} failed: {_last_error_line(proc)}"
            )
    if baseline_wheel is not None:
        overlay = unpack_baseline(python, baseline_wheel, env)
        if overlay is not None:
            env.overlays[BASE] = overlay
    return env
