"""Real clients against the server: websockets (asyncio and sync), aiohttp;
subprotocols, accept headers, the scope, deflate on and off."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect as async_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as sync_connect

from ws_support import assert_one_disconnect, peer

MIB = 1024 * 1024


def test_websockets_asyncio_echo_text_and_bytes(ws_server):
    srv = ws_server()

    async def main():
        async with async_connect(srv.ws_url(conn="a"), max_size=None) as ws:
            await ws.send("héllo")
            assert await asyncio.wait_for(ws.recv(), 10) == "héllo"
            await ws.send(b"\x00\xff" * 10)
            assert await asyncio.wait_for(ws.recv(), 10) == b"\x00\xff" * 10
            big = bytes(range(256)) * 4096  # 1 MiB, fragmented by no one
            await ws.send(big)
            assert await asyncio.wait_for(ws.recv(), 10) == big
            await ws.send(["frag", "mented", " text"])  # one message in three frames
            assert await asyncio.wait_for(ws.recv(), 10) == "fragmented text"
            await ws.send("")
            assert await asyncio.wait_for(ws.recv(), 10) == ""

    asyncio.run(main())
    disconnect = assert_one_disconnect(srv.events.wait_done("a"))
    assert disconnect["code"] == 1000


def test_websockets_sync_client(ws_server):
    srv = ws_server()
    with sync_connect(srv.ws_url(conn="s")) as ws:
        for i in range(50):
            ws.send(f"message {i}")
            assert ws.recv(timeout=10) == f"message {i}"
        ws.ping(b"are you there").wait(10)
        ws.close(code=4000, reason="done")
    disconnect = assert_one_disconnect(srv.events.wait_done("s"))
    assert disconnect["code"] == 4000
    # ASGI WebSocket spec 2.5: the disconnect carries the reason.
    assert disconnect.get("reason") == "done"


def test_aiohttp_client(ws_server):
    import aiohttp

    srv = ws_server()

    async def main():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(srv.ws_url(conn="h"), autoping=True) as ws:
                await ws.send_str("from aiohttp")
                assert (await ws.receive_str(timeout=10)) == "from aiohttp"
                await ws.send_bytes(b"\x01" * 70000)
                assert (await ws.receive_bytes(timeout=10)) == b"\x01" * 70000
                await ws.close(code=4001, message=b"bye")

    asyncio.run(main())
    disconnect = assert_one_disconnect(srv.events.wait_done("h"))
    assert disconnect["code"] == 4001


def test_scope(ws_server):
    srv = ws_server()
    url = srv.ws_url("/scope", conn="sc") + "&x=%20y"
    with sync_connect(url, subprotocols=["one", "two"], additional_headers={"X-Custom": "v"}) as ws:
        scope = json.loads(ws.recv(timeout=10))
    assert scope["type"] == "websocket"
    assert scope["asgi"]["version"] == "3.0"
    # The spec version that has websocket.disconnect's reason.
    if peer() == "ferroloop":
        assert scope["asgi"]["spec_version"] == "2.5"
    assert scope["http_version"] == "1.1"
    assert scope["scheme"] == "ws"
    assert scope["path"] == "/scope"
    assert scope["raw_path"] == "/scope"
    assert scope["query_string"] == "id=sc&x=%20y"
    assert scope["root_path"] == ""
    assert scope["subprotocols"] == ["one", "two"]
    assert scope["client"][0] == "127.0.0.1"
    assert scope["server"] == ["127.0.0.1", srv.port]
    headers = dict(scope["headers"])
    assert headers["x-custom"] == "v"
    assert headers["upgrade"].lower() == "websocket"
    assert "sec-websocket-key" in headers
    assert "websocket.http.response" in scope["extensions"]
    assert scope["has_state"]


def test_root_path(ws_server):
    srv = ws_server(root_path="/api")
    with sync_connect(srv.ws_url("/scope", conn="rp")) as ws:
        scope = json.loads(ws.recv(timeout=10))
    assert scope["root_path"] == "/api"
    # As for HTTP (and uvicorn): the path includes root_path.
    assert scope["path"] == "/api/scope"


@pytest.mark.parametrize(
    "offered, pick, chosen",
    [
        (["chat", "superchat"], "superchat", "superchat"),
        (["chat"], "other", None),
        ([], "chat", None),
    ],
)
def test_subprotocol_negotiation(ws_server, offered, pick, chosen):
    srv = ws_server()
    url = srv.ws_url("/subprotocol", conn="p", query=f"pick={pick}")
    with sync_connect(url, subprotocols=offered or None) as ws:
        assert ws.subprotocol == chosen
        assert ws.response.headers.get("sec-websocket-protocol") == chosen
        ws.send("x")
        assert ws.recv(timeout=10) == "x"
    assert srv.events.wait("p", "subprotocols")[0]["offered"] == offered


def test_accept_headers(ws_server):
    srv = ws_server()
    with sync_connect(srv.ws_url("/headers", conn="hd")) as ws:
        assert ws.response.headers["x-ws-test"] == "accepted"
        assert ws.response.headers["set-cookie"] == "session=1"
        ws.send("ok")
        assert ws.recv(timeout=10) == "ok"


def test_close_before_accept_is_403(ws_server):
    srv = ws_server()
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/deny", conn="d")):
            pass
    assert info.value.response.status_code == 403
    events = srv.events.wait_done("d")
    assert [e["event"] for e in events if e["event"] == "disconnect"] == ["disconnect"]


def test_denial_response_extension(ws_server):
    srv = ws_server()
    with pytest.raises(InvalidStatus) as info:
        with sync_connect(srv.ws_url("/deny-response", conn="dr")):
            pass
    response = info.value.response
    assert response.status_code == 401
    assert response.headers["x-ws-test"] == "denied"
    assert response.body == b"no entry"
    assert not srv.events.of("dr", "no-extension")


def test_server_close_with_code_and_reason(ws_server):
    srv = ws_server()

    async def main():
        async with async_connect(srv.ws_url("/server-close", conn="sc")) as ws:
            await ws.send("hi")
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 10)
            return info.value.rcvd

    rcvd = asyncio.run(main())
    assert (rcvd.code, rcvd.reason) == (4001, "bye")
    events = srv.events.wait_done("sc")
    assert_one_disconnect(events)


@pytest.mark.parametrize("deflate", [True, False])
def test_permessage_deflate_on_and_off(ws_server, deflate):
    srv = ws_server(ws_per_message_deflate=deflate)
    text = "compressible " * 5000
    with sync_connect(srv.ws_url(conn="z"), compression="deflate") as ws:
        extensions = ws.response.headers.get("sec-websocket-extensions")
        if deflate:
            assert extensions is not None and extensions.startswith("permessage-deflate"), extensions
        else:
            assert extensions is None
        for _ in range(5):  # context takeover across messages, if negotiated
            ws.send(text)
            assert ws.recv(timeout=10) == text
        ws.send(b"\x00" * MIB)
        assert ws.recv(timeout=10) == b"\x00" * MIB


def test_deflate_no_context_takeover_and_window_bits(ws_server):
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

    srv = ws_server()
    factory = ClientPerMessageDeflateFactory(
        server_no_context_takeover=True, client_no_context_takeover=True, server_max_window_bits=10, client_max_window_bits=10
    )
    with sync_connect(srv.ws_url(conn="zt"), extensions=[factory], compression=None) as ws:
        extensions = ws.response.headers["sec-websocket-extensions"]
        assert "server_no_context_takeover" in extensions
        assert "server_max_window_bits=10" in extensions
        for i in range(5):
            ws.send(f"again and again {i} " * 200)
            assert ws.recv(timeout=10) == f"again and again {i} " * 200


def test_plain_http_still_served(ws_server):
    import httpx

    srv = ws_server()
    response = httpx.get(f"{srv.url}/anything")
    assert response.text == "plain http"


def test_proxy_headers(ws_server):
    srv = ws_server()
    headers = {"X-Forwarded-For": "198.51.100.3", "X-Forwarded-Proto": "https"}
    with sync_connect(srv.ws_url("/scope", conn="px"), additional_headers=headers) as ws:
        scope = json.loads(ws.recv(timeout=10))
    # The peer (127.0.0.1) is trusted by default: a TLS proxy's wss.
    assert scope["client"][0] == "198.51.100.3"
    assert scope["scheme"] == "wss"
