"""Handles and the cycle collector: a cycle through a handle that user code
keeps (object -> handle -> bound method -> object) is collected once the
loop is done with the handle, whether it ran, was cancelled, or is a timer."""

from __future__ import annotations

import gc
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
