"""The HTTP servers under comparison (bench/README.md, "HTTP suite"): how each is
installed, started and described.

Every server runs one worker on CPU 0 and serves `http_app.app` (raw ASGI 3)
on 127.0.0.1, except `rust-plaintext`: loop-server's pure-Rust example
server (the same driver, protocol kinds and settings as ferroloop's, with a
Rust handler in place of the app), the ceiling for what any of them could
do on the plaintext workload, with a fixed response and no Python, and
`nginx` (Debian's nginx-light, installed with apt-get when missing) with the
same fixed response: what an efficient C server does on this machine.
`ferroloop-base` (only with `--baseline-wheel`) is ferroloop's server from
the baseline wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchenv import BenchEnv
from debian_tools import ensure_tool
from contenders import BASE

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
HTTP_SERVE = BENCH / "http_serve.py"
APP_SPEC = "http_app:app"
PLAINTEXT_SOURCE = REPO / "loop-server" / "examples" / "server.rs"


@dataclass(frozen=True)
class Server:
    name: str
    # PyPI distributions the bench venv needs for it (wheels only).
    dists: tuple[str, ...]
    # What the report says about how it was run.
    settings: str
    # Workloads it takes part in; None: all of them.
    workloads: tuple[str, ...] | None = None
    # Runs http_app, so its call count is checked against wrk's requests.
    runs_app: bool = True


GRANIAN_ARGS = (
    "--interface", "asgi", "--workers", "1", "--runtime-mode", "st",
    "--runtime-threads", "1", "--loop", "uvloop", "--http", "1", "--no-ws",
    "--no-access-log", "--log-level", "warning",
)  # fmt: skip
UVICORN_ARGS = (
    "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--workers", "1",
    "--lifespan", "on", "--log-level", "warning",
)  # fmt: skip

SERVERS: dict[str, Server] = {
    s.name: s
    for s in (
        Server("ferroloop", (), 'ferroloop.serve(app, host="127.0.0.1", port=P, access_log=False)'),
        Server(
            BASE,
            (),
            "the same, with ferroloop imported from the baseline wheel (first on PYTHONPATH)",
        ),
        Server(
            "cadeloop",
            ("cadeloop",),
            'cadeloop.serve(app, host="127.0.0.1", port=P, access_log=False) '
            "(defaults: workers=1, latency_mode=balanced)",
        ),
        Server("granian", ("granian", "uvloop"), "granian " + " ".join(GRANIAN_ARGS)),
        Server("uvicorn", ("uvicorn", "httptools", "uvloop"), "uvicorn " + " ".join(UVICORN_ARGS)),
        Server(
            "rust-plaintext",
            (),
            "loop-server/examples/server.rs --no-access-log, dist profile (fixed response, no Python)",
            workloads=("plaintext",),
            runs_app=False,
        ),
        Server(
            "nginx",
            (),
            "nginx-light, one process (master_process off), access_log off, keepalive_requests "
            '1000000, `location / { default_type text/plain; return 200 "Hello, World!"; }`',
            workloads=("plaintext",),
            runs_app=False,
        ),
    )
}

# Not Python: found (or built) outside the venv.
NATIVE = ("rust-plaintext", "nginx")

# nginx.conf for the nginx contender: one process serving the plaintext
# workload's fixed response; every path it writes is under PREFIX.
NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid PREFIX/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path PREFIX/body;
    proxy_temp_path PREFIX/proxy;
    fastcgi_temp_path PREFIX/fastcgi;
    uwsgi_temp_path PREFIX/uwsgi;
    scgi_temp_path PREFIX/scgi;
    server {
        listen 127.0.0.1:PORT;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
"""

# Ours: their failures fail the run; a peer's failure is only reported.
CORE = ("ferroloop", "rust-plaintext", BASE)
# Started by http_serve.py, which says where it imported the server from.
SERVED_BY_HTTP_SERVE = ("ferroloop", BASE, "cadeloop")


def command(name: str, python: Path, port: int, plaintext: Path | None) -> list[str]:
    """The command line that starts `name` on 127.0.0.1:`port` (cwd: bench/)."""
    bindir = python.parent
    if name in SERVED_BY_HTTP_SERVE:
        return [str(python), str(HTTP_SERVE), "serve", name, str(port)]
    if name == "granian":
        return [
            str(bindir / "granian"),
            *GRANIAN_ARGS,
            "--host", "127.0.0.1", "--port", str(port),
            "--working-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    if name == "uvicorn":
        return [
            str(python), "-m", "uvicorn",
            *UVICORN_ARGS,
            "--host", "127.0.0.1", "--port", str(port),
            "--app-dir", str(BENCH),
            APP_SPEC,
        ]  # fmt: skip
    if name == "rust-plaintext":
        if plaintext is None:
            raise ValueError("rust-plaintext has no binary")
        return [str(plaintext), "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    if name == "nginx":
        return _nginx_command(port)
    raise ValueError(f"unknown server {name}")


def _nginx_command(port: int) -> list[str]:
    nginx = ensure_tool("nginx", "nginx-light")
    prefix = REPO / "target" / "xtask-bench" / "nginx" / str(port)
    prefix.mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(NGINX_CONF.replace("PREFIX", str(prefix)).replace("PORT", str(port)))
    return [nginx, "-p", str(prefix), "-e", "stderr", "-c", str(conf)]


def _nginx_version() -> dict:
    try:
        nginx = ensure_tool("nginx", "nginx-light")
    except RuntimeError as exc:
        return {"available": False, "reason": str(exc)}
    proc = subprocess.run([nginx, "-v"], capture_output=True, text=True)
    banner = (proc.stderr or proc.stdout).strip()
    if proc.returncode != 0 or not banner:
        return {"available": False, "reason": f"`nginx -v` exited {proc.returncode}"}
    return {"available": True, "version": banner.removeprefix("nginx version: "), "binary": nginx}


def build_plaintext() -> Path | None:
    """Build loop-server's example server with the dist profile in the
    bench binaries' target dir, as `cargo xtask bench` does; None when the
    example does not exist (yet)."""
    if not PLAINTEXT_SOURCE.exists():
        return None
    target = REPO / "target" / "xtask-bench"
    subprocess.run(
        ["cargo", "build", "--quiet", "--profile", "dist", "-p", "loop-server",
         "--example", "server"],
        cwd=REPO,
        env=os.environ | {"CARGO_TARGET_DIR": str(target)},
        check=True,
    )  # fmt: skip
    return target / "dist" / "examples" / "server"


def probe(
    env: BenchEnv, names: list[str], plaintext: Path | None, build_error: str | None = None
) -> dict[str, dict]:
    """Which servers can run: versions from the venv, the Rust binary's
    presence (`build_error`: why building it failed).  One probe process
    for the servers that share the venv's environment, one for each with
    its own (ferroloop-base)."""
    found: dict[str, dict] = {}
    python_names = [n for n in names if n not in NATIVE]
    groups = [[n for n in python_names if n not in env.overlays]]
    groups += [[n] for n in python_names if n in env.overlays]
    for group in filter(None, groups):
        proc = subprocess.run(
            [str(env.python), str(HTTP_SERVE), "probe", *group],
            capture_output=True,
            text=True,
            env=env.environ(group[0]),
        )
        try:
            found |= env.checked(json.loads(proc.stdout))
        except json.JSONDecodeError:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            found |= {
                n: {"available": False, "reason": f"probe exited {proc.returncode}: {tail}"}
                for n in group
            }
    if "rust-plaintext" in names:
        if plaintext is not None and plaintext.is_file():
            found["rust-plaintext"] = {
                "available": True,
                "version": _loop_server_version(),
                "binary": str(plaintext),
            }
        elif build_error is not None:
            found["rust-plaintext"] = {"available": False, "reason": build_error}
        elif not PLAINTEXT_SOURCE.exists():
            found["rust-plaintext"] = {
                "available": False,
                "reason": f"{PLAINTEXT_SOURCE.relative_to(REPO)} does not exist",
            }
        else:
            found["rust-plaintext"] = {
                "available": False,
                "reason": f"no binary built ({plaintext or 'none given'})",
            }
    if "nginx" in names:
        found["nginx"] = _nginx_version()
    return {n: found[n] for n in names}


def _loop_server_version() -> str:
    for line in (REPO / "Cargo.toml").read_text().splitlines():
        if line.startswith("version"):
            return "loop-server " + line.split("=", 1)[1].strip().strip('"')
    return "loop-server"
