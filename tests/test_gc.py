"""Handles and the cycle collector: a cycle through a handle that user code
keeps (object -> handle -> bound method -> object) is collected once the
loop is done with the handle, whether it ran, was cancelled, or is a timer."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref

import pytest


class Owner:
    """Keeps its own handle, as a protocol keeps its timeout handle."""

    handle: object = None

    def callback(self) -> None:
        pass


def _collect_after(loop, schedule, *, cancel: bool = False) -> bool:
    owner = Owner()
    owner.handle = schedule(loop, owner.callback)
    if cancel:
        owner.handle.cancel()
    ref = weakref.ref(owner)
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    del owner
    gc.collect()
    return ref() is None


SCHEDULERS = {
    "call_soon": lambda loop, cb: loop.call_soon(cb),
    "call_soon_threadsafe": lambda loop, cb: loop.call_soon_threadsafe(cb),
    "call_later": lambda loop, cb: loop.call_later(0, cb),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@pytest.mark.parametrize("cancel", [False, True], ids=["ran", "cancelled"])
def test_cycle_through_a_kept_handle_is_collected(loop, name, cancel):
    assert _collect_after(loop, SCHEDULERS[name], cancel=cancel)


def test_cycle_through_a_cancelled_pending_timer_is_collected(loop):
    assert _collect_after(loop, lambda loop, cb: loop.call_later(3600, cb), cancel=True)


def test_queued_handles_stay_alive_through_collections(loop):
    # Queued handles are reachable only through the loop; a collection in
    # the middle of a burst must not free them.
    ran = []
    for i in range(2000):
        loop.call_soon(ran.append, i)
    gc.collect()
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert ran == list(range(2000))


def test_a_handle_kept_by_the_caller_is_never_reused(loop):
    # ferroloop recycles call_soon handles nobody holds; one the caller kept
    # must keep its callback, context and state after it ran.
    def kept_callback():
        pass

    kept = loop.call_soon(kept_callback)
    context = kept._context  # get_context() is 3.12+ in asyncio
    loop.call_soon(loop.stop)
    loop.run_forever()
    ran = []
    for i in range(3000):
        loop.call_soon(ran.append, i)
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert ran == list(range(3000))
    assert "kept_callback" in repr(kept)
    assert not kept.cancelled()
    assert kept._context is context


def test_pending_timers_and_their_callbacks_survive_collections(loop):
    # Scheduled timers are untracked while the loop holds them; the loop
    # visits their references for the collector instead. Callbacks reachable
    # only through pending timers, collected mid-run, must all still fire.
    fired = []

    class Payload:
        def __init__(self, i):
            self.i = i
            self.me = self  # a cycle of its own, reachable only via the timer

        def fire(self):
            fired.append(self.i)

    for i in range(3000):
        loop.call_later(0.001 * (i % 7), Payload(i).fire)
    loop.call_soon(gc.collect)
    loop.call_later(0.002, gc.collect)
    loop.call_later(0.05, loop.stop)
    gc.collect()
    loop.run_forever()
    assert sorted(fired) == list(range(3000))


def test_cycles_through_kept_timers_cancelled_en_masse_are_collected(loop):
    # Enough cancellations to compact the heap: the timers leave it as
    # garbage, and the ones a cycle still holds go back to the collector.
    owners = [Owner() for _ in range(500)]
    for owner in owners:
        owner.handle = loop.call_later(3600, owner.callback)
    refs = [weakref.ref(o) for o in owners]
    for owner in owners:
        owner.handle.cancel()
    del owner
    loop.call_soon(loop.stop)
    loop.run_forever()
    del owners
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.mark.parametrize("kept", ["timer", "both"])
def test_cycle_through_a_kept_pending_timer_is_collected_with_its_loop(loop_impl, kept):
    # An unclosed loop nobody references, with a pending timer and a queued
    # callback that point back at it, is garbage: the collector must find
    # the cycle through handles the loop keeps untracked, in one collection
    # (on 3.15 the loop's finalizer used to bring it back for one more).
    import warnings

    def make():
        loop = loop_impl.new_event_loop()
        owner = Owner()
        owner.handle = loop.call_later(3600, owner.callback)
        queued = loop.call_soon(owner.callback)
        if kept == "both":
            owner.queued = queued
        return weakref.ref(loop), weakref.ref(owner)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # "unclosed event loop"
        loop_ref, owner_ref = make()
        gc.collect()
    assert loop_ref() is None
    assert owner_ref() is None


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "unclosed"])
def test_a_loop_that_made_futures_and_tasks_is_collected(loop_impl, closed):
    # ferroloop keeps the `{"loop": loop}` it passes to `Future` and `Task`:
    # a cycle the collector must break (close() drops it).
    import warnings

    async def work():
        await asyncio.sleep(0)

    def make():
        loop = loop_impl.new_event_loop()
        loop.run_until_complete(loop.create_task(work()))
        loop.create_future()
        if closed:
            loop.close()
        return weakref.ref(loop)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # "unclosed event loop"
        loop_ref = make()
        gc.collect()
    assert loop_ref() is None


def test_an_idle_loop_frees_the_handles_it_kept_from_a_burst(loop, loop_impl):
    """ferroloop keeps emptied handles for reuse: up to 32,768 after a
    burst, trimmed to 8,192 once the loop has slept for a second."""
    if loop_impl.__name__ != "ferroloop":
        return
    for _ in range(30_000):
        loop.call_soon(int)
    loop.call_soon(loop.stop)
    loop.run_forever()
    gc.collect()
    kept = sys.getallocatedblocks()
    loop.run_until_complete(asyncio.sleep(0.2))
    assert kept - sys.getallocatedblocks() < 5_000, "a short sleep keeps the pool"
    loop.run_until_complete(asyncio.sleep(1.1))
    freed = kept - sys.getallocatedblocks()
    assert freed > 15_000, f"{freed} blocks freed after a second idle"
