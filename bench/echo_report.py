"""The TCP echo suite's markdown: one table per figure (throughput, messages
per server CPU-second, peak RSS), then ferroloop's paired ratios."""

from __future__ import annotations

from collections.abc import Callable

import report
from summary import BASELINE, SUBJECT


def _label(entry: dict) -> str:
    return f"{entry['kind']} {entry['size'] // 1024} KiB"


def _header(result: dict) -> list[str]:
    m = result["method"]
    text = (
        f"{m['rounds']} rounds, contenders rotated each round; per measurement a fresh "
        f"server process on the loop under test, pinned to CPU {m['server_cpu']}, and one "
        f"Rust client (`xtask echo-client`, {m['conns']} connections with one message in "
        f"flight each, every echo verified byte for byte) pinned to CPU {m['client_cpu']}; "
        f"{m['warmup_s']:g} s warm-up, {m['duration_s']:g} s measured"
        + (" (--quick)" if m["quick"] else "")
    )
    notes = [
        f"- CPU share over the measured window (CPU time / wall time, median over "
        f"measurements): server {report.cpu_share(result, 'server_cpu_s', 'seconds')}, client "
        f"{report.cpu_share(result, 'client_cpu_s', 'seconds')}; the server near 100% means it, not the "
        "client, set the pace (well below: it waited for the client or, on a busy host, "
        "for its CPU)"
    ]
    return report.header(result, "TCP echo benchmark", text, notes)


def _with_x_asyncio(metric: str) -> Callable[[dict, str], str]:
    def cell(got: dict, contender: str) -> str:
        text = report.ops(got[f"median_{metric}"])
        x = got.get("x_asyncio", {}).get(metric)
        if contender != BASELINE and x is not None:
            text += f" (×{x:.2f})"
        return text

    return cell


def markdown(result: dict) -> str:
    contenders = [n for n, c in result["contenders"].items() if c["available"]]
    lines = _header(result)
    lines += report.table(
        result,
        contenders,
        "Throughput: messages/s (MiB/s)",
        _label,
        lambda got, _: (
            f"{report.ops(got['median_msgs_per_s'])} ({report.amount(got['median_mib_per_s'])})"
        ),
    )
    lines += report.table(
        result,
        contenders,
        "Messages per server CPU-second (×asyncio)",
        _label,
        _with_x_asyncio("msgs_per_cpu_s"),
    )
    lines += report.table(
        result,
        contenders,
        "Peak server RSS (VmHWM, MiB)",
        _label,
        lambda got, _: f"{got['median_peak_rss_mib']:.1f}",
    )
    if SUBJECT in contenders and len(contenders) > 1:
        lines += report.ratio_table(
            result,
            contenders,
            "ferroloop / X: msgs/s · msgs per server CPU-s · peak RSS",
            _label,
            ("msgs_per_s", "msgs_per_cpu_s", "peak_rss_mib"),
            missing="n/a",
        )
    lines += report.base_table(
        result,
        _label,
        (("msgs_per_cpu_s", "msgs per server CPU-s"), ("msgs_per_s", "msgs/s")),
    )
    lines.append(
        "Cells: medians over rounds; (×N) and ratios: median over rounds of the paired "
        "ratio (each round's figure divided by the other's in the same round). For "
        "throughput and messages per CPU-second above 1 = ferroloop ahead; for RSS below "
        "1 = ferroloop smaller. On a shared host raw throughput moves a lot between runs; "
        "messages per server CPU-second is the steadier figure."
    )
    notes = _unclosed(result)
    if notes:
        lines += ["", "Notes:", *notes]
    failed = report.failures(result)
    if failed:
        lines += ["", "Failures:", *failed]
    return "\n".join(lines) + "\n"


def _unclosed(result: dict) -> list[str]:
    """Contenders whose server left connections open after the client's
    half-close (EOF not acted on): a defect, though not in the figures."""
    notes = []
    for contender in result["contenders"]:
        cells = [
            (workload, entry["contenders"][contender])
            for workload, entry in result["workloads"].items()
            if entry["contenders"].get(contender, {}).get("unclosed")
        ]
        if cells:
            unclosed = sum(cell["unclosed"] for _, cell in cells)
            total = sum(cell["connections"] for _, cell in cells)
            notes.append(
                f"- {contender}: the server did not close {unclosed} of {total} connections "
                f"after the client's half-close, in {', '.join(w for w, _ in cells)}"
            )
    return notes
