"""Starlette and FastAPI apps for the HTTP server tests (built per test, so
each gets its own record of background tasks and lifespan events)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib

from fastapi import BackgroundTasks, Depends, FastAPI, Header, HTTPException, Request as FastAPIRequest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route


def make_starlette_app(record: list):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        record.append("startup")
        yield {"greeting": "hello from lifespan"}
        record.append("shutdown")

    async def item(request: Request):
        return JSONResponse({"id": request.path_params["item_id"], "q": request.query_params.get("q")})

    async def echo_json(request: Request):
        data = await request.json()
        return JSONResponse({"received": data, "type": type(data).__name__})

    async def stream(request: Request):
        async def numbers():
            for i in range(5):
                yield f"line {i}\n".encode()
                await asyncio.sleep(0.01)

        return StreamingResponse(numbers(), media_type="text/plain")

    async def background(request: Request):
        async def later(value):
            await asyncio.sleep(0.05)
            record.append(("background", value))

        return PlainTextResponse("queued", background=BackgroundTask(later, request.query_params["v"]))

    async def upload(request: Request):
        digest = hashlib.sha256()
        pieces = 0
        size = 0
        async for data in request.stream():
            digest.update(data)
            size += len(data)
            pieces += 1 if data else 0
        return JSONResponse({"size": size, "sha256": digest.hexdigest(), "pieces": pieces})

    async def state(request: Request):
        return PlainTextResponse(request.state.greeting)

    async def url(request: Request):
        return JSONResponse(
            {"url": str(request.url), "client": request.client.host if request.client else None,
             "root_path": request.scope.get("root_path")}
        )

    async def empty(request: Request):
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/items/{item_id:int}", item),
            Route("/json", echo_json, methods=["POST"]),
            Route("/stream", stream),
            Route("/background", background),
            Route("/upload", upload, methods=["POST", "PUT"]),
            Route("/state", state),
            Route("/url", url),
            Route("/empty", empty),
        ],
        lifespan=lifespan,
    )


class Item(BaseModel):
    name: str
    price: float
    tags: list[str] = []


def make_fastapi_app(record: list):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        record.append("startup")
        yield {"db": "fake-db"}
        record.append("shutdown")

    app = FastAPI(lifespan=lifespan)

    async def token(x_token: str = Header(...)):
        if x_token != "secret":
            raise HTTPException(status_code=401, detail="bad token")
        return x_token

    @app.get("/items/{item_id}")
    async def read_item(item_id: int, q: str | None = None):
        return {"item_id": item_id, "q": q}

    @app.post("/items")
    async def create_item(item: Item):
        return {"name": item.name, "total": item.price * 2, "tags": item.tags}

    @app.get("/private")
    async def private(tok: str = Depends(token)):
        return {"ok": True}

    @app.get("/stream")
    async def stream():
        async def gen():
            for i in range(3):
                yield f"{i},".encode()

        return StreamingResponse(gen(), media_type="text/csv")

    @app.post("/notify")
    async def notify(value: str, background_tasks: BackgroundTasks):
        background_tasks.add_task(record.append, ("background", value))
        return {"queued": value}

    @app.put("/upload")
    async def upload(request: FastAPIRequest):
        size = 0
        async for data in request.stream():
            size += len(data)
        return {"size": size}

    @app.get("/state")
    async def state(request: FastAPIRequest):
        return {"db": request.state.db}

    @app.get("/sync")
    def sync_endpoint():
        return {"thread": "threadpool"}

    return app
