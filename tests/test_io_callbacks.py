"""add_reader, remove_reader, add_writer, remove_writer."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from _helpers import run_once, run_until


@pytest.fixture
def sockets():
    """A connected, non-blocking socket pair."""
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    with a, b:
        yield a, b


def fileno_of(sock, as_int):
    return sock.fileno() if as_int else sock


@pytest.mark.parametrize("as_int", [True, False], ids=["fd", "fileobj"])
def test_reader_fires_when_data_arrives(loop, sockets, as_int):
    a, b = sockets
    received = []

    def on_readable(tag):
        received.append((tag, a.recv(100)))
        loop.stop()

    loop.add_reader(fileno_of(a, as_int), on_readable, "tag")
    loop.call_later(0.01, b.send, b"hello")
    loop.run_forever()
    assert received == [("tag", b"hello")]
    assert loop.remove_reader(fileno_of(a, as_int)) is True


@pytest.mark.parametrize("as_int", [True, False], ids=["fd", "fileobj"])
def test_writer_fires_when_writable(loop, sockets, as_int):
    a, b = sockets
    calls = []

    def on_writable(tag):
        calls.append(tag)
        a.send(b"data")
        loop.remove_writer(fileno_of(a, as_int))

    loop.add_writer(fileno_of(a, as_int), on_writable, "tag")
    run_until(loop, lambda: calls)
    run_once(loop)
    assert calls == ["tag"]
    assert b.recv(100) == b"data"


def test_readers_are_level_triggered(loop, sockets):
    a, b = sockets
    calls = []

    def on_readable():
        # Not reading: the fd stays readable and the callback fires again.
        calls.append(None)
        if len(calls) == 3:
            loop.remove_reader(a)

    b.send(b"x")
    loop.add_reader(a, on_readable)
    for _ in range(5):
        run_once(loop)
    assert len(calls) == 3


def test_remove_reader_and_writer_return_whether_one_was_registered(loop, sockets):
    a, b = sockets
    assert loop.remove_reader(a) is False
    assert loop.remove_writer(a) is False
    loop.add_reader(a, lambda: None)
    assert loop.remove_writer(a) is False
    assert loop.remove_reader(a) is True
    assert loop.remove_reader(a) is False
    loop.add_writer(a.fileno(), lambda: None)
    assert loop.remove_writer(a) is True  # fd and file object name the same fd
    assert loop.remove_writer(a.fileno()) is False


def test_removed_reader_does_not_fire(loop, sockets):
    a, b = sockets
    calls = []
    loop.add_reader(a, calls.append, "reader")
    assert loop.remove_reader(a)
    b.send(b"x")
    loop.call_later(0.02, loop.stop)
    loop.run_forever()
    assert calls == []


def test_add_reader_again_replaces_the_callback(loop, sockets):
    a, b = sockets
    calls = []

    def make(tag):
        def on_readable():
            calls.append(tag)
            a.recv(100)
            loop.stop()

        return on_readable

    loop.add_reader(a, make("old"))
    loop.add_reader(a, make("new"))
    b.send(b"x")
    loop.run_forever()
    assert calls == ["new"]
    assert loop.remove_reader(a) is True


def test_reader_and_writer_on_the_same_fd(loop, sockets):
    a, b = sockets
    events = []

    def on_readable():
        events.append(("read", a.recv(100)))

    def on_writable():
        events.append("write")
        loop.remove_writer(a)

    loop.add_reader(a, on_readable)
    loop.add_writer(a, on_writable)
    run_until(loop, lambda: "write" in events)
    assert events == ["write"]
    # Removing the writer left the reader in place.
    b.send(b"ping")
    run_until(loop, lambda: ("read", b"ping") in events)
    assert loop.remove_reader(a) is True
    assert loop.remove_writer(a) is False


def test_reader_exception_goes_to_the_handler(loop, loop_errors, sockets):
    a, b = sockets

    def on_readable():
        a.recv(100)
        loop.remove_reader(a)
        raise ValueError("in reader")

    loop.add_reader(a, on_readable)
    b.send(b"x")
    run_until(loop, lambda: loop_errors.records)
    [context] = loop_errors.take()
    assert context["message"].startswith("Exception in callback ")
    assert isinstance(context["exception"], ValueError)


def test_reused_fd_number_gets_the_new_registration(loop):
    # Register, remove and close an fd, then reuse its number: only the new
    # owner's callback may fire.
    calls = []
    old_a, old_b = socket.socketpair()
    number = old_a.fileno()
    loop.add_reader(old_a, calls.append, "old")
    old_b.send(b"stale")
    assert loop.remove_reader(number)
    old_a.close()
    old_b.close()

    new_a, new_b = socket.socketpair()
    with new_a, new_b:
        # Usually the lowest free number is reused at once; force it if not.
        fd = new_a.fileno() if new_a.fileno() == number else os.dup2(new_a.fileno(), number)
        try:
            loop.add_reader(fd, lambda: calls.append(("new", os.read(fd, 100))))
            new_b.send(b"fresh")
            run_until(loop, lambda: calls)
            assert calls == [("new", b"fresh")]
            assert loop.remove_reader(fd)
        finally:
            if fd != new_a.fileno():
                os.close(fd)


def test_removing_a_reader_whose_fd_was_closed(loop):
    a, b = socket.socketpair()
    number = a.fileno()
    loop.add_reader(number, lambda: None)
    a.close()
    b.close()
    assert loop.remove_reader(number) is True
    run_once(loop)


# --------------------------------------------------------------------------
# Invalid file descriptors


@pytest.mark.parametrize("method", ["add_reader", "add_writer"])
def test_negative_fd(loop, method):
    with pytest.raises(ValueError, match=r"^Invalid file descriptor: -1$"):
        getattr(loop, method)(-1, lambda: None)


@pytest.mark.parametrize("method", ["add_reader", "add_writer", "remove_reader", "remove_writer"])
def test_object_without_fileno(loop, method):
    args = (lambda: None,) if method.startswith("add") else ()
    with pytest.raises(ValueError, match=r"^Invalid file object: 'not a file'$"):
        getattr(loop, method)("not a file", *args)


@pytest.mark.parametrize("method", ["add_reader", "add_writer"])
def test_closed_fd(loop, method):
    sock = socket.socket()
    number = sock.fileno()
    sock.close()
    with pytest.raises(OSError) as info:
        getattr(loop, method)(number, lambda: None)
    assert info.value.errno == errno.EBADF
    assert loop.remove_reader(number) is False


@pytest.mark.parametrize("method", ["add_reader", "add_writer"])
def test_regular_file_cannot_be_watched(loop, method, tmp_path):
    # epoll refuses regular files; asyncio's selector loop surfaces EPERM.
    path = tmp_path / "file"
    path.write_bytes(b"content")
    with open(path, "rb") as f:
        with pytest.raises(PermissionError) as info:
            getattr(loop, method)(f, lambda: None)
        assert info.value.errno == errno.EPERM
        assert getattr(loop, method.replace("add", "remove"))(f) is False
