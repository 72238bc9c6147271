"""App misbehaviour and the server's answers: exceptions before/after the
response start, wrong message order and types, response splitting,
``ClientDisconnected``, ``http.disconnect``; error and access logs."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

import apps
import ferroloop
from http_support import PeerClosed, request_bytes, wait_until


def _capture_app(steps, outcome):
    """An app running ``steps(send)``; records what the app saw raised."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        try:
            await steps(send)
        except BaseException as exc:
            outcome.append(exc)
            raise
        else:
            outcome.append(None)

    return app


# --------------------------------------------------------------------------
# Exceptions


def test_exception_before_start_gives_500_and_is_logged(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info")
    errors = capture_logs("error")
    response = httpx.get(f"{srv.url}/error")
    assert response.status_code == 500
    wait_until(lambda: any(r.exc_info for r in errors.records), timeout=3)
    logged = [r for r in errors.records if r.exc_info]
    assert logged[0].levelname == "ERROR"
    assert isinstance(logged[0].exc_info[1], apps.AppError)
    assert "boom-before-start" in errors.text()
    # The server keeps serving.
    assert httpx.get(f"{srv.url}/").status_code == 200


def test_exception_after_start_closes_connection(start_server, capture_logs):
    srv = start_server(apps.app)
    errors = capture_logs("error")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/error-after-start"))
        head = conn.read_response(method="HEAD")  # the head only
        assert head.status == 200
        rest = conn.read_all(5.0)
        assert conn.eof
        # The chunked body was cut off: no terminating zero-size chunk.
        assert b"partial" in rest
        assert not rest.endswith(b"0\r\n\r\n")
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{srv.url}/error-after-start")
    wait_until(lambda: "boom-after-start" in errors.text(), timeout=3)


def test_app_returning_without_response_gives_500(start_server):
    async def app(scope, receive, send):
        return None

    srv = start_server(app, lifespan="off")
    assert httpx.get(f"{srv.url}/").status_code == 500


def test_app_returning_mid_body_closes_connection(start_server):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"10")]})
        await send({"type": "http.response.body", "body": b"12345", "more_body": True})

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        with pytest.raises(PeerClosed):
            conn.read_response()


def test_content_length_mismatch_too_much_body(start_server):
    """More body than the declared content-length is an app error: the extra
    bytes are never sent as if they were the next response."""
    outcome = []

    async def steps(send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
        await send({"type": "http.response.body", "body": b"abcdef"})

    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/") + request_bytes("GET", "/"))
        data = conn.read_all(5.0)
    assert b"def" not in data


# --------------------------------------------------------------------------
# Message order and types


async def _body_before_start(send):
    await send({"type": "http.response.body", "body": b"x"})


async def _start_twice(send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.start", "status": 200, "headers": []})


async def _unknown_type(send):
    await send({"type": "http.response.bogus"})


async def _trailers_without_announcing(send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"x", "more_body": False})
    await send({"type": "http.response.trailers", "headers": []})


@pytest.mark.parametrize(
    "steps", [_body_before_start, _start_twice, _unknown_type], ids=["body-before-start", "start-twice", "unknown-type"]
)
def test_wrong_message_order_raises_runtime_error(start_server, steps):
    outcome = []
    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        if steps is _start_twice:
            conn.read_all()  # a 200 head may be out already; either way it ends
        else:
            assert conn.read_response().status == 500
    wait_until(lambda: outcome, timeout=3)
    assert isinstance(outcome[0], RuntimeError), outcome


def test_send_after_response_complete_raises_runtime_error(start_server):
    outcome = []

    async def steps(send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        await send({"type": "http.response.body", "body": b"more"})

    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    response = httpx.get(f"{srv.url}/")
    assert (response.status_code, response.content) == (200, b"ok")
    wait_until(lambda: outcome, timeout=3)
    assert isinstance(outcome[0], RuntimeError), outcome


def _start_with(**fields):
    async def steps(send):
        message = {"type": "http.response.start", "status": 200, "headers": []}
        message.update(fields)
        await send(message)
        await send({"type": "http.response.body", "body": b""})

    return steps


async def _str_body(send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": "text, not bytes"})


@pytest.mark.parametrize(
    "steps",
    [
        _start_with(status="200"),
        _start_with(headers=[("content-type", "text/plain")]),
        _start_with(headers=[(b"content-type", 5)]),
        _start_with(headers=5),
        _str_body,
    ],
    ids=["status-str", "header-str", "header-value-int", "headers-int", "body-str"],
)
def test_wrong_message_types_raise_type_error(start_server, steps):
    outcome = []
    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        if steps is _str_body:
            conn.read_all()  # after a valid start: 500 or a cut-off 200
        else:
            assert conn.read_response().status == 500
    wait_until(lambda: outcome, timeout=3)
    assert isinstance(outcome[0], TypeError), outcome


@pytest.mark.parametrize(
    "value", [b"a\r\nSet-Cookie: evil=1", b"a\nSet-Cookie: evil=1", b"a\rb", b"a\x00b"], ids=["crlf", "lf", "cr", "nul"]
)
def test_response_splitting_header_values_rejected(start_server, value):
    outcome = []

    async def steps(send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-user", value)]})
        await send({"type": "http.response.body", "body": b"unsafe"})

    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/"))
        response = conn.read_response()
    assert response.status == 500
    assert b"evil" not in response.head
    assert response.header("set-cookie") is None
    assert isinstance(outcome[0], Exception), "the app's send() must raise"


@pytest.mark.parametrize("name", [b"x user", b"x:user", b"x\r\nuser", b""], ids=["space", "colon", "crlf", "empty"])
def test_invalid_response_header_names_rejected(start_server, name):
    outcome = []

    async def steps(send):
        await send({"type": "http.response.start", "status": 200, "headers": [(name, b"v")]})
        await send({"type": "http.response.body", "body": b"unsafe"})

    srv = start_server(_capture_app(steps, outcome), lifespan="off")
    response = httpx.get(f"{srv.url}/")
    assert response.status_code == 500
    assert isinstance(outcome[0], Exception)


# --------------------------------------------------------------------------
# Client going away


def test_client_disconnected_raised_from_send(start_server):
    outcome = []
    first_sent = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/forever":
            await apps.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            for _ in range(2000):  # ~20 s at most
                await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
                first_sent.set()
                await asyncio.sleep(0.01)
        except BaseException as exc:
            outcome.append(exc)
            raise
        outcome.append(None)

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/forever"))
        conn.read_response(method="HEAD")
        assert first_sent.wait(5)
    wait_until(lambda: outcome, timeout=10)
    assert isinstance(outcome[0], ferroloop.ClientDisconnected), outcome
    assert isinstance(outcome[0], OSError)
    assert httpx.get(f"{srv.url}/").status_code == 200


def test_client_disconnected_is_an_oserror_subclass():
    assert issubclass(ferroloop.ClientDisconnected, OSError)


def test_receive_reports_disconnect_after_client_closes(start_server):
    messages = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            messages.append(message["type"])
            if message["type"] == "http.disconnect":
                return

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/", body=b"abc"))
        wait_until(lambda: messages)
    wait_until(lambda: "http.disconnect" in messages, timeout=5)
    assert messages == ["http.request", "http.disconnect"]


def test_receive_disconnect_after_response_sent(start_server):
    """After the response, a further receive() waits for, then reports,
    http.disconnect (the ASGI "request complete" signal)."""
    messages = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        messages.append((await receive())["type"])
        await apps.respond(send, 200, b"done")
        messages.append((await receive())["type"])

    srv = start_server(app, lifespan="off")
    with httpx.Client() as client:
        assert client.get(f"{srv.url}/").text == "done"
    wait_until(lambda: len(messages) == 2, timeout=10)
    assert messages == ["http.request", "http.disconnect"]


def test_abandoned_request_body_upload(start_server):
    """Client disconnects mid-body: the reading app gets http.disconnect."""
    messages = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            messages.append(message["type"])
            if message["type"] == "http.disconnect" or not message.get("more_body"):
                return

    srv = start_server(app, lifespan="off")
    with srv.raw() as conn:
        conn.send(request_bytes("POST", "/", headers=[("Content-Length", "100000")]))
        conn.send(b"a" * 1000)
        wait_until(lambda: messages)
    wait_until(lambda: messages[-1] == "http.disconnect", timeout=5)


# --------------------------------------------------------------------------
# Logs


def test_access_log_format(start_server, capture_logs):
    srv = start_server(apps.app, log_level="info")  # on by default
    access = capture_logs("access")
    with srv.raw() as conn:
        conn.send(request_bytes("GET", "/status?code=201&x=1"))
        assert conn.read_response().status == 201
        port = conn.local_port
        conn.send(request_bytes("POST", "/echo", version="1.0", body=b"z"))
        conn.read_response()
    expected = [
        f'127.0.0.1:{port} - "GET /status?code=201&x=1 HTTP/1.1" 201 Created',
        f'127.0.0.1:{port} - "POST /echo HTTP/1.0" 200 OK',
    ]
    wait_until(lambda: len(access.records) >= 2, timeout=3)
    assert access.messages() == expected


def test_no_access_log_when_disabled(start_server, capture_logs):
    srv = start_server(apps.app, access_log=False, log_level="info")
    access = capture_logs("access")
    assert httpx.get(f"{srv.url}/").status_code == 200
    time.sleep(0.2)
    assert access.records == []
