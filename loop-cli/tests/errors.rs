//! The command line's usage errors through the public API: messages,
//! exit codes, the report, non-UTF-8 arguments.

use std::path::PathBuf;

use loop_cli::{parse, validate_app, AppProblem, CliError, Command};

mod support;

use support::{err, msg, run};

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
