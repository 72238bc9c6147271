"""Type stub of `ferroloop.server._config`. The `Config` signature and
attributes between the GENERATED markers come from loop-cli's settings
table (`loop-cli/src/table/rows.rs`): regenerate them with `cargo xtask
gen-settings`; `cargo test -p loop-cli` fails when they are stale."""

import os
import socket
from typing import Any, Callable, Mapping

SETTINGS: dict[str, dict[str, Any]]
LIFESPAN_MODES: tuple[str, ...]
LOG_LEVELS: dict[str, int]

class AppLoadError(Exception): ...

def import_app(spec: str) -> Callable[..., Any]: ...

class ASGI2App:
    app: Callable[[Any], Any]
    def __init__(self, app: Callable[[Any], Any]) -> None: ...
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None: ...

class Config:
    app: Callable[..., Any] | str
    # BEGIN GENERATED settings
    host: str
    port: int
    uds: str | None
    fd: int | None
    sock: socket.socket | None
    root_path: str
    lifespan: str
    access_log: bool
    access_log_format: str
    log_config: dict[str, Any] | str | None
    use_colors: bool | None
    proxy_headers: bool
    forwarded_allow_ips: str
    server_header: bool | str
    date_header: bool
    backlog: int
    metrics_port: int | None
    metrics_address: str
    limit_concurrency: int | None
    max_request_line: int
    max_header_size: int
    max_header_count: int
    max_body_size: int | None
    max_chunk_extensions_size: int
    timeout_request_head: float
    timeout_keep_alive: float
    min_body_rate: float | None
    body_rate_grace: float
    timeout_graceful_shutdown: float
    log_level: str | int | None
    headers: list[tuple[str, str]] | None
    limit_max_requests: int | None
    limit_max_requests_jitter: int
    interface: str
    factory: bool
    reset_contextvars: bool
    ws: str
    ws_max_size: int
    ws_max_queue: int
    ws_ping_interval: float | None
    ws_ping_timeout: float | None
    ws_per_message_deflate: bool
    ws_max_frame_size: int | None
    ws_max_queue_bytes: int
    ws_close_timeout: float
    timeout_worker_healthcheck: int
    loop: str
    backend: str | None
    http: str
    ssl_keyfile: str | None
    ssl_certfile: str | None
    ssl_keyfile_password: str | None
    ssl_version: int
    ssl_cert_reqs: int
    ssl_ca_certs: str | None
    ssl_ciphers: str
    ssl_crl: list[str]
    ssl_min_version: str
    ssl_handshake_timeout: float
    ssl_sni: dict[str, tuple[str, str]]
    http2: bool
    workers: int
    loops: int
    preload: bool
    workers_lifetime: float | None
    workers_max_rss: int | None
    pid_file: str | None
    uds_permissions: int | None
    reload: bool
    reload_dirs: list[str] | None
    reload_includes: list[str]
    reload_excludes: list[str]
    reload_delay: float
    def __init__(
        self,
        app: Callable[..., Any] | str,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        uds: str | os.PathLike[str] | None = None,
        fd: int | None = None,
        sock: socket.socket | None = None,
        root_path: str = "",
        lifespan: str = "auto",
        access_log: bool = True,
        access_log_format: str = "%(client_addr)s - \"%(request_line)s\" %(status_code)s %(status_phrase)s",
        log_config: dict[str, Any] | str | os.PathLike[str] | None = None,
        use_colors: bool | None = None,
        proxy_headers: bool = True,
        forwarded_allow_ips: str | list[str] | None = "127.0.0.1",
        server_header: bool | str = True,
        date_header: bool = True,
        backlog: int = 2048,
        metrics_port: int | None = None,
        metrics_address: str = "127.0.0.1",
        limit_concurrency: int | None = None,
        max_request_line: int = 8192,
        max_header_size: int = 65536,
        max_header_count: int = 100,
        max_body_size: int | None = 16777216,
        max_chunk_extensions_size: int = 16384,
        timeout_request_head: float = 10.0,
        timeout_keep_alive: float = 5.0,
        min_body_rate: float | None = 240.0,
        body_rate_grace: float = 5.0,
        timeout_graceful_shutdown: float = 30.0,
        log_level: str | int | None = "info",
        headers: list[tuple[str, str]] | None = None,
        limit_max_requests: int | None = None,
        limit_max_requests_jitter: int = 0,
        interface: str = "auto",
        factory: bool = False,
        reset_contextvars: bool = False,
        ws: str = "auto",
        ws_max_size: int = 16777216,
        ws_max_queue: int = 32,
        ws_ping_interval: float | None = 20.0,
        ws_ping_timeout: float | None = 20.0,
        ws_per_message_deflate: bool = True,
        ws_max_frame_size: int | None = None,
        ws_max_queue_bytes: int = 16777216,
        ws_close_timeout: float = 10.0,
        timeout_worker_healthcheck: int = 5,
        loop: str = "auto",
        backend: str | None = None,
        http: str = "auto",
        ssl_keyfile: str | os.PathLike[str] | None = None,
        ssl_certfile: str | os.PathLike[str] | None = None,
        ssl_keyfile_password: str | None = None,
        ssl_version: int = 17,
        ssl_cert_reqs: int = 0,
        ssl_ca_certs: str | os.PathLike[str] | None = None,
        ssl_ciphers: str = "TLSv1",
        ssl_crl: list[str | os.PathLike[str]] | None = None,
        ssl_min_version: str = "1.2",
        ssl_handshake_timeout: float = 10.0,
        ssl_sni: Mapping[str, tuple[str | os.PathLike[str], str | os.PathLike[str]]] | list[str] | None = None,
        http2: bool = False,
        workers: int | str = "1",
        loops: int = 1,
        preload: bool = False,
        workers_lifetime: float | None = None,
        workers_max_rss: int | None = None,
        pid_file: str | os.PathLike[str] | None = None,
        uds_permissions: int | str | None = None,
        reload: bool = False,
        reload_dirs: list[str | os.PathLike[str]] | None = None,
        reload_includes: list[str] | str | None = None,
        reload_excludes: list[str] | str | None = None,
        reload_delay: float = 0.25,
    ) -> None: ...
    # END GENERATED settings
    @classmethod
    def from_env(cls, app: Callable[..., Any] | str, prefix: str = "FERROLOOP_", **overrides: Any) -> Config: ...
    def load_app(self) -> Callable[..., Any]: ...
    def load_tls(self) -> None: ...
    def server_header_value(self) -> bytes | None: ...
    def configure_logging(self) -> None: ...
