//! Every server setting, defined once.
//!
//! [`SETTINGS`] is the single definition of ferroloop's server settings. Each
//! row gives the setting's name (the `ferroloop.Config` keyword, uvicorn's
//! name where uvicorn has the setting), what values it takes, its default,
//! its help text, its command-line flag (if it has one), whether `Config`
//! takes it and whether the native server reads it. From the table follow:
//!
//! * the command line: flags, `--help` text and defaults shown, spelling
//!   suggestions, value parsing and validation ([`Setting::parse_text`]);
//! * `ferroloop.Config`: its keywords, defaults and bounds (the table reaches
//!   Python through `_native.server_settings()`), and its typed signature in
//!   `loop-py/python/ferroloop/server/_config.pyi` (generated; see
//!   `tests/generated.rs`);
//! * the environment variable of each setting, [`Setting::env`]
//!   (`FERROLOOP_<NAME>`, read by the command line and `Config.from_env`;
//!   see [`crate::env`]).
//!
//! Adding a setting is one row in `rows.rs`; a row the native server reads
//! is a typed [`Native`] constant there, read by the code that uses it
//! (loop-server's `ServerSettings`). See docs/development.md, "Adding a
//! setting".

/// What values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// An integer from `min` to `max` (`None`: no upper bound). As text:
    /// decimal digits, with a leading `-` only when `min` is negative.
    Int { min: i64, max: Option<i64> },
    /// A duration in seconds: a finite number above 0, or at least 0 when
    /// `zero` is true.
    Seconds { zero: bool },
    /// Bytes per second, at least 0; 0 (like `None`) turns the rule off.
    Rate,
    /// On or off. On the command line a pair of flags (`--x` / `--no-x`);
    /// as text `true`/`false`, `yes`/`no`, `on`/`off` or `1`/`0`.
    Bool,
    /// A string, checked by a [`Text`] rule.
    Text(Text),
    /// A file-system path; never empty. On Unix it may be non-UTF-8.
    Path,
    /// One of `values`, matched exactly or ignoring ASCII case; the value
    /// kept is the table's spelling.
    Choice {
        values: &'static [&'static str],
        ignore_case: bool,
    },
    /// `true`, `false` or a string (`server_header`).
    BoolOrText,
    /// A Python object only `Config` can take (`sock`); it has no text form.
    Object,
    /// Response header fields, `NAME:VALUE` each. A repeated flag adds one;
    /// as text (an environment variable), one per line.
    Headers,
    /// A list of [`Item`]s. A repeated flag adds one; as text (an
    /// environment variable), one per line.
    List(Item),
}

/// One entry of a [`Kind::List`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A file-system path (UTF-8), never empty.
    Path,
    /// An SNI certificate, `HOST=CERTFILE:KEYFILE` (see [`crate::tls`]).
    Sni,
}

/// How a [`Kind::Text`] value is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    /// Any string.
    Any,
    /// Non-empty, no whitespace or control characters (resolution is left
    /// to the bind).
    Host,
    /// Empty, or starts with `/` and does not end with `/`.
    RootPath,
    /// An access-log format ([`crate::access_format`]).
    AccessLogFormat,
    /// A number of worker processes: `auto` or an integer of at least 0
    /// (0 means `auto`, as cadeloop's).
    Workers,
    /// A file mode in octal: `660`, `0660` or `0o660`, at most `0o7777`.
    FileMode,
}

/// Whether a setting can be unset (`None` in Python).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Null {
    /// Always has a value.
    No,
    /// `Config` takes `None`; there is no text spelling for it (on the
    /// command line the setting is simply not given). `--uds none` is a
    /// socket named `none`.
    Unset,
    /// `Config` takes `None`, and the text `none` parses to it.
    Word,
}

/// A default value, as written in the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lit {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'static str),
}

/// A setting's command-line flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// `--name`.
    pub long: &'static str,
    /// For a [`Kind::Bool`] (or [`Kind::BoolOrText`]) setting, the flag
    /// that turns it off: `--no-name`.
    pub off: Option<&'static str>,
    /// The value's name in `--help`; `None`: derived from the kind
    /// (`INTEGER`, `TEXT`, `PATH`, `FLOAT`, `[a|b]`). A [`Kind::Bool`] flag
    /// with a metavar takes a value (`--ws-per-message-deflate BOOLEAN`,
    /// as uvicorn) instead of being a switch.
    pub metavar: Option<&'static str>,
}

/// Whether ferroloop implements a setting. uvicorn has options ferroloop
/// accepts without needing them, and options it does not have yet; both
/// keep their uvicorn spelling so a uvicorn command line gets a precise
/// answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Supported,
    /// Accepted and ignored; the command line reports this warning.
    Ignored(&'static str),
    /// Rejected with this reason (a usage error).
    Unsupported(&'static str),
}

/// Where a setting can be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// The command line and `Config`.
    Both,
    /// Only `Config` (and `serve()`'s keywords).
    Config,
    /// Only the command line (e.g. a process-level option such as workers).
    Cli,
}

/// One server setting. Build rows with [`Setting::new`] and the builder
/// methods; read them with the accessors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// The `Config` keyword and attribute, snake_case.
    pub name: &'static str,
    pub kind: Kind,
    pub null: Null,
    pub default: Lit,
    /// One sentence or a few; `--help` shows it.
    pub help: &'static str,
    /// What an invalid text value was expected to be, shown after
    /// `invalid value 'x' for '--flag': `. `None`: the kind's own text.
    pub expected: Option<&'static str>,
    pub flag: Option<Flag>,
    pub surface: Surface,
    /// The native server reads it: the row is a [`Native`] constant (which
    /// sets this).
    pub native: bool,
    pub status: Status,
    /// Values of a supported setting that are not supported yet, and why
    /// (`--interface wsgi`).
    pub refuse: Option<(&'static [&'static str], &'static str)>,
    /// A `module:attr` value (uvicorn's own implementation class, as
    /// `--ws mypkg:Protocol`) is taken for a choice and refused with this
    /// reason, rather than being an invalid value.
    pub refuse_import: Option<&'static str>,
    /// This setting is another spelling of the setting named here (uvicorn's
    /// `--h11-max-incomplete-event-size` for `max_header_size`): its value
    /// goes there unless that setting's own flag (or, when this one came from
    /// the environment, its own variable) was given.
    pub alias_of: Option<&'static str>,
    /// A second environment variable read when `FERROLOOP_<NAME>` is not
    /// set (uvicorn's `FORWARDED_ALLOW_IPS`, `WEB_CONCURRENCY`).
    pub env_alias: Option<&'static str>,
    /// The Python annotations in the `Config` stub, of the keyword and of
    /// the attribute (which holds the checked value); `None`: derived from
    /// the kind ([`Setting::py_types`]).
    pub py_type: Option<(&'static str, &'static str)>,
}

impl Setting {
    /// A `Config`-only, supported, non-native setting that is never unset.
    pub const fn new(name: &'static str, kind: Kind, default: Lit, help: &'static str) -> Self {
        Setting {
            name,
            kind,
            null: Null::No,
            default,
            help,
            expected: None,
            flag: None,
            surface: Surface::Config,
            native: false,
            status: Status::Supported,
            refuse: None,
            refuse_import: None,
            alias_of: None,
            env_alias: None,
            py_type: None,
        }
    }

    /// Also a command-line flag `long` (a `--no-` flag is added for
    /// booleans: give it with [`Setting::off`]).
    pub const fn cli(mut self, long: &'static str) -> Self {
        self.flag = Some(Flag {
            long,
            off: None,
            metavar: None,
        });
        self.surface = Surface::Both;
        self
    }

    /// Only on the command line, not a `Config` keyword.
    pub const fn cli_only(mut self, long: &'static str) -> Self {
        self = self.cli(long);
        self.surface = Surface::Cli;
        self
    }

    /// The flag that turns a boolean off (`--no-access-log`).
    pub const fn off(mut self, off: &'static str) -> Self {
        if let Some(flag) = &mut self.flag {
            flag.off = Some(off);
        }
        self
    }

    pub const fn metavar(mut self, metavar: &'static str) -> Self {
        if let Some(flag) = &mut self.flag {
            flag.metavar = Some(metavar);
        }
        self
    }

    pub const fn null(mut self, null: Null) -> Self {
        self.null = null;
        self
    }

    pub const fn expected(mut self, expected: &'static str) -> Self {
        self.expected = Some(expected);
        self
    }

    pub const fn status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }

    pub const fn refuse(mut self, values: &'static [&'static str], reason: &'static str) -> Self {
        self.refuse = Some((values, reason));
        self
    }

    pub const fn refuse_import(mut self, reason: &'static str) -> Self {
        self.refuse_import = Some(reason);
        self
    }

    /// `text` names an implementation class, `module:attr`, that
    /// [`Setting::refuse_import`] refuses.
    pub fn is_refused_import(&self, text: &str) -> bool {
        self.refuse_import.is_some()
            && text
                .split_once(':')
                .is_some_and(|(module, attr)| !module.is_empty() && !attr.is_empty())
    }

    pub const fn alias_of(mut self, name: &'static str) -> Self {
        self.alias_of = Some(name);
        self
    }

    pub const fn env_alias(mut self, var: &'static str) -> Self {
        self.env_alias = Some(var);
        self
    }

    pub const fn py_type(mut self, keyword: &'static str, attribute: &'static str) -> Self {
        self.py_type = Some((keyword, attribute));
        self
    }

    /// The Python annotations of the `Config` keyword and attribute.
    pub fn py_types(&self) -> (String, String) {
        if let Some((keyword, attribute)) = self.py_type {
            return (keyword.to_owned(), attribute.to_owned());
        }
        let (keyword, attribute) = match self.kind {
            Kind::Int { .. } => ("int", "int"),
            Kind::Seconds { .. } | Kind::Rate => ("float", "float"),
            Kind::Bool => ("bool", "bool"),
            Kind::Text(_) | Kind::Choice { .. } => ("str", "str"),
            Kind::Path => ("str | os.PathLike[str]", "str"),
            Kind::BoolOrText => ("bool | str", "bool | str"),
            Kind::Object => ("Any", "Any"),
            Kind::Headers => ("list[tuple[str, str]]", "list[tuple[str, str]]"),
            Kind::List(Item::Path) => ("list[str | os.PathLike[str]]", "list[str]"),
            Kind::List(Item::Sni) => ("list[str]", "list[str]"),
        };
        let null = if self.null == Null::No { "" } else { " | None" };
        (format!("{keyword}{null}"), format!("{attribute}{null}"))
    }

    /// The default as a Python expression.
    pub fn py_default(&self) -> String {
        match self.default {
            Lit::None => "None".to_owned(),
            Lit::Bool(true) => "True".to_owned(),
            Lit::Bool(false) => "False".to_owned(),
            Lit::Int(i) => i.to_string(),
            Lit::Float(f) => format!("{f:?}"),
            Lit::Str(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        }
    }

    /// The environment variable that sets it: `FERROLOOP_` and the name in
    /// upper case.
    pub fn env(&self) -> String {
        self.env_with(crate::env::PREFIX)
    }

    /// [`Setting::env`] with another prefix (`Config.from_env(prefix=…)`).
    pub fn env_with(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.name.to_ascii_uppercase())
    }

    /// uvicorn's variable for it, `UVICORN_<NAME>`, when it is one of
    /// uvicorn's options.
    pub fn uvicorn_env(&self) -> Option<String> {
        uvicorn::OPTIONS
            .contains(&self.name)
            .then(|| self.env_with(uvicorn::PREFIX))
    }

    /// It has a text form (a flag value or an environment variable).
    pub fn has_text(&self) -> bool {
        self.kind != Kind::Object
    }

    /// `--help`'s note on what is not implemented: `[ignored]`, `[not
    /// supported yet]`, `[not supported yet: wsgi]`.
    pub fn status_note(&self) -> Option<String> {
        match (self.status, self.refuse) {
            (Status::Ignored(_), _) => Some("[ignored]".to_owned()),
            (Status::Unsupported(_), _) => Some("[not supported yet]".to_owned()),
            (Status::Supported, Some((values, _))) => {
                Some(format!("[not supported yet: {}]", values.join(", ")))
            }
            (Status::Supported, None) => None,
        }
    }

    /// `Config` takes it.
    pub fn in_config(&self) -> bool {
        matches!(self.surface, Surface::Both | Surface::Config)
    }

    /// The command line takes it.
    pub fn in_cli(&self) -> bool {
        matches!(self.surface, Surface::Both | Surface::Cli) && self.flag.is_some()
    }

    /// The text after `invalid value '…' for '--flag': `.
    pub fn expected_text(&self) -> &'static str {
        if let Some(text) = self.expected {
            return text;
        }
        match self.kind {
            Kind::Int { .. } => "expected an integer",
            Kind::Seconds { zero: false } => "expected a positive number of seconds",
            Kind::Seconds { zero: true } => "expected a number of seconds, 0 or more",
            Kind::Rate => "expected a number of bytes per second, 0 or more",
            Kind::Bool => "expected true or false",
            Kind::Text(Text::Host) => "expected a host name or IP address",
            Kind::Text(Text::RootPath) => {
                "expected an empty string or a path that starts with '/' and does not end with '/'"
            }
            Kind::Text(Text::Any) | Kind::BoolOrText => "expected a string",
            Kind::Text(Text::Workers) => "expected an integer of at least 0, or auto",
            Kind::Text(Text::FileMode) => "expected an octal file mode such as 660",
            Kind::Text(Text::AccessLogFormat) => {
                "expected text with %(field)s placeholders of client_addr, method, path, query, \
                 full_path, http_version, request_line, status_code, status_phrase, duration_ms, \
                 user_agent, referer (and %% for '%')"
            }
            Kind::Path => "expected a path",
            Kind::Choice { .. } => "expected one of the listed values",
            Kind::Object => "cannot be given as text",
            Kind::List(Item::Path) => "expected a path",
            Kind::List(Item::Sni) => {
                "expected HOST=CERTFILE:KEYFILE (a host name, '=', the certificate file, ':', its \
                 key file)"
            }
            Kind::Headers => {
                "expected NAME:VALUE (a header name, ':', a Latin-1 value without control \
                 characters; not content-length, transfer-encoding, connection, trailer or \
                 upgrade, which the server sets per response)"
            }
        }
    }

    /// `--help`'s name for the value of a flag that takes one.
    pub fn metavar_text(&self) -> String {
        if let Some(m) = self.flag.and_then(|f| f.metavar) {
            return m.to_owned();
        }
        match self.kind {
            Kind::Int { .. } => "INTEGER".to_owned(),
            Kind::Seconds { .. } | Kind::Rate => "FLOAT".to_owned(),
            Kind::Path => "PATH".to_owned(),
            Kind::Choice { values, .. } => format!("[{}]", values.join("|")),
            Kind::Headers => "NAME:VALUE".to_owned(),
            Kind::List(Item::Path) => "PATH".to_owned(),
            Kind::List(Item::Sni) => "HOST=CERTFILE:KEYFILE".to_owned(),
            Kind::Bool | Kind::Text(_) | Kind::BoolOrText | Kind::Object => "TEXT".to_owned(),
        }
    }

    /// The default as `--help` shows it (`[default: …]`), if it shows one.
    pub fn default_text(&self) -> Option<String> {
        if self.kind == Kind::Text(Text::AccessLogFormat) {
            return None; // too wide for the column: the help text shows it
        }
        match (self.default, self.flag) {
            (Lit::None, _) => None,
            (
                Lit::Bool(on),
                Some(Flag {
                    long,
                    off,
                    metavar: None,
                }),
            ) if matches!(self.kind, Kind::Bool | Kind::BoolOrText) => {
                let flag = if on { Some(long) } else { off };
                flag.map(|f| f.trim_start_matches('-').to_owned())
            }
            (Lit::Bool(on), _) => Some(on.to_string()),
            (Lit::Int(i), _) => Some(i.to_string()),
            (Lit::Float(f), _) => Some(f.to_string()),
            (Lit::Str(""), _) => Some("''".to_owned()),
            (Lit::Str(s), _) => Some(s.to_owned()),
        }
    }
}

mod native;
pub mod rows;
pub mod uvicorn;

pub use native::{BoolOrText, FromValue, Lookup, Native};
pub use rows::{BACKENDS, INTERFACES, LIFESPANS, LOG_LEVELS, SETTINGS, WS_IMPLEMENTATIONS};

/// The setting called `name`.
pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{Lifespan, LogLevel};

    #[test]
    fn names_are_unique_snake_case() {
        for (i, s) in SETTINGS.iter().enumerate() {
            assert!(
                !s.name.is_empty()
                    && s.name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    && !s.name.starts_with(|c: char| c.is_ascii_digit()),
                "{}",
                s.name
            );
            assert!(SETTINGS[..i].iter().all(|o| o.name != s.name), "{}", s.name);
            assert!(!s.help.is_empty(), "{} has no help", s.name);
        }
    }

    #[test]
    fn env_names() {
        assert_eq!(
            find("timeout_keep_alive").map(Setting::env).as_deref(),
            Some("FERROLOOP_TIMEOUT_KEEP_ALIVE")
        );
    }

    #[test]
    fn flags_follow_the_names() {
        for s in SETTINGS {
            let Some(flag) = s.flag else { continue };
            // uvicorn's spelling: the name with '-' for '_' (`--header`
            // sets `headers`, as uvicorn's).
            // uvicorn's spelling: `--header` sets `headers`, `--reload-dir`
            // sets `reload_dirs` (its Config keywords are plural).
            let long = if matches!(
                s.name,
                "headers" | "reload_dirs" | "reload_includes" | "reload_excludes"
            ) {
                format!("--{}", s.name.trim_end_matches('s').replace('_', "-"))
            } else {
                format!("--{}", s.name.replace('_', "-"))
            };
            assert_eq!(flag.long, long);
            match (s.kind, flag.off) {
                (Kind::Bool | Kind::BoolOrText, Some(off)) => {
                    assert_eq!(off, format!("--no-{}", &flag.long[2..]), "{}", s.name);
                }
                // uvicorn's one-way flags, and a boolean taking a value.
                (Kind::Bool, None) => assert!(
                    matches!(s.name, "reload" | "http2" | "preload") || flag.metavar.is_some(),
                    "{} needs a --no- flag",
                    s.name
                ),
                (_, off) => assert_eq!(off, None, "{}", s.name),
            }
        }
    }

    #[test]
    fn defaults_fit_their_kind() {
        for s in SETTINGS {
            let ok = match (s.default, s.kind) {
                (Lit::None, _) => s.null != Null::No,
                (Lit::Int(i), Kind::Int { min, max }) => i >= min && max.map_or(true, |m| i <= m),
                (Lit::Float(f), Kind::Seconds { zero }) => f > 0.0 || (zero && f == 0.0),
                (Lit::Float(f), Kind::Rate) => f >= 0.0,
                (Lit::Bool(_), Kind::Bool | Kind::BoolOrText) => true,
                (Lit::Str(v), _) => s.parse_text(v).is_ok(),
                _ => false,
            };
            assert!(
                ok,
                "{}: default {:?} does not fit {:?}",
                s.name, s.default, s.kind
            );
        }
    }

    #[test]
    fn expected_texts_state_the_bounds_and_choices() {
        for s in SETTINGS {
            let text = s.expected_text();
            assert!(
                text.starts_with("expected ") || s.kind == Kind::Object,
                "{text}"
            );
            match s.kind {
                Kind::Int { min, max } => {
                    let range = match max {
                        Some(max) => format!("an integer from {min} to {max}"),
                        None => format!("an integer of at least {min}"),
                    };
                    assert!(text.contains(&range), "{}: {text}", s.name);
                }
                Kind::Choice { values, .. } => {
                    assert!(text.ends_with(&values.join(", ")), "{}: {text}", s.name);
                }
                _ => {}
            }
            assert_eq!(
                s.null == Null::Word,
                text.ends_with(", or none"),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn only_ws_refuses_import_strings_and_only_module_attr() {
        let ws = find("ws").map(|s| (s.is_refused_import("a.b:C"), s.is_refused_import("a:")));
        assert_eq!(ws, Some((true, false)));
        for s in SETTINGS.iter().filter(|s| s.name != "ws") {
            assert!(!s.is_refused_import("a:b"), "{}", s.name);
        }
        // A refused import string is not a choice: it must not be a value.
        for v in WS_IMPLEMENTATIONS {
            assert!(find("ws").is_some_and(|s| !s.is_refused_import(v)));
        }
    }

    #[test]
    fn choices_match_the_enums() {
        let lifespans: Vec<&str> = Lifespan::ALL.iter().map(|v| v.as_str()).collect();
        let levels: Vec<&str> = LogLevel::ALL.iter().map(|v| v.as_str()).collect();
        assert_eq!(LIFESPANS, lifespans);
        assert_eq!(LOG_LEVELS, levels);
        assert_eq!(BACKENDS, loop_core::poller::BACKEND_CHOICES);
    }
}
