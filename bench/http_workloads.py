"""The HTTP workloads (bench/README.md, "HTTP suite"): one endpoint of `http_app.py`
each, loaded by wrk (`http_wrk.lua`), and what a correct response is."""

from __future__ import annotations

from dataclasses import dataclass

from http_app import JSON_BODY, PLAINTEXT, POST_SIZE


@dataclass(frozen=True)
class HttpWorkload:
    method: str
    path: str
    # Bytes of each request's body (POST); 0 for none.
    body_size: int
    # The response every request must get.
    content_type: str
    body: bytes

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}" + (
            f" ({self.body_size:,} B body)" if self.body_size else ""
        )


WORKLOADS: dict[str, HttpWorkload] = {
    "plaintext": HttpWorkload("GET", "/", 0, "text/plain", PLAINTEXT),
    "json": HttpWorkload("GET", "/json", 0, "application/json", JSON_BODY),
    "post4k": HttpWorkload("POST", "/post", POST_SIZE, "text/plain", b"%d" % POST_SIZE),
}
