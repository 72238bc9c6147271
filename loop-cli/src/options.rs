//! The command-line options, derived from the settings table
//! ([`crate::table::SETTINGS`]) plus `--version` and `--help`, and what each
//! option does to the [`Values`].
//!
//! A setting with a [`Flag`](crate::table::Flag) is an option: its flag,
//! `--help` text, metavar and shown default come from its row, its value is
//! parsed by [`Setting::parse_text`]. Options that exclude each other are
//! checked once, after parsing, in [`check_conflicts`]. The parser, `--help`
//! and spelling suggestions all read [`OPTIONS`].

use std::ffi::OsString;
use std::sync::LazyLock;

use crate::error::CliError;
use crate::table::{find, Kind, Setting, Status, SETTINGS};
use crate::value::{Source, Value, Values};

/// What an option stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Target {
    Setting(&'static Setting),
    Version,
    Help,
}

/// How an option consumes arguments.
#[derive(Clone, Debug)]
pub(crate) enum Arity {
    /// Takes a value: `--opt VALUE` or `--opt=VALUE`. `metavar` names it in
    /// `--help`.
    Value { metavar: String },
    /// A pair of flags: the row's `long` turns it on, `off` turns it off.
    Switch { off: &'static str },
    /// A flag with no value and no negation.
    Flag,
}

/// One option.
#[derive(Debug)]
pub(crate) struct OptSpec {
    pub target: Target,
    /// `--name`.
    pub long: &'static str,
    /// `-x`, if any.
    pub short: Option<&'static str>,
    pub arity: Arity,
    pub help: &'static str,
    /// The row's status note (`[not supported yet]`), shown whole.
    pub note: Option<String>,
    /// Shown by `--help` as `[default: ...]`.
    pub default: Option<String>,
}

impl OptSpec {
    /// Ends parsing at once with a [`Exit`] (`--help`, `--version`); such
    /// options win over any error elsewhere on the command line, as click's
    /// eager options do.
    pub(crate) fn exit(&self) -> Option<Exit> {
        match self.target {
            Target::Help => Some(Exit::Help),
            Target::Version => Some(Exit::Version),
            Target::Setting(_) => None,
        }
    }

    /// Every spelling of this option, with the value a switch gets from it.
    pub(crate) fn names(&self) -> impl Iterator<Item = (&'static str, bool)> {
        let off = match self.arity {
            Arity::Switch { off } => Some((off, false)),
            Arity::Value { .. } | Arity::Flag => None,
        };
        std::iter::once((self.long, true))
            .chain(self.short.map(|s| (s, true)))
            .chain(off)
    }
}

/// Options that end parsing instead of contributing to the settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Help,
    Version,
}

/// The options, in `--help` order: the table's flags, then `--version` and
/// `--help`.
pub(crate) static OPTIONS: LazyLock<Vec<OptSpec>> = LazyLock::new(|| {
    let settings = SETTINGS.iter().filter(|s| s.in_cli()).filter_map(|s| {
        let flag = s.flag?;
        let arity = match (s.kind, flag.off, flag.metavar) {
            (Kind::Bool | Kind::BoolOrText, Some(off), _) => Arity::Switch { off },
            (Kind::Bool, None, None) => Arity::Flag,
            _ => Arity::Value {
                metavar: s.metavar_text(),
            },
        };
        Some(OptSpec {
            target: Target::Setting(s),
            long: flag.long,
            short: None,
            arity,
            help: s.help,
            note: s.status_note(),
            default: s.default_text(),
        })
    });
    let exits = [
        OptSpec {
            target: Target::Version,
            long: "--version",
            short: None,
            arity: Arity::Flag,
            help: "Display the ferroloop version and exit.",
            note: None,
            default: None,
        },
        OptSpec {
            target: Target::Help,
            long: "--help",
            short: Some("-h"),
            arity: Arity::Flag,
            help: "Show this message and exit.",
            note: None,
            default: None,
        },
    ];
    settings.chain(exits).collect()
});

/// The option and switch value for an exact option spelling.
pub(crate) fn lookup(name: &str) -> Option<(&'static OptSpec, &'static str, bool)> {
    OPTIONS.iter().find_map(|spec| {
        spec.names()
            .find(|(n, _)| *n == name)
            .map(|(n, on)| (spec, n, on))
    })
}

/// One occurrence of an option on the command line, its arity already
/// checked by the parser.
pub(crate) struct Given {
    /// The spelling used, for messages.
    pub option: &'static str,
    /// The value, for [`Arity::Value`] options.
    pub value: Option<OsString>,
    /// For [`Arity::Switch`]: `true` for `long`, `false` for `off`.
    pub on: bool,
}

/// Applies one option. Repeated options simply apply again: the last wins
/// (a repeated `--header` adds one).
pub(crate) fn apply(
    values: &mut Values,
    target: Target,
    given: Given,
) -> Result<Option<Exit>, CliError> {
    let setting = match target {
        Target::Version => return Ok(Some(Exit::Version)),
        Target::Help => return Ok(Some(Exit::Help)),
        Target::Setting(s) => s,
    };
    let option = given.option;
    let value = match (setting.kind, given.value) {
        (Kind::Bool | Kind::BoolOrText, None) => Value::Bool(given.on),
        (_, None) => return Err(CliError::MissingValue { option }),
        (_, Some(v)) => parse_value(setting, option, v)?,
    };
    admit(values, setting, value, Source::Flag(option))?;
    Ok(None)
}

/// Records a parsed value after its row's status: a value not supported
/// yet is an error (an unsupported setting given its default asks for
/// nothing ferroloop does not do, and passes); an ignored setting only
/// warns, when given something else than its default.
pub(crate) fn admit(
    values: &mut Values,
    setting: &'static Setting,
    value: Value,
    source: Source,
) -> Result<(), CliError> {
    let what = match &source {
        Source::Flag(flag) => {
            values.mark_flagged(setting);
            format!("option '{flag}'")
        }
        Source::Env(var) => format!("{var} (--{})", setting.name.replace('_', "-")),
    };
    if let (Some((refused, reason)), Value::Str(v)) = (setting.refuse, &value) {
        if refused.contains(&v.as_str()) {
            return Err(CliError::Unsupported {
                what: format!("{what} with '{v}'"),
                reason,
            });
        }
    }
    if let (Some(reason), Value::Str(v)) = (setting.refuse_import, &value) {
        if setting.is_refused_import(v) {
            return Err(CliError::Refused {
                what: format!("{what} with '{v}'"),
                reason,
            });
        }
    }
    let is_default = value == setting.default_value();
    match setting.status {
        Status::Unsupported(reason) if !is_default => Err(CliError::Unsupported { what, reason }),
        Status::Unsupported(_) => Ok(()),
        Status::Ignored(warning) => {
            if !is_default {
                values.warn(format!("{} is ignored: {warning}", source.label()));
            }
            Ok(())
        }
        Status::Supported => {
            values.set_from(setting, value, source);
            Ok(())
        }
    }
}

/// A value must be UTF-8 unless the setting is a path.
fn parse_value(setting: &Setting, option: &'static str, v: OsString) -> Result<Value, CliError> {
    let invalid = |value: String, expected| CliError::InvalidValue {
        option,
        value,
        expected,
    };
    if setting.kind == Kind::Path {
        return setting
            .parse_os(&v)
            .map_err(|e| invalid(v.to_string_lossy().into_owned(), e.expected));
    }
    let text = v.into_string().map_err(|v| CliError::NonUtf8 {
        arg: v.to_string_lossy().into_owned(),
    })?;
    // One flag, one header (a variable holds one per line).
    if matches!(setting.kind, Kind::Headers | Kind::List(_)) && text.contains(['\r', '\n']) {
        return Err(invalid(text, setting.expected_text()));
    }
    setting
        .parse_text(&text)
        .map_err(|e| invalid(text, e.expected))
}

/// Rules across options, checked once all options (and the environment)
/// are in; an alias hands its value to its setting here.
pub(crate) fn check_conflicts(values: &mut Values) -> Result<(), CliError> {
    resolve_aliases(values);
    let given = |values: &Values, name| values.given(name).is_some_and(|v| *v != Value::None);
    if given(values, "uds") && given(values, "fd") {
        let label = |name| values.source(name).map(Source::label).unwrap_or_default();
        return Err(CliError::Conflict {
            first: label("uds"),
            second: label("fd"),
        });
    }
    let listener = ["uds", "fd"].into_iter().find(|name| given(values, name));
    if let Some(listener) = listener.and_then(|name| values.source(name).cloned()) {
        for tcp in ["host", "port"] {
            if let Some(source) = values.source(tcp).cloned() {
                values.warn(format!(
                    "{} is ignored: {} wins",
                    source.label(),
                    listener.label()
                ));
            }
        }
    }
    if given(values, "limit_max_requests_jitter") && !given(values, "limit_max_requests") {
        values.warn(
            "--limit-max-requests-jitter has no effect without --limit-max-requests".to_owned(),
        );
    }
    crate::tls::check_cli(values)
}

/// `--h11-max-incomplete-event-size` sets `max_header_size`, unless that
/// was given at the same level or above (its flag; or its variable when the
/// alias came from the environment too).
fn resolve_aliases(values: &mut Values) {
    for alias in SETTINGS {
        let Some(target) = alias.alias_of.and_then(find) else {
            continue;
        };
        let Some((value, source)) = values.take(alias.name) else {
            continue;
        };
        let wins = match (values.source(target.name), &source) {
            (None, _) => true,
            (Some(Source::Env(_)), Source::Flag(_)) => true,
            (Some(_), _) => false,
        };
        if wins {
            values.set_from(target, value, source);
        } else {
            values.warn(format!(
                "{} is ignored: {} wins",
                source.label(),
                values
                    .source(target.name)
                    .map(Source::label)
                    .unwrap_or_default()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use crate::table::Lit;

    #[test]
    fn every_spelling_is_unique() {
        let mut names: Vec<&str> = OPTIONS
            .iter()
            .flat_map(|s| s.names().map(|(n, _)| n))
            .collect();
        let total = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), total);
    }

    #[test]
    fn spellings_are_well_formed() {
        for spec in OPTIONS.iter() {
            for (name, _) in spec.names() {
                let long = name.starts_with("--") && name.len() > 2;
                let short = name.len() == 2 && name.starts_with('-') && name != "--";
                assert!(long || short, "{name}");
                assert!(!name.contains('='), "{name}");
            }
        }
    }

    #[test]
    fn every_flag_is_an_option_in_table_order() {
        let longs: Vec<&str> = OPTIONS.iter().map(|s| s.long).collect();
        let flags: Vec<&str> = SETTINGS
            .iter()
            .filter(|s| s.in_cli())
            .filter_map(|s| s.flag.map(|f| f.long))
            .chain(["--version", "--help"])
            .collect();
        assert_eq!(longs, flags);
        assert_eq!(longs[..4], ["--host", "--port", "--uds", "--fd"]);
    }

    #[test]
    fn help_shows_what_is_not_implemented() {
        let help = |long| {
            OPTIONS
                .iter()
                .find(|s| s.long == long)
                .map(|s| format!("{} {}", s.help, s.note.clone().unwrap_or_default()))
        };
        assert!(help("--http2").is_some_and(|h| h.ends_with("[not supported yet]")));
        assert!(help("--loop").is_some_and(|h| h.ends_with("[ignored]")));
        assert!(help("--interface").is_some_and(|h| h.ends_with("[not supported yet: wsgi]")));
        assert!(help("--port").is_some_and(|h| !h.contains("[not") && !h.contains("[ignored")));
    }

    static WORKERS: Setting = Setting::new(
        "workers",
        Kind::Int { min: 1, max: None },
        Lit::Int(1),
        "Worker processes.",
    )
    .cli_only("--workers")
    .status(Status::Unsupported("one process for now"));
    static RELOAD: Setting = Setting::new("reload", Kind::Bool, Lit::Bool(false), "Reload.")
        .cli_only("--reload")
        .status(Status::Ignored("ferroloop does not reload"));

    fn given(option: &'static str, value: Option<&str>) -> Given {
        Given {
            option,
            value: value.map(OsString::from),
            on: true,
        }
    }

    #[test]
    fn unsupported_options_are_usage_errors() {
        let mut values = Values::default();
        let err = apply(
            &mut values,
            Target::Setting(&WORKERS),
            given("--workers", Some("4")),
        );
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err("option '--workers' is not supported yet: one process for now".to_owned())
        );
        assert!(!WORKERS.in_config() && WORKERS.in_cli());
    }

    #[test]
    fn ignored_options_warn_and_set_nothing() {
        let mut values = Values::default();
        let r = apply(
            &mut values,
            Target::Setting(&RELOAD),
            given("--reload", None),
        );
        assert_eq!(r, Ok(None));
        assert_eq!(values.given("reload"), None);
        assert_eq!(
            values.warnings(),
            ["--reload is ignored: ferroloop does not reload"]
        );
    }

    #[test]
    fn shown_defaults_match_settings_defaults() {
        let d = Settings::new("a:b");
        let shown = |long| {
            OPTIONS
                .iter()
                .find(|s| s.long == long)
                .and_then(|s| s.default.clone())
        };
        assert_eq!(shown("--host"), Some(d.host.clone()));
        assert_eq!(shown("--port"), Some(d.port.to_string()));
        assert_eq!(shown("--root-path").as_deref(), Some("''"));
        assert!(d.root_path.is_empty());
        assert_eq!(shown("--lifespan").as_deref(), Some(d.lifespan.as_str()));
        assert_eq!(shown("--log-level").as_deref(), Some(d.log_level.as_str()));
        assert_eq!(
            shown("--access-log").as_deref(),
            Some(if d.access_log {
                "access-log"
            } else {
                "no-access-log"
            })
        );
        assert_eq!(shown("--uds"), None);
        assert!(d.uds.is_none());
        assert_eq!(shown("--fd"), None);
        assert!(d.fd.is_none());
    }
}
