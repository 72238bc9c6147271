//! The option table and what each option does to [`Settings`].
//!
//! Adding an option is: a [`Key`] variant, a row in [`OPTIONS`] (name,
//! arity, help, default shown by `--help`), and the arm for it in [`apply`].
//! Options that exclude each other are checked once, after parsing, in
//! [`check_conflicts`]. The parser, `--help`, and spelling suggestions all
//! read the table, so nothing else changes.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::CliError;
use crate::settings::{Lifespan, LogLevel, Settings};

/// Identifies an option independently of its spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Host,
    Port,
    Uds,
    Fd,
    RootPath,
    Lifespan,
    AccessLog,
    LogLevel,
    Version,
    Help,
}

/// How an option consumes arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arity {
    /// Takes a value: `--opt VALUE` or `--opt=VALUE`. `metavar` names it in
    /// `--help`.
    Value { metavar: &'static str },
    /// A pair of flags: the row's `long` turns it on, `off` turns it off.
    Switch { off: &'static str },
    /// A flag with no value and no negation.
    Flag,
}

/// One row of the option table.
#[derive(Debug)]
pub(crate) struct OptSpec {
    pub key: Key,
    /// `--name`.
    pub long: &'static str,
    /// `-x`, if any.
    pub short: Option<&'static str>,
    pub arity: Arity,
    pub help: &'static str,
    /// Shown by `--help` as `[default: ...]`.
    pub default: Option<&'static str>,
}

impl OptSpec {
    /// Ends parsing at once with a [`Exit`] (`--help`, `--version`); such
    /// options win over any error elsewhere on the command line, as click's
    /// eager options do.
    pub(crate) fn exit(&self) -> Option<Exit> {
        match self.key {
            Key::Help => Some(Exit::Help),
            Key::Version => Some(Exit::Version),
            _ => None,
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

/// Options that end parsing instead of contributing to [`Settings`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Help,
    Version,
}

/// The options, in `--help` order.
pub(crate) const OPTIONS: &[OptSpec] = &[
    OptSpec {
        key: Key::Host,
        long: "--host",
        short: None,
        arity: Arity::Value { metavar: "TEXT" },
        help: "Bind socket to this host. Use --host 0.0.0.0 to make the \
               application available on your local network. IPv6 addresses \
               are supported, for example: --host '::'. Ignored with --uds \
               or --fd.",
        default: Some(Settings::DEFAULT_HOST),
    },
    OptSpec {
        key: Key::Port,
        long: "--port",
        short: None,
        arity: Arity::Value { metavar: "INTEGER" },
        help: "Bind socket to this port. If 0, an available port will be \
               picked. Ignored with --uds or --fd.",
        default: Some("8000"),
    },
    OptSpec {
        key: Key::Uds,
        long: "--uds",
        short: None,
        arity: Arity::Value { metavar: "PATH" },
        help: "Bind to a UNIX domain socket instead of --host/--port.",
        default: None,
    },
    OptSpec {
        key: Key::Fd,
        long: "--fd",
        short: None,
        arity: Arity::Value { metavar: "INTEGER" },
        help: "Serve on the listening socket with this file descriptor \
               instead of --host/--port. Cannot be used with --uds.",
        default: None,
    },
    OptSpec {
        key: Key::RootPath,
        long: "--root-path",
        short: None,
        arity: Arity::Value { metavar: "TEXT" },
        help: "Set the ASGI 'root_path' for applications submounted below a \
               given URL path: empty, or starting with '/' and not ending \
               with '/'.",
        default: Some("''"),
    },
    OptSpec {
        key: Key::Lifespan,
        long: "--lifespan",
        short: None,
        arity: Arity::Value {
            metavar: "[auto|on|off]",
        },
        help: "Lifespan protocol: 'on' requires the application to support \
               it, 'off' never runs it, 'auto' runs it if supported.",
        default: Some("auto"),
    },
    OptSpec {
        key: Key::AccessLog,
        long: "--access-log",
        short: None,
        arity: Arity::Switch {
            off: "--no-access-log",
        },
        help: "Enable/Disable access log.",
        default: Some("no-access-log"),
    },
    OptSpec {
        key: Key::LogLevel,
        long: "--log-level",
        short: None,
        arity: Arity::Value {
            metavar: "[critical|error|warning|info|debug|trace]",
        },
        help: "Log level (case-insensitive).",
        default: Some("info"),
    },
    OptSpec {
        key: Key::Version,
        long: "--version",
        short: None,
        arity: Arity::Flag,
        help: "Display the ferroloop version and exit.",
        default: None,
    },
    OptSpec {
        key: Key::Help,
        long: "--help",
        short: Some("-h"),
        arity: Arity::Flag,
        help: "Show this message and exit.",
        default: None,
    },
];

/// The row and switch value for an exact option spelling.
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

impl Given {
    fn os(self) -> Result<(&'static str, OsString), CliError> {
        match self.value {
            Some(v) => Ok((self.option, v)),
            None => Err(CliError::MissingValue {
                option: self.option,
            }),
        }
    }

    fn text(self) -> Result<(&'static str, String), CliError> {
        let (option, value) = self.os()?;
        let value = value.into_string().map_err(|v| CliError::NonUtf8 {
            arg: v.to_string_lossy().into_owned(),
        })?;
        Ok((option, value))
    }
}

/// Applies one option. Repeated options simply apply again: the last wins.
pub(crate) fn apply(s: &mut Settings, key: Key, given: Given) -> Result<Option<Exit>, CliError> {
    match key {
        Key::Host => s.host = parse_host(given.text()?)?,
        Key::Port => s.port = parse_port(given.text()?)?,
        Key::Uds => s.uds = Some(parse_uds(given.os()?)?),
        Key::Fd => s.fd = Some(parse_fd(given.text()?)?),
        Key::RootPath => s.root_path = parse_root_path(given.text()?)?,
        Key::Lifespan => s.lifespan = parse_lifespan(given.text()?)?,
        Key::AccessLog => s.access_log = given.on,
        Key::LogLevel => s.log_level = parse_log_level(given.text()?)?,
        Key::Version => return Ok(Some(Exit::Version)),
        Key::Help => return Ok(Some(Exit::Help)),
    }
    Ok(None)
}

/// Rules across options, checked once all options are in.
pub(crate) fn check_conflicts(s: &Settings) -> Result<(), CliError> {
    if s.uds.is_some() && s.fd.is_some() {
        return Err(CliError::Conflict {
            first: "--uds",
            second: "--fd",
        });
    }
    Ok(())
}

fn invalid(option: &'static str, value: String, expected: &'static str) -> CliError {
    CliError::InvalidValue {
        option,
        value,
        expected,
    }
}

/// Non-empty, no whitespace or control characters; resolution is left to
/// the bind.
fn parse_host((option, v): (&'static str, String)) -> Result<String, CliError> {
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(option, v, "expected a host name or IP address"));
    }
    Ok(v)
}

/// Decimal digits only (no sign, no spaces), value in `u16`.
fn parse_port((option, v): (&'static str, String)) -> Result<u16, CliError> {
    match digits(&v).then(|| v.parse::<u16>()) {
        Some(Ok(port)) => Ok(port),
        _ => Err(invalid(option, v, "expected an integer from 0 to 65535")),
    }
}

/// Decimal digits only, value in `0..=i32::MAX`.
fn parse_fd((option, v): (&'static str, String)) -> Result<i32, CliError> {
    match digits(&v).then(|| v.parse::<i32>()) {
        Some(Ok(fd)) => Ok(fd),
        _ => Err(invalid(
            option,
            v,
            "expected a file descriptor number (an integer from 0 to 2147483647)",
        )),
    }
}

/// Any non-empty path; on Unix it may be non-UTF-8.
fn parse_uds((option, v): (&'static str, OsString)) -> Result<PathBuf, CliError> {
    if v.is_empty() {
        return Err(invalid(option, String::new(), "expected a socket path"));
    }
    Ok(PathBuf::from(v))
}

fn parse_root_path((option, v): (&'static str, String)) -> Result<String, CliError> {
    if v.is_empty() || (v.starts_with('/') && !v.ends_with('/')) {
        return Ok(v);
    }
    Err(invalid(
        option,
        v,
        "expected an empty string or a path that starts with '/' and does not end with '/'",
    ))
}

fn parse_lifespan((option, v): (&'static str, String)) -> Result<Lifespan, CliError> {
    Lifespan::parse(&v).ok_or_else(|| invalid(option, v, "expected one of: auto, on, off"))
}

fn parse_log_level((option, v): (&'static str, String)) -> Result<LogLevel, CliError> {
    LogLevel::parse(&v).ok_or_else(|| {
        invalid(
            option,
            v,
            "expected one of: critical, error, warning, info, debug, trace",
        )
    })
}

fn digits(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for spec in OPTIONS {
            for (name, _) in spec.names() {
                let long = name.starts_with("--") && name.len() > 2;
                let short = name.len() == 2 && name.starts_with('-') && name != "--";
                assert!(long || short, "{name}");
                assert!(!name.contains('='), "{name}");
            }
        }
    }

    #[test]
    fn choice_metavars_match_the_enums() {
        let metavar = |key| {
            OPTIONS.iter().find_map(|s| match s.arity {
                Arity::Value { metavar } if s.key == key => Some(metavar),
                _ => None,
            })
        };
        let lifespans: Vec<&str> = Lifespan::ALL.iter().map(|v| v.as_str()).collect();
        let levels: Vec<&str> = LogLevel::ALL.iter().map(|v| v.as_str()).collect();
        assert_eq!(
            metavar(Key::Lifespan),
            Some(format!("[{}]", lifespans.join("|")).as_str())
        );
        assert_eq!(
            metavar(Key::LogLevel),
            Some(format!("[{}]", levels.join("|")).as_str())
        );
    }

    #[test]
    fn shown_defaults_match_settings_defaults() {
        let d = Settings::new("a:b");
        let shown = |key| {
            OPTIONS
                .iter()
                .find(|s| s.key == key)
                .and_then(|s| s.default)
        };
        assert_eq!(shown(Key::Host), Some(d.host.as_str()));
        assert_eq!(shown(Key::Port), Some(d.port.to_string().as_str()));
        assert_eq!(shown(Key::RootPath), Some("''"));
        assert!(d.root_path.is_empty());
        assert_eq!(shown(Key::Lifespan), Some(d.lifespan.as_str()));
        assert_eq!(shown(Key::LogLevel), Some(d.log_level.as_str()));
        assert_eq!(
            shown(Key::AccessLog),
            Some(if d.access_log {
                "access-log"
            } else {
                "no-access-log"
            })
        );
        assert_eq!(shown(Key::Uds), None);
        assert!(d.uds.is_none());
        assert_eq!(shown(Key::Fd), None);
        assert!(d.fd.is_none());
    }
}
