"""os.fork() and loops: the child builds and runs a fresh loop.

Forking inside pytest is unsafe, so each scenario runs in a child interpreter,
which forks a grandchild and reports its exit status.
"""

from __future__ import annotations

from _helpers import assert_child_ok, ferroloop_only, run_child

# In the forked process: run a fresh loop, including a wake-up from another
# thread, and exit 0 only if everything worked.
IN_FORKED_CHILD = """
def in_forked_child():
    import threading, traceback
    try:
        fresh = impl.new_event_loop()
        assert fresh.run_until_complete(asyncio.sleep(0.01, result=42)) == 42
        threading.Timer(0.05, fresh.call_soon_threadsafe, (fresh.stop,)).start()
        fresh.run_forever()
        fresh.close()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def wait_status(pid):
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
"""


def test_fork_inside_a_running_loop_callback(loop_impl):
    proc = run_child(
        loop_impl,
        IN_FORKED_CHILD
        + """
loop = impl.new_event_loop()
result = {}

def fork_now():
    pid = os.fork()
    if pid == 0:
        in_forked_child()
    result["child"] = wait_status(pid)
    # The parent's loop goes on working, wake-ups included.
    import threading
    threading.Timer(0.05, loop.call_soon_threadsafe, (loop.stop,)).start()

loop.call_soon(fork_now)
loop.run_forever()
print("child exit", result["child"])
print(loop.run_until_complete(asyncio.sleep(0.01, result="parent ok")))
loop.close()
""",
    )
    assert assert_child_ok(proc) == ["child exit 0", "parent ok"]


FORK_OUTSIDE = """
loop = impl.new_event_loop()
loop.run_until_complete(asyncio.sleep(0.01))

pid = os.fork()
if pid == 0:
    if CLOSE_INHERITED:
        loop.close()
    in_forked_child()
print("child exit", wait_status(pid))
import threading
threading.Timer(0.05, loop.call_soon_threadsafe, (loop.stop,)).start()
loop.run_forever()
print(loop.run_until_complete(asyncio.sleep(0.01, result="parent ok")))
loop.close()
"""


def test_fork_outside_a_running_loop(loop_impl):
    proc = run_child(loop_impl, IN_FORKED_CHILD + "CLOSE_INHERITED = False\n" + FORK_OUTSIDE)
    assert assert_child_ok(proc) == ["child exit 0", "parent ok"]


@ferroloop_only
def test_closing_the_inherited_loop_in_the_child_spares_the_parent(loop_impl):
    # asyncio's child shares the parent's epoll instance, so closing the
    # inherited loop unregisters the parent's wake-up fd and the parent
    # hangs. ferroloop rebuilds its poller and wake-up fd after fork.
    proc = run_child(loop_impl, IN_FORKED_CHILD + "CLOSE_INHERITED = True\n" + FORK_OUTSIDE)
    assert assert_child_ok(proc) == ["child exit 0", "parent ok"]


def test_fork_before_any_loop_exists(loop_impl):
    proc = run_child(
        loop_impl,
        IN_FORKED_CHILD
        + """
pid = os.fork()
if pid == 0:
    in_forked_child()
print("child exit", wait_status(pid))
print(impl.run(asyncio.sleep(0.01, result="parent ok")))
""",
    )
    assert assert_child_ok(proc) == ["child exit 0", "parent ok"]
