//! The rows of the settings table: every server setting ferroloop has, in
//! `Config`'s keyword order (the `--help` order of their flags).

use super::native::{BoolOrText, Native};
use super::{Item, Kind, Lit, Null, Setting, Status, Text};
use std::path::PathBuf;

/// The `--lifespan` values, in `--help` order.
pub const LIFESPANS: &[&str] = &["auto", "on", "off"];
/// The `--interface` values.
pub const INTERFACES: &[&str] = &["auto", "asgi3", "asgi2", "wsgi"];
/// The `--log-level` names, most severe first.
pub const LOG_LEVELS: &[&str] = &["critical", "error", "warning", "info", "debug", "trace"];

const MIB: i64 = 1024 * 1024;

/// uvicorn's access line, with the reason phrase:
/// `127.0.0.1:54321 - "GET / HTTP/1.1" 200 OK`.
pub const DEFAULT_ACCESS_LOG_FORMAT: &str =
    "%(client_addr)s - \"%(request_line)s\" %(status_code)s %(status_phrase)s";

/// Every server setting, in `Config`'s keyword order (which is also the
/// `--help` order of the flags).
pub static SETTINGS: &[Setting] = &[
    Setting::new(
        "host",
        Kind::Text(Text::Host),
        Lit::Str("127.0.0.1"),
        "Bind socket to this host. Use --host 0.0.0.0 to make the application available on your \
         local network. IPv6 addresses are supported, for example: --host '::'. Ignored with \
         --uds or --fd.",
    )
    .cli("--host"),
    Setting::new(
        "port",
        Kind::Int {
            min: 0,
            max: Some(65535),
        },
        Lit::Int(8000),
        "Bind socket to this port. If 0, an available port will be picked. Ignored with --uds \
         or --fd.",
    )
    .cli("--port")
    .expected("expected an integer from 0 to 65535"),
    Setting::new(
        "uds",
        Kind::Path,
        Lit::None,
        "Bind to a UNIX domain socket instead of --host/--port.",
    )
    .cli("--uds")
    .null(Null::Unset)
    .expected("expected a socket path"),
    Setting::new(
        "fd",
        Kind::Int {
            min: 0,
            max: Some(i32::MAX as i64),
        },
        Lit::None,
        "Serve on the listening socket with this file descriptor instead of --host/--port. \
         Cannot be used with --uds.",
    )
    .cli("--fd")
    .null(Null::Unset)
    .expected("expected a file descriptor number (an integer from 0 to 2147483647)"),
    Setting::new(
        "sock",
        Kind::Object,
        Lit::None,
        "An already bound socket.socket to serve on instead of host/port.",
    )
    .null(Null::Unset)
    .py_type("socket.socket | None", "socket.socket | None"),
    ROOT_PATH.setting,
    Setting::new(
        "lifespan",
        Kind::Choice {
            values: LIFESPANS,
            ignore_case: false,
        },
        Lit::Str("auto"),
        "Lifespan protocol: 'on' requires the application to support it, 'off' never runs it, \
         'auto' runs it if supported.",
    )
    .cli("--lifespan")
    .expected("expected one of: auto, on, off"),
    ACCESS_LOG.setting,
    ACCESS_LOG_FORMAT.setting,
    Setting::new(
        "log_config",
        Kind::Path,
        Lit::None,
        "Logging configuration file: .json, .yaml/.yml (needs PyYAML) or an INI file for \
         logging.config.fileConfig. Config also takes a dictConfig dict.",
    )
    .cli("--log-config")
    .null(Null::Unset)
    .expected("expected a path to a logging configuration file")
    .py_type(
        "dict[str, Any] | str | os.PathLike[str] | None",
        "dict[str, Any] | str | None",
    ),
    Setting::new(
        "use_colors",
        Kind::Bool,
        Lit::None,
        "Enable/Disable colorized logging (default: only when the log goes to a terminal).",
    )
    .cli("--use-colors")
    .off("--no-use-colors")
    .null(Null::Unset),
    PROXY_HEADERS.setting,
    FORWARDED_ALLOW_IPS.setting,
    SERVER_HEADER.setting,
    DATE_HEADER.setting,
    Setting::new(
        "backlog",
        Kind::Int { min: 1, max: None },
        Lit::Int(2048),
        "Maximum number of connections waiting to be accepted.",
    )
    .cli("--backlog")
    .expected("expected an integer of at least 1"),
    // The metrics listener (server/_metrics.py): its own socket and native
    // server, so it answers while the app's limit_concurrency is reached.
    Setting::new(
        "metrics_port",
        Kind::Int {
            min: 0,
            max: Some(65535),
        },
        Lit::None,
        "Serve Prometheus metrics (/metrics), JSON stats (/stats) and a health check (/healthz) \
         on this port, on its own listener (with workers: aggregated by the supervisor, one \
         sample per worker). 0 picks a free port. Off by default.",
    )
    .cli("--metrics-port")
    .null(Null::Word)
    .expected("expected an integer from 0 to 65535, or none"),
    Setting::new(
        "metrics_address",
        Kind::Text(Text::Host),
        Lit::Str("127.0.0.1"),
        "Bind the --metrics-port listener to this address.",
    )
    .cli("--metrics-address"),
    LIMIT_CONCURRENCY.setting,
    MAX_REQUEST_LINE.setting,
    MAX_HEADER_SIZE.setting,
    MAX_HEADER_COUNT.setting,
    MAX_BODY_SIZE.setting,
    MAX_CHUNK_EXTENSIONS_SIZE.setting,
    TIMEOUT_REQUEST_HEAD.setting,
    TIMEOUT_KEEP_ALIVE.setting,
    MIN_BODY_RATE.setting,
    BODY_RATE_GRACE.setting,
    Setting::new(
        "timeout_graceful_shutdown",
        Kind::Seconds { zero: true },
        Lit::Float(30.0),
        "Seconds shutdown waits for in-flight requests and application tasks.",
    )
    .cli("--timeout-graceful-shutdown"),
    Setting::new(
        "log_level",
        Kind::Choice {
            values: LOG_LEVELS,
            ignore_case: true,
        },
        Lit::Str("info"),
        "Log level (case-insensitive).",
    )
    .cli("--log-level")
    .null(Null::Unset)
    .expected("expected one of: critical, error, warning, info, debug, trace")
    .py_type("str | int | None", "str | int | None"),
    // uvicorn's other options, supported first, then those ferroloop does
    // not need (ignored) or does not have yet (refused unless given their
    // default, which asks for nothing ferroloop does not do).
    HEADERS.setting,
    Setting::new(
        "limit_max_requests",
        Kind::Int { min: 1, max: None },
        Lit::None,
        "Shut down gracefully after this many requests (plus a random 0 to \
         --limit-max-requests-jitter more).",
    )
    .cli("--limit-max-requests")
    .null(Null::Word)
    .expected("expected an integer of at least 1, or none"),
    Setting::new(
        "limit_max_requests_jitter",
        Kind::Int { min: 0, max: None },
        Lit::Int(0),
        "Add a random number of requests, 0 to this, to --limit-max-requests.",
    )
    .cli("--limit-max-requests-jitter")
    .expected("expected an integer of at least 0"),
    Setting::new(
        "interface",
        Kind::Choice {
            values: INTERFACES,
            ignore_case: false,
        },
        Lit::Str("auto"),
        "Application interface: ASGI 3, ASGI 2 (a class or callable taking the scope), or \
         auto-detected as uvicorn does.",
    )
    .cli("--interface")
    .expected("expected one of: auto, asgi3, asgi2, wsgi")
    .refuse(
        &["wsgi"],
        "WSGI applications are not served yet; wrap the app in a WSGI-to-ASGI adapter \
         (e.g. a2wsgi's WSGIMiddleware)",
    ),
    Setting::new(
        "factory",
        Kind::Bool,
        Lit::Bool(false),
        "Treat APP as an application factory: a callable taking no arguments that returns the \
         ASGI app.",
    )
    .cli("--factory")
    .off("--no-factory"),
    RESET_CONTEXTVARS.setting,
    Setting::new(
        "app_dir",
        Kind::Text(Text::Any),
        Lit::Str(""),
        "Look for APP in this directory, put first on sys.path (default: the working \
         directory).",
    )
    .cli_only("--app-dir"),
    Setting::new(
        "env_file",
        Kind::Path,
        Lit::None,
        "Load this dotenv file into the environment before the app is imported (variables \
         already set win). FERROLOOP_* variables in it set options, below the flags.",
    )
    .cli_only("--env-file")
    .null(Null::Unset)
    .expected("expected a path to a dotenv file"),
    Setting::new(
        "h11_max_incomplete_event_size",
        Kind::Int {
            min: 256,
            max: None,
        },
        Lit::None,
        "uvicorn's h11 bound on a request head: sets --max-header-size (which wins if both \
         are given).",
    )
    .cli_only("--h11-max-incomplete-event-size")
    .null(Null::Unset)
    .alias_of("max_header_size")
    .expected("expected an integer of at least 256"),
    // WebSocket: uvicorn's settings, then ferroloop's own bounds.
    WS.setting,
    WS_MAX_SIZE.setting,
    WS_MAX_QUEUE.setting,
    WS_PING_INTERVAL.setting,
    WS_PING_TIMEOUT.setting,
    WS_PER_MESSAGE_DEFLATE.setting,
    WS_MAX_FRAME_SIZE.setting,
    WS_MAX_QUEUE_BYTES.setting,
    WS_CLOSE_TIMEOUT.setting,
    Setting::new(
        "timeout_worker_healthcheck",
        Kind::Int { min: 1, max: None },
        Lit::Int(5),
        "Seconds a worker's loop may take to answer the supervisor's health check before the \
         worker is killed and replaced (with --workers or --reload).",
    )
    .cli("--timeout-worker-healthcheck")
    .expected("expected an integer of at least 1"),
    Setting::new(
        "loop",
        Kind::Text(Text::Any),
        Lit::Str("auto"),
        "Event loop implementation (uvicorn's auto, asyncio, uvloop or module:factory).",
    )
    .cli("--loop")
    .status(Status::Ignored(
        "ferroloop always runs on its own event loop",
    )),
    Setting::new(
        "backend",
        Kind::Choice {
            values: BACKENDS,
            ignore_case: false,
        },
        Lit::None,
        "Event loop backend of the server and its workers: auto (io_uring where the kernel and \
         the container allow it, else epoll, saying why in one line), io_uring (an error where \
         it is unavailable) or epoll. Unset: the FERROLOOP_BACKEND environment variable's, \
         else auto.",
    )
    .cli("--backend")
    .null(Null::Unset)
    .expected("expected one of: auto, io_uring, epoll"),
    Setting::new(
        "http",
        Kind::Text(Text::Any),
        Lit::Str("auto"),
        "HTTP protocol implementation (uvicorn's auto, h11, httptools, zttp or module:class).",
    )
    .cli("--http")
    .status(Status::Ignored(
        "ferroloop's HTTP/1.1 implementation is built in (Rust)",
    )),
    // TLS: uvicorn's ssl_* settings (with its meanings), then ferroloop's.
    SSL_KEYFILE.setting,
    SSL_CERTFILE.setting,
    SSL_KEYFILE_PASSWORD.setting,
    SSL_VERSION.setting,
    SSL_CERT_REQS.setting,
    SSL_CA_CERTS.setting,
    SSL_CIPHERS.setting,
    SSL_CRL.setting,
    SSL_MIN_VERSION.setting,
    SSL_HANDSHAKE_TIMEOUT.setting,
    SSL_SNI.setting,
    Setting::new("http2", Kind::Bool, Lit::Bool(false), "Enable HTTP/2.")
        .cli("--http2")
        .status(Status::Unsupported(
            "ferroloop serves HTTP/1.1; terminate HTTP/2 at a proxy in front (nginx, HAProxy)",
        )),
    Setting::new(
        "workers",
        Kind::Text(Text::Workers),
        Lit::Str("1"),
        "Number of worker processes (default: $WEB_CONCURRENCY, or 1); 'auto' or 0: one per CPU \
         this process may run on. More than 1 runs a supervisor that forks the workers.",
    )
    .cli("--workers")
    .env_alias("WEB_CONCURRENCY")
    .metavar("INTEGER|auto")
    .expected("expected an integer of at least 0, or auto")
    .py_type("int | str", "int"),
    Setting::new(
        "loops",
        Kind::Int { min: 1, max: None },
        Lit::Int(1),
        "Event loops per process, each in its own thread, serving the same listeners (each \
         runs the app's lifespan). Their Python code takes turns under the GIL: see \
         docs/toolkit.md.",
    )
    .cli("--loops")
    .expected("expected an integer of at least 1"),
    Setting::new(
        "preload",
        Kind::Bool,
        Lit::Bool(false),
        "Import the app in the supervisor before forking the workers (copy-on-write sharing; \
         a SIGHUP restart keeps the preloaded code).",
    )
    .cli("--preload"),
    Setting::new(
        "workers_lifetime",
        Kind::Seconds { zero: false },
        Lit::None,
        "Seconds after which a worker is replaced (plus a random 0 to 10 % more, so workers do \
         not restart together).",
    )
    .cli("--workers-lifetime")
    .null(Null::Word)
    .expected("expected a positive number of seconds, or none"),
    Setting::new(
        "workers_max_rss",
        Kind::Int { min: 1, max: None },
        Lit::None,
        "MiB of resident memory (VmRSS, sampled every second) above which a worker is replaced.",
    )
    .cli("--workers-max-rss")
    .null(Null::Word)
    .expected("expected an integer of at least 1, or none"),
    Setting::new(
        "pid_file",
        Kind::Path,
        Lit::None,
        "Write the server's process id to this file (removed at exit).",
    )
    .cli("--pid-file")
    .null(Null::Unset)
    .expected("expected a file path"),
    Setting::new(
        "uds_permissions",
        Kind::Text(Text::FileMode),
        Lit::None,
        "Permissions of the --uds socket file, in octal (660, 0o660); default: 666 less the \
         umask.",
    )
    .cli("--uds-permissions")
    .null(Null::Unset)
    .expected("expected an octal file mode such as 660 or 0o660")
    .py_type("int | str | None", "int | None"),
    Setting::new(
        "reload",
        Kind::Bool,
        Lit::Bool(false),
        "Restart the server when the code changes (one worker, under the supervisor; needs \
         pip install 'ferroloop[reload]').",
    )
    .cli("--reload"),
    Setting::new(
        "reload_dirs",
        Kind::List(Item::Path),
        Lit::None,
        "Directory to watch for --reload (repeat for more; default: the working directory).",
    )
    .cli("--reload-dir")
    .null(Null::Unset)
    .expected("expected a directory path"),
    Setting::new(
        "reload_includes",
        Kind::List(Item::Path),
        Lit::None,
        "Glob pattern of files to watch for --reload (repeat for more; default: *.py).",
    )
    .cli("--reload-include")
    .null(Null::Unset)
    .metavar("GLOB")
    .expected("expected a glob pattern")
    .py_type("list[str] | str | None", "list[str]"),
    Setting::new(
        "reload_excludes",
        Kind::List(Item::Path),
        Lit::None,
        "Glob pattern of files not to watch for --reload (repeat for more).",
    )
    .cli("--reload-exclude")
    .null(Null::Unset)
    .metavar("GLOB")
    .expected("expected a glob pattern")
    .py_type("list[str] | str | None", "list[str]"),
    Setting::new(
        "reload_delay",
        Kind::Seconds { zero: true },
        Lit::Float(0.25),
        "Seconds to wait after a change for more changes before reloading (--reload).",
    )
    .cli("--reload-delay"),
];

/// The `--ws` values (uvicorn's).
pub const WS_IMPLEMENTATIONS: &[&str] =
    &["auto", "none", "websockets", "websockets-sansio", "wsproto"];

/// The `--backend` values (loop-core's `BackendChoice` spellings).
pub const BACKENDS: &[&str] = &["auto", "io_uring", "epoll"];

/// The `--ssl-min-version` values.
pub const TLS_VERSIONS: &[&str] = &["1.2", "1.3"];

// The settings the native server reads (`Native`: typed by the value it
// reads), in the table order above.

pub const ROOT_PATH: Native<String> = Native::new(
    Setting::new(
        "root_path",
        Kind::Text(Text::RootPath),
        Lit::Str(""),
        "Set the ASGI 'root_path' for applications submounted below a given URL path: empty, or \
         starting with '/' and not ending with '/'.",
    )
    .cli("--root-path"),
);

pub const ACCESS_LOG: Native<bool> = Native::new(
    Setting::new(
        "access_log",
        Kind::Bool,
        Lit::Bool(true),
        "Enable/Disable access log.",
    )
    .cli("--access-log")
    .off("--no-access-log"),
);

pub const ACCESS_LOG_FORMAT: Native<String> = Native::new(
    Setting::new(
        "access_log_format",
        Kind::Text(Text::AccessLogFormat),
        Lit::Str(DEFAULT_ACCESS_LOG_FORMAT),
        "Access log line format: text with %(field)s placeholders (client_addr, method, path, \
         query, full_path, http_version, request_line, status_code, status_phrase, duration_ms, \
         user_agent, referer); %% for '%'. Default: %(client_addr)s - \"%(request_line)s\" \
         %(status_code)s %(status_phrase)s",
    )
    .cli("--access-log-format"),
);

pub const PROXY_HEADERS: Native<bool> = Native::new(
    Setting::new(
        "proxy_headers",
        Kind::Bool,
        Lit::Bool(true),
        "Take the client address and scheme from X-Forwarded-For, X-Forwarded-Proto and \
         Forwarded headers sent by forwarded_allow_ips.",
    )
    .cli("--proxy-headers")
    .off("--no-proxy-headers"),
);

pub const FORWARDED_ALLOW_IPS: Native<Option<String>> = Native::new(
    Setting::new(
        "forwarded_allow_ips",
        Kind::Text(Text::Any),
        Lit::Str("127.0.0.1"),
        "Comma-separated addresses or networks (or '*') trusted to send proxy headers. Not \
         given (None in Config): $FORWARDED_ALLOW_IPS if set.",
    )
    .cli("--forwarded-allow-ips")
    .env_alias("FORWARDED_ALLOW_IPS")
    .null(Null::Unset)
    .py_type("str | list[str] | None", "str"),
);

pub const SERVER_HEADER: Native<BoolOrText> = Native::new(
    Setting::new(
        "server_header",
        Kind::BoolOrText,
        Lit::Bool(true),
        "Send a Server header: True for 'ferroloop', False for none, or this string. On the \
         command line, --header server:VALUE sends another one.",
    )
    .cli("--server-header")
    .off("--no-server-header"),
);

pub const DATE_HEADER: Native<bool> = Native::new(
    Setting::new(
        "date_header",
        Kind::Bool,
        Lit::Bool(true),
        "Send a Date header.",
    )
    .cli("--date-header")
    .off("--no-date-header"),
);

pub const LIMIT_CONCURRENCY: Native<Option<usize>> = Native::new(
    Setting::new(
        "limit_concurrency",
        Kind::Int { min: 1, max: None },
        Lit::None,
        "Maximum number of connections plus application tasks; the excess gets 503.",
    )
    .cli("--limit-concurrency")
    .null(Null::Word)
    .expected("expected an integer of at least 1, or none"),
);

pub const MAX_REQUEST_LINE: Native<usize> = Native::new(
    Setting::new(
        "max_request_line",
        Kind::Int { min: 64, max: None },
        Lit::Int(8192),
        "Longest request line (and target), in bytes; longer gets 414.",
    )
    .cli("--max-request-line")
    .expected("expected an integer of at least 64"),
);

pub const MAX_HEADER_SIZE: Native<usize> = Native::new(
    Setting::new(
        "max_header_size",
        Kind::Int {
            min: 256,
            max: None,
        },
        Lit::Int(64 * 1024),
        "Largest request head, in bytes; larger gets 431.",
    )
    .cli("--max-header-size")
    .expected("expected an integer of at least 256"),
);

pub const MAX_HEADER_COUNT: Native<usize> = Native::new(
    Setting::new(
        "max_header_count",
        Kind::Int { min: 1, max: None },
        Lit::Int(100),
        "Most header fields in a request; more gets 431.",
    )
    .cli("--max-header-count")
    .expected("expected an integer of at least 1"),
);

pub const MAX_BODY_SIZE: Native<Option<u64>> = Native::new(
    Setting::new(
        "max_body_size",
        Kind::Int { min: 0, max: None },
        Lit::Int(16 * MIB),
        "Largest request body, in bytes (none: unlimited); larger gets 413.",
    )
    .cli("--max-body-size")
    .null(Null::Word)
    .expected("expected an integer of at least 0, or none"),
);

pub const MAX_CHUNK_EXTENSIONS_SIZE: Native<usize> = Native::new(
    Setting::new(
        "max_chunk_extensions_size",
        Kind::Int { min: 0, max: None },
        Lit::Int(16 * 1024),
        "Most bytes of chunk extensions in one chunked request body; more gets 400.",
    )
    .cli("--max-chunk-extensions-size")
    .expected("expected an integer of at least 0"),
);

pub const TIMEOUT_REQUEST_HEAD: Native<f64> = Native::new(
    Setting::new(
        "timeout_request_head",
        Kind::Seconds { zero: false },
        Lit::Float(10.0),
        "Seconds a request head may take to arrive, from connect or the end of the previous \
         response.",
    )
    .cli("--timeout-request-head"),
);

pub const TIMEOUT_KEEP_ALIVE: Native<f64> = Native::new(
    Setting::new(
        "timeout_keep_alive",
        Kind::Seconds { zero: false },
        Lit::Float(5.0),
        "Seconds an idle connection is kept open between requests.",
    )
    .cli("--timeout-keep-alive"),
);

pub const MIN_BODY_RATE: Native<Option<f64>> = Native::new(
    Setting::new(
        "min_body_rate",
        Kind::Rate,
        Lit::Float(240.0),
        "Bytes per second a request body must average after body_rate_grace (0 or none: no \
         minimum).",
    )
    .cli("--min-body-rate")
    .null(Null::Word)
    .expected("expected a number of bytes per second, 0 or more, or none"),
);

pub const BODY_RATE_GRACE: Native<f64> = Native::new(
    Setting::new(
        "body_rate_grace",
        Kind::Seconds { zero: true },
        Lit::Float(5.0),
        "Seconds of waiting for a request body before min_body_rate applies.",
    )
    .cli("--body-rate-grace"),
);

// uvicorn's other options, supported first, then those ferroloop does
// not need (ignored) or does not have yet (refused unless given their
// default, which asks for nothing ferroloop does not do).
pub const HEADERS: Native<Vec<(String, String)>> = Native::new(
    Setting::new(
        "headers",
        Kind::Headers,
        Lit::None,
        "A response header sent on every response, the server's own error responses too \
         (repeat for more). A 'server' or 'date' header replaces the default one.",
    )
    .cli("--header")
    .null(Null::Unset)
    .py_type(
        "list[tuple[str, str]] | None",
        "list[tuple[str, str]] | None",
    ),
);

pub const RESET_CONTEXTVARS: Native<bool> = Native::new(
    Setting::new(
        "reset_contextvars",
        Kind::Bool,
        Lit::Bool(false),
        "Run each request in a new, empty contextvars.Context (hides context set in the \
         lifespan).",
    )
    .cli("--reset-contextvars")
    .off("--no-reset-contextvars"),
);

// WebSocket: uvicorn's settings, then ferroloop's own bounds.
pub const WS: Native<String> = Native::new(
    Setting::new(
        "ws",
        Kind::Choice {
            values: WS_IMPLEMENTATIONS,
            ignore_case: false,
        },
        Lit::Str("auto"),
        "WebSocket protocol implementation: auto is ferroloop's native one, and websockets, \
         websockets-sansio and wsproto are accepted as names for it; none serves no WebSocket \
         (an upgrade request reaches the app as plain HTTP). A module:attr class is not \
         supported.",
    )
    .cli("--ws")
    .expected("expected one of: auto, none, websockets, websockets-sansio, wsproto")
    .refuse_import(
        "ferroloop serves WebSocket with its native implementation; a protocol class \
         (module:attr) cannot replace it (use --ws auto)",
    ),
);

pub const WS_MAX_SIZE: Native<usize> = Native::new(
    Setting::new(
        "ws_max_size",
        Kind::Int { min: 1, max: None },
        Lit::Int(16 * MIB),
        "WebSocket max message size in bytes, after decompression; larger is closed with \
         1009.",
    )
    .cli("--ws-max-size")
    .expected("expected an integer of at least 1"),
);

pub const WS_MAX_QUEUE: Native<usize> = Native::new(
    Setting::new(
        "ws_max_queue",
        Kind::Int { min: 1, max: None },
        Lit::Int(32),
        "The maximum length of the WebSocket message queue: received messages the app has not \
         taken yet before reading pauses.",
    )
    .cli("--ws-max-queue")
    .expected("expected an integer of at least 1"),
);

pub const WS_PING_INTERVAL: Native<Option<f64>> = Native::new(
    Setting::new(
        "ws_ping_interval",
        Kind::Seconds { zero: false },
        Lit::Float(20.0),
        "WebSocket ping interval in seconds (none: no pings).",
    )
    .cli("--ws-ping-interval")
    .null(Null::Word)
    .expected("expected a positive number of seconds, or none"),
);

pub const WS_PING_TIMEOUT: Native<Option<f64>> = Native::new(
    Setting::new(
        "ws_ping_timeout",
        Kind::Seconds { zero: false },
        Lit::Float(20.0),
        "WebSocket ping timeout in seconds: a ping unanswered this long closes the connection \
         with 1011 (none: no limit).",
    )
    .cli("--ws-ping-timeout")
    .null(Null::Word)
    .expected("expected a positive number of seconds, or none"),
);

pub const WS_PER_MESSAGE_DEFLATE: Native<bool> = Native::new(
    Setting::new(
        "ws_per_message_deflate",
        Kind::Bool,
        Lit::Bool(true),
        "WebSocket per-message-deflate compression: accept it when the client offers it.",
    )
    .cli("--ws-per-message-deflate")
    .metavar("BOOLEAN"),
);

pub const WS_MAX_FRAME_SIZE: Native<Option<usize>> = Native::new(
    Setting::new(
        "ws_max_frame_size",
        Kind::Int { min: 1, max: None },
        Lit::None,
        "Largest WebSocket frame payload, in bytes, as sent (compressed); larger is closed \
         with 1009 (default: the --ws-max-size value).",
    )
    .cli("--ws-max-frame-size")
    .null(Null::Unset)
    .expected("expected an integer of at least 1"),
);

pub const WS_MAX_QUEUE_BYTES: Native<usize> = Native::new(
    Setting::new(
        "ws_max_queue_bytes",
        Kind::Int { min: 1, max: None },
        Lit::Int(16 * MIB),
        "Bytes of received WebSocket messages the app has not taken yet before reading pauses, \
         however few they are (so --ws-max-queue large messages cannot pile up).",
    )
    .cli("--ws-max-queue-bytes")
    .expected("expected an integer of at least 1"),
);

pub const WS_CLOSE_TIMEOUT: Native<f64> = Native::new(
    Setting::new(
        "ws_close_timeout",
        Kind::Seconds { zero: false },
        Lit::Float(10.0),
        "Seconds to wait for the client's close frame (and the end of the connection) after \
         the server's, before the connection is dropped.",
    )
    .cli("--ws-close-timeout"),
);

// TLS: uvicorn's ssl_* settings (with its meanings), then ferroloop's.
pub const SSL_KEYFILE: Native<Option<PathBuf>> = Native::new(
    Setting::new(
        "ssl_keyfile",
        Kind::Path,
        Lit::None,
        "TLS private key file (PEM: PKCS#8, PKCS#1 or SEC1; an ENCRYPTED PRIVATE KEY needs \
         --ssl-keyfile-password). Needs --ssl-certfile.",
    )
    .cli("--ssl-keyfile")
    .null(Null::Unset)
    .expected("expected a path to a PEM key file"),
);

pub const SSL_CERTFILE: Native<Option<PathBuf>> = Native::new(
    Setting::new(
        "ssl_certfile",
        Kind::Path,
        Lit::None,
        "TLS certificate chain file (PEM, leaf first): serve HTTPS and WSS. Needs \
         --ssl-keyfile.",
    )
    .cli("--ssl-certfile")
    .null(Null::Unset)
    .expected("expected a path to a PEM certificate file"),
);

pub const SSL_KEYFILE_PASSWORD: Native<Option<String>> = Native::new(
    Setting::new(
        "ssl_keyfile_password",
        Kind::Text(Text::Any),
        Lit::None,
        "Password of an encrypted (PKCS#8) --ssl-keyfile.",
    )
    .cli("--ssl-keyfile-password")
    .null(Null::Unset),
);

pub const SSL_VERSION: Native<i64> = Native::new(
    Setting::new(
        "ssl_version",
        Kind::Int { min: 0, max: None },
        Lit::Int(17),
        "uvicorn's ssl.PROTOCOL_* number: 17 (TLS_SERVER) or 2 (TLS) negotiate from \
         --ssl-min-version; 5 (TLSv1_2) is a minimum of TLS 1.2; older protocols are refused \
         (rustls speaks TLS 1.2 and 1.3).",
    )
    .cli("--ssl-version")
    .expected("expected an integer of at least 0"),
);

pub const SSL_CERT_REQS: Native<i64> = Native::new(
    Setting::new(
        "ssl_cert_reqs",
        Kind::Int {
            min: 0,
            max: Some(2),
        },
        Lit::Int(0),
        "Client certificates: 0 not asked for, 1 optional, 2 required (verified against \
         --ssl-ca-certs).",
    )
    .cli("--ssl-cert-reqs")
    .expected("expected an integer from 0 to 2"),
);

pub const SSL_CA_CERTS: Native<Option<PathBuf>> = Native::new(
    Setting::new(
        "ssl_ca_certs",
        Kind::Path,
        Lit::None,
        "CA certificates file (PEM) that client certificates are verified against.",
    )
    .cli("--ssl-ca-certs")
    .null(Null::Unset)
    .expected("expected a path to a PEM CA certificates file"),
);

pub const SSL_CIPHERS: Native<String> = Native::new(
    Setting::new(
        "ssl_ciphers",
        Kind::Text(Text::Any),
        Lit::Str("TLSv1"),
        "Cipher suites, ':'-separated IANA or OpenSSL names of those rustls offers; OpenSSL \
         class keywords (TLSv1, HIGH, DEFAULT) mean rustls' defaults.",
    )
    .cli("--ssl-ciphers"),
);

pub const SSL_CRL: Native<Vec<PathBuf>> = Native::new(
    Setting::new(
        "ssl_crl",
        Kind::List(Item::Path),
        Lit::None,
        "Certificate revocation list (PEM or DER) for client certificates (repeat for more).",
    )
    .cli("--ssl-crl")
    .null(Null::Unset)
    .py_type("list[str | os.PathLike[str]] | None", "list[str]"),
);

pub const SSL_MIN_VERSION: Native<String> = Native::new(
    Setting::new(
        "ssl_min_version",
        Kind::Choice {
            values: TLS_VERSIONS,
            ignore_case: false,
        },
        Lit::Str("1.2"),
        "Lowest TLS version accepted.",
    )
    .cli("--ssl-min-version")
    .expected("expected one of: 1.2, 1.3"),
);

pub const SSL_HANDSHAKE_TIMEOUT: Native<f64> = Native::new(
    Setting::new(
        "ssl_handshake_timeout",
        Kind::Seconds { zero: false },
        Lit::Float(10.0),
        "Seconds a TLS handshake may take.",
    )
    .cli("--ssl-handshake-timeout"),
);

pub const SSL_SNI: Native<Vec<String>> = Native::new(
    Setting::new(
        "ssl_sni",
        Kind::List(Item::Sni),
        Lit::None,
        "A certificate for clients that ask for HOST by SNI (repeat for more hosts); others \
         get --ssl-certfile. In Config a mapping {host: (certfile, keyfile)}.",
    )
    .cli("--ssl-sni")
    .null(Null::Unset)
    .py_type(
        "Mapping[str, tuple[str | os.PathLike[str], str | os.PathLike[str]]] | list[str] | None",
        "dict[str, tuple[str, str]]",
    ),
);
