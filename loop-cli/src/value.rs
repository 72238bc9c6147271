//! Setting values: parsing a setting from text (a command-line value or an
//! environment variable) and the values a command line gave.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::table::{find, Item, Kind, Lit, Null, Setting, Text, SETTINGS};

/// A setting's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Unset (`None` in Python).
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A path; on Unix it may be non-UTF-8.
    Path(PathBuf),
    /// Header fields, `(name, value)`, in order.
    Headers(Vec<(String, String)>),
    /// A [`Kind::List`]'s entries, in order.
    List(Vec<String>),
}

impl From<Lit> for Value {
    fn from(lit: Lit) -> Self {
        match lit {
            Lit::None => Value::None,
            Lit::Bool(b) => Value::Bool(b),
            Lit::Int(i) => Value::Int(i),
            Lit::Float(f) => Value::Float(f),
            Lit::Str(s) => Value::Str(s.to_owned()),
        }
    }
}

/// A text value that does not parse; [`Setting::expected_text`] says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{expected}")]
pub struct Invalid {
    pub expected: &'static str,
}

impl Setting {
    /// Parses `text` as this setting's value and validates it: the rules a
    /// command-line value (and an environment variable) follows. For a
    /// setting that can be unset with a word ([`Null::Word`]), `none` (any
    /// case) gives [`Value::None`]. A choice gives the table's spelling.
    pub fn parse_text(&self, text: &str) -> Result<Value, Invalid> {
        let invalid = Invalid {
            expected: self.expected_text(),
        };
        if self.null == Null::Word && text.eq_ignore_ascii_case("none") {
            return Ok(Value::None);
        }
        if self.is_refused_import(text) {
            return Ok(Value::Str(text.to_owned())); // for `admit` to refuse by name
        }
        match self.kind {
            Kind::Int { min, max } => parse_int(text, min, max).map(Value::Int),
            Kind::Seconds { zero } => parse_number(text)
                .filter(|&f| f > 0.0 || (zero && f == 0.0))
                .map(Value::Float),
            Kind::Rate => parse_number(text).filter(|&f| f >= 0.0).map(|f| {
                if f == 0.0 {
                    Value::None
                } else {
                    Value::Float(f)
                }
            }),
            Kind::Bool => parse_bool(text).map(Value::Bool),
            Kind::Text(rule) => check_text(rule, text).then(|| Value::Str(text.to_owned())),
            Kind::Path => self.parse_os(OsStr::new(text)).ok(),
            Kind::Choice {
                values,
                ignore_case,
            } => values
                .iter()
                .find(|v| {
                    if ignore_case {
                        v.eq_ignore_ascii_case(text)
                    } else {
                        **v == text
                    }
                })
                .map(|v| Value::Str((*v).to_owned())),
            Kind::BoolOrText => Some(match parse_bool(text) {
                Some(b) => Value::Bool(b),
                None => Value::Str(text.to_owned()),
            }),
            Kind::Object => None,
            Kind::Headers => parse_headers(text).map(Value::Headers),
            Kind::List(item) => parse_list(item, text).map(Value::List),
        }
        .ok_or(invalid)
    }

    /// [`Setting::parse_text`] for a value that may be non-UTF-8: a
    /// [`Kind::Path`] keeps its bytes; any other kind must be UTF-8 (`None`
    /// when it is not, for the caller to report).
    pub fn parse_os(&self, text: &OsStr) -> Result<Value, Invalid> {
        if self.kind != Kind::Path {
            let text = text.to_str().ok_or(Invalid {
                expected: self.expected_text(),
            })?;
            return self.parse_text(text);
        }
        if text.is_empty() {
            return Err(Invalid {
                expected: self.expected_text(),
            });
        }
        Ok(Value::Path(PathBuf::from(text)))
    }

    /// The default as a [`Value`].
    pub fn default_value(&self) -> Value {
        self.default.into()
    }
}

/// Decimal digits, `-` first only when negatives are allowed; in bounds.
fn parse_int(text: &str, min: i64, max: Option<i64>) -> Option<i64> {
    let digits = text.strip_prefix('-').filter(|_| min < 0).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = text.parse().ok()?;
    (value >= min && max.map_or(true, |m| value <= m)).then_some(value)
}

/// A finite decimal number (`5`, `2.5`, `.5`); no signs, exponents,
/// `inf` or `nan`.
fn parse_number(text: &str) -> Option<f64> {
    let ok = !text.is_empty()
        && text.bytes().any(|b| b.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1;
    ok.then(|| text.parse::<f64>().ok())
        .flatten()
        .filter(|f| f.is_finite())
}

/// `NAME:VALUE` lines (blank lines skipped), each split at its first `:`
/// and validated as the server encodes it ([`crate::headers::encode`]).
fn parse_headers(text: &str) -> Option<Vec<(String, String)>> {
    let mut fields = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line.split_once(':')?;
        fields.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    crate::headers::encode(&fields).ok()?;
    Some(fields)
}

/// One entry per non-blank line (a flag's value is one line).
fn parse_list(item: Item, text: &str) -> Option<Vec<String>> {
    let entries: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let ok = !entries.is_empty()
        && entries.iter().all(|e| match item {
            Item::Path => true,
            Item::Sni => crate::tls::parse_sni(e).is_ok(),
        });
    ok.then_some(entries)
}

fn parse_bool(text: &str) -> Option<bool> {
    const TRUE: [&str; 4] = ["true", "yes", "on", "1"];
    const FALSE: [&str; 4] = ["false", "no", "off", "0"];
    if TRUE.iter().any(|t| t.eq_ignore_ascii_case(text)) {
        Some(true)
    } else if FALSE.iter().any(|f| f.eq_ignore_ascii_case(text)) {
        Some(false)
    } else {
        None
    }
}

fn check_text(rule: Text, v: &str) -> bool {
    match rule {
        Text::Any => true,
        Text::Host => !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control()),
        Text::RootPath => v.is_empty() || (v.starts_with('/') && !v.ends_with('/')),
        Text::AccessLogFormat => crate::access_format::AccessFormat::parse(v).is_ok(),
        Text::Workers => v == "auto" || parse_int(v, 0, None).is_some(),
        Text::FileMode => parse_file_mode(v).is_some(),
    }
}

/// An octal file mode: `660`, `0660` or `0o660`, at most `0o7777`.
fn parse_file_mode(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return None;
    }
    u32::from_str_radix(digits, 8).ok().filter(|&m| m <= 0o7777)
}

/// Where a value came from: flags win over the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag, as spelled.
    Flag(&'static str),
    /// An environment variable, by name.
    Env(String),
}

impl Source {
    /// For messages: `--port` or `FERROLOOP_PORT`.
    pub fn label(&self) -> String {
        match self {
            Source::Flag(flag) => (*flag).to_owned(),
            Source::Env(var) => var.clone(),
        }
    }
}

/// The settings a command line (and the environment) gave, each once (the
/// last flag wins; repeated `--header`s add up), and the warnings for
/// options accepted but ignored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Values {
    given: Vec<(&'static str, Value, Source)>,
    /// Every setting a flag named, stored or not (an ignored option, an
    /// unsupported one at its default): the environment skips them all.
    flagged: Vec<&'static str>,
    warnings: Vec<String>,
}

impl Values {
    /// Records `value` for `setting` as if from its flag (its name, for a
    /// setting without one), replacing an earlier one.
    pub fn set(&mut self, setting: &'static Setting, value: Value) {
        let flag = setting.flag.map_or(setting.name, |f| f.long);
        self.set_from(setting, value, Source::Flag(flag));
    }

    /// Notes that a flag named `setting`, whatever it stored.
    pub(crate) fn mark_flagged(&mut self, setting: &'static Setting) {
        if !self.flagged.contains(&setting.name) {
            self.flagged.push(setting.name);
        }
    }

    /// A flag named the setting `name` (even one that stored nothing).
    pub fn flagged(&self, name: &str) -> bool {
        self.flagged.contains(&name)
    }

    /// Records `value` for `setting`, replacing an earlier one, except that
    /// header lists (and other lists) from the same source add up.
    pub fn set_from(&mut self, setting: &'static Setting, value: Value, source: Source) {
        match self.given.iter_mut().find(|(n, _, _)| *n == setting.name) {
            Some((_, Value::Headers(old), old_source)) if *old_source == source => {
                if let Value::Headers(more) = value {
                    old.extend(more);
                }
            }
            Some((_, Value::List(old), old_source)) if *old_source == source => {
                if let Value::List(more) = value {
                    old.extend(more);
                }
            }
            Some(slot) => {
                slot.1 = value;
                slot.2 = source;
            }
            None => self.given.push((setting.name, value, source)),
        }
    }

    /// The value given for the setting `name`, if any.
    pub fn given(&self, name: &str) -> Option<&Value> {
        self.given
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, v, _)| v)
    }

    /// Where the value given for `name` came from.
    pub fn source(&self, name: &str) -> Option<&Source> {
        self.given
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, _, s)| s)
    }

    /// Removes and returns the value given for `name`.
    pub(crate) fn take(&mut self, name: &str) -> Option<(Value, Source)> {
        let i = self.given.iter().position(|(n, _, _)| *n == name)?;
        let (_, value, source) = self.given.remove(i);
        Some((value, source))
    }

    /// The value given for `name`, else its default; `Value::None` for a
    /// name not in the table.
    pub fn get(&self, name: &str) -> Value {
        match self.given(name) {
            Some(v) => v.clone(),
            None => find(name).map_or(Value::None, Setting::default_value),
        }
    }

    /// The given values, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Setting, &Value)> + '_ {
        SETTINGS
            .iter()
            .filter_map(|s| self.given(s.name).map(|v| (s, v)))
    }

    pub(crate) fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// One line per option given that is accepted but ignored.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub(crate) fn text(&self, name: &str) -> String {
        match self.get(name) {
            Value::Str(s) => s,
            _ => String::new(),
        }
    }

    pub(crate) fn int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Value::Bool(true))
    }

    pub(crate) fn path(&self, name: &str) -> Option<PathBuf> {
        match self.get(name) {
            Value::Path(p) => Some(p),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<Value, Invalid> {
        find(name).map_or(Err(Invalid { expected: "?" }), |s| s.parse_text(text))
    }

    #[test]
    fn ints() {
        assert_eq!(parse("port", "80"), Ok(Value::Int(80)));
        assert_eq!(parse("port", "0080"), Ok(Value::Int(80)));
        for bad in ["", "-1", "+1", " 1", "65536", "1e3", "99999999999999999999"] {
            assert!(parse("port", bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse("backlog", "99999"), Ok(Value::Int(99999)));
        assert!(parse("backlog", "0").is_err());
    }

    #[test]
    fn none_only_where_the_table_allows_it() {
        assert_eq!(parse("limit_concurrency", "none"), Ok(Value::None));
        assert_eq!(parse("limit_concurrency", "None"), Ok(Value::None));
        assert_eq!(parse("max_body_size", "none"), Ok(Value::None));
        assert_eq!(parse("min_body_rate", "NONE"), Ok(Value::None));
        assert!(parse("port", "none").is_err());
        assert!(parse("fd", "none").is_err());
        assert_eq!(parse("uds", "none"), Ok(Value::Path("none".into())));
        assert!(parse("log_level", "none").is_err());
    }

    #[test]
    fn seconds_and_rates() {
        assert_eq!(parse("timeout_keep_alive", "2.5"), Ok(Value::Float(2.5)));
        assert_eq!(parse("timeout_keep_alive", ".5"), Ok(Value::Float(0.5)));
        assert_eq!(parse("timeout_keep_alive", "3"), Ok(Value::Float(3.0)));
        for bad in ["0", "-1", "", ".", "inf", "nan", "1e3", "1.2.3"] {
            assert!(parse("timeout_keep_alive", bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse("body_rate_grace", "0"), Ok(Value::Float(0.0)));
        assert_eq!(parse("min_body_rate", "0"), Ok(Value::None));
        assert_eq!(parse("min_body_rate", "100"), Ok(Value::Float(100.0)));
    }

    #[test]
    fn bools_and_choices() {
        for (t, v) in [("true", true), ("YES", true), ("1", true), ("off", false)] {
            assert_eq!(parse("date_header", t), Ok(Value::Bool(v)));
        }
        assert!(parse("date_header", "maybe").is_err());
        assert_eq!(parse("server_header", "no"), Ok(Value::Bool(false)));
        assert_eq!(parse("server_header", "x/1"), Ok(Value::Str("x/1".into())));
        assert_eq!(parse("log_level", "DEBUG"), Ok(Value::Str("debug".into())));
        assert!(parse("lifespan", "ON").is_err());
        assert!(parse("sock", "3").is_err());
    }

    #[test]
    fn errors_carry_the_expected_text() {
        assert_eq!(
            parse("port", "x").map_err(|e| e.to_string()),
            Err("expected an integer from 0 to 65535".to_owned())
        );
    }

    #[test]
    fn values_last_wins_and_defaults() {
        let mut v = Values::default();
        let port = find("port").map(|s| (s, s.default_value()));
        assert_eq!(port.map(|p| p.1), Some(Value::Int(8000)));
        if let Some(s) = find("port") {
            v.set(s, Value::Int(1));
            v.set(s, Value::Int(2));
        }
        assert_eq!(v.get("port"), Value::Int(2));
        assert_eq!(
            v.source("port").map(Source::label).as_deref(),
            Some("--port")
        );
        assert_eq!(v.get("host"), Value::Str("127.0.0.1".into()));
        assert_eq!(v.iter().count(), 1);
        assert_eq!(v.get("nonexistent"), Value::None);
    }
}
