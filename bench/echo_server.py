"""A TCP echo server on one contender's loop: the server side of the echo suite.

    <venv>/bin/python bench/echo_server.py CONTENDER protocol|streams

Listens on a free port of 127.0.0.1 and prints {"port": N, "module_file":
PATH} once accepting (PATH: where the contender's loop was imported from).
Echoes everything it receives until its stdin closes, then prints one JSON
line and exits (0 only for "ok"):

    {"status": "ok" | "error", "connections": N, "bytes": N, "loop_errors": [...]}

`bytes` is what all connections received, for the harness to check against
what the client sent.  The harness owns placement (CPU pinning) and measures
this process from outside (/proc), so nothing here times anything.

Before the loop starts, one 1 MiB buffer is allocated and freed
(`settle_allocator`): glibc serves a request above its mmap threshold (128
KiB at first) with mmap, and raises the threshold only once such a mapped
block is freed whole.  A long-running server gets there with its first large
response or file; a fresh process might never, and a loop that asks for a
max-size read buffer per read (the stdlib's `sock.recv(256 KiB)`, shrunk to
what arrived) then pays mmap, mremap, munmap and a page fault per 4 KiB on
every read: 3-4x the CPU per message, measured.  Every contender gets the
settled allocator, as its server would have in production.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading

from contenders import CONTENDERS, loop_factory, module_file

# Bytes per read in the streams server: the StreamReader's default limit.
READ_SIZE = 64 * 1024
# Allocated and freed once before serving (see the module docs).
ALLOCATOR_SETTLING_BYTES = 1 << 20


class Connection:
    """What one connection received; kept after it closes for the final count."""

    __slots__ = ("received",)

    def __init__(self) -> None:
        self.received = 0


CONNECTIONS: list[Connection] = []


class EchoProtocol(asyncio.Protocol):
    """The Protocol server: every chunk is written back as it arrives.  The
    default eof_received() closes the transport when the client half-closes."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.connection = Connection()
        CONNECTIONS.append(self.connection)

    def data_received(self, data: bytes) -> None:
        self.connection.received += len(data)
        self.transport.write(data)


async def echo_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The streams server: read, write back, and respect flow control."""
    connection = Connection()
    CONNECTIONS.append(connection)
    try:
        while data := await reader.read(READ_SIZE):
            connection.received += len(data)
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


class LoopErrors:
    """Exception handler that records what the loop reports.  The server keeps
    serving (stopping would only turn the error into a client timeout); the
    reports make the run fail at the end."""

    def __init__(self) -> None:
        self.reports: list[str] = []

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        detail = f"{type(exc).__name__}: {exc}" if exc else ""
        self.reports.append(f"{context.get('message', '')} {detail}".strip())


def stop_when_stdin_closes(loop: asyncio.AbstractEventLoop, stop: asyncio.Future) -> None:
    """The harness stops the server by closing our stdin: portable to every
    loop, unlike signals, which a loop blocked in native code may not see."""

    def watch() -> None:
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


async def serve(contender: str, kind: str) -> None:
    loop = asyncio.get_running_loop()
    if kind == "protocol":
        server = await loop.create_server(EchoProtocol, "127.0.0.1", 0)
    else:
        server = await asyncio.start_server(echo_stream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    stop = loop.create_future()
    stop_when_stdin_closes(loop, stop)
    print(json.dumps({"port": port, "module_file": module_file(contender)}), flush=True)
    await stop
    server.close()


def settle_allocator() -> None:
    """Put glibc's malloc in the state of a server that has run a while: a
    freed mmapped block raises its mmap threshold (and trim threshold) to the
    block's size, so later reads of up to 1 MiB come from the heap."""
    block = bytearray(ALLOCATOR_SETTLING_BYTES)
    del block


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("contender", choices=sorted(CONTENDERS))
    parser.add_argument("kind", choices=("protocol", "streams"))
    args = parser.parse_args()

    settle_allocator()
    loop = loop_factory(args.contender)()
    errors = LoopErrors()
    loop.set_exception_handler(errors)
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(serve(args.contender, args.kind))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    record = {
        "status": "error" if errors.reports else "ok",
        "connections": len(CONNECTIONS),
        "bytes": sum(c.received for c in CONNECTIONS),
        "loop_errors": errors.reports[:5],
    }
    print(json.dumps(record), flush=True)
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
