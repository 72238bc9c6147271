"""Python code that the server runs while decoding a message (a body's
buffer export, a header iterable) calling back into ``send()``: a clear
``RuntimeError`` for the inner call, never a panic, and the server goes on
serving."""

from __future__ import annotations

import sys

import httpx
import pytest


def _app(make_body, make_headers, seen):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return

        def reenter():
            try:
                send({"type": "http.response.body", "body": b"inner"})
            except BaseException as exc:  # recorded, then the outer call goes on
                seen.append(exc)

        await send({"type": "http.response.start", "status": 200, "headers": make_headers(reenter)})
        await send({"type": "http.response.body", "body": make_body(reenter)})

    return app


def _check(start_server, make_body, make_headers):
    seen: list[BaseException] = []
    srv = start_server(_app(make_body, make_headers, seen), lifespan="off")
    with httpx.Client() as client:
        response = client.get(f"{srv.url}/")
        assert (response.status_code, response.content) == (200, b"ok")
        assert len(seen) == 1, seen
        assert type(seen[0]) is RuntimeError, seen
        assert "inside another send()" in str(seen[0])
        # The connection and the server are fine afterwards.
        assert client.get(f"{srv.url}/").status_code == 200


def test_send_from_a_header_iterable_is_refused(start_server):
    def headers(reenter):
        def gen():
            reenter()
            yield (b"x-ok", b"1")

        return gen()

    _check(start_server, lambda reenter: b"ok", headers)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="__buffer__ (PEP 688) is 3.12+")
def test_send_from_a_body_buffer_export_is_refused(start_server):
    class Body:
        def __init__(self, reenter):
            self.reenter = reenter

        def __buffer__(self, flags):
            self.reenter()
            return memoryview(b"ok")

    _check(start_server, Body, lambda reenter: [])


@pytest.mark.skipif(sys.version_info < (3, 12), reason="__buffer__ (PEP 688) is 3.12+")
def test_an_error_in_a_body_buffer_export_reaches_the_app(start_server):
    seen: list[BaseException] = []

    class Body:
        def __buffer__(self, flags):
            raise ValueError("export failed")

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        try:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": Body()})
        except BaseException as exc:
            seen.append(exc)
            await send({"type": "http.response.body", "body": b"ok"})

    srv = start_server(app, lifespan="off")
    response = httpx.get(f"{srv.url}/")
    assert (response.status_code, response.content) == (200, b"ok")
    assert [type(e) for e in seen] == [ValueError]
