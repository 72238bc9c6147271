"""The modules of the ASGI server (`loop-py/src/asgi/`) import each other
without cycles, in the order its module docs list them: each module uses
only modules listed before it; so do the files inside each of its
directories (`asgi/http/`, `asgi/ws/`), in their `mod.rs`'s order. The
Python package's modules (`ferroloop`, its `server/` and `toolkit/`) import
each other without cycles too, counting every import: at the top, inside
functions and under `TYPE_CHECKING`. A source check: no build needed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ASGI = Path(__file__).resolve().parent.parent / "loop-py" / "src" / "asgi"
PACKAGE = Path(__file__).resolve().parent.parent / "loop-py" / "python" / "ferroloop"


def _documented_order(directory: Path = ASGI) -> list[str]:
    text = (directory / "mod.rs").read_text()
    order: list[str] = []
    for line in text.splitlines():
        if line.startswith("//! - "):
            order += re.findall(r"\[`(\w+)`\]", line.split(":")[0])
    return order


def _modules() -> dict[str, list[Path]]:
    mods: dict[str, list[Path]] = {}
    for path in ASGI.iterdir():
        if path.name == "mod.rs":
            continue
        if path.is_dir():
            mods[path.name] = sorted(path.rglob("*.rs"))
        elif path.suffix == ".rs":
            mods[path.stem] = [path]
    return mods


def _uses(files: list[Path], inside_dir: bool, names: set[str]) -> set[str]:
    # `super::x` from a top-level file, `super::super::x` from a directory's
    # files, and `crate::asgi::x` from anywhere.
    prefix = r"(?:super::super::|crate::asgi::)" if inside_dir else r"(?:super::|crate::asgi::)"
    found: set[str] = set()
    for path in files:
        code = "\n".join(line.split("//")[0] for line in path.read_text().splitlines())
        for match in re.finditer(prefix + r"(\w+)", code):
            if match.group(1) in names:
                found.add(match.group(1))
        # `use super::{a, b::c}` groups
        for group in re.finditer(prefix + r"\{([^}]*)\}", code):
            for name in re.findall(r"(?:^|,)\s*(\w+)", group.group(1)):
                if name in names:
                    found.add(name)
    return found


def test_every_module_is_documented_once():
    order = _documented_order()
    assert sorted(order) == sorted(_modules()), (order, sorted(_modules()))
    assert len(order) == len(set(order))


def test_modules_import_only_modules_listed_before_them():
    order = _documented_order()
    mods = _modules()
    names = set(mods)
    for name, files in mods.items():
        uses = _uses(files, files[0].parent != ASGI, names) - {name}
        later = {u for u in uses if order.index(u) > order.index(name)}
        assert not later, f"asgi::{name} imports {sorted(later)}, listed after it (a cycle or a wrong order)"


def _subdirs() -> list[Path]:
    return sorted(p for p in ASGI.iterdir() if p.is_dir())


def test_every_file_of_a_directory_is_documented_once():
    for directory in _subdirs():
        order = _documented_order(directory)
        files = sorted(p.stem for p in directory.glob("*.rs") if p.name != "mod.rs")
        assert sorted(order) == files, (directory.name, order, files)
        assert len(order) == len(set(order))


def test_files_of_a_directory_import_only_files_listed_before_them():
    for directory in _subdirs():
        order = _documented_order(directory)
        names = set(order)
        for name in order:
            code = "\n".join(line.split("//")[0] for line in (directory / f"{name}.rs").read_text().splitlines())
            uses = {m for m in re.findall(r"(?<!super::)super::(\w+)", code) if m in names}
            for group in re.findall(r"(?<!super::)super::\{([^}]*)\}", code):
                uses |= {n for n in re.findall(r"(?:^|,)\s*(\w+)", group) if n in names}
            later = {u for u in uses - {name} if order.index(u) > order.index(name)}
            assert not later, f"asgi::{directory.name}::{name} imports {sorted(later)}, listed after it"


def _python_modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _python_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports. `from . import x` counts
    as importing `x` when `x` is a module, else the package; the extension
    `_native` is a leaf."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            modules = {f"{target}.{alias.name}" for alias in node.names} & (known | {"ferroloop._native"})
            found |= modules or {target}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return (found & known) - {name}


def test_python_modules_import_each_other_without_cycles():
    mods = _python_modules()
    graph = {name: _python_imports(name, path, set(mods)) for name, path in mods.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name) :] + [name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, path + [name])
        done.add(name)

    assert "ferroloop.server._server" in graph and "ferroloop.toolkit" in graph
    for name in sorted(graph):
        visit(name, [])
