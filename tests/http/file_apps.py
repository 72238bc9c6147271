"""Apps that answer with files, for the pathsend tests: a Starlette
``FileResponse`` for ``/file?path=…`` (run in a child process too, so it
is importable as ``file_apps:app``) and raw ASGI apps sending the
``http.response.pathsend`` / ``zerocopysend`` messages themselves."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Route


async def _file(request: Request):
    return FileResponse(request.query_params["path"], media_type="application/octet-stream")


app = Starlette(routes=[Route("/file", _file, methods=["GET", "HEAD"])])


def pathsend_app(path, headers=(), record=None):
    """``start`` with ``headers``, then ``pathsend`` of ``path``; what the
    send raised (or None) goes to ``record``."""

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(headers)})
        try:
            await send({"type": "http.response.pathsend", "path": str(path)})
        except BaseException as exc:
            if record is not None:
                record.append(exc)
            raise
        if record is not None:
            record.append(None)

    return asgi
