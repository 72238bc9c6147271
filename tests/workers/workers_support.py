"""The supervised server under test: an app module written into the test's
directory, the `ferroloop` command (or gunicorn) in a child process, its
worker processes found through /proc, and a load generator that counts
every failed or wrong response.

Everything waits by polling a condition with a generous deadline (the
machine is a loaded 2-core one); nothing sleeps a fixed time to let
something happen."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import httpx

from _helpers import ServerProcess, child_env, free_port  # noqa: F401 - re-exported

FERROLOOP = Path(sys.executable).parent / "ferroloop"
GUNICORN = Path(sys.executable).parent / "gunicorn"

PEER_ENV = "FERROLOOP_WORKERS_TEST_PEER"


def server_command() -> list[str]:
    """The server under test: the `ferroloop` command, or uvicorn with
    FERROLOOP_WORKERS_TEST_PEER=uvicorn (see conftest.py)."""
    peer = os.environ.get(PEER_ENV, "ferroloop")
    if peer == "uvicorn":
        return [sys.executable, "-m", "uvicorn"]
    if peer != "ferroloop":
        raise ValueError(f"{PEER_ENV}={peer!r}: expected ferroloop or uvicorn")
    return [str(FERROLOOP)]


#: Deadline for anything the supervisor does (start, respawn, restart).
EVENT_TIMEOUT = 40.0

#: The app every test serves (module `wapp`). Its behaviour is chosen by
#: environment variables so one file covers every test:
#:   WAPP_IMPORT_FAIL   raise at import
#:   WAPP_STARTUP_FAIL  lifespan.startup.failed with this message
#:   WAPP_EXIT_AFTER    os._exit(1) this many seconds after startup
#:   WAPP_MARKS         a directory where /slow writes a file when it starts
#:   WAPP_IMPORTS       a directory where each import writes import-<pid>
#:   WAPP_HOLD          a path: while it exists, a lifespan startup waits
#:                      (new workers are held before they report ready)
#:   WAPP_SLOW_GATE     a path: /slow answers once it is gone (not after WAPP_SLOW)
APP_SOURCE = '''
import asyncio, os

VERSION = "v1"

if os.environ.get("WAPP_IMPORTS"):
    open(os.path.join(os.environ["WAPP_IMPORTS"], f"import-{os.getpid()}"), "w").close()

if os.environ.get("WAPP_IMPORT_FAIL"):
    raise RuntimeError("wapp refuses to import")

HOARD = []


async def _lifespan(receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            hold = os.environ.get("WAPP_HOLD")
            while hold and os.path.exists(hold):
                await asyncio.sleep(0.05)
            failure = os.environ.get("WAPP_STARTUP_FAIL")
            if failure:
                await send({"type": "lifespan.startup.failed", "message": failure})
                return
            exit_after = os.environ.get("WAPP_EXIT_AFTER")
            if exit_after:
                asyncio.get_running_loop().call_later(float(exit_after), os._exit, 1)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _websocket(receive, send):
    message = await receive()
    assert message["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text") or ""
        await send({"type": "websocket.send", "text": f"{text} {os.getpid()}"})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await _lifespan(receive, send)
    if scope["type"] == "websocket":
        return await _websocket(receive, send)
    path = scope["path"]
    if path.startswith("/n/"):
        # The request's own number and the worker's pid: a response meant
        # for another request cannot pass the load generator's check.
        body = f"{path[3:]} {os.getpid()}"
    elif path == "/pid":
        body = str(os.getpid())
    elif path == "/version":
        body = VERSION
    elif path == "/slow":
        marks = os.environ.get("WAPP_MARKS")
        if marks:
            name = scope["query_string"].decode() or "slow"
            # Written whole, then renamed: a test that sees the file reads the pid.
            with open(os.path.join(marks, "." + name), "w") as f:
                f.write(str(os.getpid()))
            os.replace(os.path.join(marks, "." + name), os.path.join(marks, name))
        gate = os.environ.get("WAPP_SLOW_GATE")
        if gate:
            while os.path.exists(gate):
                await asyncio.sleep(0.05)
        else:
            await asyncio.sleep(float(os.environ.get("WAPP_SLOW", "2")))
        body = "slow done"
    elif path == "/spin":
        while True:  # blocks this worker's loop for good
            pass
    elif path == "/alloc":
        mib = int(scope["query_string"].decode() or "1")
        HOARD.append(b"\\x01" * (mib << 20))  # written, so resident
        body = f"{mib} {os.getpid()}"
    else:
        body = "hello"
    data = body.encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
'''


def write_app(directory: Path, source: str = APP_SOURCE, name: str = "wapp") -> str:
    (directory / f"{name}.py").write_text(source)
    return f"{name}:app"


def wait_for(predicate: Callable[[], object], message: Callable[[], str], timeout: float = EVENT_TIMEOUT):
    """Poll `predicate` until it returns a true value (returned)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {message()}")
        time.sleep(0.05)


def children(pid: int) -> set[int]:
    """The live worker processes of `pid`: its children (every thread's),
    without helpers that serve no requests."""
    found: set[int] = set()
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found.update(int(p) for p in text.split())
    return {p for p in found if alive(p) and not _helper(p)}


def _helper(pid: int) -> bool:
    """multiprocessing's resource tracker (uvicorn's spawned workers start
    one): a child that is no worker."""
    try:
        return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


class Supervised(ServerProcess):
    """A supervising server in a child process; its workers are its
    children. At teardown every worker seen is killed too, so a broken
    supervisor cannot leak processes into the rest of the run."""

    def __init__(self, argv: list[str], **kwargs) -> None:
        super().__init__(argv, **kwargs)
        self.seen: set[int] = set()

    def workers(self) -> set[int]:
        """The worker processes now: the children, without a file-watching
        reloader process (uvicorn's log line names it: "Started reloader
        process [PID]")."""
        pids = children(self.pid)
        self.seen |= pids
        return pids - self.reloaders()

    def reloaders(self) -> set[int]:
        return {int(m) for m in re.findall(r"Started reloader process \[(\d+)\]", self.output())}

    def wait_workers(self, n: int, *, not_in: set[int] = frozenset(), timeout: float = EVENT_TIMEOUT) -> set[int]:
        """Wait until exactly `n` workers run, none of them in `not_in`;
        returns their pids."""

        def check():
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            pids = self.workers()
            return pids if len(pids) == n and not pids & not_in else None

        return wait_for(check, lambda: f"want {n} workers not in {sorted(not_in)}, have {sorted(self.workers())}:\n{self.output()}", timeout)

    def wait_output(self, text: str, timeout: float = EVENT_TIMEOUT) -> str:
        return wait_for(lambda: text in self.output() and self.output(), lambda: f"no {text!r} in the output:\n{self.output()}", timeout)

    def answering_pids(self, n: int, path: str = "/pid", **client) -> set[int]:
        """Poll with a new connection each time until `n` distinct worker
        pids answered (a shared listener may favour one worker for a while)."""
        seen: set[int] = set()

        def check():
            with contextlib.suppress(httpx.HTTPError):
                response = httpx.get(self.base_url() + path, timeout=10.0, **client)
                assert response.status_code == 200, response
                seen.add(int(response.text))
            return len(seen) >= n

        wait_for(check, lambda: f"only {sorted(seen)} answered, want {n} workers:\n{self.output()}")
        return seen

    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.workers()
        super().kill()
        for pid in self.seen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Load:
    """Threads sending requests until stopped: `keepalive` threads each on
    one keep-alive connection, `fresh` threads with a new connection per
    request. Every response is checked (`/n/<i>` answers `<i> <pid>`); a
    failure (connection refused, reset, closed without a response,
    timeout, wrong status or body) is kept with its time."""

    def __init__(self, url: str, *, keepalive: int = 4, fresh: int = 2, **client) -> None:
        self.url = url
        self.client = client
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.pids: dict[int, int] = {}
        self.failures: list[str] = []
        self.wrong: list[str] = []
        self._next = 0
        self.threads = [threading.Thread(target=self._run, args=(True,), daemon=True) for _ in range(keepalive)]
        self.threads += [threading.Thread(target=self._run, args=(False,), daemon=True) for _ in range(fresh)]
        for thread in self.threads:
            thread.start()

    def _number(self) -> int:
        with self.lock:
            self._next += 1
            return self._next

    def _run(self, keepalive: bool) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1 if keepalive else 0)
        with httpx.Client(limits=limits, timeout=20.0, **self.client) as client:
            while not self.stop_event.is_set():
                n = self._number()
                try:
                    response = client.get(f"{self.url}/n/{n}")
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.failures.append(f"{time.monotonic():.3f} {type(exc).__name__}: {exc}")
                    continue
                number, _, pid = response.text.partition(" ")
                with self.lock:
                    if response.status_code != 200 or number != str(n) or not pid.isdigit():
                        self.wrong.append(f"request {n}: {response.status_code} {response.text[:80]!r}")
                    else:
                        self.ok += 1
                        self.pids[int(pid)] = self.pids.get(int(pid), 0) + 1

    def count(self) -> int:
        with self.lock:
            return self.ok

    def wait_more(self, n: int, timeout: float = EVENT_TIMEOUT) -> None:
        """Wait until `n` more requests succeeded."""
        target = self.count() + n
        wait_for(lambda: self.count() >= target, lambda: f"load stalled at {self.count()} (failures: {self.failures[-3:]})", timeout)

    def pids_seen(self) -> set[int]:
        with self.lock:
            return set(self.pids)

    def reset_pids(self) -> None:
        with self.lock:
            self.pids = {}

    def finish(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(EVENT_TIMEOUT)

    def __enter__(self) -> "Load":
        return self

    def __exit__(self, *exc_info) -> None:
        self.finish()


def fd_targets(pid: int, kind: str) -> set[str]:
    """What `pid`'s open fds of one kind point at (`socket:[inode]`,
    `pipe:[inode]`): the same string in two processes is one open file."""
    found: set[str] = set()
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(f"{kind}:["):
                    found.add(target)
    return found


def listening_sockets(port: int) -> set[str]:
    """The `socket:[inode]` of every TCP socket listening on `port`."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    found.add(f"socket:[{inode}]")
    return found


def listening_socket(family=socket.AF_INET) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock
