"""The WebSocket suite's non-ASGI ceiling: a picows echo server on uvloop,
run with the bench venv's interpreter.

    <venv>/bin/python bench/ws_picows.py PORT

Echoes every data frame as it came (the client sends each message as one
frame), answers the client's close with the same code, then disconnects;
pings are answered by picows itself (`enable_auto_pong`).  Runs until
SIGTERM/SIGINT.  picows does not implement permessage-deflate.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import uvloop
from picows import WSFrame, WSListener, WSMsgType, WSTransport, ws_create_server


class Echo(WSListener):
    def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
        if frame.msg_type == WSMsgType.CLOSE:
            transport.send_close(frame.get_close_code(), frame.get_close_message())
            transport.disconnect()
        elif frame.msg_type in (WSMsgType.TEXT, WSMsgType.BINARY, WSMsgType.CONTINUATION):
            transport.send(frame.msg_type, frame.get_payload_as_memoryview(), frame.fin)


async def main(port: int) -> None:
    server = await ws_create_server(lambda _request: Echo(), "127.0.0.1", port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    uvloop.run(main(int(sys.argv[1])))
