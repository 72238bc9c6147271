"""One progress line on stderr per measurement, for each suite's records."""

from __future__ import annotations

import sys


def _where(record: dict) -> str:
    return f"[round {record['round'] + 1}] {record['workload']:<22} {record['contender']:<14}"


def _outcome(record: dict, figures: str) -> str:
    return figures if record["status"] == "ok" else f"{record['status'].upper()}: {record['error']}"


def http(record: dict) -> None:
    figures = (
        f"{record.get('req_per_s', 0):>9,.0f} req/s "
        f"{record.get('req_per_cpu_s', 0):>9,.0f} req/CPU-s "
        f"p50 {record.get('p50_ms', 0):5.2f} p99 {record.get('p99_ms', 0):6.2f} ms "
        f"cpu {record.get('server_cpu_pct', 0):3.0f}% {record.get('peak_rss_mib', 0):6.1f} MiB"
    )
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


def ws(record: dict) -> None:
    if "idle_kib_per_conn" in record:
        figures = (
            f"{record['idle_kib_per_conn']:>7.1f} KiB per idle connection "
            f"({record['rss_before_mib']:.1f} → {record['rss_open_mib']:.1f} MiB; "
            f"deflate {record['deflate']}/{record['conns']})"
        )
    else:
        figures = (
            f"{record.get('msgs_per_s', 0):>9,.0f} msgs/s "
            f"{record.get('msgs_per_cpu_s', 0):>9,.0f} msgs/CPU-s "
            f"p50 {record.get('p50_ms', 0):5.2f} p99 {record.get('p99_ms', 0):6.2f} ms "
            f"{record.get('peak_rss_mib', 0):6.1f} MiB deflate {record.get('deflate', 0)}"
        )
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


def sched(record: dict) -> None:
    figures = f"{record.get('ops_per_s', 0):>12,.0f} ops/s"
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


def echo(record: dict) -> None:
    if "idle_kib_per_conn" in record:
        figures = (
            f"{record['idle_kib_per_conn']:>6.2f} KiB per idle connection "
            f"({record['rss_before_mib']:.1f} -> {record['rss_open_mib']:.1f} MiB, "
            f"opened in {record['open_s']:.1f} s)"
        )
    else:
        figures = (
            f"{record.get('msgs_per_s', 0):>9,.0f} msgs/s {record.get('mib_per_s', 0):>7,.1f} MiB/s "
            f"{record.get('msgs_per_cpu_s', 0):>9,.0f} msgs/CPU-s "
            f"{record.get('peak_rss_mib', 0):>6.1f} MiB"
        )
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)


def tls(record: dict) -> None:
    figures = (
        f"{record['req_per_cpu_s']:,.0f}/CPU-s, {record['req_per_s']:,.0f}/s, "
        f"server CPU {record['server_cpu_pct']:.0f}%"
        if record["status"] == "ok"
        else ""
    )
    print(_outcome(record, figures), file=sys.stderr, flush=True)


def workers(record: dict) -> None:
    figures = (
        f"{record.get('req_per_s', 0):>9,.0f} req/s "
        f"{record.get('req_per_cpu_s', 0):>9,.0f} req/CPU-s "
        f"evenness {record.get('evenness', 0):.2f} "
        f"shares {'/'.join(f'{x:.2f}' for x in record.get('worker_shares', []))}"
    )
    print(f"{_where(record)} {_outcome(record, figures)}", file=sys.stderr, flush=True)
