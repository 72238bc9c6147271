//! Settings from the environment: `FERROLOOP_<NAME>` for every setting
//! with a text form ([`Setting::env`]), parsed as its flag's value is
//! ([`Setting::parse_text`]). A flag wins over its variable; a variable
//! over the default. For a setting that can be unset, the empty string (and
//! `none`, except for a path) is `None`.
//!
//! The command line also reads uvicorn's variables, as uvicorn does:
//! `UVICORN_<NAME>` for each of uvicorn's options
//! ([`Setting::uvicorn_env`]), below `FERROLOOP_<NAME>`, with click's
//! splitting of a repeatable option's value (on whitespace; a list of paths
//! on `:`), and the APP from `FERROLOOP_APP` or `UVICORN_APP` when argv
//! names none. A row's [`env_alias`](Setting::env_alias) (uvicorn's
//! `FORWARDED_ALLOW_IPS`, `WEB_CONCURRENCY`) is read last.
//!
//! The environment is an argument ([`Env`]), never read here: the caller
//! passes `std::env::var_os`, `os.environ`, or a test's list.

use std::ffi::{OsStr, OsString};

use crate::error::CliError;
use crate::options::admit;
use crate::table::{uvicorn, Kind, Null, Setting, SETTINGS};
use crate::value::{Source, Value, Values};

/// The prefix of every setting's variable.
pub const PREFIX: &str = "FERROLOOP_";

/// An environment to read variables from.
pub trait Env {
    fn var(&self, name: &str) -> Option<OsString>;
}

impl<F: Fn(&str) -> Option<OsString>> Env for F {
    fn var(&self, name: &str) -> Option<OsString> {
        self(name)
    }
}

/// A list of `(name, value)` pairs; the first of a name wins.
impl Env for Vec<(String, String)> {
    fn var(&self, name: &str) -> Option<OsString> {
        self.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| OsString::from(v))
    }
}

/// No variables at all.
pub struct NoEnv;

impl Env for NoEnv {
    fn var(&self, _: &str) -> Option<OsString> {
        None
    }
}

/// Which variables [`apply`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read<'a> {
    /// `prefix` + NAME and the row's alias (`Config.from_env`).
    Own(&'a str),
    /// The command line's: `FERROLOOP_<NAME>`, then `UVICORN_<NAME>` for
    /// uvicorn's options, then the alias.
    WithUvicorn,
}

/// Adds to `values` what the environment sets for the settings `wanted`
/// picks, skipping those a flag named (flags win, even one that stored
/// nothing: `--workers 1`, an ignored `--loop x`) and those already set.
pub(crate) fn apply(
    values: &mut Values,
    env: &dyn Env,
    read: Read<'_>,
    wanted: impl Fn(&Setting) -> bool,
) -> Result<(), CliError> {
    let prefix = match read {
        Read::Own(prefix) => prefix,
        Read::WithUvicorn => PREFIX,
    };
    for setting in SETTINGS.iter().filter(|s| s.has_text() && wanted(s)) {
        if values.flagged(setting.name) || values.given(setting.name).is_some() {
            continue;
        }
        let own = setting.env_with(prefix);
        let uvicorn = setting.uvicorn_env().filter(|_| read == Read::WithUvicorn);
        let found = match env.var(&own) {
            Some(text) => Some((own, text)),
            None => match uvicorn.and_then(|var| env.var(&var).map(|text| (var, text))) {
                Some((var, text)) => {
                    let text = split_as_click(setting, &text);
                    Some((var, text))
                }
                None => setting
                    .env_alias
                    .and_then(|alias| env.var(alias).map(|text| (alias.to_owned(), text))),
            },
        };
        let Some((var, text)) = found else { continue };
        let value = parse(setting, &var, &text)?;
        admit(values, setting, value, Source::Env(var))?;
    }
    Ok(())
}

/// The APP from `FERROLOOP_APP`, else uvicorn's `UVICORN_APP`.
pub(crate) fn app(env: &dyn Env) -> Option<OsString> {
    env.var(&format!("{PREFIX}APP"))
        .or_else(|| env.var(&format!("{}APP", uvicorn::PREFIX)))
}

/// A repeatable option's value as click reads it from a variable (one item
/// per whitespace-separated word; paths separated by `:`), in this crate's
/// one-item-per-line form. Other values are unchanged.
fn split_as_click(setting: &Setting, text: &OsStr) -> OsString {
    let (Kind::List(_) | Kind::Headers, Some(text)) = (setting.kind, text.to_str()) else {
        return text.to_owned();
    };
    let items: Vec<&str> = if uvicorn::PATH_LISTS.contains(&setting.name) {
        text.split(':').filter(|p| !p.is_empty()).collect()
    } else {
        text.split_ascii_whitespace().collect()
    };
    OsString::from(items.join("\n"))
}

/// The settings `Config` takes, from the variables `prefix` + NAME
/// (`Config.from_env`), with the warnings for ignored ones.
pub fn config_values(env: &dyn Env, prefix: &str) -> Result<Values, CliError> {
    let mut values = Values::default();
    apply(&mut values, env, Read::Own(prefix), Setting::in_config)?;
    Ok(values)
}

/// One variable's value for `setting`.
fn parse(setting: &'static Setting, var: &str, text: &OsStr) -> Result<Value, CliError> {
    let nullable = setting.null != Null::No;
    let none_word = setting.kind != Kind::Path && text.eq_ignore_ascii_case("none");
    if nullable && (text.is_empty() || none_word) {
        return Ok(Value::None);
    }
    setting.parse_os(text).map_err(|e| CliError::InvalidEnv {
        var: var.to_owned(),
        option: setting
            .flag
            .map_or_else(|| setting.name.to_owned(), |f| f.long.to_owned()),
        value: text.to_string_lossy().into_owned(),
        expected: e.expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn read(pairs: &[(&str, &str)]) -> Result<Values, CliError> {
        let mut values = Values::default();
        apply(&mut values, &env(pairs), Read::WithUvicorn, |_| true)?;
        Ok(values)
    }

    #[test]
    fn every_setting_with_text_has_a_variable() {
        for s in SETTINGS.iter().filter(|s| s.has_text()) {
            let text = match s.default_value() {
                Value::None | Value::Headers(_) | Value::List(_) => continue,
                Value::Bool(b) => b.to_string(),
                Value::Int(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                Value::Str(v) if v.is_empty() => continue,
                Value::Str(v) => v,
                Value::Path(p) => p.to_string_lossy().into_owned(),
            };
            let values = read(&[(s.env().as_str(), text.as_str())]);
            assert!(values.is_ok(), "{}={text}: {values:?}", s.env());
        }
    }

    #[test]
    fn typed_values_and_none() {
        let v = read(&[
            ("FERROLOOP_PORT", "9000"),
            ("FERROLOOP_TIMEOUT_KEEP_ALIVE", "2.5"),
            ("FERROLOOP_PROXY_HEADERS", "false"),
            ("FERROLOOP_LIMIT_CONCURRENCY", "none"),
            ("FERROLOOP_MAX_BODY_SIZE", ""),
            ("FERROLOOP_UDS", "none"),
            ("FERROLOOP_HEADERS", "x-a: 1\nx-b:2"),
        ])
        .unwrap();
        assert_eq!(v.get("port"), Value::Int(9000));
        assert_eq!(v.get("timeout_keep_alive"), Value::Float(2.5));
        assert_eq!(v.get("proxy_headers"), Value::Bool(false));
        assert_eq!(v.given("limit_concurrency"), Some(&Value::None));
        assert_eq!(v.given("max_body_size"), Some(&Value::None));
        assert_eq!(v.get("uds"), Value::Path("none".into()));
        assert_eq!(
            v.get("headers"),
            Value::Headers(vec![("x-a".into(), "1".into()), ("x-b".into(), "2".into())])
        );
        assert_eq!(
            v.source("port"),
            Some(&Source::Env("FERROLOOP_PORT".into()))
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = read(&[("FERROLOOP_PORT", "eighty")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value 'eighty' for environment variable FERROLOOP_PORT (--port): expected \
             an integer from 0 to 65535"
        );
        assert!(read(&[("FERROLOOP_PORT", "")]).is_err());
        assert!(read(&[("FERROLOOP_DATE_HEADER", "maybe")]).is_err());
    }

    #[test]
    fn aliases_are_read_after_the_own_variable() {
        let v = read(&[("FORWARDED_ALLOW_IPS", "10.0.0.1")]).unwrap();
        assert_eq!(v.get("forwarded_allow_ips"), Value::Str("10.0.0.1".into()));
        let v = read(&[
            ("FORWARDED_ALLOW_IPS", "10.0.0.1"),
            ("FERROLOOP_FORWARDED_ALLOW_IPS", "*"),
        ])
        .unwrap();
        assert_eq!(v.get("forwarded_allow_ips"), Value::Str("*".into()));
        assert_eq!(
            read(&[("WEB_CONCURRENCY", "4")]).map(|v| v.get("workers")),
            Ok(Value::Str("4".into()))
        );
        assert!(read(&[("WEB_CONCURRENCY", "four")]).is_err());
    }

    #[test]
    fn ignored_variables_warn() {
        let v = read(&[("FERROLOOP_LOOP", "uvloop")]).unwrap();
        assert_eq!(v.given("loop"), None);
        assert_eq!(v.warnings().len(), 1);
        assert!(v.warnings()[0].starts_with("FERROLOOP_LOOP is ignored: "));
    }

    #[test]
    fn config_values_only_take_config_settings() {
        let e = env(&[
            ("APP_PORT", "1"),
            ("APP_APP_DIR", "/x"),
            ("FERROLOOP_PORT", "2"),
        ]);
        let v = config_values(&e, "APP_").unwrap();
        assert_eq!(v.get("port"), Value::Int(1));
        assert_eq!(v.given("app_dir"), None);
    }
}
