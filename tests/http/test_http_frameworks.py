"""Starlette and FastAPI on the native server: routing, JSON,
streaming responses, background tasks, request.stream(), lifespan state,
root_path."""

from __future__ import annotations

import asyncio
import hashlib
import json

import httpx

from framework_apps import make_fastapi_app, make_starlette_app
from http_support import wait_until

MIB = 1024 * 1024


def test_starlette_routing_and_json(start_server):
    record = []
    srv = start_server(make_starlette_app(record))
    with httpx.Client(base_url=srv.url) as client:
        assert client.get("/items/42?q=x").json() == {"id": 42, "q": "x"}
        assert client.get("/items/notanint").status_code == 404
        assert client.get("/nope").status_code == 404
        assert client.post("/json", json={"a": [1, 2]}).json() == {"received": {"a": [1, 2]}, "type": "dict"}
        assert client.get("/json").status_code == 405
        assert client.get("/empty").status_code == 204


def test_starlette_streaming_response(start_server):
    srv = start_server(make_starlette_app([]))
    with httpx.Client() as client:
        with client.stream("GET", f"{srv.url}/stream") as response:
            assert response.headers["transfer-encoding"] == "chunked"
            body = b"".join(response.iter_bytes())
    assert body == b"".join(f"line {i}\n".encode() for i in range(5))


def test_starlette_background_task_runs_after_response(start_server):
    record = []
    srv = start_server(make_starlette_app(record))
    response = httpx.get(f"{srv.url}/background?v=7")
    assert response.text == "queued"
    wait_until(lambda: ("background", "7") in record, timeout=5)


def test_starlette_request_stream_large_upload(start_server):
    srv = start_server(make_starlette_app([]))
    block = bytes(range(256)) * 4096  # 1 MiB

    def body():
        for _ in range(12):  # under the default 16 MiB max_body_size
            yield block

    expected = hashlib.sha256(block * 12).hexdigest()
    response = httpx.post(f"{srv.url}/upload", content=body(), timeout=60)
    data = response.json()
    assert data["size"] == 12 * MIB
    assert data["sha256"] == expected
    assert data["pieces"] > 1, "request.stream() got the body in one piece"


def test_starlette_request_stream_chunked_upload_aiohttp(start_server):
    import aiohttp

    srv = start_server(make_starlette_app([]))

    async def main():
        async def gen():
            for i in range(10):
                yield b"%d" % i * 1000

        async with aiohttp.ClientSession() as session:
            async with session.put(f"{srv.url}/upload", data=gen()) as r:
                return await r.json()

    data = asyncio.run(main())
    assert data["size"] == 10_000


def test_starlette_lifespan_state(start_server):
    record = []
    srv = start_server(make_starlette_app(record))
    assert record == ["startup"]
    assert httpx.get(f"{srv.url}/state").text == "hello from lifespan"
    srv.stop()
    assert record == ["startup", "shutdown"]


def test_starlette_root_path(start_server):
    srv = start_server(make_starlette_app([]), root_path="/api")
    with httpx.Client(base_url=srv.url) as client:
        assert client.get("/items/3").json() == {"id": 3, "q": None}
        url = client.get("/url").json()
    assert url["url"] == f"{srv.url}/api/url"
    assert url["root_path"] == "/api"


def test_starlette_proxy_headers_in_request_url(start_server):
    srv = start_server(make_starlette_app([]))
    data = httpx.get(
        f"{srv.url}/url", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.3"}
    ).json()
    assert data["url"].startswith("https://")
    assert data["client"] == "198.51.100.3"


def test_fastapi_routing_validation_and_dependencies(start_server):
    record = []
    srv = start_server(make_fastapi_app(record))
    with httpx.Client(base_url=srv.url) as client:
        assert client.get("/items/5", params={"q": "s"}).json() == {"item_id": 5, "q": "s"}
        assert client.get("/items/five").status_code == 422
        created = client.post("/items", json={"name": "x", "price": 2.5, "tags": ["a"]})
        assert created.json() == {"name": "x", "total": 5.0, "tags": ["a"]}
        assert client.post("/items", json={"name": "x"}).status_code == 422
        assert client.post("/items", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
        assert client.get("/private", headers={"x-token": "secret"}).json() == {"ok": True}
        assert client.get("/private", headers={"x-token": "wrong"}).status_code == 401
        assert client.get("/private").status_code == 422
        assert client.get("/sync").json() == {"thread": "threadpool"}
        assert client.get("/openapi.json").json()["paths"]["/items"]["post"]
        assert client.get("/docs").status_code == 200


def test_fastapi_streaming_and_background(start_server):
    record = []
    srv = start_server(make_fastapi_app(record))
    with httpx.Client(base_url=srv.url) as client:
        assert client.get("/stream").text == "0,1,2,"
        assert client.post("/notify", params={"value": "v1"}).json() == {"queued": "v1"}
    wait_until(lambda: ("background", "v1") in record, timeout=5)


def test_fastapi_request_stream_and_state(start_server):
    record = []
    srv = start_server(make_fastapi_app(record))

    async def main():
        async def gen():
            for _ in range(16):
                yield b"f" * 65536

        async with httpx.AsyncClient(base_url=srv.url) as client:
            upload = await client.put("/upload", content=gen())
            state = await client.get("/state")
        return upload.json(), state.json()

    upload, state = asyncio.run(main())
    assert upload == {"size": 16 * 65536}
    assert state == {"db": "fake-db"}
    srv.stop()
    assert record[0] == "startup" and record[-1] == "shutdown"


def test_fastapi_concurrent_clients(start_server):
    srv = start_server(make_fastapi_app([]))

    async def main():
        async with httpx.AsyncClient(base_url=srv.url) as client:
            results = await asyncio.gather(*[client.get(f"/items/{i}") for i in range(100)])
        return [r.json()["item_id"] for r in results]

    assert asyncio.run(main()) == list(range(100))


# --------------------------------------------------------------------------
# The request's task (the server's native AppTask) keeps the cancellation
# books the way the running version's asyncio.Task does: each scenario runs
# once in the request's own task and once in an asyncio.Task the app creates,
# and both must end the same way.


async def _cancel_then_uncancel():
    # 3.13 (gh-116720): an uncancel() that brings cancelling() back to 0
    # also withdraws a cancel() made while the task was running; up to 3.12
    # the CancelledError still comes at the next await.
    task = asyncio.current_task()
    task.cancel()
    task.uncancel()
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        task.uncancel()
        return f"CancelledError, cancelling={task.cancelling()}"
    return f"not cancelled, cancelling={task.cancelling()}"


async def _timeout_expires():
    try:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(5)
    except TimeoutError:
        return f"TimeoutError, cancelling={asyncio.current_task().cancelling()}"
    return "no timeout"


async def _task_group_child_fails():
    async def fail():
        raise ValueError("child")

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(fail())
            await asyncio.sleep(5)
    except ExceptionGroup as eg:
        return f"{eg.exceptions!r}, cancelling={asyncio.current_task().cancelling()}"
    return "no error"


async def _task_group_in_an_expiring_timeout():
    try:
        async with asyncio.timeout(0.01):
            async with asyncio.TaskGroup() as group:
                group.create_task(asyncio.sleep(5))
                await asyncio.sleep(5)
    except TimeoutError:
        return f"TimeoutError, cancelling={asyncio.current_task().cancelling()}"
    return "no timeout"


async def _anyio_cancel_scopes():
    import anyio

    out = []
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(5)
    out.append(f"move_on_after caught={scope.cancelled_caught}")
    with anyio.CancelScope() as scope:
        scope.cancel()
        await anyio.sleep(0)
    out.append(f"cancel() caught={scope.cancelled_caught}")
    async with anyio.create_task_group() as group:
        group.start_soon(anyio.sleep, 0.001)
    out.append(f"to_thread={await anyio.to_thread.run_sync(lambda: 42)}")
    out.append(f"cancelling={asyncio.current_task().cancelling()}")
    return ", ".join(out)


CANCELLATION_SCENARIOS = {f.__name__: f for f in (
    _cancel_then_uncancel, _timeout_expires, _task_group_child_fails,
    _task_group_in_an_expiring_timeout, _anyio_cancel_scopes)}


async def _cancellation_app(scope, receive, send):
    if scope["type"] != "http":
        return
    scenario = CANCELLATION_SCENARIOS[scope["path"].strip("/")]
    outcomes = {}
    for where in ("request task", "asyncio.Task"):
        try:
            if where == "request task":
                outcomes[where] = await scenario()
            else:
                outcomes[where] = await asyncio.get_running_loop().create_task(scenario())
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcomes[where] = f"raised {exc!r}"
    body = json.dumps(outcomes).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def test_request_task_cancellation_matches_asyncio_task(start_server):
    srv = start_server(_cancellation_app, lifespan="off")
    with httpx.Client(base_url=srv.url, timeout=10) as client:
        outcomes = {name: client.get(f"/{name}").json() for name in CANCELLATION_SCENARIOS}
    differing = {name: o for name, o in outcomes.items() if o["request task"] != o["asyncio.Task"]}
    assert not differing, differing
