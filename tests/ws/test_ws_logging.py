"""The access log has a line when a session is accepted or refused
(uvicorn's ``"WebSocket /path" [accepted]`` style) and one when it closes,
with the code."""

from __future__ import annotations

import re
import signal

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as sync_connect

from ws_support import peer, wait_until


def test_access_log_accepted_and_closed(ws_server):
    srv = ws_server()
    with sync_connect(srv.ws_url("/echo", conn="log")) as ws:
        ws.send("x")
        ws.recv(timeout=10)
        ws.close(4002)
    srv.events.wait_done("log")
    accepted = re.compile(r'127\.0\.0\.1:\d+ - "WebSocket /echo\?id=log" \[accepted\]')
    wait_until(lambda: accepted.search(srv.output()), message=f"no accepted line:\n{srv.output()}")
    # uvicorn (websockets-sansio) logs no line when a session closes.
    if peer() == "ferroloop":
        closed = re.compile(r'"WebSocket /echo\?id=log".*closed.*4002')
        wait_until(lambda: closed.search(srv.output()), message=f"no closed line with the code:\n{srv.output()}")


def test_access_log_refused(ws_server):
    srv = ws_server()
    with pytest.raises(InvalidStatus):
        with sync_connect(srv.ws_url("/deny", conn="ref")):
            pass
    refused = re.compile(r'"WebSocket /deny\?id=ref" (403|\[rejected\])')
    wait_until(lambda: refused.search(srv.output()), message=f"no refused line:\n{srv.output()}")


@pytest.mark.uvicorn_differs("its [accepted] line is on the error logger, not the access log")
def test_no_access_log(ws_server):
    srv = ws_server(no_access_log=True)
    with sync_connect(srv.ws_url("/echo", conn="quiet")) as ws:
        ws.send("x")
        ws.recv(timeout=10)
    srv.events.wait_done("quiet")
    srv.send_signal(signal.SIGTERM)
    srv.wait_exit()
    assert "[accepted]" not in srv.output()
