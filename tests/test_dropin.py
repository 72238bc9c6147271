"""Drop-in gaps a real program can hit: subprocess pipes paused or connected
late, datagram endpoints on socketpairs, and the private loop attributes
that test utilities and libraries read."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time

import pytest

from _helpers import PROMPT, ferroloop_only

# --------------------------------------------------------------------------
# Pipes and subprocesses


class Recorder(asyncio.Protocol):
    """A read-pipe protocol recording its callbacks."""

    def __init__(self, on_made=None) -> None:
        self.events: list[object] = []
        self.data = bytearray()
        self.on_made = on_made
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.events.append("made")
        if self.on_made is not None:
            self.on_made(transport)

    def data_received(self, data):
        self.events.append("data")
        self.data += data

    def eof_received(self):
        self.events.append("eof")

    def connection_lost(self, exc):
        self.events.append("lost")
        self.lost.set_result(exc)


def test_read_pipe_paused_in_connection_made_stays_paused(loop):
    async def main():
        read_fd, write_fd = os.pipe()
        os.write(write_fd, b"waiting")
        transport, proto = await loop.connect_read_pipe(
            lambda: Recorder(lambda t: t.pause_reading()), os.fdopen(read_fd, "rb"))
        await asyncio.sleep(0.1)
        assert proto.events == ["made"], "a pipe paused in connection_made() must not read"
        assert not transport.is_reading()
        transport.resume_reading()
        os.close(write_fd)
        await asyncio.wait_for(proto.lost, PROMPT)
        return proto.events, bytes(proto.data)

    assert loop.run_until_complete(main()) == (["made", "data", "eof", "lost"], b"waiting")


def test_read_pipe_closed_in_connection_made_never_reads(loop):
    async def main():
        read_fd, write_fd = os.pipe()
        os.write(write_fd, b"unread")
        transport, proto = await loop.connect_read_pipe(
            lambda: Recorder(lambda t: t.close()), os.fdopen(read_fd, "rb"))
        await asyncio.wait_for(proto.lost, PROMPT)
        # A few more iterations: nothing may read the (closed) fd.
        await asyncio.sleep(0.05)
        os.close(write_fd)
        return proto.events, transport.is_closing()

    assert loop.run_until_complete(main()) == (["made", "lost"], True)


class ChildRecorder(asyncio.SubprocessProtocol):
    """A subprocess protocol recording its callbacks in order."""

    def __init__(self, on_made=None, on_data=None) -> None:
        self.events: list[object] = []
        self.data: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.on_made = on_made
        self.on_data = on_data
        self.transport = None
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.events.append("made")
        self.transport = transport
        if self.on_made is not None:
            self.on_made(transport)

    def pipe_data_received(self, fd, data):
        if self.events[-1] != ("data", fd):
            self.events.append(("data", fd))
        self.data[fd] += data
        if self.on_data is not None:
            self.on_data(self, fd)

    def pipe_connection_lost(self, fd, exc):
        self.events.append(("pipe_lost", fd))

    def process_exited(self):
        self.events.append("exited")

    def connection_lost(self, exc):
        self.events.append("lost")
        self.done.set_result(exc)

    def assert_well_formed(self) -> None:
        """What asyncio guarantees whatever the timing: connection_made()
        first, connection_lost() last and after process_exited() and every
        pipe_connection_lost(), each pipe's data before its loss."""
        events = self.events
        assert events[0] == "made", events
        assert events[-1] == "lost", events
        assert events.count("exited") == 1, events
        for fd in (0, 1, 2):
            lost = [i for i, e in enumerate(events) if e == ("pipe_lost", fd)]
            assert len(lost) <= 1, events
            if lost:
                assert all(i < lost[0] for i, e in enumerate(events) if e == ("data", fd)), events


CHATTY = "import sys\nfor _ in range({n}): sys.stdout.buffer.write(b'x' * 65536)\n"


def test_subprocess_stdout_paused_in_connection_made(loop):
    size = 64 * 65536

    async def main():
        transport, proto = await loop.subprocess_exec(
            lambda: ChildRecorder(on_made=lambda t: t.get_pipe_transport(1).pause_reading()),
            sys.executable, "-c", CHATTY.format(n=64), stdin=None, stderr=None)
        await asyncio.sleep(0.5)
        # Only what was read before connection_made() (while the pipes were
        # connecting) may arrive; the child blocks on the full pipe.
        while_paused = len(proto.data[1])
        still_running = transport.get_returncode() is None
        transport.get_pipe_transport(1).resume_reading()
        await asyncio.wait_for(proto.done, 30)
        proto.assert_well_formed()
        transport.close()
        return while_paused, still_running, len(proto.data[1]), transport.get_returncode()

    while_paused, still_running, total, code = loop.run_until_complete(main())
    assert while_paused <= 1024 * 1024
    assert still_running
    assert (total, code) == (size, 0)


def test_subprocess_paused_from_pipe_data_received_bounds_memory(loop):
    size = 128 * 65536
    paused_at = []

    def pause_once(proto, fd):
        if not paused_at:
            pipe = proto.transport.get_pipe_transport(fd)
            pipe.pause_reading()
            paused_at.append(len(proto.data[fd]))
            asyncio.get_running_loop().call_later(0.3, pipe.resume_reading)

    async def main():
        transport, proto = await loop.subprocess_exec(
            lambda: ChildRecorder(on_data=pause_once),
            sys.executable, "-c", CHATTY.format(n=128), stdin=None, stderr=None)
        while not paused_at:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        during_pause = len(proto.data[1])
        await asyncio.wait_for(proto.done, 30)
        transport.close()
        return paused_at[0], during_pause, len(proto.data[1]), transport.get_returncode()

    paused_at_size, during_pause, total, code = loop.run_until_complete(main())
    assert during_pause == paused_at_size, "data arrived while stdout was paused"
    assert (total, code) == (size, 0)


def test_subprocess_stream_limit_bounds_the_buffer(loop):
    size = 128 * 65536
    limit = 4096

    async def main():
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHATTY.format(n=128), stdout=asyncio.subprocess.PIPE, limit=limit)
        await asyncio.sleep(0.3)
        # The stream protocol pauses the pipe past 2 * limit; one read of at
        # most 256 KiB can overshoot that.
        buffered = len(proc.stdout._buffer)
        data = await proc.stdout.read()
        return buffered, len(data), await proc.wait()

    buffered, total, code = loop.run_until_complete(main())
    assert 0 < buffered <= 2 * limit + 256 * 1024
    assert (total, code) == (size, 0)


def test_subprocess_child_exiting_before_its_pipes_connect(loop):
    async def main():
        # Block the loop before the transport connects its pipes: the child
        # has written, and exited, by then.
        loop.call_soon(time.sleep, 0.5)
        transport, proto = await loop.subprocess_exec(
            ChildRecorder, sys.executable, "-c",
            "import sys; sys.stdout.write('out'); sys.stderr.write('err'); sys.exit(3)")
        await asyncio.wait_for(proto.done, PROMPT)
        proto.assert_well_formed()
        transport.close()
        return bytes(proto.data[1]), bytes(proto.data[2]), transport.get_returncode()

    assert loop.run_until_complete(main()) == (b"out", b"err", 3)


def test_subprocess_silent_child_reports_its_pipes_and_its_exit(loop):
    # A child that exits without output closes its pipes as it exits.
    # Before 3.14 asyncio reports pipe_connection_lost() for each before
    # process_exited() (its child watcher takes as many loop iterations as
    # the pipes' EOF); from 3.14 on the exit is reported as soon as the
    # child is reaped (gh-127049), so it may come first.
    async def main():
        orders = []
        for _ in range(3):
            transport, proto = await loop.subprocess_exec(ChildRecorder, sys.executable, "-c", "pass")
            await asyncio.wait_for(proto.done, PROMPT)
            transport.close()
            orders.append(proto.events)
        return orders

    pipes_lost = [("pipe_lost", 0), ("pipe_lost", 1), ("pipe_lost", 2)]
    for events in loop.run_until_complete(main()):
        if sys.version_info >= (3, 14):
            assert events[0] == "made" and events[-1] == "lost", events
            middle = events[1:-1]
            assert middle.count("exited") == 1, events
            middle.remove("exited")
            assert sorted(middle) == pipes_lost, events
        else:
            assert events[0] == "made" and events[-2:] == ["exited", "lost"], events
            assert sorted(events[1:-2]) == pipes_lost, events


def test_subprocess_writing_child_callbacks_are_well_formed(loop):
    async def main():
        transport, proto = await loop.subprocess_exec(
            ChildRecorder, sys.executable, "-c",
            "import sys; sys.stdout.write('x' * 100000); sys.stderr.write('e')")
        await asyncio.wait_for(proto.done, PROMPT)
        proto.assert_well_formed()
        transport.close()
        return len(proto.data[1]), bytes(proto.data[2])

    assert loop.run_until_complete(main()) == (100000, b"e")


def test_subprocess_exits_while_a_grandchild_holds_stdout(loop):
    grandchild = "import sys, time; time.sleep(0.5); sys.stdout.write('late')"

    async def main():
        transport, proto = await loop.subprocess_exec(
            ChildRecorder, sys.executable, "-c",
            f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {grandchild!r}])",
            stdin=None, stderr=None)
        await asyncio.wait_for(proto.done, PROMPT)
        transport.close()
        return proto.events, bytes(proto.data[1]), transport.get_returncode()

    events, data, code = loop.run_until_complete(main())
    assert events == ["made", "exited", ("data", 1), ("pipe_lost", 1), "lost"]
    assert (data, code) == (b"late", 0)


def test_subprocess_closes_stdout_before_exiting(loop):
    async def main():
        transport, proto = await loop.subprocess_exec(
            ChildRecorder, sys.executable, "-c", "import os, time; os.write(1, b'hi'); os.close(1); time.sleep(0.3)",
            stdin=None, stderr=None)
        await asyncio.wait_for(proto.done, PROMPT)
        transport.close()
        return proto.events, bytes(proto.data[1])

    events, data = loop.run_until_complete(main())
    assert events == ["made", ("data", 1), ("pipe_lost", 1), "exited", "lost"]
    assert data == b"hi"


def test_subprocess_close_while_stdout_is_paused(loop):
    async def main():
        transport, proto = await loop.subprocess_exec(
            lambda: ChildRecorder(on_made=lambda t: t.get_pipe_transport(1).pause_reading()),
            sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)",
            stdin=None, stderr=None)
        await asyncio.sleep(0.2)
        transport.close()
        assert transport.is_closing()
        await asyncio.wait_for(proto.done, PROMPT)
        proto.assert_well_formed()
        return transport.get_returncode(), [e for e in proto.events if e != ("data", 1)]

    code, events = loop.run_until_complete(main())
    assert code == -9
    assert events == ["made", ("pipe_lost", 1), "exited", "lost"]


def test_subprocess_stdin_flow_control(loop):
    class Writer(ChildRecorder):
        def pause_writing(self):
            self.events.append("pause_writing")

        def resume_writing(self):
            self.events.append("resume_writing")

    async def main():
        transport, proto = await loop.subprocess_exec(
            Writer, sys.executable, "-c",
            "import sys, time; time.sleep(0.3); sys.stdout.write(str(len(sys.stdin.buffer.read())))",
            stderr=None)
        stdin = transport.get_pipe_transport(0)
        stdin.write(b"x" * (1024 * 1024))
        buffered = stdin.get_write_buffer_size()
        paused = "pause_writing" in proto.events
        stdin.close()
        await asyncio.wait_for(proto.done, PROMPT)
        transport.close()
        return buffered > 0, paused, "resume_writing" in proto.events, bytes(proto.data[1])

    assert loop.run_until_complete(main()) == (True, True, True, b"1048576")


def test_write_pipe_transport_is_a_transport(loop):
    # asyncio's write pipe transport is an asyncio.Transport (through
    # _FlowControlMixin), so a ReadTransport too: pause_reading() raises
    # NotImplementedError (uvloop's test_process_streams_basic_1 checks
    # that on a subprocess's stdin).
    async def main():
        transport, proto = await loop.subprocess_exec(ChildRecorder, sys.executable, "-c", "import sys; sys.stdin.read()")
        stdin, stdout = transport.get_pipe_transport(0), transport.get_pipe_transport(1)
        kinds = (isinstance(stdin, asyncio.Transport), isinstance(stdin, asyncio.ReadTransport),
                 isinstance(stdout, asyncio.WriteTransport))
        with pytest.raises(NotImplementedError):
            stdin.pause_reading()
        with pytest.raises(NotImplementedError):
            stdin.resume_reading()
        with pytest.raises(AttributeError):
            stdout.write(b"nope")
        stdin.close()
        await asyncio.wait_for(proto.done, PROMPT)
        transport.close()
        return kinds

    assert loop.run_until_complete(main()) == (True, True, False)


# --------------------------------------------------------------------------
# Datagram endpoints on socketpairs


class Datagrams(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.received: asyncio.Queue[tuple[bytes, object]] = asyncio.Queue()
        self.errors: list[BaseException] = []
        self.lost = asyncio.get_running_loop().create_future()

    def datagram_received(self, data, addr):
        self.received.put_nowait((data, addr))

    def error_received(self, exc):
        self.errors.append(exc)

    def connection_lost(self, exc):
        self.lost.set_result(exc)


# The message of gh-114887 (3.13, 3.12.2, 3.11.8); test_datagram.py has the
# socket types each version takes, and empty datagrams.
ANY_DATAGRAM_SOCK = sys.version_info >= (3, 12, 2) or (3, 11, 8) <= sys.version_info < (3, 12)
NOT_DATAGRAM = "A datagram socket was expected" if ANY_DATAGRAM_SOCK else "A UDP Socket was expected"


@pytest.mark.parametrize("family", [socket.AF_UNIX, None], ids=["AF_UNIX", "default-family"])
def test_datagram_endpoint_on_a_socketpair_receives(loop, family):
    a, b = socket.socketpair(family, socket.SOCK_DGRAM) if family else socket.socketpair(type=socket.SOCK_DGRAM)

    async def main():
        transport, proto = await loop.create_datagram_endpoint(Datagrams, sock=a)
        info = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        b.send(b"ping")
        received = await asyncio.wait_for(proto.received.get(), PROMPT)
        transport.close()
        await proto.lost
        return info, received, proto.errors

    with b:
        # An unnamed peer: asyncio's peername and sockname are ''.
        assert loop.run_until_complete(main()) == (("", ""), (b"ping", None), [])


# asyncio fails here (its transport takes the '' peername for "not
# connected" and calls sendto(data, None): a TypeError to the exception
# handler, and the endpoint closes); uvloop sends, and so does ferroloop.
@ferroloop_only
@pytest.mark.parametrize("family", [socket.AF_UNIX, None], ids=["AF_UNIX", "default-family"])
def test_datagram_endpoints_on_a_socketpair_send_both_ways(loop, family):
    a, b = socket.socketpair(family, socket.SOCK_DGRAM) if family else socket.socketpair(type=socket.SOCK_DGRAM)

    async def main():
        ta, pa = await loop.create_datagram_endpoint(Datagrams, sock=a)
        tb, pb = await loop.create_datagram_endpoint(Datagrams, sock=b)
        ta.sendto(b"ping")
        ping = await asyncio.wait_for(pb.received.get(), PROMPT)
        tb.sendto(b"pong", None)
        pong = await asyncio.wait_for(pa.received.get(), PROMPT)
        ta.close()
        tb.close()
        await pa.lost
        await pb.lost
        return ping, pong, pa.errors + pb.errors

    assert loop.run_until_complete(main()) == ((b"ping", None), (b"pong", None), [])


def test_datagram_endpoint_refuses_a_stream_socketpair(loop):
    a, b = socket.socketpair()
    with a, b, pytest.raises(ValueError, match=f"^{NOT_DATAGRAM}, got <socket.socket"):
        loop.run_until_complete(loop.create_datagram_endpoint(Datagrams, sock=a))


def test_sendto_right_after_close_still_sends(loop):
    # An unconnected endpoint sends until its socket goes, one iteration
    # after close().
    async def main():
        server, server_proto = await loop.create_datagram_endpoint(Datagrams, local_addr=("127.0.0.1", 0))
        client, client_proto = await loop.create_datagram_endpoint(Datagrams, local_addr=("127.0.0.1", 0))
        client.close()
        client.sendto(b"parting", server.get_extra_info("sockname"))
        received = await asyncio.wait_for(server_proto.received.get(), PROMPT)
        await client_proto.lost
        server.close()
        return received[0]

    assert loop.run_until_complete(main()) == b"parting"


# asyncio's fails with an AttributeError out of sendto() once the socket is
# gone (it calls the exception handler of a loop it has let go); uvloop's
# test_send_after_close wants such sends dropped, as asyncio drops those of
# a lost connected endpoint.
@ferroloop_only
def test_sendto_after_connection_lost_is_dropped(loop):
    async def main():
        transport, proto = await loop.create_datagram_endpoint(Datagrams, local_addr=("127.0.0.1", 0))
        transport.close()
        await proto.lost
        transport.sendto(b"late", ("127.0.0.1", 9))
        await asyncio.sleep(0.01)
        transport.sendto(b"later", ("127.0.0.1", 9))

    loop.run_until_complete(main())  # and no call to the exception handler


# --------------------------------------------------------------------------
# Private attributes of asyncio's loop that libraries read


def test_private_closed_and_debug(loop):
    assert loop._closed is False
    assert loop._debug is False
    loop.set_debug(True)
    assert loop._debug is True
    loop._debug = False  # asyncio's is a plain attribute: get_debug() follows it
    assert loop.get_debug() is False
    loop.close()
    assert loop._closed is True


def test_private_stopping_and_task_factory(loop):
    seen = []

    def look():
        seen.append(loop._stopping)
        loop.stop()
        seen.append(loop._stopping)

    assert loop._stopping is False
    loop.call_soon(look)
    loop.run_forever()
    assert seen == [False, True]
    assert loop._stopping is False
    assert loop._task_factory is None
    loop.set_task_factory(lambda lp, coro, **kw: asyncio.Task(coro, loop=lp, **kw))
    assert loop._task_factory is loop.get_task_factory()


def test_private_thread_id_while_running(loop):
    async def main():
        return loop._thread_id

    assert loop._thread_id is None
    assert loop.run_until_complete(main()) == threading.get_ident()
    assert loop._thread_id is None


def test_private_task_factory(loop):
    def factory(loop, coro, **kwargs):
        return asyncio.Task(coro, loop=loop, **kwargs)

    assert loop._task_factory is None
    loop.set_task_factory(factory)
    assert loop._task_factory is factory
    loop.set_task_factory(None)
    assert loop._task_factory is None


def test_private_exception_handler(loop, loop_errors):
    assert loop._exception_handler is loop_errors


def test_private_default_executor_and_shutdown_flag(loop):
    # anyio's run() shuts the default executor down through these two.
    assert loop._default_executor is None
    assert loop._executor_shutdown_called is False
    loop.run_until_complete(loop.run_in_executor(None, int))
    executor = loop._default_executor
    assert executor is not None
    loop.run_until_complete(loop.shutdown_default_executor())
    assert loop._executor_shutdown_called is True


def test_private_asyncgens(loop):
    async def agen():
        yield 1
        yield 2

    async def main():
        gen = agen()
        await gen.__anext__()
        tracked = gen in loop._asyncgens
        await gen.aclose()
        return tracked

    assert len(loop._asyncgens) == 0
    assert loop.run_until_complete(main()) is True
    assert loop._asyncgens_shutdown_called is False
    loop.run_until_complete(loop.shutdown_asyncgens())
    assert loop._asyncgens_shutdown_called is True
