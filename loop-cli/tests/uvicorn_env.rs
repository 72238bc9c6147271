//! uvicorn's environment variables on the command line: `UVICORN_<NAME>`
//! for every uvicorn option and `UVICORN_APP`, below `FERROLOOP_<NAME>`
//! and the flags, with uvicorn's statuses and click's list splitting.

use loop_cli::table::{uvicorn, SETTINGS};
use loop_cli::{parse_values_env, CliError, Command, Parsed, Source, Value};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse(args: &[&str], vars: &[(&str, &str)]) -> Result<Parsed, CliError> {
    match parse_values_env("ferroloop", args.iter().copied(), &env(vars))? {
        Command::Run(p) => Ok(p),
        other => panic!("{args:?}: expected a run, got {other:?}"),
    }
}

fn run(vars: &[(&str, &str)]) -> Parsed {
    parse(&["a:b"], vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"))
}

#[test]
fn every_uvicorn_option_is_a_setting_with_its_variable() {
    for name in uvicorn::OPTIONS {
        let setting = SETTINGS
            .iter()
            .find(|s| s.name == *name)
            .unwrap_or_else(|| panic!("{name}: no such setting"));
        assert_eq!(
            setting.uvicorn_env(),
            Some(format!("UVICORN_{}", name.to_ascii_uppercase()))
        );
    }
    // ferroloop's own settings have none.
    let own = SETTINGS.iter().find(|s| s.name == "max_body_size").unwrap();
    assert_eq!(own.uvicorn_env(), None);
}

#[test]
fn ferroloop_wins_over_uvicorn_and_a_flag_over_both() {
    let p = run(&[("UVICORN_PORT", "9001")]);
    assert_eq!(p.values.get("port"), Value::Int(9001));
    assert_eq!(
        p.values.source("port"),
        Some(&Source::Env("UVICORN_PORT".into()))
    );
    let p = run(&[("UVICORN_PORT", "9001"), ("FERROLOOP_PORT", "9002")]);
    assert_eq!(p.values.get("port"), Value::Int(9002));
    let p = parse(
        &["a:b", "--port", "9003"],
        &[("UVICORN_PORT", "9001"), ("FERROLOOP_PORT", "9002")],
    )
    .unwrap();
    assert_eq!(p.values.get("port"), Value::Int(9003));
}

#[test]
fn values_parse_as_the_flags_do_and_errors_name_the_variable() {
    let p = run(&[
        ("UVICORN_HOST", "0.0.0.0"),
        ("UVICORN_TIMEOUT_KEEP_ALIVE", "30"),
        ("UVICORN_PROXY_HEADERS", "false"),
        ("UVICORN_LOG_LEVEL", "DEBUG"),
        ("UVICORN_WORKERS", "3"),
    ]);
    assert_eq!(p.values.get("host"), Value::Str("0.0.0.0".into()));
    assert_eq!(p.values.get("timeout_keep_alive"), Value::Float(30.0));
    assert_eq!(p.values.get("proxy_headers"), Value::Bool(false));
    assert_eq!(p.values.get("log_level"), Value::Str("debug".into()));
    assert_eq!(p.values.get("workers"), Value::Str("3".into()));
    let err = parse(&["a:b"], &[("UVICORN_PORT", "eighty")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value 'eighty' for environment variable UVICORN_PORT (--port): expected \
         an integer from 0 to 65535"
    );
}

#[test]
fn refused_and_ignored_options_say_so_for_the_variable() {
    let err = parse(&["a:b"], &[("UVICORN_HTTP2", "true")]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("UVICORN_HTTP2 (--http2) is not supported yet"),
        "{text}"
    );
    let err = parse(&["a:b"], &[("UVICORN_INTERFACE", "wsgi")]).unwrap_err();
    assert!(err.to_string().contains("not supported yet"), "{err}");
    let p = run(&[("UVICORN_LOOP", "uvloop")]);
    assert_eq!(p.values.warnings().len(), 1);
    assert!(
        p.values.warnings()[0].starts_with("UVICORN_LOOP is ignored: "),
        "{:?}",
        p.values.warnings()
    );
    // ferroloop's own option is not read from a UVICORN_ name.
    let p = run(&[("UVICORN_MAX_BODY_SIZE", "10")]);
    assert_eq!(p.values.given("max_body_size"), None);
}

#[test]
fn repeatable_options_split_as_click_splits() {
    let p = run(&[
        ("UVICORN_HEADERS", "x-a:1 x-b:2"),
        ("UVICORN_RELOAD_DIRS", "/tmp:/var"),
        ("UVICORN_RELOAD_INCLUDES", "*.py *.html"),
    ]);
    assert_eq!(
        p.values.get("headers"),
        Value::Headers(vec![("x-a".into(), "1".into()), ("x-b".into(), "2".into())])
    );
    assert_eq!(
        p.values.get("reload_dirs"),
        Value::List(vec!["/tmp".into(), "/var".into()])
    );
    assert_eq!(
        p.values.get("reload_includes"),
        Value::List(vec!["*.py".into(), "*.html".into()])
    );
}

#[test]
fn the_app_comes_from_the_environment_when_argv_has_none() {
    let p = parse(&[], &[("UVICORN_APP", "main:app")]).unwrap();
    assert_eq!(p.app, "main:app");
    let p = parse(
        &[],
        &[("UVICORN_APP", "main:app"), ("FERROLOOP_APP", "other:app")],
    )
    .unwrap();
    assert_eq!(p.app, "other:app");
    let p = parse(&["argv:app"], &[("UVICORN_APP", "main:app")]).unwrap();
    assert_eq!(p.app, "argv:app");
    assert!(matches!(
        parse(&[], &[("UVICORN_APP", "main")]),
        Err(CliError::InvalidApp { .. })
    ));
    assert!(matches!(parse(&[], &[]), Err(CliError::MissingApp)));
}
