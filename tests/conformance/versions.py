"""The ``python`` key: entries of ``scope.toml`` and ``expected-failures.toml``
that apply to some CPython versions only.

A spec is a string of comma-separated clauses that must all hold, or a list
of such strings of which one must hold::

    python = "3.12"                 # 3.12.x only (a bare version means ==)
    python = ">=3.12"               # 3.12 and later
    python = ">=3.12,<3.14"         # 3.12 and 3.13
    python = ["3.12", "3.13"]       # the same, as a list
    python = "<3.12.4"              # up to 3.12.3 (a clause may name a micro version)

Each clause compares the running interpreter's version, cut to as many
components as the clause names, so ``"<=3.12"`` includes every 3.12.x and
``">3.12"`` starts at 3.13. Without a ``python`` key an entry applies to every
version. Several entries for the same test id (one per version range) are
allowed, and at most one of them may apply to the running interpreter.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

Version = tuple[int, ...]
RUNNING: Version = tuple(sys.version_info[:3])

_OPERATORS: dict[str, Callable[[Version, Version], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CLAUSE = re.compile(r"\s*(==|!=|>=|<=|>|<)?\s*(\d+)\.(\d+)(?:\.(\d+))?\s*")


@dataclasses.dataclass(frozen=True)
class VersionSpec:
    # As written in the file (a string or a list of strings), for reports and drafts.
    text: str | list[str]
    # Any of these alternatives; each is a list of (operator, version) that must all hold.
    alternatives: tuple[tuple[tuple[str, Version], ...], ...]

    def matches(self, version: Version = RUNNING) -> bool:
        return any(
            all(_OPERATORS[op](version[: len(bound)], bound) for op, bound in clauses) for clauses in self.alternatives
        )


def parse(value: Any) -> VersionSpec:
    """Parse a ``python`` value; raises ValueError on anything malformed."""
    texts = value if isinstance(value, list) else [value]
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"'python' must be a version spec string or a non-empty list of them, not {value!r}")
    alternatives = []
    for text in texts:
        clauses = []
        for part in text.split(","):
            match = _CLAUSE.fullmatch(part)
            if match is None:
                raise ValueError(f"'python': bad version clause {part.strip()!r} in {text!r} (e.g. '>=3.12', '3.13')")
            op, *numbers = match.groups()
            clauses.append((op or "==", tuple(int(n) for n in numbers if n is not None)))
        alternatives.append(tuple(clauses))
    return VersionSpec(value, tuple(alternatives))


def variants(value: Any) -> list[Any]:
    """An entry's variants: a TOML array (of tables) is several, anything else one."""
    return value if isinstance(value, list) else [value]


def pick(test_id: str, candidates: Sequence[tuple[VersionSpec | None, Any]], version: Version = RUNNING) -> Any:
    """The one payload whose spec applies to ``version`` (None: none does).

    Raises ValueError when several apply: the file would be ambiguous.
    """
    applying = [payload for spec, payload in candidates if spec is None or spec.matches(version)]
    if len(applying) > 1:
        where = ".".join(map(str, version))
        raise ValueError(
            f"{test_id!r}: {len(applying)} entries apply to Python {where}; give them disjoint 'python' specs"
        )
    return applying[0] if applying else None


def running_label() -> str:
    """``3.12``: what a drafted entry's ``python`` key names."""
    return f"{RUNNING[0]}.{RUNNING[1]}"
