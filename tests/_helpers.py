"""Shared helpers for the ferroloop test suite.

Every behavioural test runs twice: once on the stdlib loop (``asyncio``, the
reference) and once on ``ferroloop``. A loop implementation is a module that
provides ``new_event_loop()`` and ``run(coro, *, debug=None)``; both
``asyncio`` and ``ferroloop`` do.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

IMPLS = ("asyncio", "ferroloop")

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Parametrize a test over ferroloop alone, for API that has no asyncio
# counterpart or a guarantee stronger than asyncio's. The id stays
# ``[ferroloop]``, so ``-k ferroloop`` / ``-k "not ferroloop"`` select it.
ferroloop_only = pytest.mark.parametrize("loop_impl", ["ferroloop"], indirect=True)

# Generous bound for "promptly" in wall-clock assertions: CI machines are slow
# and shared, but a loop that misses a wake-up hangs until a far timeout.
PROMPT = 5.0

CHILD_TIMEOUT = 30.0


def import_impl(name: str) -> types.ModuleType:
    """Return the loop implementation module ``name``.

    A missing or broken ferroloop is a failure, never a skip: a suite that
    skips everything when the extension did not build would stay green.
    """
    if name == "asyncio":
        return asyncio
    try:
        import ferroloop
    except ImportError as exc:
        error = exc
    else:
        return ferroloop
    pytest.fail(f"cannot import ferroloop: {error!r}", pytrace=False)


# Set to 1 to run the suite against a venv holding a shipped wheel, which has
# no test hooks: the tests that need them then skip, and test_test_hooks.py
# checks that they are absent.  Without it missing hooks fail the run.
SHIPPED_WHEEL_ENV = "FERROLOOP_SHIPPED_WHEEL"


def shipped_wheel_venv() -> bool:
    return os.environ.get(SHIPPED_WHEEL_ENV) == "1"


def ferroloop_test_hooks() -> types.ModuleType:
    """ferroloop's test hooks, ``ferroloop._native._testing``: compiled only
    into the test build (loop-py's ``test-hooks`` feature), which ``cargo
    xtask test`` and ``cargo xtask develop`` install into the project venvs.

    Missing hooks are a failure, not a skip (a venv that lost them would
    silently skip what they test), unless ``FERROLOOP_SHIPPED_WHEEL=1`` says
    that the venv holds a shipped wheel on purpose.
    """
    try:
        from ferroloop._native import _testing
    except ImportError as exc:
        error = exc
    else:
        return _testing
    if shipped_wheel_venv():
        pytest.skip(f"{SHIPPED_WHEEL_ENV}=1: a shipped wheel has no test hooks")
    pytest.fail(
        f"ferroloop has no test hooks ({error}): this ferroloop was built without loop-py's "
        "test-hooks feature, as shipped wheels are. Install the test build with "
        "`cargo xtask develop [--python X.Y]` (or run `cargo xtask test`), or set "
        f"{SHIPPED_WHEEL_ENV}=1 to test a shipped wheel on purpose.",
        pytrace=False,
    )


def get_event_loop_policy() -> asyncio.AbstractEventLoopPolicy:
    """asyncio's current policy, without 3.14's deprecation warning (the
    getter asyncio's own tests use there)."""
    getter = getattr(asyncio.events, "_get_event_loop_policy", None) or asyncio.get_event_loop_policy
    return getter()


def set_event_loop_policy(policy: asyncio.AbstractEventLoopPolicy | None) -> None:
    """``asyncio.set_event_loop_policy`` without 3.14's deprecation warning."""
    setter = getattr(asyncio.events, "_set_event_loop_policy", None) or asyncio.set_event_loop_policy
    setter(policy)


def loop_class(impl: types.ModuleType) -> type:
    """The concrete class of the loops that ``impl.new_event_loop()`` builds."""
    loop = impl.new_event_loop()
    try:
        return type(loop)
    finally:
        loop.close()


def run_once(loop: asyncio.AbstractEventLoop) -> None:
    """Run exactly one iteration of ``loop``.

    ``stop()`` makes ``run_forever`` finish the current iteration and return,
    so only the callbacks that were ready when the iteration began run.
    """
    loop.call_soon(loop.stop)
    loop.run_forever()


def run_until(loop: asyncio.AbstractEventLoop, predicate, timeout: float = PROMPT) -> None:
    """Run ``loop`` until ``predicate()`` is true; fail after ``timeout`` seconds."""
    deadline = loop.time() + timeout

    def check():
        if predicate() or loop.time() > deadline:
            loop.stop()
        else:
            loop.call_later(0.001, check)

    loop.call_soon(check)
    loop.run_forever()
    assert predicate(), f"condition not reached within {timeout} s"


class ExceptionRecorder:
    """A loop exception handler that records every context it is given.

    A test that expects calls to the handler consumes them with ``take()``;
    anything left over fails the test (see conftest.py).
    """

    def __init__(self) -> None:
        self.records: list[dict] = []

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        self.records.append(dict(context, loop=loop))

    def take(self) -> list[dict]:
        records, self.records = self.records, []
        return records

    @staticmethod
    def describe(records: list[dict]) -> str:
        return "\n".join(f"  {ctx.get('message')!r}: {ctx.get('exception')!r}" for ctx in records)


# --------------------------------------------------------------------------
# Child processes: for what is unsafe in the pytest process (fork, Ctrl-C,
# interpreter flags and environment read at start-up).


def _child_env(impl: types.ModuleType, extra_env: dict | None) -> dict:
    env = dict(os.environ)
    # The tests decide about debug mode themselves.
    env.pop("PYTHONASYNCIODEBUG", None)
    env.pop("PYTHONDEVMODE", None)
    if impl is not asyncio:
        # Make the child import the very package this process imported.
        package_parent = os.path.dirname(os.path.dirname(impl.__file__))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_parent, env.get("PYTHONPATH")) if p
        )
    env.update(extra_env or {})
    return env


# Source that gives a child interpreter SIGINT's default handler: a child
# of a background job (a CI step run as `cmd &`) inherits SIGINT ignored,
# and Python then keeps it ignored instead of raising KeyboardInterrupt.
DEFAULT_SIGINT = "import signal as _signal\n_signal.signal(_signal.SIGINT, _signal.default_int_handler)\n"


def child_argv(impl: types.ModuleType, source: str, python_args=()) -> list[str]:
    """argv running ``source`` in a fresh interpreter with ``impl`` bound.

    The source sees ``asyncio``, ``os``, ``sys`` and ``impl`` (the loop
    implementation module) already imported.
    """
    prelude = DEFAULT_SIGINT + f"import asyncio, os, sys\nimport {impl.__name__} as impl\n"
    return [sys.executable, *python_args, "-c", prelude + textwrap.dedent(source)]


def spawn_child(
    impl: types.ModuleType, source: str, *, python_args=(), env: dict | None = None
) -> subprocess.Popen:
    """Start ``source`` in a child interpreter with piped text stdout/stderr."""
    return subprocess.Popen(
        child_argv(impl, source, python_args),
        env=_child_env(impl, env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_child(
    impl: types.ModuleType,
    source: str,
    *,
    python_args=(),
    env: dict | None = None,
    timeout: float = CHILD_TIMEOUT,
) -> subprocess.CompletedProcess:
    """Run ``source`` in a child interpreter and return the finished process."""
    return subprocess.run(
        child_argv(impl, source, python_args),
        env=_child_env(impl, env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_child_ok(proc: subprocess.CompletedProcess) -> list[str]:
    """Assert the child exited 0; return its stdout lines."""
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode}\n"
        f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    return proc.stdout.splitlines()


# --------------------------------------------------------------------------
# Servers in a child process (tests/http and tests/cli): one environment,
# one process wrapper.

#: Variables that change what a child server does (the `ferroloop` command
#: reads `FERROLOOP_*` and uvicorn's two) or how asyncio runs: a test sets
#: the ones it means, so none comes from the developer's shell.
SERVER_ENV_DROPPED = ("WEB_CONCURRENCY", "FORWARDED_ALLOW_IPS", "PYTHONASYNCIODEBUG", "PYTHONDEVMODE", "PYTHONPATH")


#: Ports for servers the tests start: below Linux's ephemeral range
#: (32768-60999), so no client connection's local port takes one between
#: `free_port()` and the server's bind, split between pytest-xdist workers,
#: so two workers never pick the same one. (Asking the kernel for port 0
#: could hand two workers one port: the second server then failed to bind,
#: and its readiness probe reached the first worker's server.)
_PORT_RANGE = (20000, 32000)
_next_port: int | None = None


def free_port() -> int:
    """A port no other test process will pick, free now on 127.0.0.1."""
    global _next_port
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    count = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    span = (_PORT_RANGE[1] - _PORT_RANGE[0]) // count
    low = _PORT_RANGE[0] + (index % count) * span
    if _next_port is None:
        # Sequential runs (three Python versions) start apart too.
        _next_port = low + (os.getpid() * 7) % span
    for _ in range(span):
        port = _next_port
        _next_port = low + (_next_port + 1 - low) % span
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {low}-{low + span - 1}")


def child_env(extra: dict | None = None, *, pythonpath: tuple[str, ...] = ()) -> dict:
    """The environment of a child server: this one's without
    `FERROLOOP_*` (but `FERROLOOP_BACKEND`: a run with a backend forced
    forces it on its servers too) and `SERVER_ENV_DROPPED`, with
    `pythonpath` as its `PYTHONPATH`, unbuffered output, no bytecode written, then `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k == "FERROLOOP_BACKEND" or not k.startswith("FERROLOOP_")) and k not in SERVER_ENV_DROPPED
    }
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env["PYTHONUNBUFFERED"] = "1"
    # The reload tests rewrite an app within the same second at the same
    # size ("v1" -> "v2"): a .pyc cached meanwhile would pass the import
    # system's mtime-and-size check and serve the old code.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


def raise_fd_limit(n: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


class ServerProcess:
    """A server in a child process (`argv`), listening on `port` or `uds`;
    output goes to files (no pipe can fill). `env` is the whole
    environment (default: `child_env()`)."""

    #: Every server started in this test process, in order (a failing
    #: test's report shows the output of the ones it started: conftest).
    started: "list[ServerProcess]" = []

    def __init__(
        self,
        argv: list[str],
        *,
        log_dir: Path,
        port: int | None = None,
        uds: str | None = None,
        cwd: Path = PROJECT_ROOT,
        env: dict | None = None,
        pass_fds=(),
    ) -> None:
        ServerProcess.started.append(self)
        self.argv = argv
        self.port = port
        self.uds = uds
        self.stdout_path = log_dir / f"server-{id(self)}.out"
        self.stderr_path = log_dir / f"server-{id(self)}.err"
        self._stdout = open(self.stdout_path, "wb")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=child_env() if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            pass_fds=pass_fds,
            preexec_fn=lambda: raise_fd_limit(8192),
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """Standard output, then standard error."""
        if not self._stdout.closed:
            self._stdout.flush()
            self._stderr.flush()
        return self.stdout_path.read_text(errors="replace") + self.stderr_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 20.0) -> "ServerProcess":
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"server exited with {self.proc.returncode} before listening:\n{self.output()}"
                )
            try:
                if self.uds is not None:
                    with socket.socket(socket.AF_UNIX) as s:
                        s.settimeout(1.0)
                        s.connect(self.uds)
                else:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                        pass
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise AssertionError(f"server not listening within {timeout} s:\n{self.output()}")
                time.sleep(0.05)

    def wait_for_output(self, text: str, timeout: float = 20.0) -> str:
        """The output once it contains `text` (a listening port accepts into
        its backlog before the server has logged that it runs)."""
        deadline = time.monotonic() + timeout
        while text not in (output := self.output()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not in the server's output:\n{output}")
            time.sleep(0.02)
        return output

    def send_signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Signal and wait; returns the exit code (fails if it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"server did not exit within {timeout} s of signal {signum}:\n{self.output()}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait (without signalling) for the exit code."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"server did not exit within {timeout} s:\n{self.output()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close_files(self) -> None:
        self._stdout.close()
        self._stderr.close()
