//! The command line as the lead codes against it: `parse`, `help`, errors.

use std::path::{Path, PathBuf};

use loop_cli::{
    help, parse, parse_with_prog, validate_app, AppProblem, CliError, Command, Lifespan, Listen,
    LogLevel, Settings,
};

fn run(args: &[&str]) -> Settings {
    match parse(args) {
        Ok(Command::Run(s)) => s,
        other => panic!("{args:?}: expected Run, got {other:?}"),
    }
}

fn err(args: &[&str]) -> CliError {
    match parse(args) {
        Err(e) => e,
        Ok(other) => panic!("{args:?}: expected an error, got {other:?}"),
    }
}

fn msg(args: &[&str]) -> String {
    err(args).to_string()
}

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

// ---- error messages ---------------------------------------------------------

#[test]
fn unknown_option_with_suggestion() {
    assert_eq!(
        err(&["a:b", "--prot", "80"]),
        CliError::UnknownOption {
            option: "--prot".into(),
            suggestion: Some("--port")
        }
    );
    assert_eq!(
        msg(&["a:b", "--prot", "80"]),
        "unknown option '--prot' (did you mean '--port'?)"
    );
    assert_eq!(
        msg(&["a:b", "--prot=80"]),
        "unknown option '--prot' (did you mean '--port'?)"
    );
    assert_eq!(
        msg(&["a:b", "--no-acces-log"]),
        "unknown option '--no-acces-log' (did you mean '--no-access-log'?)"
    );
    assert_eq!(
        msg(&["a:b", "-port", "1"]),
        "unknown option '-port' (did you mean '--port'?)"
    );
}

#[test]
fn unknown_option_without_suggestion() {
    assert_eq!(
        msg(&["a:b", "--worker", "4"]),
        "unknown option '--worker' (did you mean '--workers'?)"
    );
    assert_eq!(
        msg(&["a:b", "--frobnicate"]),
        "unknown option '--frobnicate'"
    );
    assert_eq!(msg(&["a:b", "-x"]), "unknown option '-x'");
}

#[test]
fn options_are_not_abbreviated() {
    assert!(matches!(
        err(&["a:b", "--po", "1"]),
        CliError::UnknownOption { .. }
    ));
}

#[test]
fn missing_value() {
    for option in [
        "--host",
        "--port",
        "--uds",
        "--fd",
        "--root-path",
        "--lifespan",
        "--log-level",
    ] {
        assert_eq!(
            msg(&["a:b", option]),
            format!("option '{option}' needs a value")
        );
    }
    assert_eq!(
        err(&["a:b", "--host", "--port", "1"]),
        CliError::MissingValue { option: "--host" }
    );
    assert_eq!(
        msg(&["--port", "--", "a:b"]),
        "option '--port' needs a value"
    );
}

#[test]
fn flags_reject_values() {
    assert_eq!(
        err(&["a:b", "--access-log=1"]),
        CliError::UnexpectedValue {
            option: "--access-log"
        }
    );
    assert_eq!(
        msg(&["a:b", "--access-log=1"]),
        "option '--access-log' does not take a value"
    );
    assert_eq!(
        msg(&["a:b", "--no-access-log="]),
        "option '--no-access-log' does not take a value"
    );
    // A separate argument after a flag is a positional, not its value.
    assert_eq!(
        msg(&["a:b", "--access-log", "1"]),
        "unexpected argument '1'"
    );
}

#[test]
fn invalid_port() {
    for v in [
        "x",
        "",
        "65536",
        "+80",
        " 80",
        "80 ",
        "1e3",
        "0x10",
        "99999999999",
    ] {
        assert_eq!(
            msg(&["a:b", "--port", v]),
            format!("invalid value '{v}' for '--port': expected an integer from 0 to 65535")
        );
    }
    assert_eq!(
        err(&["a:b", "--port=x"]),
        CliError::InvalidValue {
            option: "--port",
            value: "x".into(),
            expected: "expected an integer from 0 to 65535"
        }
    );
}

#[test]
fn invalid_fd() {
    for v in ["x", "", "2147483648", "+3", "3.0"] {
        assert!(
            msg(&["a:b", "--fd", v]).starts_with(&format!("invalid value '{v}' for '--fd': ")),
            "{v}"
        );
    }
}

#[test]
fn invalid_host() {
    for v in ["", "a b", "\tx", "x\n"] {
        assert_eq!(
            msg(&["a:b", "--host", v]),
            format!("invalid value '{v}' for '--host': expected a host name or IP address")
        );
    }
}

#[test]
fn invalid_uds() {
    assert_eq!(
        msg(&["a:b", "--uds", ""]),
        "invalid value '' for '--uds': expected a socket path"
    );
}

#[test]
fn invalid_root_path() {
    for v in ["api", "/api/", "/", "api/"] {
        assert_eq!(
            msg(&["a:b", "--root-path", v]),
            format!(
                "invalid value '{v}' for '--root-path': expected an empty string or a path \
                 that starts with '/' and does not end with '/'"
            )
        );
    }
}

#[test]
fn invalid_lifespan() {
    for v in ["yes", "ON", ""] {
        assert_eq!(
            msg(&["a:b", "--lifespan", v]),
            format!("invalid value '{v}' for '--lifespan': expected one of: auto, on, off")
        );
    }
}

#[test]
fn invalid_log_level() {
    for v in ["verbose", "warn", ""] {
        assert_eq!(
            msg(&["a:b", "--log-level", v]),
            format!(
                "invalid value '{v}' for '--log-level': expected one of: critical, error, \
                 warning, info, debug, trace"
            )
        );
    }
}

#[test]
fn missing_app() {
    assert_eq!(err(&[]), CliError::MissingApp);
    assert_eq!(msg(&[]), "missing APP (e.g. 'myapp:app')");
    assert_eq!(msg(&["--port", "1"]), "missing APP (e.g. 'myapp:app')");
}

#[test]
fn unexpected_argument() {
    assert_eq!(
        err(&["a:b", "foo"]),
        CliError::UnexpectedArgument { arg: "foo".into() }
    );
    assert_eq!(msg(&["a:b", "foo"]), "unexpected argument 'foo'");
    assert_eq!(
        msg(&["a:b", "--port", "1", "c:d"]),
        "unexpected argument 'c:d'"
    );
}

#[test]
fn invalid_app_messages() {
    assert_eq!(
        err(&["x"]),
        CliError::InvalidApp {
            app: "x".into(),
            problem: AppProblem::MissingColon
        }
    );
    assert_eq!(msg(&["x"]), "invalid APP 'x': expected 'module:attribute'");
    for (app, problem) in [
        ("a:b:c", AppProblem::ExtraColon),
        (":app", AppProblem::EmptyModule),
        ("mod:", AppProblem::EmptyAttribute),
        (":", AppProblem::EmptyModule),
        ("my-app:app", AppProblem::BadModule),
        ("pkg.:app", AppProblem::BadModule),
        (".pkg:app", AppProblem::BadModule),
        ("pkg..mod:app", AppProblem::BadModule),
        ("1pkg:app", AppProblem::BadModule),
        ("pkg/main.py:app", AppProblem::BadModule),
        (" pkg:app", AppProblem::BadModule),
        ("pkg:app()", AppProblem::BadAttribute),
        ("pkg:app.", AppProblem::BadAttribute),
        ("pkg:app ", AppProblem::BadAttribute),
        ("pkg:9app", AppProblem::BadAttribute),
    ] {
        let e = err(&[app]);
        assert_eq!(
            e,
            CliError::InvalidApp {
                app: app.into(),
                problem
            },
            "{app}"
        );
        assert!(
            e.to_string().starts_with(&format!(
                "invalid APP '{app}': expected 'module:attribute' ("
            )),
            "{e}"
        );
    }
}

#[test]
fn valid_apps() {
    for app in [
        "myapp:app",
        "pkg.main:app",
        "pkg.sub.main:factory.app",
        "_private:_app",
        "m2:a2",
        "café:app",
        "mod:Obj.attr.app",
    ] {
        assert_eq!(validate_app(app), Ok(()), "{app}");
        assert_eq!(run(&[app]).app, app);
    }
}

#[test]
fn first_error_in_argument_order_wins() {
    assert_eq!(
        msg(&["--port", "x", "--prot", "1"]),
        "invalid value 'x' for '--port': expected an integer from 0 to 65535"
    );
    assert_eq!(
        msg(&["bad", "--port", "x"]),
        "invalid APP 'bad': expected 'module:attribute'"
    );
    // Missing APP is reported before cross-option conflicts.
    assert_eq!(err(&["--uds", "/s", "--fd", "3"]), CliError::MissingApp);
}

#[test]
fn exit_code_is_two() {
    for e in [
        err(&[]),
        err(&["x"]),
        err(&["a:b", "--prot"]),
        err(&["a:b", "--port"]),
        err(&["a:b", "--uds", "/s", "--fd", "1"]),
    ] {
        assert_eq!(e.exit_code(), 2);
    }
    assert_eq!(loop_cli::USAGE_EXIT_CODE, 2);
}

#[test]
fn report_is_click_style() {
    assert_eq!(
        err(&["a:b", "--port"]).report("python -m ferroloop"),
        "Usage: python -m ferroloop [OPTIONS] APP\n\
         Try 'python -m ferroloop --help' for help.\n\
         \n\
         Error: option '--port' needs a value\n"
    );
}

// ---- non-UTF-8 ----------------------------------------------------------------

#[cfg(unix)]
mod non_utf8 {
    use super::*;
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::OsStrExt;

    fn os(bytes: &[u8]) -> OsString {
        OsStr::from_bytes(bytes).to_owned()
    }

    fn parse_os(args: Vec<OsString>) -> Result<Command, CliError> {
        parse(args)
    }

    #[test]
    fn non_utf8_app() {
        let e = parse_os(vec![os(b"m\xff:app")]);
        assert_eq!(
            e,
            Err(CliError::NonUtf8 {
                arg: "m\u{fffd}:app".into()
            })
        );
        assert_eq!(
            e.err().map(|e| e.to_string()).as_deref(),
            Some("argument 'm\u{fffd}:app' is not valid UTF-8")
        );
    }

    #[test]
    fn non_utf8_option_name() {
        assert!(matches!(
            parse_os(vec![os(b"a:b".as_slice()), os(b"--p\xffrt")]),
            Err(CliError::NonUtf8 { .. })
        ));
        assert!(matches!(
            parse_os(vec![os(b"a:b"), os(b"--p\xffrt=1")]),
            Err(CliError::NonUtf8 { .. })
        ));
    }

    #[test]
    fn non_utf8_text_value() {
        assert!(matches!(
            parse_os(vec![os(b"a:b"), os(b"--host"), os(b"h\xff")]),
            Err(CliError::NonUtf8 { .. })
        ));
        assert!(matches!(
            parse_os(vec![os(b"a:b"), os(b"--root-path=/\xff")]),
            Err(CliError::NonUtf8 { .. })
        ));
    }

    #[test]
    fn non_utf8_uds_path_is_kept() {
        let want = Some(PathBuf::from(os(b"/tmp/\xff.sock")));
        for args in [
            vec![os(b"a:b"), os(b"--uds"), os(b"/tmp/\xff.sock")],
            vec![os(b"a:b"), os(b"--uds=/tmp/\xff.sock")],
        ] {
            match parse_os(args) {
                Ok(Command::Run(s)) => assert_eq!(s.uds, want),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn non_utf8_unknown_option_with_value() {
        assert_eq!(
            parse_os(vec![os(b"a:b"), os(b"--prot=\xff")]),
            Err(CliError::UnknownOption {
                option: "--prot".into(),
                suggestion: Some("--port")
            })
        );
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
