//! The settings the native server reads, typed.
//!
//! A row the native server reads is a [`Native<T>`] constant in
//! `rows.rs` (`TIMEOUT_KEEP_ALIVE: Native<f64>`), listed in
//! [`SETTINGS`](super::SETTINGS) like any row: the server reads it as a
//! `T` with [`Native::read`], by the constant, never by a name written
//! twice. Adding a setting the server reads is that constant and the code
//! that uses it (loop-server's `ServerSettings`).

use super::Setting;
use crate::value::{Value, Values};
use std::marker::PhantomData;
use std::path::PathBuf;

/// A row of the table the native server reads as a `T`.
#[derive(Clone, Copy, Debug)]
pub struct Native<T> {
    /// The row (its `native` flag set).
    pub setting: Setting,
    value: PhantomData<fn() -> T>,
}

impl<T: FromValue> Native<T> {
    pub const fn new(mut setting: Setting) -> Self {
        setting.native = true;
        Native {
            setting,
            value: PhantomData,
        }
    }

    pub fn name(&self) -> &'static str {
        self.setting.name
    }

    /// The value `values` give for this setting (else its default), as a
    /// `T`. `values` hold only values that passed the setting's checks, so
    /// the conversion fits; a value of another kind (a bug) reads as `T`'s
    /// fallback ([`FromValue::fallback`]) rather than panicking.
    pub fn read(&self, values: &impl Lookup) -> T {
        T::from_value(values.lookup(self.setting.name)).unwrap_or_else(T::fallback)
    }
}

/// Where settings are read from: parsed [`Values`] (the command line),
/// or anything else that maps names to values (loop-py reads a
/// `ferroloop.Config`'s attributes).
pub trait Lookup {
    /// The value of the setting `name`, its default when not given.
    fn lookup(&self, name: &str) -> Value;
}

impl Lookup for Values {
    fn lookup(&self, name: &str) -> Value {
        self.get(name)
    }
}

/// `true`, `false` or a string (`server_header`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoolOrText {
    Bool(bool),
    Text(String),
}

/// A setting's value as a Rust type.
pub trait FromValue: Sized {
    /// `None` when the value is of another kind.
    fn from_value(value: Value) -> Option<Self>;
    /// What a value of another kind reads as.
    fn fallback() -> Self;
}

macro_rules! from_value {
    ($t:ty, $fallback:expr, $($pat:pat => $out:expr),+ $(,)?) => {
        impl FromValue for $t {
            fn from_value(value: Value) -> Option<Self> {
                match value {
                    $($pat => $out,)+
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
            fn fallback() -> Self {
                $fallback
            }
        }
    };
}

from_value!(bool, false, Value::Bool(b) => Some(b));
from_value!(i64, 0, Value::Int(i) => Some(i));
from_value!(usize, 0, Value::Int(i) => usize::try_from(i).ok());
from_value!(f64, 0.0, Value::Float(f) => Some(f), Value::Int(i) => Some(i as f64));
from_value!(String, String::new(), Value::Str(s) => Some(s));
from_value!(BoolOrText, BoolOrText::Bool(false),
    Value::Bool(b) => Some(BoolOrText::Bool(b)),
    Value::Str(s) => Some(BoolOrText::Text(s)));
from_value!(Vec<(String, String)>, Vec::new(),
    Value::Headers(h) => Some(h),
    Value::None => Some(Vec::new()));
from_value!(Vec<String>, Vec::new(),
    Value::List(l) => Some(l),
    Value::None => Some(Vec::new()));
from_value!(Vec<PathBuf>, Vec::new(),
    Value::List(l) => Some(l.into_iter().map(PathBuf::from).collect()),
    Value::None => Some(Vec::new()));

/// A setting that can be unset (`None` in Python): `T` when set.
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::None => Some(None),
            other => T::from_value(other).map(Some),
        }
    }

    fn fallback() -> Self {
        None
    }
}

impl FromValue for PathBuf {
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Path(p) => Some(p),
            Value::Str(s) => Some(PathBuf::from(s)),
            _ => None,
        }
    }

    fn fallback() -> Self {
        PathBuf::new()
    }
}

impl FromValue for u64 {
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Int(i) => u64::try_from(i).ok(),
            _ => None,
        }
    }

    fn fallback() -> Self {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{rows, SETTINGS};

    #[test]
    fn every_native_default_reads_as_its_type() {
        let values = Values::default();
        assert_eq!(rows::TIMEOUT_KEEP_ALIVE.read(&values), 5.0);
        assert_eq!(rows::LIMIT_CONCURRENCY.read(&values), None);
        assert_eq!(rows::MAX_BODY_SIZE.read(&values), Some(16 * 1024 * 1024));
        assert_eq!(rows::SERVER_HEADER.read(&values), BoolOrText::Bool(true));
        assert_eq!(rows::HEADERS.read(&values), Vec::<(String, String)>::new());
        assert_eq!(rows::WS_PING_INTERVAL.read(&values), Some(20.0));
        assert_eq!(rows::SSL_CERTFILE.read(&values), None);
    }

    #[test]
    fn a_native_row_is_flagged_in_the_table() {
        let native: Vec<&str> = SETTINGS
            .iter()
            .filter(|s| s.native)
            .map(|s| s.name)
            .collect();
        assert!(native.contains(&rows::ROOT_PATH.name()));
        assert!(native.contains(&rows::SSL_SNI.name()));
    }
}
