"""The worker supervisor (`--workers N`, `--reload`): binds once, forks the
workers, and keeps them running.

The supervisor is an asyncio program on a ferroloop loop: signals through
`add_signal_handler`, worker exits through pidfds (`os.pidfd_open` +
`add_reader`, no SIGCHLD), control channels (`_control.py`) through
`add_reader`. It never starts a thread, so every fork happens from a
single-threaded process (the reload watcher runs in its own process,
`_reload.py`, forked first); every fork goes through `_fork.fork_child`
(signals blocked around it, the child's signals reset before its body).

A worker is replaced "rolling": the new one is forked and must report
`ready` (its listeners accept) before the old one is told to `retire`
(drain, answering one more request on idle keep-alive connections). All
workers accept from the same inherited listener, so nothing queued on a
retiring worker is lost (see docs/decisions.md for the measurement).
Rolling restarts run one at a time: a SIGHUP or a reload change that
arrives during one is queued, and any number of them start one more
restart when the running one ends (its workers may have loaded the code
before the change).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import random
import signal
import socket
import time
from typing import Any

from ._config import Config
from ._control import Channel
from ._fork import fork_child
from ._listen import bind_sockets, log_running
from ._pidfile import remove_pid_file, write_pid_file
from ._worker import run_worker

logger = logging.getLogger("ferroloop.error")

#: A worker that dies within this many seconds of its start died quickly;
#: `CRASH_LOOP` quick deaths in a row of one slot stop the server.
CRASH_WINDOW = 5.0
CRASH_LOOP = 5
#: Restart back-off after a quick death: 0.1 s doubling, at most 5 s.
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0
#: A worker stopped from outside (exit 0, or SIGTERM/SIGINT's default action,
#: without the parent asking) is replaced after at least this: long enough
#: for a stop signal sent to the parent at the same time.
OUTSIDE_STOP_GRACE = 0.5
#: How often the supervisor checks on its workers (ping, RSS, lifetime).
TICK = 1.0
#: A new worker must be ready within this (or the graceful timeout, if longer).
READY_TIMEOUT = 60.0
#: Beyond timeout_graceful_shutdown, what a draining worker gets to finish
#: its lifespan shutdown before it is killed.
KILL_MARGIN = 5.0
#: workers_lifetime's jitter: up to this fraction more.
LIFETIME_JITTER = 0.1
#: Exit status of a crash-looping server.
EXIT_CRASH_LOOP = 1
#: How long a scrape waits for the workers' stats.
STATS_TIMEOUT = 2.0
#: How long a worker killed by its health check keeps its slot unhealthy
#: (unless its replacement is ready sooner).
UNHEALTHY_FOR = 30.0


def describe_status(status: int) -> str:
    """`exit code 1` / `killed by SIGKILL` from a wait status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def read_rss_mib(pid: int) -> float | None:
    """VmRSS of `pid` in MiB, None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class Worker:
    """The supervisor's record of one worker process."""

    def __init__(self, slot: int, pid: int, pidfd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.slot = slot
        self.label = str(slot)
        self.pid = pid
        self.pidfd = pidfd
        self.started = time.monotonic()
        self.channel: Channel | None = None
        self.ready = loop.create_future()  # True: ready; False: gone first
        self.exited = loop.create_future()  # the wait status
        self.failed: dict[str, Any] | None = None
        self.retiring = False  # told to stop: its exit is expected
        self.exit_reason = ""
        self.replacing = False  # a replacement is being started
        self.health_killed = False
        self.ping_sent: float | None = None
        self.last_ping = 0.0
        self.recycle_at: float | None = None
        # Stats requests by id; None: it exited first.
        self.pending: dict[int, asyncio.Future[dict[str, Any] | None]] = {}
        # It did not answer a scrape's stats request (until it answers anything).
        self.unanswered = False

    @property
    def is_ready(self) -> bool:
        return self.alive and self.ready.done() and bool(self.ready.result())

    @property
    def alive(self) -> bool:
        return not self.exited.done()

    def signal(self, sig: int) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, sig)


class Supervisor:
    """Runs `config.workers` workers (one with reload) on `sockets` until
    SIGINT/SIGTERM; `main()` returns the exit status."""

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        self.config = config
        self.sockets = sockets
        self.reload = config.reload
        self.target = 1 if config.reload else config.workers
        self.slots: dict[int, Worker] = {}  # the serving worker of each slot
        self.procs: dict[int, Worker] = {}  # every live worker, by pid
        self.quick_deaths: dict[int, int] = {}
        self.exit_code = 0
        self.stopping = False
        self.force = False
        self._announced = False  # the "running on" line is out (a worker serves)
        self._stop = asyncio.Event()
        self._replace_lock = asyncio.Lock()
        self._restarting = False  # a rolling restart runs
        self._restart_pending: str | None = None  # the reason of one asked for meanwhile
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop = asyncio.get_running_loop()
        self._watcher: Any = None
        self._metrics: Any = None
        self.unhealthy: dict[str, float] = {}  # label -> when its check failed

    # -- lifecycle -------------------------------------------------------

    async def main(self) -> int:
        loop = self._loop
        logger.info("Started parent process [%d]", os.getpid())
        if self.reload:
            from ._reload import Watcher

            # Forked before anything else, while nothing but this thread runs.
            self._watcher = Watcher(self.config, loop, self._on_changes, self._forget_in_watcher)
            self._watcher.start()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_stop_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        loop.add_signal_handler(signal.SIGTTIN, self._on_ttin)
        loop.add_signal_handler(signal.SIGTTOU, self._on_ttou)
        if self.config.pid_file is not None:
            # After binding, and once SIGTERM is handled: a reader may signal at once.
            write_pid_file(self.config.pid_file)
        try:
            # Before the workers: a metrics port that does not bind stops
            # the start-up with no worker left behind.
            await self._start_metrics()
            for slot in range(1, self.target + 1):
                self._spawn(slot, serving=True)
            ticker = self._spawn_task(self._tick())
            await self._stop.wait()
            ticker.cancel()
            await self._shutdown()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU):
                loop.remove_signal_handler(sig)
            if self._metrics is not None:
                with contextlib.suppress(Exception):
                    self._metrics.close()
            if self._watcher is not None:
                self._watcher.stop()
            for task in list(self._tasks):
                task.cancel()
        logger.info("Stopping parent process [%d]", os.getpid())
        return self.exit_code

    def stop(self, code: int = 0) -> None:
        if code and not self.exit_code:
            self.exit_code = code
        self.stopping = True
        self._stop.set()

    async def _shutdown(self) -> None:
        procs = list(self.procs.values())
        for w in procs:
            w.retiring = True
            w.exit_reason = w.exit_reason or "server shutting down"
            w.signal(signal.SIGTERM)
            logger.info("Waiting for child process [%d]", w.pid)
        # Each worker drains within timeout_graceful_shutdown itself; the
        # margin is for its lifespan shutdown. A second signal ends this.
        deadline = self._loop.time() + self.config.timeout_graceful_shutdown + KILL_MARGIN
        while any(w.alive for w in procs) and not self.force and self._loop.time() < deadline:
            await asyncio.sleep(0.05)
        for w in procs:
            if w.alive and not self.force:  # force quit killed them already
                logger.warning("Child process [%d] did not stop in time: killing it", w.pid)
                w.signal(signal.SIGKILL)
        remaining = [w.exited for w in procs if w.alive]
        if remaining:
            await asyncio.wait(remaining, timeout=10.0)

    # -- signals ---------------------------------------------------------

    def _on_stop_signal(self, sig: int) -> None:
        if self.stopping:
            logger.warning("Received %s again: stopping now", signal.Signals(sig).name)
            self.force = True
            for w in list(self.procs.values()):
                w.signal(signal.SIGKILL)
            return
        logger.info("Received %s: stopping the workers", signal.Signals(sig).name)
        self.stop()

    def _on_sighup(self) -> None:
        if self.stopping:
            return
        if self._restarting:
            logger.info("Received SIGHUP: a rolling restart is running; another one follows it")
        else:
            logger.info("Received SIGHUP: restarting the workers one by one")
        self._request_restart("SIGHUP restart")

    def _on_ttin(self) -> None:
        if self.stopping or self.reload:
            return
        self.target += 1
        # Slots are 1..target; a slot waiting out a restart back-off keeps
        # its number (its respawn is pending).
        slot = self.target if self.target not in self.slots else max(self.slots) + 1
        logger.info("Received SIGTTIN: adding worker %d (%d workers)", slot, self.target)
        self._spawn(slot, serving=True)

    def _on_ttou(self) -> None:
        if self.stopping or self.reload or self.target <= 1 or not self.slots:
            return
        slot = self.target
        self.target -= 1
        logger.info("Received SIGTTOU: removing worker %d (%d workers)", slot, self.target)
        w = self.slots.pop(slot, None)
        if w is not None:  # else its pending respawn now finds slot > target
            self._retire(w, "removed by SIGTTOU")

    # -- workers ---------------------------------------------------------

    def _spawn(self, slot: int, *, serving: bool) -> Worker:
        """Fork a worker for `slot`; `serving`: it is the slot's worker now
        (not a candidate that must be ready first)."""
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

        def worker() -> int:
            parent_end.close()
            self._forget_in_child()
            run_worker(self.config, self.sockets, child_end, str(slot))

        try:
            pid = fork_child(self._loop, worker)
        except BaseException:
            parent_end.close()
            child_end.close()
            raise
        child_end.close()
        pidfd = os.pidfd_open(pid)
        w = Worker(slot, pid, pidfd, self._loop)
        w.channel = Channel(self._loop, parent_end, lambda m: self._on_message(w, m), lambda: None)
        lifetime = self.config.workers_lifetime
        if lifetime is not None:
            w.recycle_at = w.started + lifetime * (1 + random.uniform(0, LIFETIME_JITTER))
        self.procs[pid] = w
        if serving:
            self.slots[slot] = w
        self._loop.add_reader(pidfd, self._on_exit, w)
        return w

    def _forget_in_watcher(self) -> None:
        """The reload watcher's child side: as a worker's, and it must not
        hold the app's listeners either (a port nothing accepts on)."""
        self._forget_in_child()
        for sock in self.sockets:
            sock.close()

    def _forget_in_child(self) -> None:
        """In a freshly forked child: close what belongs to the supervisor
        (other workers' channels and pidfds, the watcher's pipe, the metrics
        listener) without touching the parent's loop."""
        for w in self.procs.values():
            if w.channel is not None:
                w.channel.forget()
            with contextlib.suppress(OSError):
                os.close(w.pidfd)
        self.procs.clear()
        self.slots.clear()
        if self._watcher is not None:
            self._watcher.forget()
        # The metrics listener (MetricsServer): its socket objects only,
        # never its native server, which lives on the parent's loop.
        for sock in getattr(self._metrics, "sockets", ()):
            with contextlib.suppress(OSError):
                sock.close()

    def _on_message(self, w: Worker, message: dict[str, Any]) -> None:
        op = message.get("op")
        w.unanswered = False
        if op == "ready":
            if not w.ready.done():
                w.ready.set_result(True)
            self.unhealthy.pop(w.label, None)
            if not self._announced:
                # Once a worker serves, not before any has started.
                self._announced = True
                log_running(self.config, self.sockets[0], tls=self.config.ssl_certfile is not None)
        elif op == "pong":
            w.ping_sent = None
        elif op == "stats":
            future = w.pending.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(message)
        elif op == "failed":
            w.failed = message
        elif op == "recycle":
            self._recycle(w, str(message.get("reason", "asked to be recycled")))

    def _on_exit(self, w: Worker) -> None:
        self._loop.remove_reader(w.pidfd)
        os.close(w.pidfd)
        try:
            _, status = os.waitpid(w.pid, 0)
        except ChildProcessError:
            status = 0
        if w.channel is not None and not w.channel.closed:
            # What it wrote before exiting (a "failed" report) is read first.
            w.channel._readable()
            w.channel.close()
        self.procs.pop(w.pid, None)
        for future in w.pending.values():
            if not future.done():
                future.set_result(None)  # no stats from it
        if not w.ready.done():
            w.ready.set_result(False)
        w.exited.set_result(status)
        serving = self.slots.get(w.slot) is w
        if serving:
            del self.slots[w.slot]
        how = describe_status(status)
        if w.retiring or (self.stopping and not w.failed):
            logger.info("Child process [%d] exited: worker %s %s (%s)", w.pid, w.label, w.exit_reason, how)
            if serving and not self.stopping:
                self._respawn(w.slot)  # retired without a replacement (its request limit)
            return
        if w.failed is not None:
            message = str(w.failed.get("message", "startup failed"))
            code = w.failed.get("code", 1)
            if self.reload:
                logger.error(
                    "Worker %s (pid %d) failed to start: %s. Waiting for changes...", w.label, w.pid, message.rstrip(". ")
                )
                return
            if not serving:
                logger.error(
                    "Worker %s (pid %d), a replacement, failed to start: %s. The running worker keeps serving.",
                    w.label,
                    w.pid,
                    message.rstrip(". "),
                )
                return
            logger.error("Worker %s (pid %d) failed to start: %s. Stopping the server.", w.label, w.pid, message.rstrip(". "))
            self.stop(code if isinstance(code, int) and code > 0 else 1)
            return
        if self.stopping:
            return
        # Exit code 0 unasked (or SIGTERM/SIGINT's default action, before the
        # worker's handlers are in): the worker was signalled directly, e.g.
        # by systemd's default KillMode=control-group or `pkill`, which
        # signal every process at once. Not a crash; and the parent's own
        # signal may be a moment behind, so its replacement waits a little.
        stopped_from_outside = (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) or (
            os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGTERM, signal.SIGINT)
        )
        if stopped_from_outside:
            logger.info("Child process [%d] exited: worker %s %s, not asked to by the parent", w.pid, w.label, how)
        else:
            logger.error("Child process [%d] died: worker %s %s", w.pid, w.label, how)
        if not serving and not (w.replacing and w.slot not in self.slots):
            return  # a candidate that never served: its replace() reports it
        quick = time.monotonic() - w.started < CRASH_WINDOW and not w.health_killed
        deaths = self.quick_deaths.get(w.slot, 0) + 1 if quick else 0
        self.quick_deaths[w.slot] = deaths
        if deaths >= CRASH_LOOP:
            if self.reload:
                logger.error("Worker %s keeps dying (%s). Waiting for changes...", w.label, how)
                return
            logger.error(
                "Worker %s died within %.0f s of its start %d times in a row (last: %s): "
                "stopping the server (crash loop)",
                w.label,
                CRASH_WINDOW,
                deaths,
                how,
            )
            self.stop(EXIT_CRASH_LOOP)
            return
        if w.replacing:
            return  # its replace() promotes the candidate, or respawns the slot if that fails
        delay = 0.0 if not deaths else min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (deaths - 1))
        if stopped_from_outside:
            delay = max(delay, OUTSIDE_STOP_GRACE)
        if delay:
            logger.info("Restarting worker %s in %.1f s", w.label, delay)
        self._loop.call_later(delay, self._respawn, w.slot)

    def _respawn(self, slot: int) -> None:
        if not self.stopping and slot not in self.slots and (slot <= self.target or self.reload):
            self._spawn(slot, serving=True)

    def _retire(self, w: Worker, reason: str) -> None:
        """Tell `w` to hand over and stop; kill it if it takes too long."""
        if w.retiring or not w.alive:
            return
        w.retiring = True
        w.exit_reason = reason
        if w.channel is None or not w.channel.send({"op": "retire"}):
            w.signal(signal.SIGTERM)
        grace = self.config.timeout_graceful_shutdown + KILL_MARGIN

        def kill_if_alive() -> None:
            if w.alive:
                logger.warning("Worker %s (pid %d) still running %.0f s after retiring: killing it", w.label, w.pid, grace)
                w.signal(signal.SIGKILL)

        self._loop.call_later(grace, kill_if_alive)

    async def replace(self, old: Worker, reason: str) -> bool:
        """Start a new worker in `old`'s slot; once it is ready, retire the
        old one. False (the old one keeps serving) if the new one fails, or
        if `old` no longer serves its slot once the lock is taken."""
        async with self._replace_lock:
            if self.slots.get(old.slot) is not old:
                return False
            return await self._replace_locked(old, reason)

    async def _replace_locked(self, old: Worker, reason: str) -> bool:
        if self.stopping or old.retiring or not old.alive:
            return False
        old.replacing = True
        try:
            new = self._spawn(old.slot, serving=False)
            timeout = max(READY_TIMEOUT, self.config.timeout_graceful_shutdown)
            try:
                ready = await asyncio.wait_for(asyncio.shield(new.ready), timeout)
            except asyncio.TimeoutError:
                logger.error("Worker %s (pid %d) not ready after %.0f s: killing it", new.label, new.pid, timeout)
                new.retiring, new.exit_reason = True, "not ready in time"
                new.signal(signal.SIGKILL)
                ready = False
            if not ready or self.stopping:
                if not self.stopping and old.alive:
                    logger.warning("Worker %s: the replacement failed; the running worker keeps serving", old.label)
                if not old.alive and not self.stopping and old.slot not in self.slots:
                    self._respawn(old.slot)
                return False
            if self.slots.get(old.slot) not in (old, None):
                self._retire(new, "its slot was taken meanwhile")  # never two workers in one slot
                return False
            self.slots[old.slot] = new
            self.quick_deaths.pop(old.slot, None)
            if old.alive:
                self._retire(old, reason)
            return True
        finally:
            old.replacing = False

    def _recycle(self, w: Worker, reason: str) -> None:
        if self.stopping or w.retiring or w.replacing or self.slots.get(w.slot) is not w:
            return
        logger.info("Recycling worker %s (pid %d): %s", w.label, w.pid, reason)

        async def go() -> None:
            if not await self.replace(w, f"recycled: {reason}") and w.alive and not self.stopping:
                if reason.startswith("limit_max_requests"):
                    self._retire(w, f"recycled: {reason}")  # its limit stands; the slot restarts after

        self._spawn_task(go())

    def _request_restart(self, reason: str) -> None:
        """Restart every worker, rolling; during a rolling restart, queue
        one more (several requests meanwhile make one)."""
        if self._restarting:
            self._restart_pending = reason
            return
        self._restarting = True  # now: a second request in this tick is queued
        self._spawn_task(self._rolling_restart(reason))

    async def _rolling_restart(self, reason: str) -> None:
        try:
            while not self.stopping:
                self._restart_pending = None
                for slot in [1] if self.reload else sorted(self.slots):
                    if self.stopping:
                        break
                    await self._restart_slot(slot, reason)
                if self._restart_pending is None:
                    break
                reason = self._restart_pending
                logger.info("Restarting the workers again: asked for during the last restart (%s)", reason)
        finally:
            self._restarting = False
            self._restart_pending = None

    async def _restart_slot(self, slot: int, reason: str) -> None:
        async with self._replace_lock:
            # Looked up under the lock: a recycle may have replaced it meanwhile.
            old = self.slots.get(slot)
            if old is not None:
                await self._replace_locked(old, reason)
            elif self.reload and not any(p.alive and not p.retiring for p in self.procs.values()):
                # Reload after a worker that failed to start: nothing to hand over from.
                self._spawn(slot, serving=True)

    def _on_changes(self, changes: list[str]) -> None:
        """The reload watcher saw `changes` (paths, as it shows them)."""
        if self.stopping:
            return
        shown = ", ".join(f"'{path}'" for path in changes)
        logger.warning("WatchFiles detected changes in %s. Reloading...", shown)
        self.quick_deaths.clear()
        self._request_restart("reloaded")

    # -- the periodic checks --------------------------------------------

    async def _tick(self) -> None:
        timeout = float(self.config.timeout_worker_healthcheck)
        interval = min(1.0, timeout / 2)
        max_rss = self.config.workers_max_rss
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            for w in list(self.procs.values()):
                if not w.alive or not (w.ready.done() and w.ready.result()):
                    continue
                if w.ping_sent is not None and now - w.ping_sent > timeout:
                    logger.error(
                        "Worker %s (pid %d) failed its health check (no answer in %.0f s): killing it",
                        w.label,
                        w.pid,
                        timeout,
                    )
                    self.unhealthy[w.label] = now
                    w.health_killed = True
                    w.signal(signal.SIGKILL)
                    continue
                if w.ping_sent is None and now - w.last_ping >= interval and w.channel is not None:
                    if w.channel.send({"op": "ping", "id": next(self._ids)}):
                        w.ping_sent = w.last_ping = now
                if w.retiring or self.slots.get(w.slot) is not w:
                    continue
                if max_rss is not None:
                    rss = read_rss_mib(w.pid)
                    if rss is not None and rss > max_rss:
                        self._recycle(w, f"{rss:.0f} MiB resident, above workers_max_rss={max_rss}")
                        continue
                if w.recycle_at is not None and now >= w.recycle_at:
                    self._recycle(w, f"workers_lifetime ({self.config.workers_lifetime:g} s) reached")

    def _spawn_task(self, coro: Any) -> asyncio.Task[Any]:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- metrics: the listener's source is the workers' control channels --

    async def _start_metrics(self) -> None:
        if self.config.metrics_port is None:
            return
        from ._metrics import start_metrics_server

        self._metrics = await start_metrics_server(self.config, MetricsSource(self))


class MetricsSource:
    """What the metrics listener renders: the workers' stats over their
    control channels and the health checks' verdict.

    A slot is healthy when its worker is ready, answers its pings in time,
    answered its last stats request (a scrape that gets no answer within
    `STATS_TIMEOUT` marks it until it answers anything again) and is not
    the replacement-to-be of a worker its health check killed in the last
    `UNHEALTHY_FOR` seconds. Every slot gets a verdict, an empty one (its
    worker restarting) too: `ferroloop_worker_healthy`, /stats' `healthy`
    and /healthz's `unhealthy` all show the same."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._sup = supervisor

    async def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        sup = self._sup
        asks: list[tuple[Worker, int, asyncio.Future[dict[str, Any] | None]]] = []
        try:
            for _, w in sorted(sup.slots.items()):
                if not w.is_ready or w.channel is None:
                    continue
                request_id = next(sup._ids)
                future: asyncio.Future[dict[str, Any] | None] = sup._loop.create_future()
                w.pending[request_id] = future
                asks.append((w, request_id, future))
                if not w.channel.send({"op": "stats", "id": request_id}):
                    future.set_result(None)  # not reading: no answer
            if asks:
                # Cancellation (the scrape's connection went) propagates.
                await asyncio.wait([future for _, _, future in asks], timeout=STATS_TIMEOUT)
        finally:
            for w, request_id, _ in asks:
                w.pending.pop(request_id, None)
        replies: dict[str, tuple[Worker, dict[str, Any]]] = {}
        for w, _, future in asks:
            reply = future.result() if future.done() else None
            if reply is None:
                w.unanswered = True  # blocked, not reading, or exited
            else:
                replies[w.label] = (w, reply)
        out = []
        for label, healthy in self._verdicts().items():
            answered = replies.get(label)
            entry: dict[str, Any]
            if answered is None:
                serving = sup.slots.get(int(label))
                entry = {"pid": serving.pid if serving is not None else None, "healthy": False}
            else:
                w, reply = answered
                entry = {"pid": reply.get("pid", w.pid), "healthy": healthy}
                entry.update(loop=reply.get("loop", {}), server=reply.get("server", {}))
            out.append((label, entry))
        return out

    def health(self) -> tuple[bool, dict[str, Any]]:
        sup = self._sup
        verdicts = self._verdicts()
        ready = sum(1 for w in sup.slots.values() if w.is_ready)
        unhealthy = [label for label, healthy in verdicts.items() if not healthy]
        ok = bool(ready) and not unhealthy and not sup.stopping
        detail: dict[str, Any] = {"workers": ready, "expected": sup.target, "unhealthy": unhealthy, "pid": os.getpid()}
        if sup.stopping:
            detail["status"] = "draining"
        return ok, detail

    def _verdicts(self) -> dict[str, bool]:
        """Every slot's health (above), by label, in slot order."""
        sup = self._sup
        now = time.monotonic()
        timeout = sup.config.timeout_worker_healthcheck
        out = {}
        for slot in sorted(set(range(1, sup.target + 1)) | set(sup.slots)):
            w = sup.slots.get(slot)
            label = str(slot)
            killed = sup.unhealthy.get(label)
            out[label] = (
                w is not None
                and w.is_ready
                and not w.unanswered
                and not (w.ping_sent is not None and now - w.ping_sent > timeout)
                and not (killed is not None and now - killed < UNHEALTHY_FOR)
            )
        return out


def supervise(config: Config) -> int:
    """Bind, write the pid file, run the supervisor; the exit status.
    Raises OSError when the bind fails."""
    from .._policy import run

    if config.reload:
        from ._reload import check_available

        check_available()
        if config.workers > 1:
            logger.warning('"workers" is ignored when reloading is enabled: one worker is reloaded.')
        if not isinstance(config.app, str):
            logger.warning("reload restarts the worker but keeps the code: pass the app as an import string")
    sockets, owned, uds_path = bind_sockets(config)
    try:
        if config.preload:
            config.load_app()  # once, here: the workers inherit it (copy-on-write)
        return run(_main(config, sockets), backend=config.backend)
    finally:
        for sock in owned:
            sock.close()
        if uds_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(uds_path)
        if config.pid_file is not None:
            remove_pid_file(config.pid_file)


async def _main(config: Config, sockets: list[socket.socket]) -> int:
    return await Supervisor(config, sockets).main()
