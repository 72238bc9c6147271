//! The rows of the settings table: every server setting ferroloop has, in
//! `Config`'s keyword order (the `--help` order of their flags).

use super::{Kind, Lit, Null, Setting, Text};

/// The `--lifespan` values, in `--help` order.
pub const LIFESPANS: &[&str] = &["auto", "on", "off"];
/// The `--log-level` names, most severe first.
pub const LOG_LEVELS: &[&str] = &["critical", "error", "warning", "info", "debug", "trace"];

const MIB: i64 = 1024 * 1024;

/// uvicorn's access line, with the reason phrase:
/// `127.0.0.1:54321 - "GET / HTTP/1.1" 200 OK`.
pub const ACCESS_LOG_FORMAT: &str =
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
    Setting::new(
        "root_path",
        Kind::Text(Text::RootPath),
        Lit::Str(""),
        "Set the ASGI 'root_path' for applications submounted below a given URL path: empty, or \
         starting with '/' and not ending with '/'.",
    )
    .cli("--root-path")
    .native(),
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
    Setting::new(
        "access_log",
        Kind::Bool,
        Lit::Bool(true),
        "Enable/Disable access log.",
    )
    .cli("--access-log")
    .off("--no-access-log")
    .native(),
    Setting::new(
        "access_log_format",
        Kind::Text(Text::AccessLogFormat),
        Lit::Str(ACCESS_LOG_FORMAT),
        "Access log line format: text with %(field)s placeholders (client_addr, method, path, \
         query, full_path, http_version, request_line, status_code, status_phrase, duration_ms, \
         user_agent, referer); %% for '%'. Default: %(client_addr)s - \"%(request_line)s\" \
         %(status_code)s %(status_phrase)s",
    )
    .cli("--access-log-format")
    .native(),
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
    Setting::new(
        "proxy_headers",
        Kind::Bool,
        Lit::Bool(true),
        "Take the client address and scheme from X-Forwarded-For, X-Forwarded-Proto and \
         Forwarded headers sent by forwarded_allow_ips.",
    )
    .native(),
    Setting::new(
        "forwarded_allow_ips",
        Kind::Text(Text::Any),
        Lit::Str("127.0.0.1"),
        "Comma-separated addresses or networks (or '*') trusted to send proxy headers; None \
         reads $FORWARDED_ALLOW_IPS.",
    )
    .null(Null::Unset)
    .native()
    .py_type("str | list[str] | None", "str"),
    Setting::new(
        "server_header",
        Kind::BoolOrText,
        Lit::Bool(true),
        "Send a Server header: True for 'ferroloop', False for none, or this string.",
    )
    .native(),
    Setting::new(
        "date_header",
        Kind::Bool,
        Lit::Bool(true),
        "Send a Date header.",
    )
    .native(),
    Setting::new(
        "backlog",
        Kind::Int { min: 1, max: None },
        Lit::Int(2048),
        "Maximum number of connections waiting to be accepted.",
    )
    .expected("expected an integer of at least 1"),
    Setting::new(
        "limit_concurrency",
        Kind::Int { min: 1, max: None },
        Lit::None,
        "Maximum number of connections plus application tasks; the excess gets 503.",
    )
    .null(Null::Word)
    .expected("expected an integer of at least 1, or none")
    .native(),
    Setting::new(
        "max_request_line",
        Kind::Int { min: 64, max: None },
        Lit::Int(8192),
        "Longest request line (and target), in bytes; longer gets 414.",
    )
    .expected("expected an integer of at least 64")
    .native(),
    Setting::new(
        "max_header_size",
        Kind::Int {
            min: 256,
            max: None,
        },
        Lit::Int(64 * 1024),
        "Largest request head, in bytes; larger gets 431.",
    )
    .expected("expected an integer of at least 256")
    .native(),
    Setting::new(
        "max_header_count",
        Kind::Int { min: 1, max: None },
        Lit::Int(100),
        "Most header fields in a request; more gets 431.",
    )
    .expected("expected an integer of at least 1")
    .native(),
    Setting::new(
        "max_body_size",
        Kind::Int { min: 0, max: None },
        Lit::Int(16 * MIB),
        "Largest request body, in bytes (none: unlimited); larger gets 413.",
    )
    .null(Null::Word)
    .expected("expected an integer of at least 0, or none")
    .native(),
    Setting::new(
        "timeout_request_head",
        Kind::Seconds { zero: false },
        Lit::Float(10.0),
        "Seconds a request head may take to arrive, from connect or the end of the previous \
         response.",
    )
    .native(),
    Setting::new(
        "timeout_keep_alive",
        Kind::Seconds { zero: false },
        Lit::Float(5.0),
        "Seconds an idle connection is kept open between requests.",
    )
    .native(),
    Setting::new(
        "min_body_rate",
        Kind::Rate,
        Lit::Float(240.0),
        "Bytes per second a request body must average after body_rate_grace (0 or none: no \
         minimum).",
    )
    .null(Null::Word)
    .expected("expected a number of bytes per second, 0 or more, or none")
    .native(),
    Setting::new(
        "body_rate_grace",
        Kind::Seconds { zero: true },
        Lit::Float(5.0),
        "Seconds of waiting for a request body before min_body_rate applies.",
    )
    .native(),
    Setting::new(
        "timeout_graceful_shutdown",
        Kind::Seconds { zero: true },
        Lit::Float(30.0),
        "Seconds shutdown waits for in-flight requests and application tasks.",
    ),
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
];
