//! The metrics listener's two settings: `--metrics-port` (off by default,
//! `none` unsets it) and `--metrics-address`.

use loop_cli::table::SETTINGS;
use loop_cli::{parse_values_env, CliError, Command, Parsed, Value};

fn parse_env(args: &[&str], vars: &[(&str, &str)]) -> Result<Parsed, CliError> {
    let mut all = vec!["a:b"];
    all.extend_from_slice(args);
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    match parse_values_env("ferroloop", all, &vars)? {
        Command::Run(p) => Ok(p),
        other => panic!("{args:?}: expected a run, got {other:?}"),
    }
}

fn run(args: &[&str]) -> Parsed {
    parse_env(args, &[]).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn msg(args: &[&str]) -> String {
    match parse_env(args, &[]) {
        Err(e) => e.to_string(),
        Ok(p) => panic!("{args:?}: expected an error, got {p:?}"),
    }
}

#[test]
fn off_by_default_on_loopback() {
    let p = run(&[]);
    assert_eq!(p.values.get("metrics_port"), Value::None);
    assert_eq!(
        p.values.get("metrics_address"),
        Value::Str("127.0.0.1".into())
    );
    let row = SETTINGS
        .iter()
        .find(|s| s.name == "metrics_port")
        .expect("the metrics_port row");
    assert!(
        !row.native,
        "the metrics listener is Python's, not a native setting"
    );
}

#[test]
fn port_and_address() {
    let p = run(&["--metrics-port", "9100", "--metrics-address", "::1"]);
    assert_eq!(p.values.get("metrics_port"), Value::Int(9100));
    assert_eq!(p.values.get("metrics_address"), Value::Str("::1".into()));
    assert_eq!(
        run(&["--metrics-port=0"]).values.get("metrics_port"),
        Value::Int(0)
    );
    assert_eq!(
        run(&["--metrics-port", "none"])
            .values
            .given("metrics_port"),
        Some(&Value::None)
    );
}

#[test]
fn from_the_environment_below_the_flag() {
    let p = parse_env(&[], &[("FERROLOOP_METRICS_PORT", "9101")]).unwrap();
    assert_eq!(p.values.get("metrics_port"), Value::Int(9101));
    let p = parse_env(
        &["--metrics-port", "9102"],
        &[("FERROLOOP_METRICS_PORT", "9101")],
    )
    .unwrap();
    assert_eq!(p.values.get("metrics_port"), Value::Int(9102));
}

#[test]
fn bad_values_name_the_flag() {
    for v in ["x", "", "65536", "-1", "9100.0"] {
        assert_eq!(
            msg(&["--metrics-port", v]),
            format!(
                "invalid value '{v}' for '--metrics-port': expected an integer from 0 to 65535, or none"
            )
        );
    }
    assert!(
        msg(&["--metrics-address", "a b"])
            .starts_with("invalid value 'a b' for '--metrics-address': "),
        "{}",
        msg(&["--metrics-address", "a b"])
    );
}
