//! uvicorn's options (0.55), by the name of the setting that carries each.
//!
//! uvicorn reads every one of its options from `UVICORN_<NAME>` as well
//! (click's `auto_envvar_prefix`), and its APP from `UVICORN_APP`; so does
//! the `ferroloop` command, below `FERROLOOP_<NAME>` (see [`crate::env`]).
//! `tests/cli` checks this list against the installed uvicorn's options.

/// The prefix of uvicorn's variables.
pub const PREFIX: &str = "UVICORN_";

/// The repeatable options whose click type is a path: click splits their
/// variable on `:` (`os.pathsep`), the others on whitespace.
pub const PATH_LISTS: &[&str] = &["reload_dirs"];

/// The settings that are uvicorn options, in uvicorn's `--help` order.
pub const OPTIONS: &[&str] = &[
    "host",
    "port",
    "uds",
    "fd",
    "reload",
    "reload_dirs",
    "reload_includes",
    "reload_excludes",
    "reload_delay",
    "workers",
    "loop",
    "http",
    "http2",
    "ws",
    "ws_max_size",
    "ws_max_queue",
    "ws_ping_interval",
    "ws_ping_timeout",
    "ws_per_message_deflate",
    "lifespan",
    "interface",
    "env_file",
    "log_config",
    "log_level",
    "access_log",
    "use_colors",
    "proxy_headers",
    "server_header",
    "date_header",
    "forwarded_allow_ips",
    "root_path",
    "limit_concurrency",
    "backlog",
    "limit_max_requests",
    "limit_max_requests_jitter",
    "timeout_keep_alive",
    "timeout_graceful_shutdown",
    "timeout_worker_healthcheck",
    "ssl_keyfile",
    "ssl_certfile",
    "ssl_keyfile_password",
    "ssl_version",
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ciphers",
    "headers",
    "app_dir",
    "h11_max_incomplete_event_size",
    "reset_contextvars",
    "factory",
];
