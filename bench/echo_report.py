"""The TCP echo suite's markdown: one table per figure (throughput, messages
per server CPU-second, peak RSS), then ferroloop's paired ratios; the idle
workloads' memory per connection in tables of their own."""

from __future__ import annotations

from collections.abc import Callable

import report
from echo_workloads import CONNS
from summary import BASELINE, SUBJECT


def _label(entry: dict) -> str:
    # Results from before the many-connection and idle workloads have
    # neither field.
    conns = entry.get("conns", CONNS)
    if entry.get("idle"):
        return f"{entry['kind']} idle, {conns:,} open"
    many = f", {conns:,} conns" if conns != CONNS else ""
    return f"{entry['kind']} {entry['size'] // 1024} KiB{many}"


def _only(result: dict, idle: bool) -> dict:
    """`result` with only the echo (or only the idle) workloads and their
    measurements."""
    chosen = {w: e for w, e in result["workloads"].items() if bool(e.get("idle")) == idle}
    taken = [m for m in result["measurements"] if m["workload"] in chosen]
    return result | {"workloads": chosen, "measurements": taken}


def _header(result: dict) -> list[str]:
    m = result["method"]
    many = m.get("many_conns")
    text = (
        f"{m['rounds']} rounds, contenders rotated each round; per measurement a fresh "
        f"server process on the loop under test, pinned to CPU {m['server_cpu']}, and one "
        f"Rust client (`xtask echo-client`, {m['conns']} connections"
        + (f" ({many:,} on the `{many}c` workloads)" if many else "")
        + f" with one message in flight each, every echo verified byte for byte) pinned "
        f"to CPU {m['client_cpu']}; {m['warmup_s']:g} s warm-up, {m['duration_s']:g} s measured"
        + (" (--quick)" if m["quick"] else "")
    )
    if "settled_allocator_bytes" in m:
        text += (
            f"; each server allocates and frees {m['settled_allocator_bytes'] // 2**20} MiB before "
            "serving, so glibc's mmap threshold is where a long-running server's is "
            "(bench/README.md)"
        )
    if "idle_conns" in m:
        text += (
            f"; idle: the server's RSS (VmRSS) after a warm-up client "
            f"({m['idle_warmup_conns']} connections, one 1 KiB echo each), and again at the "
            f"end of a {m['duration_s']:g} s window in which {m['idle_conns']:,} connections, "
            "each having echoed one 1 KiB message, stay open and silent"
        )
    echo = _only(result, idle=False)
    notes = []
    if echo["workloads"]:
        notes.append(
            f"- CPU share over the measured window (CPU time / wall time, median over "
            f"measurements): server {report.cpu_share(echo, 'server_cpu_s', 'seconds')}, client "
            f"{report.cpu_share(echo, 'client_cpu_s', 'seconds')}; the server near 100% means it, "
            "not the client, set the pace (well below: it waited for the client or, on a busy "
            "host, for its CPU)"
        )
    return report.header(result, "TCP echo benchmark", text, notes)


def _with_x_asyncio(metric: str, fmt: Callable[[float], str] = report.ops) -> Callable:
    def cell(got: dict, contender: str) -> str:
        text = fmt(got[f"median_{metric}"])
        x = got.get("x_asyncio", {}).get(metric)
        if contender != BASELINE and x is not None:
            text += f" (×{x:.2f})"
        return text

    return cell


def _echo_tables(result: dict, contenders: list[str]) -> list[str]:
    lines = report.table(
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
    return lines


def _idle_tables(result: dict, contenders: list[str]) -> list[str]:
    lines = report.table(
        result,
        contenders,
        "Idle connections: server RSS per open connection, KiB (×asyncio)",
        _label,
        _with_x_asyncio("idle_kib_per_conn", lambda x: f"{x:.2f}"),
    )
    lines += report.table(
        result,
        contenders,
        "Idle connections: server RSS before → with them open (peak), MiB",
        _label,
        lambda got, _: (
            f"{got['median_rss_before_mib']:.1f} → {got['median_rss_open_mib']:.1f} "
            f"({got['median_peak_rss_mib']:.1f})"
        ),
    )
    if SUBJECT in contenders and len(contenders) > 1:
        lines += report.ratio_table(
            result,
            contenders,
            "ferroloop / X: RSS per idle connection · peak RSS",
            _label,
            ("idle_kib_per_conn", "peak_rss_mib"),
            missing="n/a",
        )
    return lines


def markdown(result: dict) -> str:
    contenders = [n for n, c in result["contenders"].items() if c["available"]]
    echo, idle = _only(result, idle=False), _only(result, idle=True)
    lines = _header(result)
    if echo["workloads"]:
        lines += _echo_tables(echo, contenders)
    if idle["workloads"]:
        lines += _idle_tables(idle, contenders)
    lines += report.base_table(
        echo,
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
                f"- {contender}: the server did not close {unclosed:,} of {total:,} connections "
                f"after the client's half-close, in {', '.join(w for w, _ in cells)}"
            )
    return notes
