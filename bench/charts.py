"""SVG bar charts of the latest results, for docs/benchmarks.md (our own small
renderer: no plotting library in the bench venv).

    python bench/charts.py [RESULTS_DIR]

Writes ``sched.svg`` (each contender's speed as a multiple of asyncio's, per
workload), ``echo.svg`` (messages per server CPU-second, ×asyncio),
``http.svg`` (requests per server CPU-second, thousands: the HTTP suite has
no asyncio baseline) and ``ws.svg`` (messages per server CPU-second,
thousands) next to ``sched-latest.json`` / ``echo-latest.json`` /
``http-latest.json`` / ``ws-latest.json``. sched and echo bars are medians
of paired per-round ratios, http and ws bars medians over rounds, as in the
markdown tables.
"""

from __future__ import annotations

import json
import sys
from html import escape
from pathlib import Path

ORDER = [
    "asyncio", "ferroloop", "uvloop", "rloop", "cadeloop", "rsloop",
    "granian", "uvicorn", "uvicorn-sansio", "uvicorn-wsproto", "rust-plaintext", "nginx", "picows",
]  # fmt: skip
COLOURS = {
    "asyncio": "#9e9e9e",
    "ferroloop": "#d9480f",
    "uvloop": "#1c7ed6",
    "rloop": "#37b24d",
    "cadeloop": "#7048e8",
    "rsloop": "#f59f00",
    "granian": "#0ca678",
    "uvicorn": "#1864ab",
    "rust-plaintext": "#495057",
    "nginx": "#2f9e44",
    "uvicorn-sansio": "#1864ab",
    "uvicorn-wsproto": "#74c0fc",
    "picows": "#495057",
}
BAR_H = 9
GROUP_GAP = 10
LABEL_W = 170
PLOT_W = 520


def _ratio(cell: dict, metric: str | None) -> float | None:
    x = cell.get("x_asyncio")
    if isinstance(x, dict):
        x = x.get(metric or "")
    return x if isinstance(x, (int, float)) and cell.get("status") == "ok" else None


def _median(cell: dict, metric: str) -> float | None:
    x = cell.get(f"median_{metric}")
    return x / 1000 if isinstance(x, (int, float)) and cell.get("status") == "ok" else None


def render(
    title: str,
    groups: list[tuple[str, dict[str, float]]],
    unit: str,
    reference: str | None = "asyncio = 1",
) -> str:
    contenders = [c for c in ORDER if any(c in values for _, values in groups)]
    top = max((v for _, values in groups for v in values.values()), default=1.0)
    scale = PLOT_W / (top * 1.08)
    group_h = BAR_H * len(contenders) + GROUP_GAP
    height = 60 + group_h * len(groups) + 30
    width = LABEL_W + PLOT_W + 90
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    # Legend.
    x = 10
    for name in contenders:
        out.append(f'<rect x="{x}" y="28" width="10" height="10" fill="{COLOURS.get(name, "#444")}"/>')
        out.append(f'<text x="{x + 14}" y="37">{escape(name)}</text>')
        x += 14 + 8 * len(name) + 16
    y = 52
    if reference is not None:
        # The reference = 1 line (asyncio's speed).
        one = LABEL_W + scale
        out.append(f'<line x1="{one:.1f}" y1="{y - 4}" x2="{one:.1f}" y2="{y + group_h * len(groups)}" '
                   'stroke="#555" stroke-dasharray="3,3"/>')
    for label, values in groups:
        out.append(f'<text x="{LABEL_W - 6}" y="{y + group_h / 2:.1f}" text-anchor="end">{escape(label)}</text>')
        for i, name in enumerate(contenders):
            value = values.get(name)
            bar_y = y + i * BAR_H
            if value is None:
                continue
            w = max(1.0, value * scale)
            out.append(f'<rect x="{LABEL_W}" y="{bar_y}" width="{w:.1f}" height="{BAR_H - 1}" '
                       f'fill="{COLOURS.get(name, "#444")}"/>')
            label = f"{value:.2f}" if reference is not None else f"{value:.1f}"
            out.append(f'<text x="{LABEL_W + w + 3:.1f}" y="{bar_y + BAR_H - 2}" font-size="8">{label}</text>')
        y += group_h
    legend = f"{unit} (dashed line: {reference})" if reference is not None else unit
    out.append(f'<text x="{LABEL_W}" y="{y + 16}" fill="#555">{escape(legend)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def chart_from(path: Path, title: str, metric: str | None, unit: str) -> str | None:
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    absolute = data.get("suite") in ("http", "ws")
    value = _median if absolute else _ratio
    groups = []
    for workload, entry in data["workloads"].items():
        values = {name: r for name, cell in entry["contenders"].items() if (r := value(cell, metric)) is not None}
        if values:  # (the ws suite's idle workload has no such figure)
            groups.append((workload, values))
    return render(title, groups, unit, None if absolute else "asyncio = 1")


def main(argv: list[str]) -> int:
    results = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "results"
    made = []
    for name, title, metric, unit in (
        ("sched", "Scheduling: speed ×asyncio (median of paired ratios)", None, "×asyncio, higher is faster"),
        ("echo", "TCP echo: messages per server CPU-second ×asyncio", "msgs_per_cpu_s", "×asyncio, higher is better"),
        ("http", "HTTP (one worker): requests per server CPU-second", "req_per_cpu_s",
         "thousands of requests per server CPU-second (median over rounds), higher is better"),
        ("ws", "WebSocket echo (one worker): messages per server CPU-second", "msgs_per_cpu_s",
         "thousands of messages per server CPU-second (median over rounds), higher is better"),
    ):
        svg = chart_from(results / f"{name}-latest.json", title, metric, unit)
        if svg is not None:
            (results / f"{name}.svg").write_text(svg)
            made.append(name)
    print("wrote", ", ".join(f"{n}.svg" for n in made) or "nothing (no results)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
