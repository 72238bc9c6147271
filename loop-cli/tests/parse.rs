//! The command line as the lead codes against it: `parse`, `help`, the
//! settings it gives (its errors are in `errors.rs`).

use std::path::{Path, PathBuf};

use loop_cli::{
    help, parse, parse_with_prog, CliError, Command, Lifespan, Listen, LogLevel, Settings,
};

mod support;

use support::{err, msg, run};

// ---- defaults -------------------------------------------------------------

#[test]
fn defaults() {
    let s = run(&["myapp:app"]);
    assert_eq!(
        s,
        Settings {
            app: "myapp:app".into(),
            host: "127.0.0.1".into(),
            port: 8000,
            uds: None,
            fd: None,
            root_path: String::new(),
            lifespan: Lifespan::Auto,
            access_log: true,
            log_level: LogLevel::Info,
        }
    );
    assert_eq!(s, Settings::new("myapp:app"));
}

// ---- each option ----------------------------------------------------------

#[test]
fn host() {
    assert_eq!(run(&["a:b", "--host", "0.0.0.0"]).host, "0.0.0.0");
    assert_eq!(run(&["a:b", "--host", "::"]).host, "::");
    assert_eq!(run(&["a:b", "--host", "example.com"]).host, "example.com");
}

#[test]
fn port() {
    assert_eq!(run(&["a:b", "--port", "9000"]).port, 9000);
    assert_eq!(run(&["a:b", "--port", "0"]).port, 0);
    assert_eq!(run(&["a:b", "--port", "65535"]).port, 65535);
}

#[test]
fn uds() {
    let s = run(&["a:b", "--uds", "/tmp/app.sock"]);
    assert_eq!(s.uds, Some(PathBuf::from("/tmp/app.sock")));
    assert_eq!(s.listen(), Listen::Unix(Path::new("/tmp/app.sock")));
}

#[test]
fn fd() {
    let s = run(&["a:b", "--fd", "3"]);
    assert_eq!(s.fd, Some(3));
    assert_eq!(s.listen(), Listen::Fd(3));
    assert_eq!(run(&["a:b", "--fd", "0"]).fd, Some(0));
    assert_eq!(run(&["a:b", "--fd", "2147483647"]).fd, Some(i32::MAX));
}

#[test]
fn root_path() {
    assert_eq!(run(&["a:b", "--root-path", "/api"]).root_path, "/api");
    assert_eq!(run(&["a:b", "--root-path", "/api/v1"]).root_path, "/api/v1");
    assert_eq!(run(&["a:b", "--root-path", ""]).root_path, "");
    assert_eq!(run(&["a:b", "--root-path="]).root_path, "");
}

#[test]
fn lifespan() {
    assert_eq!(run(&["a:b", "--lifespan", "auto"]).lifespan, Lifespan::Auto);
    assert_eq!(run(&["a:b", "--lifespan", "on"]).lifespan, Lifespan::On);
    assert_eq!(run(&["a:b", "--lifespan", "off"]).lifespan, Lifespan::Off);
}

#[test]
fn access_log() {
    assert!(run(&["a:b", "--access-log"]).access_log);
    assert!(!run(&["a:b", "--no-access-log"]).access_log);
    assert!(!run(&["a:b", "--access-log", "--no-access-log"]).access_log);
    assert!(run(&["a:b", "--no-access-log", "--access-log"]).access_log);
}

#[test]
fn access_log_format_is_checked() {
    let text = msg(&["a:b", "--access-log-format", "%(nope)s"]);
    assert!(
        text.contains("'--access-log-format'") && text.contains("client_addr"),
        "{text}"
    );
    run(&["a:b", "--access-log-format", "%(status_code)s %%"]);
    assert_eq!(err(&["a:b", "--access-log-format", "%d"]).exit_code(), 2);
}

#[test]
fn log_level() {
    for (arg, level) in [
        ("critical", LogLevel::Critical),
        ("error", LogLevel::Error),
        ("warning", LogLevel::Warning),
        ("info", LogLevel::Info),
        ("debug", LogLevel::Debug),
        ("trace", LogLevel::Trace),
        ("DEBUG", LogLevel::Debug),
        ("Warning", LogLevel::Warning),
    ] {
        assert_eq!(run(&["a:b", "--log-level", arg]).log_level, level, "{arg}");
    }
}

#[test]
fn help_and_version() {
    assert_eq!(parse(["-h"]), Ok(Command::Help(help("ferroloop"))));
    assert_eq!(parse(["--help"]), Ok(Command::Help(help("ferroloop"))));
    assert_eq!(parse(["--version"]), Ok(Command::Version));
    assert_eq!(
        parse_with_prog("python -m ferroloop", ["--help"]),
        Ok(Command::Help(help("python -m ferroloop")))
    );
}

#[test]
fn help_and_version_win_over_everything_before_double_dash() {
    assert!(matches!(parse(["a:b", "--help"]), Ok(Command::Help(_))));
    assert!(matches!(parse(["--prot", "1", "-h"]), Ok(Command::Help(_))));
    assert!(matches!(
        parse(["--port", "x", "--help"]),
        Ok(Command::Help(_))
    ));
    assert!(matches!(parse(["bad", "--version"]), Ok(Command::Version)));
    assert!(matches!(
        parse(["--version", "--help"]),
        Ok(Command::Version)
    ));
    assert!(matches!(
        parse(["--help", "--version"]),
        Ok(Command::Help(_))
    ));
    // After `--` it is a positional (and not a valid APP).
    assert!(matches!(
        parse(["--", "--help"]),
        Err(CliError::InvalidApp { .. })
    ));
    // In the `=` form it is a value, not an option.
    assert_eq!(run(&["a:b", "--root-path=/--help"]).root_path, "/--help");
    // A flag with a value is still an error.
    assert_eq!(msg(&["--help=1"]), "option '--help' does not take a value");
    assert_eq!(
        msg(&["--version=1"]),
        "option '--version' does not take a value"
    );
}

#[test]
fn everything_at_once() {
    let s = run(&[
        "--host",
        "0.0.0.0",
        "--port=0",
        "--root-path",
        "/x",
        "--lifespan=off",
        "--access-log",
        "--log-level",
        "trace",
        "pkg.main:factory.app",
    ]);
    assert_eq!(s.app, "pkg.main:factory.app");
    assert_eq!(s.app_parts(), ("pkg.main", "factory.app"));
    assert_eq!(
        s.listen(),
        Listen::Tcp {
            host: "0.0.0.0",
            port: 0
        }
    );
    assert_eq!(s.root_path, "/x");
    assert_eq!(s.lifespan, Lifespan::Off);
    assert!(s.access_log);
    assert_eq!(s.log_level, LogLevel::Trace);
}

// ---- `=` forms, `--`, ordering, repetition ------------------------------------

#[test]
fn equals_forms() {
    let s = run(&[
        "a:b",
        "--host=::1",
        "--port=1234",
        "--uds=/run/x.sock",
        "--root-path=/r",
        "--lifespan=on",
        "--log-level=error",
    ]);
    assert_eq!(s.host, "::1");
    assert_eq!(s.port, 1234);
    assert_eq!(s.uds.as_deref(), Some(Path::new("/run/x.sock")));
    assert_eq!(s.root_path, "/r");
    assert_eq!(s.lifespan, Lifespan::On);
    assert_eq!(s.log_level, LogLevel::Error);
    assert_eq!(run(&["a:b", "--fd=4"]).fd, Some(4));
}

#[test]
fn equals_splits_at_the_first_equals_sign() {
    assert_eq!(run(&["a:b", "--root-path=/a=b"]).root_path, "/a=b");
}

#[test]
fn equals_form_accepts_values_that_look_like_options() {
    assert_eq!(run(&["a:b", "--host=-x"]).host, "-x");
    assert_eq!(
        msg(&["a:b", "--root-path=-x"]),
        "invalid value '-x' for '--root-path': expected an empty string or a path \
         that starts with '/' and does not end with '/'"
    );
}

#[test]
fn double_dash_ends_options() {
    assert_eq!(run(&["--", "a:b"]).app, "a:b");
    assert_eq!(run(&["--port", "1", "--", "a:b"]).port, 1);
    // After `--`, options are positionals.
    assert_eq!(
        msg(&["a:b", "--", "--port"]),
        "unexpected argument '--port'"
    );
    assert_eq!(
        msg(&["--", "--port", "1"]),
        "invalid APP '--port': expected 'module:attribute'"
    );
    // A second `--` is a positional too.
    assert_eq!(msg(&["--", "a:b", "--"]), "unexpected argument '--'");
    // `--` alone does not give an APP.
    assert_eq!(err(&["--"]), CliError::MissingApp);
}

#[test]
fn app_may_come_anywhere() {
    let want = run(&["a:b", "--port", "1", "--access-log"]);
    assert_eq!(run(&["--port", "1", "a:b", "--access-log"]), want);
    assert_eq!(run(&["--port", "1", "--access-log", "a:b"]), want);
    assert_eq!(run(&["--port=1", "--access-log", "--", "a:b"]), want);
}

#[test]
fn repeated_options_last_wins() {
    let s = run(&[
        "a:b",
        "--port",
        "1",
        "--port",
        "2",
        "--host",
        "h1",
        "--host=h2",
        "--lifespan",
        "on",
        "--lifespan",
        "off",
        "--log-level",
        "debug",
        "--log-level",
        "error",
        "--fd",
        "3",
        "--fd",
        "4",
    ]);
    assert_eq!(s.port, 2);
    assert_eq!(s.host, "h2");
    assert_eq!(s.lifespan, Lifespan::Off);
    assert_eq!(s.log_level, LogLevel::Error);
    assert_eq!(s.fd, Some(4));
}

#[test]
fn negative_numbers_are_values() {
    assert_eq!(
        msg(&["a:b", "--port", "-1"]),
        "invalid value '-1' for '--port': expected an integer from 0 to 65535"
    );
    assert_eq!(
        msg(&["a:b", "--fd", "-1"]),
        "invalid value '-1' for '--fd': expected a file descriptor number (an integer from 0 to 2147483647)"
    );
}

#[test]
fn a_lone_dash_is_a_value_or_positional() {
    assert_eq!(msg(&["a:b", "-"]), "unexpected argument '-'");
    assert_eq!(run(&["a:b", "--host", "-"]).host, "-");
}

// ---- uds / fd / host interplay ----------------------------------------------

#[test]
fn host_and_port_with_uds_are_allowed_and_uds_wins() {
    let s = run(&["a:b", "--host", "0.0.0.0", "--port", "1", "--uds", "/s"]);
    assert_eq!(s.host, "0.0.0.0");
    assert_eq!(s.port, 1);
    assert_eq!(s.listen(), Listen::Unix(Path::new("/s")));
}

#[test]
fn host_with_fd_is_allowed_and_fd_wins() {
    let s = run(&["a:b", "--host", "0.0.0.0", "--fd", "5"]);
    assert_eq!(s.listen(), Listen::Fd(5));
}

#[test]
fn uds_and_fd_conflict() {
    for args in [
        &["a:b", "--uds", "/s", "--fd", "3"][..],
        &["a:b", "--fd", "3", "--uds", "/s"][..],
    ] {
        assert_eq!(
            err(args),
            CliError::Conflict {
                first: "--uds".into(),
                second: "--fd".into()
            }
        );
        assert_eq!(msg(args), "'--uds' and '--fd' cannot be used together");
    }
}

// ---- help -----------------------------------------------------------------------

#[test]
fn help_lists_every_option_with_its_default() {
    let text = help("ferroloop");
    assert!(text.starts_with("Usage: ferroloop [OPTIONS] APP\n"));
    for needle in [
        "--host TEXT",
        "[default: 127.0.0.1]",
        "--port INTEGER",
        "[default: 8000]",
        "--uds PATH",
        "--fd INTEGER",
        "--root-path TEXT",
        "[default: '']",
        "--lifespan [auto|on|off]",
        "[default: auto]",
        "--access-log / --no-access-log",
        "[default: access-log]",
        "--log-level [critical|error|warning|info|debug|trace]",
        "[default: info]",
        "--version",
        "-h, --help",
        "'--' ends the options",
    ] {
        assert!(text.contains(needle), "help lacks {needle:?}:\n{text}");
    }
}

#[test]
fn help_uses_the_prog_name() {
    assert!(help("python -m ferroloop").starts_with("Usage: python -m ferroloop [OPTIONS] APP\n"));
}

#[test]
fn every_option_in_help_parses() {
    // Every `--name` the help shows is accepted by the parser.
    let text = help("ferroloop");
    let mut names: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '/')
        .filter(|w| {
            w.starts_with("--")
                && w.len() > 2
                && w[2..].chars().all(|c| c.is_ascii_lowercase() || c == '-')
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let r = parse(["a:b", name, "1"]);
        assert!(
            !matches!(r, Err(CliError::UnknownOption { .. })),
            "{name}: {r:?}"
        );
    }
}

// ---- value types ----------------------------------------------------------------

#[test]
fn enum_spellings_round_trip() {
    for v in Lifespan::ALL {
        assert_eq!(Lifespan::parse(v.as_str()), Some(v));
        assert_eq!(v.to_string(), v.as_str());
    }
    for v in LogLevel::ALL {
        assert_eq!(LogLevel::parse(v.as_str()), Some(v));
        assert_eq!(LogLevel::parse(&v.as_str().to_uppercase()), Some(v));
        assert_eq!(v.to_string(), v.as_str());
    }
    assert_eq!(Lifespan::parse("Auto"), None);
    assert_eq!(LogLevel::parse("warn"), None);
}

#[test]
fn python_levels() {
    let levels: Vec<i32> = LogLevel::ALL.iter().map(|l| l.python_level()).collect();
    assert_eq!(levels, [50, 40, 30, 20, 10, 5]);
}

#[test]
fn app_parts_of_hand_built_settings() {
    assert_eq!(Settings::new("noattr").app_parts(), ("noattr", ""));
}
