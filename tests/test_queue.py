"""ferroloop.Queue, LifoQueue and PriorityQueue on every loop they claim to
support: the stdlib loop, uvloop and ferroloop (each test runs on all three).

The queue must behave as asyncio.Queue does; where a test names asyncio's
behaviour it was checked against asyncio.Queue on the same loop
(``test_reference_queue_agrees``).
"""

from __future__ import annotations

import ast
import asyncio
import gc
import inspect
import sys
import weakref
from pathlib import Path
from types import GenericAlias

import pytest
import uvloop

import ferroloop
from _helpers import assert_child_ok, run_child

LOOPS = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
    "ferroloop": ferroloop.new_event_loop,
}
# Generous: a wait on a 2-core machine shared with builds.
TIMEOUT = 30.0


@pytest.fixture(params=sorted(LOOPS))
def run(request):
    """Run a coroutine function to completion on a fresh loop of the param."""
    loops = []

    def run_(coro_fn, *args):
        loop = LOOPS[request.param]()
        loops.append(loop)
        return loop.run_until_complete(asyncio.wait_for(coro_fn(*args), TIMEOUT))

    yield run_
    for loop in loops:
        loop.close()


async def settle(n: int = 5) -> None:
    """Let every ready task run a few steps (no timing involved)."""
    for _ in range(n):
        await asyncio.sleep(0)


def test_exports_and_types():
    assert issubclass(ferroloop.LifoQueue, ferroloop.Queue)
    assert issubclass(ferroloop.PriorityQueue, ferroloop.Queue)
    assert issubclass(ferroloop.QueueShutDown, Exception)
    if sys.version_info >= (3, 13):
        assert ferroloop.QueueShutDown is asyncio.QueueShutDown
    for name in ("Queue", "LifoQueue", "PriorityQueue", "QueueShutDown"):
        assert name in ferroloop.__all__


def test_generic_alias():
    alias = ferroloop.Queue[int]
    assert isinstance(alias, GenericAlias)
    assert alias.__args__ == (int,)
    assert alias.__origin__ is ferroloop.Queue
    assert ferroloop.PriorityQueue[tuple[int, str]].__origin__ is ferroloop.PriorityQueue


def test_stub_declares_the_runtime_api():
    stub = Path(ferroloop.__file__).with_name("_queue.pyi")
    tree = ast.parse(stub.read_text())
    declared = {
        node.name
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "Queue"
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
    }
    public = {name for name in dir(ferroloop.Queue) if not name.startswith("_")}
    assert public <= declared, public - declared


def test_nowait_and_sizes(run):
    async def main():
        q = ferroloop.Queue(maxsize=2)
        assert (q.maxsize, q.qsize(), q.empty(), q.full()) == (2, 0, True, False)
        q.put_nowait("a")
        q.put_nowait("b")
        assert (q.qsize(), q.empty(), q.full()) == (2, False, True)
        with pytest.raises(asyncio.QueueFull):
            q.put_nowait("c")
        assert q.get_nowait() == "a"
        assert q.get_nowait() == "b"
        with pytest.raises(asyncio.QueueEmpty):
            q.get_nowait()
        unbounded = ferroloop.Queue()
        for i in range(1000):
            unbounded.put_nowait(i)
        assert not unbounded.full() and unbounded.qsize() == 1000
        # A float maxsize counts as in asyncio: full from 2 items on.
        fq = ferroloop.Queue(maxsize=1.3)
        fq.put_nowait(1)
        assert not fq.full()
        fq.put_nowait(2)
        assert fq.full()

    run(main)


def test_orders(run):
    async def main():
        fifo, lifo, prio = ferroloop.Queue(), ferroloop.LifoQueue(), ferroloop.PriorityQueue()
        for q in (fifo, lifo, prio):
            for item in (3, 1, 4, 1, 5, 9, 2, 6):
                await q.put(item)
        got = [[await q.get() for _ in range(8)] for q in (fifo, lifo, prio)]
        assert got == [[3, 1, 4, 1, 5, 9, 2, 6], [6, 2, 9, 5, 1, 4, 1, 3], [1, 1, 2, 3, 4, 5, 6, 9]]

    run(main)


def test_priority_uses_lt_like_heapq(run):
    class Job:
        def __init__(self, prio: int) -> None:
            self.prio = prio

        def __lt__(self, other: Job) -> bool:  # heapq compares with < only
            return self.prio < other.prio

    async def main():
        q = ferroloop.PriorityQueue()
        for p in (5, 2, 8, 1):
            q.put_nowait(Job(p))
        assert [q.get_nowait().prio for _ in range(4)] == [1, 2, 5, 8]
        # Incomparable items raise heapq's TypeError, and stay in the heap
        # uncounted, as heapq (and so asyncio.PriorityQueue) leaves them.
        for cls in (asyncio.PriorityQueue, ferroloop.PriorityQueue):
            q = cls()
            q.put_nowait((1, "a"))
            with pytest.raises(TypeError):
                q.put_nowait(("x", None))
            with pytest.raises(TypeError):
                await q.put((None, None))
            assert (q.qsize(), q._unfinished_tasks) == (3, 1)

    run(main)


def test_get_waits_for_put(run):
    async def main():
        q = ferroloop.Queue()
        getter = asyncio.ensure_future(q.get())
        await settle()
        assert not getter.done() and len(q._getters) == 1
        await q.put("x")
        assert await getter == "x"
        assert len(q._getters) == 0

    run(main)


def test_put_waits_for_room(run):
    async def main():
        q = ferroloop.Queue(maxsize=1)
        done: list[int] = []

        async def producer():
            for i in range(3):
                await q.put(i)
                done.append(i)

        task = asyncio.create_task(producer())
        await settle()
        assert done == [0] and len(q._putters) == 1
        assert q.get_nowait() == 0
        await settle()
        assert done == [0, 1]
        assert [await q.get(), await q.get()] == [1, 2]
        await task

    run(main)


def test_awaiting_a_ready_queue_takes_one_step():
    """The fast path: a get on a non-empty queue (a put on a non-full one)
    completes in its first step, yielding nothing to the loop."""
    q = ferroloop.Queue()
    q.put_nowait(7)
    op = q.get()
    assert not inspect.iscoroutinefunction(q.get)
    with pytest.raises(StopIteration) as stop:
        op.send(None)
    assert stop.value.value == 7
    with pytest.raises(StopIteration) as stop:
        q.put(8).send(None)
    assert stop.value.value is None and q.get_nowait() == 8
    # An operation never awaited takes nothing.
    q.put_nowait(9)
    q.get()
    assert q.qsize() == 1
    with pytest.raises(RuntimeError, match="cannot reuse"):
        op.send(None)


def test_cancelled_getter_loses_no_item(run):
    async def main():
        q = ferroloop.Queue()
        reader = asyncio.create_task(q.get())
        await settle()
        q.put_nowait(1)
        q.put_nowait(2)
        reader.cancel()  # woken by put_nowait(1), cancelled before it ran
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert q.qsize() == 2
        assert await q.get() == 1

    run(main)


def test_cancelled_getter_passes_its_wakeup_on(run):
    async def main():
        q = ferroloop.Queue()
        r1 = asyncio.create_task(q.get())
        r2 = asyncio.create_task(q.get())
        await settle()
        q.put_nowait("only")  # wakes r1
        r1.cancel()
        with pytest.raises(asyncio.CancelledError):
            await r1
        assert await r2 == "only"  # r1's wake-up went on to r2

    run(main)


def test_cancelled_putter_puts_nothing(run):
    async def main():
        q = ferroloop.Queue(maxsize=1)
        q.put_nowait(1)
        writer = asyncio.create_task(q.put(2))
        await settle()
        writer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writer
        assert len(q._putters) == 0
        assert q.get_nowait() == 1 and q.empty()

    run(main)


def test_timed_out_get_leaves_no_waiter(run):
    async def main():
        q = ferroloop.Queue()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(q.get(), 0.01)
        assert len(q._getters) == 0
        q.put_nowait(1)
        assert q.get_nowait() == 1

    run(main)


def test_join_and_task_done(run):
    async def main():
        q = ferroloop.Queue()
        await q.join()  # nothing unfinished: at once
        for i in range(20):
            q.put_nowait(i)
        total = 0

        async def worker():
            nonlocal total
            while True:
                total += await q.get()
                q.task_done()

        workers = [asyncio.create_task(worker()) for _ in range(3)]
        await q.join()
        assert total == sum(range(20))
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        with pytest.raises(ValueError, match=r"^task_done\(\) called too many times$"):
            q.task_done()

    run(main)


def test_shutdown_graceful(run):
    async def main():
        q = ferroloop.Queue(maxsize=1)
        q.put_nowait("kept")
        putter = asyncio.create_task(q.put("refused"))
        joiner = asyncio.create_task(q.join())
        await settle()
        q.shutdown()
        with pytest.raises(ferroloop.QueueShutDown):
            await putter
        with pytest.raises(ferroloop.QueueShutDown):
            q.put_nowait("late")
        assert await q.get() == "kept"  # items stay gettable
        with pytest.raises(ferroloop.QueueShutDown):
            await q.get()
        with pytest.raises(ferroloop.QueueShutDown):
            q.get_nowait()
        assert not joiner.done()
        q.task_done()
        await joiner

    run(main)


def test_shutdown_wakes_waiting_getters(run):
    async def main():
        q = ferroloop.Queue()
        getters = [asyncio.create_task(q.get()) for _ in range(3)]
        await settle()
        q.shutdown()
        for g in getters:
            with pytest.raises(ferroloop.QueueShutDown):
                await g

    run(main)


def test_shutdown_immediate(run):
    async def main():
        q = ferroloop.LifoQueue()
        for i in range(3):
            q.put_nowait(i)
        q.get_nowait()  # one unfinished task stays with the consumer
        joiner = asyncio.create_task(q.join())
        q.shutdown(immediate=True)
        assert q.qsize() == 0
        await settle()
        assert not joiner.done()
        q.task_done()
        await joiner
        with pytest.raises(ValueError):
            q.task_done()

    run(main)


def test_repr_and_str(run):
    async def main():
        q = ferroloop.Queue()
        assert repr(q).startswith(f"<Queue at {id(q):#x} maxsize=0")
        assert str(q) == "<Queue maxsize=0>"
        q.put_nowait(1)
        assert str(q) == "<Queue maxsize=0 _queue=[1] tasks=1>"
        q.get_nowait()
        getter = asyncio.create_task(q.get())
        await settle()
        assert "_getters[1]" in repr(q)
        q.put_nowait(2)
        assert await getter == 2
        full = ferroloop.PriorityQueue(maxsize=1)
        full.put_nowait(5)
        putter = asyncio.create_task(full.put(6))
        await settle()
        assert str(full) == "<PriorityQueue maxsize=1 _queue=[5] _putters[1] tasks=1>"
        full.get_nowait()
        await putter
        full.shutdown()
        assert str(full).endswith(" shutdown>")
        assert q._format() == "maxsize=0 tasks=2"

    run(main)


def test_one_loop_per_queue():
    q = ferroloop.Queue()

    async def wait_get():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(q.get(), 0.01)

    ferroloop.run(wait_get())
    with pytest.raises(RuntimeError, match="bound to a different event loop"):
        asyncio.run(wait_get())


# The child forked inside the run: the queue, bound to the loop, first tries
# a waiting get without asking asyncio for the running loop; an op that
# waits (a future yielded) means it took the child's copy of the loop for a
# running one.
FORKED_GET = """
q = impl.Queue()

async def main():
    getter = asyncio.ensure_future(q.get())  # binds the queue to the loop
    await asyncio.sleep(0)
    q.put_nowait(1)
    assert await getter == 1
    pid = os.fork()
    if pid == 0:
        try:
            q.get().send(None)
        except RuntimeError as e:
            os.write(1, f"child: {e}\\n".encode())
            os._exit(0)
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    getter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    q.put_nowait(2)
    print("parent got", await getter)

impl.run(main())
"""


def test_a_child_forked_inside_the_run_has_no_running_loop():
    """A waiting get asks no one while its loop runs on the thread, except
    in a child forked from inside the run, where asyncio sees no running
    loop; the parent's queue goes on working."""
    proc = run_child(ferroloop, FORKED_GET)
    assert assert_child_ok(proc) == ["child: no running event loop", "child exit 0", "parent got 2"]


def test_drivers(run):
    """Every way asyncio drives an awaitable: await, tasks, gather, wait_for."""

    async def main():
        q = ferroloop.Queue()
        results = asyncio.gather(q.get(), asyncio.ensure_future(q.get()), q.get())
        await settle()
        for i in range(3):
            await q.put(i)
        assert sorted(await results) == [0, 1, 2]
        q.put_nowait("w")
        assert await asyncio.wait_for(q.get(), TIMEOUT) == "w"
        task = asyncio.create_task(q.join())
        assert "Queue.join" in repr(task)
        for _ in range(4):
            q.task_done()
        await task

    run(main)


def test_subclass_with_its_own_init(run):
    class Tagged(ferroloop.Queue):
        def __init__(self, tag: str, maxsize: int = 0) -> None:
            super().__init__(maxsize)
            self.tag = tag

    async def main():
        q = Tagged("t", maxsize=3)
        assert q.tag == "t" and q.maxsize == 3
        await q.put(1)
        assert await q.get() == 1
        assert repr(q).startswith("<Tagged at ")

    run(main)


def test_collected_in_a_cycle():
    q = ferroloop.Queue()
    q.put_nowait(q)  # the queue holds itself
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None


def test_reference_queue_agrees(run):
    """The same script on asyncio.Queue and ferroloop.Queue: same trace."""

    async def script(cls):
        trace = []
        q = cls(maxsize=2)

        async def consumer(name):
            try:
                while True:
                    item = await q.get()
                    trace.append((name, item))
                    q.task_done()
            except asyncio.CancelledError:
                trace.append((name, "cancelled"))
                raise

        consumers = [asyncio.create_task(consumer(n)) for n in "ab"]
        for i in range(6):
            await q.put(i)
            trace.append(("put", i, q.qsize()))
        consumers[0].cancel()
        await q.join()
        trace.append(("joined", str(q)[len(cls.__name__) + 1 :]))
        consumers[1].cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
        return trace

    async def main():
        return await script(asyncio.Queue), await script(ferroloop.Queue)

    ours, theirs = run(main)
    assert ours == theirs
