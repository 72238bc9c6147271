"""From raw measurements to the figures bench/README.md defines ("Method").

Per workload, contender and metric: the median over rounds.  For
comparisons: the median over rounds of the *paired* ratio A/B, each round's A
divided by B's result in the same round, which cancels most of the machine's
round-to-round drift.  A cell with any failed round has no figures: a loop
that did the work wrong once is not ranked on its other rounds.
"""

from __future__ import annotations

from statistics import median

from echo_workloads import WORKLOADS as ECHO_WORKLOADS
from http_workloads import WORKLOADS as HTTP_WORKLOADS
from contenders import BASE
from sched_workloads import WORKLOADS as SCHED_WORKLOADS
from ws_workloads import IDLE
from ws_workloads import WORKLOADS as WS_WORKLOADS

SUBJECT = "ferroloop"
BASELINE = "asyncio"

# Echo figures, and those compared between contenders (MiB/s would compare
# exactly like msgs/s: the message size is the same for everyone).
ECHO_METRICS = ("msgs_per_s", "mib_per_s", "msgs_per_cpu_s", "peak_rss_mib")
ECHO_RATIOS = ("msgs_per_s", "msgs_per_cpu_s", "peak_rss_mib")
# The idle echo workloads' figures (memory per idle connection).
ECHO_IDLE_METRICS = ("idle_kib_per_conn", "rss_before_mib", "rss_open_mib", "peak_rss_mib")
ECHO_IDLE_RATIOS = ("idle_kib_per_conn", "peak_rss_mib")

# HTTP figures; those compared between servers; the pure-Rust server every
# other one's plaintext figures are set against.
HTTP_METRICS = (
    "req_per_s",
    "p50_ms",
    "p99_ms",
    "server_cpu_pct",
    "req_per_cpu_s",
    "peak_rss_mib",
)
HTTP_RATIOS = ("req_per_s", "req_per_cpu_s")
CEILING = "rust-plaintext"

# WebSocket figures: echo workloads', the idle workload's; those compared
# between servers.
WS_METRICS = ("msgs_per_s", "mib_per_s", "msgs_per_cpu_s", "p50_ms", "p99_ms", "peak_rss_mib")
WS_RATIOS = ("msgs_per_s", "msgs_per_cpu_s")
WS_IDLE_METRICS = ("idle_kib_per_conn", "rss_before_mib", "rss_open_mib", "peak_rss_mib")
WS_IDLE_RATIOS = ("idle_kib_per_conn",)

# metric -> contender -> round -> value
ByRound = dict[str, dict[str, dict[int, float]]]


def paired_ratio(a: dict[int, float], b: dict[int, float]) -> float | None:
    """Median over the rounds both have of a[round] / b[round]."""
    rounds = sorted(a.keys() & b.keys())
    return median(a[r] / b[r] for r in rounds) if rounds else None


def paired_ratios(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """a[round] / b[round] for the rounds both have, in round order."""
    return [a[r] / b[r] for r in sorted(a.keys() & b.keys())]


def against_base(by_round: ByRound, metrics: tuple[str, ...]) -> dict[str, list[float]] | None:
    """ferroloop / ferroloop-base per round for each of `metrics` (the change
    against the code before it), or None when the two did not both run."""
    first = by_round[metrics[0]]
    if SUBJECT not in first or BASE not in first:
        return None
    return {m: paired_ratios(by_round[m][SUBJECT], by_round[m][BASE]) for m in metrics}


def cells(
    records: list[dict], contenders: list[str], metrics: tuple[str, ...]
) -> tuple[dict, ByRound]:
    """One workload's cells: per contender the first failure, or
    {"status": "ok", "median_<metric>": m, "<metric>": [per round], ...};
    and each metric's values by contender and round, for paired ratios."""
    out: dict[str, dict] = {}
    by_round: ByRound = {metric: {} for metric in metrics}
    for contender in contenders:
        mine = [r for r in records if r["contender"] == contender]
        failure = next((r for r in mine if r["status"] != "ok"), None)
        if failure is not None:
            out[contender] = {k: failure[k] for k in ("status", "error", "round")}
        elif mine:
            cell = {"status": "ok"}
            for metric in metrics:
                by_round[metric][contender] = {r["round"]: r[metric] for r in mine}
                cell[f"median_{metric}"] = median(by_round[metric][contender].values())
                cell[metric] = [r[metric] for r in mine]
            out[contender] = cell
    return out, by_round


def against(rounds: dict[str, dict[int, float]], reference: str) -> dict[str, float | None]:
    """Each contender's paired ratio to `reference` (contender / reference)."""
    if reference not in rounds:
        return {}
    return {c: paired_ratio(values, rounds[reference]) for c, values in rounds.items()}


def subject_ratios(rounds: dict[str, dict[int, float]]) -> dict[str, float | None]:
    """ferroloop's paired ratio to each other contender (ferroloop / other)."""
    if SUBJECT not in rounds:
        return {}
    return {
        other: paired_ratio(rounds[SUBJECT], values)
        for other, values in rounds.items()
        if other != SUBJECT
    }


def summarize_sched(records: list[dict], contenders: list[str], workloads: list[str]) -> dict:
    """workload -> {n, unit, contenders: cells with x_asyncio, ferroloop_ratio: {other: r}}."""
    summary = {}
    for workload in workloads:
        taken = [r for r in records if r["workload"] == workload]
        out, by_round = cells(taken, contenders, ("ops_per_s",))
        rounds = by_round["ops_per_s"]
        for contender, x in against(rounds, BASELINE).items():
            out[contender]["x_asyncio"] = x
        entry = {
            "n": taken[0]["n"] if taken else None,
            "unit": SCHED_WORKLOADS[workload].unit,
            "contenders": out,
        }
        if SUBJECT in rounds:
            entry["ferroloop_ratio"] = subject_ratios(rounds)
        vs_base = against_base(by_round, ("ops_per_s",))
        if vs_base is not None:
            entry["ferroloop_vs_base"] = vs_base
        summary[workload] = entry
    return summary


def summarize_echo(records: list[dict], contenders: list[str], workloads: list[str]) -> dict:
    """workload -> {kind, size, conns, idle, contenders: cells with x_asyncio:
    {metric: r} and unclosed (of connections) over all rounds,
    ferroloop_ratio: {other: {metric: r}}}; the idle workloads' metrics are
    ECHO_IDLE_METRICS."""
    summary = {}
    for workload in workloads:
        w = ECHO_WORKLOADS[workload]
        metrics, compared = (
            (ECHO_IDLE_METRICS, ECHO_IDLE_RATIOS) if w.idle else (ECHO_METRICS, ECHO_RATIOS)
        )
        taken = [r for r in records if r["workload"] == workload]
        out, by_round = cells(taken, contenders, metrics)
        for contender, cell in out.items():
            if cell["status"] == "ok":
                mine = [r for r in taken if r["contender"] == contender]
                cell["unclosed"] = sum(r["unclosed"] for r in mine)
                cell["connections"] = sum(r["conns"] for r in mine)
        for metric in compared:
            for contender, x in against(by_round[metric], BASELINE).items():
                out[contender].setdefault("x_asyncio", {})[metric] = x
        conns = taken[0]["conns"] if taken and "conns" in taken[0] else w.conns
        entry = {
            "kind": w.kind,
            "size": w.size,
            "conns": conns,
            "idle": w.idle,
            "contenders": out,
        }
        if SUBJECT in by_round[compared[0]]:
            ratios: dict[str, dict] = {}
            for metric in compared:
                for other, r in subject_ratios(by_round[metric]).items():
                    ratios.setdefault(other, {})[metric] = r
            entry["ferroloop_ratio"] = ratios
        vs_base = against_base(
            by_round, compared if w.idle else ("msgs_per_cpu_s", "msgs_per_s")
        )
        if vs_base is not None:
            entry["ferroloop_vs_base"] = vs_base
        summary[workload] = entry
    return summary


def summarize_http(records: list[dict], servers: list[str], workloads: list[str]) -> dict:
    """workload -> {method, path, body_size, contenders: cells (with
    x_ceiling: {metric: r}, the paired fraction of rust-plaintext's figure,
    where rust-plaintext ran), ferroloop_ratio: {other: {metric: r}}}."""
    summary = {}
    for workload in workloads:
        taken = [r for r in records if r["workload"] == workload]
        ran = [s for s in servers if any(r["contender"] == s for r in taken)]
        out, by_round = cells(taken, ran, HTTP_METRICS)
        for metric in HTTP_RATIOS:
            for server, x in against(by_round[metric], CEILING).items():
                if server != CEILING:
                    out[server].setdefault("x_ceiling", {})[metric] = x
        w = HTTP_WORKLOADS[workload]
        entry = {"method": w.method, "path": w.path, "body_size": w.body_size, "contenders": out}
        if SUBJECT in by_round[HTTP_RATIOS[0]]:
            ratios: dict[str, dict] = {}
            for metric in HTTP_RATIOS:
                for other, r in subject_ratios(by_round[metric]).items():
                    ratios.setdefault(other, {})[metric] = r
            entry["ferroloop_ratio"] = ratios
        vs_base = against_base(by_round, ("req_per_cpu_s", "req_per_s"))
        if vs_base is not None:
            entry["ferroloop_vs_base"] = vs_base
        summary[workload] = entry
    return summary


def summarize_ws(records: list[dict], servers: list[str], workloads: list[str]) -> dict:
    """workload -> {kind, label, conns, contenders: cells (each with
    `deflate`: whether every connection of every round negotiated
    permessage-deflate, and `unclosed`/`bad_close` over all rounds),
    ferroloop_ratio: {other: {metric: r}}}."""
    summary = {}
    for workload in workloads:
        w = WS_WORKLOADS[workload]
        metrics, compared = (
            (WS_IDLE_METRICS, WS_IDLE_RATIOS) if w.kind == IDLE else (WS_METRICS, WS_RATIOS)
        )
        taken = [r for r in records if r["workload"] == workload]
        out, by_round = cells(taken, servers, metrics)
        for server, cell in out.items():
            if cell["status"] == "ok":
                mine = [r for r in taken if r["contender"] == server]
                # None where the handshake did not offer it.
                offered = all(r["deflate"] == r["conns"] for r in mine) if w.deflate else None
                cell["deflate"] = offered
                cell["deflate_params"] = mine[0]["deflate_params"]
                cell["unclosed"] = sum(r["unclosed"] for r in mine)
                cell["bad_close"] = sum(r["bad_close"] for r in mine)
                cell["connections"] = sum(r["conns"] for r in mine)
        entry = {"kind": w.kind, "label": w.label, "conns": w.conns, "contenders": out}
        if SUBJECT in by_round[compared[0]]:
            ratios: dict[str, dict] = {}
            for metric in compared:
                for other, r in subject_ratios(by_round[metric]).items():
                    ratios.setdefault(other, {})[metric] = r
            entry["ferroloop_ratio"] = ratios
        vs_base = against_base(by_round, compared[::-1] if w.kind != IDLE else compared)
        if vs_base is not None:
            entry["ferroloop_vs_base"] = vs_base
        summary[workload] = entry
    return summary
