//! uvicorn's options and the environment, through the public API: every
//! flag parses to its setting, `FERROLOOP_*` variables fill in what flags
//! did not give, and each refusal is a usage error naming its source.

use std::ffi::OsString;

use loop_cli::env::Env;
use loop_cli::table::{Item, Kind, Status, Text, SETTINGS};
use loop_cli::{parse_values_env, CliError, Command, Parsed, Value};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse_env(args: &[&str], vars: &[(&str, &str)]) -> Result<Parsed, CliError> {
    let mut all = vec!["a:b"];
    all.extend_from_slice(args);
    match parse_values_env("ferroloop", all, &env(vars))? {
        Command::Run(p) => Ok(p),
        other => panic!("{args:?}: expected a run, got {other:?}"),
    }
}

fn run(args: &[&str]) -> Parsed {
    parse_env(args, &[]).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn msg(args: &[&str], vars: &[(&str, &str)]) -> String {
    match parse_env(args, vars) {
        Err(e) => e.to_string(),
        Ok(p) => panic!("{args:?} {vars:?}: expected an error, got {p:?}"),
    }
}

/// A text that parses for `kind`, other than the default where possible.
fn sample(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Int { min, .. } if min <= 1 => "1",
        Kind::Int { .. } => "300",
        Kind::Seconds { .. } | Kind::Rate => "3",
        Kind::Bool | Kind::BoolOrText => "false",
        Kind::Text(Text::Workers) => "2",
        Kind::Text(Text::FileMode) => "660",
        Kind::Text(_) => "/x",
        Kind::Path => "/tmp/x",
        Kind::Choice { values, .. } => values[0],
        Kind::Headers => "x-a: 1",
        Kind::List(Item::Path) => "/tmp/x",
        Kind::List(Item::Sni) => "a.example=/tmp/c.pem:/tmp/k.pem",
        Kind::Object => return None,
    })
}

#[test]
fn every_supported_flag_and_variable_sets_its_setting() {
    for s in SETTINGS.iter().filter(|s| s.status == Status::Supported) {
        let Some(text) = sample(s.kind) else { continue };
        // 1 is PROTOCOL_SSLv3, refused by name.
        let text = if s.name == "ssl_version" { "2" } else { text };
        // An ssl_* setting asks for TLS: a certificate (and, for the
        // client-certificate ones, a CA) with it.
        let tls: &[&str] = if s.name.starts_with("ssl_") {
            &[
                "--ssl-certfile",
                "c.pem",
                "--ssl-keyfile",
                "k.pem",
                "--ssl-ca-certs",
                "ca.pem",
                "--ssl-cert-reqs",
                "2",
            ]
        } else {
            &[]
        };
        let with_tls = |args: &[&'static str]| -> Vec<&'static str> {
            let mut all = tls.to_vec();
            all.extend_from_slice(args); // later: wins over the same flag in `tls`
            all
        };
        let target = s.alias_of.unwrap_or(s.name);
        let from_env = parse_env(&with_tls(&[]), &[(s.env().as_str(), text)])
            .unwrap_or_else(|e| panic!("{}={text}: {e}", s.env()));
        assert!(from_env.values.given(target).is_some(), "{}", s.env());
        if !s.in_cli() {
            continue;
        }
        let Some(flag) = s.flag else { continue };
        let parsed = match (s.kind, flag.off) {
            (Kind::Bool | Kind::BoolOrText, Some(off)) => run(&[off]),
            (Kind::Bool, None) if flag.metavar.is_none() => run(&[flag.long]),
            _ => run(&with_tls(&[flag.long, text])),
        };
        assert!(parsed.values.given(target).is_some(), "{}", flag.long);
    }
}

#[test]
fn flags_win_over_the_environment_which_wins_over_defaults() {
    let p = parse_env(
        &["--port", "1"],
        &[("FERROLOOP_PORT", "2"), ("FERROLOOP_HOST", "::")],
    )
    .unwrap();
    assert_eq!(p.values.get("port"), Value::Int(1));
    assert_eq!(p.values.get("host"), Value::Str("::".into()));
    assert_eq!(p.values.get("backlog"), Value::Int(2048));
    let p = parse_env(&[], &[("FERROLOOP_ACCESS_LOG", "yes")]).unwrap();
    assert_eq!(p.values.get("access_log"), Value::Bool(true));
    let p = parse_env(&["--no-access-log"], &[("FERROLOOP_ACCESS_LOG", "yes")]).unwrap();
    assert_eq!(p.values.get("access_log"), Value::Bool(false));
}

#[test]
fn uvicorn_integer_timeouts_are_seconds() {
    let p = run(&[
        "--timeout-keep-alive",
        "5",
        "--timeout-graceful-shutdown",
        "10",
    ]);
    assert_eq!(p.values.get("timeout_keep_alive"), Value::Float(5.0));
    assert_eq!(
        p.values.get("timeout_graceful_shutdown"),
        Value::Float(10.0)
    );
}

#[test]
fn optional_numbers_take_none() {
    let p = run(&[
        "--limit-concurrency",
        "none",
        "--max-body-size",
        "None",
        "--limit-max-requests",
        "none",
    ]);
    for name in ["limit_concurrency", "max_body_size", "limit_max_requests"] {
        assert_eq!(p.values.given(name), Some(&Value::None), "{name}");
    }
}

#[test]
fn headers_add_up() {
    let p = run(&[
        "--header",
        "x-a:1",
        "--header=X-B: two words",
        "--header",
        "server:edge",
    ]);
    assert_eq!(
        p.values.get("headers"),
        Value::Headers(vec![
            ("x-a".into(), "1".into()),
            ("X-B".into(), "two words".into()),
            ("server".into(), "edge".into()),
        ])
    );
    // Flags replace the variable's list rather than add to it.
    let p = parse_env(&["--header", "x-a:1"], &[("FERROLOOP_HEADERS", "x-b:2")]).unwrap();
    assert_eq!(
        p.values.get("headers"),
        Value::Headers(vec![("x-a".into(), "1".into())])
    );
    for bad in [
        "novalue",
        "bad name:1",
        ":1",
        "x-a:1\r\nx-b:2",
        "x-a:1\nx-b:2",
    ] {
        assert!(
            msg(&["--header", bad], &[]).starts_with(&format!(
                "invalid value '{bad}' for '--header': expected NAME:VALUE"
            )),
            "{bad}"
        );
    }
}

#[test]
fn header_values_are_latin1_as_the_server_sends_them() {
    let p = run(&["--header", "x-price:5 £"]);
    assert_eq!(
        p.values.get("headers"),
        Value::Headers(vec![("x-price".into(), "5 £".into())])
    );
    let m = msg(&["--header", "x:€"], &[]);
    assert!(m.starts_with("invalid value 'x:€' for '--header': "), "{m}");
    assert!(m.contains("Latin-1"), "{m}");
    let m = msg(&[], &[("FERROLOOP_HEADERS", "x:€")]);
    assert!(m.contains("FERROLOOP_HEADERS (--header)"), "{m}");
}

/// Needs `DefaultHeaders::new` to refuse framing headers (loop-http).
#[test]
fn framing_headers_are_refused() {
    for bad in [
        "content-length:0",
        "Transfer-Encoding:chunked",
        "connection:close",
    ] {
        let m = msg(&["--header", bad], &[]);
        assert!(
            m.starts_with(&format!("invalid value '{bad}' for '--header': ")),
            "{m}"
        );
    }
}

#[test]
fn a_flag_wins_over_the_environment_even_when_it_stores_nothing() {
    // An unsupported option at its default.
    let p = parse_env(&["--workers", "1"], &[("WEB_CONCURRENCY", "4")]);
    assert!(p.is_ok(), "{p:?}");
    assert!(p.is_ok_and(|p| p.values.flagged("workers")));
    let p = parse_env(&["--ws", "auto"], &[("FERROLOOP_WS", "module:Class")]);
    assert!(p.is_ok_and(|p| p.values.get("ws") == Value::Str("auto".into())));
    // An ignored option warns once, for the flag.
    let p = parse_env(&["--loop", "x"], &[("FERROLOOP_LOOP", "y")]).unwrap();
    assert_eq!(p.values.warnings().len(), 1, "{:?}", p.values.warnings());
    assert!(p.values.warnings()[0].starts_with("--loop is ignored: "));
    // Without the flag the variable still counts.
    let p = parse_env(&[], &[("FERROLOOP_LOOP", "y")]).unwrap();
    assert!(p.values.warnings()[0].starts_with("FERROLOOP_LOOP is ignored: "));
}

#[test]
fn the_h11_bound_is_max_header_size() {
    let p = run(&["--h11-max-incomplete-event-size", "32768"]);
    assert_eq!(p.values.get("max_header_size"), Value::Int(32768));
    assert_eq!(p.values.given("h11_max_incomplete_event_size"), None);
    let p = run(&[
        "--max-header-size",
        "1024",
        "--h11-max-incomplete-event-size",
        "32768",
    ]);
    assert_eq!(p.values.get("max_header_size"), Value::Int(1024));
    assert_eq!(
        p.values.warnings(),
        ["--h11-max-incomplete-event-size is ignored: --max-header-size wins"]
    );
    let p = parse_env(
        &["--h11-max-incomplete-event-size", "4096"],
        &[("FERROLOOP_MAX_HEADER_SIZE", "1024")],
    )
    .unwrap();
    assert_eq!(p.values.get("max_header_size"), Value::Int(4096));
}

#[test]
fn ignored_options_warn_once_each() {
    let p = run(&["--loop", "uvloop", "--http", "httptools", "--loop", "auto"]);
    assert_eq!(
        p.values.warnings(),
        [
            "--loop is ignored: ferroloop always runs on its own event loop",
            "--http is ignored: ferroloop's HTTP/1.1 implementation is built in (Rust)",
        ]
    );
    assert_eq!(p.values.given("loop"), None);
    assert!(run(&["--http", "auto"]).values.warnings().is_empty());
}

#[test]
fn unsupported_options_are_refused_unless_given_their_default() {
    for args in [
        &["--workers", "4"][..],
        &["--workers", "auto"],
        &["--reload"],
        &["--reload-dir", "src"],
        &["--ssl-version", "17"],
        &["--reload-delay", "0.25"],
        &["--interface", "asgi2"],
    ] {
        run(args);
    }
    for (args, what) in [
        (&["--http2"][..], "option '--http2'"),
        (&["--interface", "wsgi"], "option '--interface' with 'wsgi'"),
    ] {
        let m = msg(args, &[]);
        assert!(
            m.starts_with(&format!("{what} is not supported yet: ")),
            "{m}"
        );
    }
    assert!(parse_env(&[], &[("WEB_CONCURRENCY", "4")]).is_ok());
}

#[test]
fn bad_environment_values_name_the_variable() {
    assert_eq!(
        msg(&[], &[("FERROLOOP_TIMEOUT_KEEP_ALIVE", "soon")]),
        "invalid value 'soon' for environment variable FERROLOOP_TIMEOUT_KEEP_ALIVE \
         (--timeout-keep-alive): expected a positive number of seconds"
    );
    // A flag given: its variable is not even read.
    assert!(parse_env(&["--port", "1"], &[("FERROLOOP_PORT", "x")]).is_ok());
}

#[test]
fn conflicts_name_flags_and_variables() {
    assert_eq!(
        msg(&["--fd", "3"], &[("FERROLOOP_UDS", "/tmp/s")]),
        "'FERROLOOP_UDS' and '--fd' cannot be used together"
    );
    let p = run(&["--limit-max-requests-jitter", "5"]);
    assert_eq!(
        p.values.warnings(),
        ["--limit-max-requests-jitter has no effect without --limit-max-requests"]
    );
}

#[test]
fn a_socket_wins_over_host_and_port_and_says_so() {
    let p = parse_env(
        &["--uds", "/tmp/s", "--port", "1"],
        &[("FERROLOOP_HOST", "::")],
    )
    .unwrap();
    assert_eq!(
        p.values.warnings(),
        [
            "FERROLOOP_HOST is ignored: --uds wins",
            "--port is ignored: --uds wins"
        ]
    );
}

#[test]
fn forwarded_allow_ips_reads_uvicorns_variable() {
    let p = parse_env(&[], &[("FORWARDED_ALLOW_IPS", "10.0.0.0/8")]).unwrap();
    assert_eq!(
        p.values.get("forwarded_allow_ips"),
        Value::Str("10.0.0.0/8".into())
    );
    let p = parse_env(
        &["--forwarded-allow-ips", "*"],
        &[("FORWARDED_ALLOW_IPS", "10.0.0.0/8")],
    )
    .unwrap();
    assert_eq!(p.values.get("forwarded_allow_ips"), Value::Str("*".into()));
}

#[test]
fn a_closure_is_an_environment() {
    let lookup = |name: &str| (name == "FERROLOOP_PORT").then(|| OsString::from("7"));
    assert_eq!(lookup.var("FERROLOOP_PORT"), Some(OsString::from("7")));
    let Ok(Command::Run(p)) = parse_values_env("ferroloop", ["a:b"], &lookup) else {
        panic!("expected a run");
    };
    assert_eq!(p.values.get("port"), Value::Int(7));
}

#[test]
fn websocket_options_have_uvicorns_meaning() {
    let p = run(&[]);
    let defaults = [
        ("ws", Value::Str("auto".into())),
        ("ws_max_size", Value::Int(16 * 1024 * 1024)),
        ("ws_max_queue", Value::Int(32)),
        ("ws_ping_interval", Value::Float(20.0)),
        ("ws_ping_timeout", Value::Float(20.0)),
        ("ws_per_message_deflate", Value::Bool(true)),
        ("ws_max_frame_size", Value::None),
        ("ws_max_queue_bytes", Value::Int(16 * 1024 * 1024)),
        ("ws_close_timeout", Value::Float(10.0)),
    ];
    for (name, value) in defaults {
        assert_eq!(p.values.get(name), value, "{name}");
    }
    // uvicorn's implementation names are all the native one: kept as given
    // (the server notes the alias at startup).
    for ws in ["auto", "none", "websockets", "websockets-sansio", "wsproto"] {
        let p = run(&["--ws", ws]);
        assert_eq!(p.values.given("ws"), Some(&Value::Str(ws.into())));
        assert!(p.values.warnings().is_empty(), "{ws}");
    }
    let p = run(&[
        "--ws-max-size",
        "1024",
        "--ws-max-queue",
        "4",
        "--ws-ping-interval",
        "2.5",
        "--ws-ping-timeout=none",
        "--ws-per-message-deflate",
        "false",
        "--ws-max-frame-size",
        "512",
        "--ws-max-queue-bytes",
        "4096",
        "--ws-close-timeout",
        "0.5",
    ]);
    let given = [
        ("ws_max_size", Value::Int(1024)),
        ("ws_max_queue", Value::Int(4)),
        ("ws_ping_interval", Value::Float(2.5)),
        ("ws_ping_timeout", Value::None),
        ("ws_per_message_deflate", Value::Bool(false)),
        ("ws_max_frame_size", Value::Int(512)),
        ("ws_max_queue_bytes", Value::Int(4096)),
        ("ws_close_timeout", Value::Float(0.5)),
    ];
    for (name, value) in given {
        assert_eq!(p.values.given(name), Some(&value), "{name}");
    }
}

#[test]
fn websocket_variables_set_their_options() {
    let p = parse_env(
        &["--ws-max-queue", "8"],
        &[
            ("FERROLOOP_WS", "wsproto"),
            ("FERROLOOP_WS_MAX_SIZE", "2048"),
            ("FERROLOOP_WS_MAX_QUEUE", "2"),
            ("FERROLOOP_WS_PING_INTERVAL", "none"),
            ("FERROLOOP_WS_PER_MESSAGE_DEFLATE", "off"),
            ("FERROLOOP_WS_MAX_QUEUE_BYTES", "65536"),
            ("FERROLOOP_WS_CLOSE_TIMEOUT", "3"),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.values.get("ws"), Value::Str("wsproto".into()));
    assert_eq!(p.values.get("ws_max_size"), Value::Int(2048));
    assert_eq!(p.values.get("ws_max_queue"), Value::Int(8), "the flag wins");
    assert_eq!(p.values.given("ws_ping_interval"), Some(&Value::None));
    assert_eq!(p.values.get("ws_per_message_deflate"), Value::Bool(false));
    assert_eq!(p.values.get("ws_max_queue_bytes"), Value::Int(65536));
    assert_eq!(p.values.get("ws_close_timeout"), Value::Float(3.0));
}

#[test]
fn a_websocket_protocol_class_is_refused_naming_the_flag_or_variable() {
    let reason = loop_cli::table::find("ws").and_then(|s| s.refuse_import);
    let reason = reason.unwrap_or_else(|| panic!("ws refuses import strings"));
    let e = parse_env(&["--ws", "mypkg.proto:WSProtocol"], &[]).unwrap_err();
    assert_eq!(
        e,
        CliError::Refused {
            what: "option '--ws' with 'mypkg.proto:WSProtocol'".into(),
            reason,
        }
    );
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        format!("option '--ws' with 'mypkg.proto:WSProtocol' is not supported: {reason}")
    );
    assert_eq!(
        msg(&[], &[("FERROLOOP_WS", "mypkg:Proto")]),
        format!("FERROLOOP_WS (--ws) with 'mypkg:Proto' is not supported: {reason}")
    );
    // Anything else is an invalid choice, as in uvicorn.
    for bad in ["websocket", "Auto", ":Proto", "mypkg:", "x"] {
        assert_eq!(
            msg(&["--ws", bad], &[]),
            format!(
                "invalid value '{bad}' for '--ws': expected one of: auto, none, websockets, \
                 websockets-sansio, wsproto"
            )
        );
    }
}

#[test]
fn websocket_bounds_are_checked() {
    for (args, expected) in [
        (
            &["--ws-max-size", "0"][..],
            "expected an integer of at least 1",
        ),
        (
            &["--ws-max-queue", "-1"],
            "expected an integer of at least 1",
        ),
        (
            &["--ws-max-queue-bytes", "0"],
            "expected an integer of at least 1",
        ),
        // Not given is "as --ws-max-size"; there is no word for it.
        (
            &["--ws-max-frame-size", "none"],
            "expected an integer of at least 1",
        ),
        (
            &["--ws-ping-interval", "0"],
            "expected a positive number of seconds, or none",
        ),
        (
            &["--ws-ping-timeout", "soon"],
            "expected a positive number of seconds, or none",
        ),
        (
            &["--ws-close-timeout", "0"],
            "expected a positive number of seconds",
        ),
        (
            &["--ws-close-timeout", "none"],
            "expected a positive number of seconds",
        ),
        (
            &["--ws-per-message-deflate", "maybe"],
            "expected true or false",
        ),
    ] {
        let m = msg(args, &[]);
        assert_eq!(
            m,
            format!("invalid value '{}' for '{}': {expected}", args[1], args[0]),
        );
    }
    assert_eq!(
        msg(&[], &[("FERROLOOP_WS_MAX_SIZE", "big")]),
        "invalid value 'big' for environment variable FERROLOOP_WS_MAX_SIZE (--ws-max-size): \
         expected an integer of at least 1"
    );
}

#[test]
fn tls_flags_are_checked_together_and_name_flags() {
    for (args, expected) in [
        (
            &["--ssl-certfile", "c.pem"][..],
            "invalid value for '--ssl-keyfile': --ssl-certfile needs --ssl-keyfile",
        ),
        (
            &["--ssl-keyfile", "k.pem"],
            "invalid value for '--ssl-certfile': --ssl-keyfile needs --ssl-certfile",
        ),
        (
            &["--ssl-keyfile-password", "x"],
            "invalid value for '--ssl-certfile': --ssl-keyfile-password is given without \
             --ssl-certfile and --ssl-keyfile",
        ),
        (
            &[
                "--ssl-certfile",
                "c",
                "--ssl-keyfile",
                "k",
                "--ssl-cert-reqs",
                "2",
            ],
            "invalid value for '--ssl-ca-certs': --ssl-cert-reqs 2 needs --ssl-ca-certs to \
             verify client certificates",
        ),
        (
            &[
                "--ssl-certfile",
                "c",
                "--ssl-keyfile",
                "k",
                "--ssl-crl",
                "r.pem",
            ],
            "invalid value for '--ssl-crl': revocation lists apply to client certificates: \
             give --ssl-ca-certs and --ssl-cert-reqs 1 or 2",
        ),
        (
            &[
                "--ssl-certfile",
                "c",
                "--ssl-keyfile",
                "k",
                "--ssl-version",
                "3",
            ],
            "invalid value for '--ssl-version': 3 (PROTOCOL_TLSv1) is not available: rustls \
             speaks TLS 1.2 and 1.3; use --ssl-version 17 (PROTOCOL_TLS_SERVER) with \
             --ssl-min-version",
        ),
        (
            &["--ssl-sni", "example.com"],
            "invalid value 'example.com' for '--ssl-sni': expected HOST=CERTFILE:KEYFILE (a \
             host name, '=', the certificate file, ':', its key file)",
        ),
        (
            &["--ssl-min-version", "1.1"],
            "invalid value '1.1' for '--ssl-min-version': expected one of: 1.2, 1.3",
        ),
        (
            &["--ssl-handshake-timeout", "0"],
            "invalid value '0' for '--ssl-handshake-timeout': expected a positive number of \
             seconds",
        ),
    ] {
        assert_eq!(msg(args, &[]), expected, "{args:?}");
    }
}

#[test]
fn tls_lists_add_up() {
    let p = run(&[
        "--ssl-certfile",
        "c",
        "--ssl-keyfile",
        "k",
        "--ssl-sni",
        "a.example=a.pem:a.key",
        "--ssl-sni",
        "b.example=b.pem:b.key",
        "--ssl-ca-certs",
        "ca",
        "--ssl-cert-reqs",
        "1",
        "--ssl-crl",
        "r1.pem",
        "--ssl-crl",
        "r2.pem",
    ]);
    assert_eq!(
        p.values.get("ssl_sni"),
        Value::List(vec![
            "a.example=a.pem:a.key".into(),
            "b.example=b.pem:b.key".into()
        ])
    );
    assert_eq!(
        p.values.get("ssl_crl"),
        Value::List(vec!["r1.pem".into(), "r2.pem".into()])
    );
    // The environment: one entry per line.
    let p = parse_env(
        &["--ssl-certfile", "c", "--ssl-keyfile", "k"],
        &[(
            "FERROLOOP_SSL_SNI",
            "a.example=a.pem:a.key\nb.example=b.pem:b.key",
        )],
    )
    .unwrap();
    assert_eq!(
        p.values.get("ssl_sni"),
        Value::List(vec![
            "a.example=a.pem:a.key".into(),
            "b.example=b.pem:b.key".into()
        ])
    );
}
