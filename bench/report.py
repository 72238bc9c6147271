"""What every suite's report shares: number formats, the header (host,
method, contenders, load), the failure list, and the comparison of
ferroloop's ratios between two results of one suite.  The tables themselves
are in sched_report.py and echo_report.py."""

from __future__ import annotations

from collections.abc import Callable
from statistics import median

from contenders import BASE
from summary import SUBJECT

# The refactoring rule: against the code before the change, a paired median
# of at least this on the work-per-CPU-second figure, measured in one run.
BASE_RULE = 0.97


def ops(x: float) -> str:
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def amount(x: float) -> str:
    """Three significant digits, without an exponent for large values."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def header(result: dict, title: str, method: str, notes: list[str]) -> list[str]:
    """Title, host, method, contenders, then `notes`, then load and duration."""
    host = result["host"]
    available = [f"{n} {c['version']}" for n, c in result["contenders"].items() if c["available"]]
    unavailable = [
        f"{n} ({c['reason']})" for n, c in result["contenders"].items() if not c["available"]
    ]
    lines = [
        f"# {title}, {result['started']}",
        "",
        f"- host: {host['cpu_model']}, {host['nproc']} CPUs, {host['platform']}; "
        f"Python {host['python']}; git {host['git_revision'] or 'n/a'}",
        f"- method: {method}",
        f"- contenders: {', '.join(available)}",
    ]
    if unavailable:
        lines.append(f"- unavailable: {'; '.join(unavailable)}")
    lines += notes
    if result["load_before"][0] >= host["nproc"] / 2:
        lines.append(
            f"- **busy host**: 1-minute load {result['load_before'][0]} on {host['nproc']} CPUs "
            "before the run; paired ratios are less reliable than on an idle machine"
        )
    lines += [
        f"- load average before {result['load_before']}, after {result['load_after']}; "
        f"took {result['duration_s']:.0f} s",
        "",
    ]
    return lines


def cpu_share(result: dict, cpu_field: str, seconds_field: str) -> str:
    """Median over ok measurements of a process's CPU time over wall time."""
    shares = [m[cpu_field] / m[seconds_field] for m in result["measurements"] if m["status"] == "ok"]
    return f"{median(shares):.0%}" if shares else "n/a"


def table(
    result: dict,
    contenders: list[str],
    title: str,
    label: Callable[[dict], str],
    cell: Callable[[dict, str], str],
) -> list[str]:
    """`title`, then a row per workload (`label(entry)`) with
    `cell(ok_cell, contender)` per contender; failed cells show their status."""
    lines = [
        f"## {title}",
        "",
        "| workload | " + " | ".join(contenders) + " |",
        "|---|" + "---:|" * len(contenders),
    ]
    for entry in result["workloads"].values():
        row = [label(entry)]
        for c in contenders:
            got = entry["contenders"].get(c)
            if got is None:
                row.append("–")
            elif got["status"] != "ok":
                row.append(f"**{got['status']}**")
            else:
                row.append(cell(got, c))
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def ratio_table(
    result: dict,
    names: list[str],
    title: str,
    label: Callable[[dict], str],
    metrics: tuple[str, ...],
    missing: str,
) -> list[str]:
    """`title`, then a row per workload with ferroloop's paired ratios
    against each other name: the `metrics` joined by " · ", `missing` where
    there is no ratio."""
    others = [n for n in names if n != SUBJECT]
    lines = [
        f"## {title}",
        "",
        "| workload | " + " | ".join(f"vs {n}" for n in others) + " |",
        "|---|" + "---:|" * len(others),
    ]
    for entry in result["workloads"].values():
        ratios = entry.get("ferroloop_ratio", {})
        row = [label(entry)]
        for other in others:
            r = ratios.get(other)
            row.append(missing if r is None else " · ".join(ratio(r.get(m)) for m in metrics))
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def failures(result: dict) -> list[str]:
    """One line per failed cell, with the round it failed in and why."""
    return [
        f"- {workload} / {c}: {cell['status']} in round {cell['round'] + 1}: {cell['error']}"
        for workload, entry in result["workloads"].items()
        for c, cell in entry["contenders"].items()
        if cell["status"] != "ok"
    ]


def _ratios(entry: dict) -> dict[str, float | None]:
    """A workload's ferroloop ratios as {label: value}: "uvloop" for the
    sched suite's single figure, "uvloop msgs_per_s" etc. for the echo suite's."""
    flat = {}
    for other, value in entry.get("ferroloop_ratio", {}).items():
        if isinstance(value, dict):
            flat |= {f"{other} {metric}": r for metric, r in value.items()}
        else:
            flat[other] = value
    return flat


def compare(old: dict, new: dict, threshold: float) -> str:
    """ferroloop/X ratios that moved by `threshold` (relative) or more, and
    workloads where ferroloop had ratios before and has none now."""
    if old.get("suite", "sched") != new.get("suite", "sched"):
        return (
            f"Cannot compare results of different suites "
            f"({old.get('suite', 'sched')} and {new.get('suite', 'sched')}).\n"
        )
    moved, compared = [], 0
    for workload, entry in new["workloads"].items():
        before = _ratios(old.get("workloads", {}).get(workload, {}))
        now_ratios = _ratios(entry)
        for label, now in now_ratios.items():
            was = before.get(label)
            if now is None or was is None:
                continue
            compared += 1
            change = now / was - 1
            if abs(change) >= threshold:
                moved.append(
                    f"- {workload}, ferroloop/{label}: {was:.2f} → {now:.2f} ({change:+.1%})"
                )
        if before and not now_ratios:
            status = entry["contenders"].get(SUBJECT, {}).get("status", "not run")
            moved.append(f"- {workload}: ferroloop had ratios before, none now ({status})")
    head = f"Compared with {old.get('started', '?')}: {compared} ferroloop ratios"
    if not moved:
        return f"{head}, none moved by {threshold:.0%} or more.\n"
    return f"{head}; changes of {threshold:.0%} or more:\n" + "\n".join(moved) + "\n"


def base_table(
    result: dict, label: Callable[[dict], str] | None, metrics: tuple[tuple[str, str], ...]
) -> list[str]:
    """ferroloop against ferroloop-base (the change against the code before
    it, `--baseline-wheel`): per workload the median over rounds of the
    paired ratio for each of `metrics` ((key, column title); the first is
    the one the rule reads), with the range over rounds; [] when the two did
    not both run.  `label(entry)` names a workload's row (None: its name)."""
    entries = [(w, e) for w, e in result["workloads"].items() if e.get("ferroloop_vs_base")]
    if not entries:
        return []
    rule_metric = metrics[0][1]
    wheels = []
    for name in (SUBJECT, BASE):
        wheel = result["contenders"].get(name, {}).get("wheel")
        if wheel:
            wheels.append(f"{name}: `{wheel['wheel']}` (sha256 {wheel['sha256'][:12]})")
        else:
            wheels.append(f"{name}: as installed in the venv")
    lines = [
        f"## {SUBJECT} / {BASE}: this build against the baseline wheel, paired",
        "",
        f"- {'; '.join(wheels)}",
        f"- the rule for a refactor: median paired ratio ≥ {BASE_RULE:.2f} on {rule_metric}; "
        "below it is **bold**; (low–high) is the range of the per-round ratios",
        "",
        "| workload | " + " | ".join(title for _, title in metrics) + " | rounds |",
        "|---|" + "---:|" * (len(metrics) + 1),
    ]
    for workload, entry in entries:
        vs = entry["ferroloop_vs_base"]
        row = [label(entry) if label else workload]
        for i, (key, _) in enumerate(metrics):
            per_round = vs.get(key) or []
            if not per_round:
                row.append("n/a")
                continue
            mid = median(per_round)
            text = f"{mid:.3f}"
            if len(per_round) > 1:
                text += f" ({min(per_round):.2f}–{max(per_round):.2f})"
            # Judged as shown: 0.9698 reads 0.970 and passes.
            row.append(f"**{text}**" if i == 0 and round(mid, 3) < BASE_RULE else text)
        row.append(str(len(vs[metrics[0][0]])))
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]
