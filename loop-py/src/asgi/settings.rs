//! The server's settings from a `ferroloop.Config`: its attributes of the
//! settings table's native rows (loop-cli's `table::rows`, typed), turned
//! into the table's values by each row's kind, then read once by
//! `loop_server::ServerSettings::read`, the same as the pure-Rust server's
//! command line. No setting is named here: adding one touches the table
//! and the code that uses it.

use loop_cli::table::{Item, Kind, Setting, SETTINGS};
use loop_cli::{Value, Values};
use loop_server::ServerSettings;
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// The names of the `Config` attributes the native server reads (the
/// table's native rows).
pub fn native_names() -> Vec<&'static str> {
    SETTINGS
        .iter()
        .filter(|s| s.native)
        .map(|s| s.name)
        .collect()
}

/// A `Config` attribute as the table's value of its row.
fn value_of(setting: &Setting, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::None);
    }
    Ok(match setting.kind {
        Kind::Int { .. } => Value::Int(value.extract()?),
        Kind::Seconds { .. } | Kind::Rate => Value::Float(value.extract()?),
        Kind::Bool => Value::Bool(value.extract()?),
        Kind::Text(_) | Kind::Choice { .. } => Value::Str(value.extract()?),
        Kind::Path => Value::Path(value.extract::<PathBuf>()?),
        Kind::BoolOrText => match value.extract::<bool>() {
            Ok(on) => Value::Bool(on),
            Err(_) => Value::Str(value.extract()?),
        },
        Kind::Headers => Value::Headers(value.extract()?),
        Kind::List(Item::Path) => Value::List(
            value
                .extract::<Vec<PathBuf>>()?
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        ),
        // `Config` keeps SNI certificates as `{host: (certfile, keyfile)}`.
        Kind::List(Item::Sni) => {
            let sni = value.cast::<PyDict>()?;
            let mut entries = Vec::with_capacity(sni.len());
            for (host, files) in sni.iter() {
                let host: String = host.extract()?;
                let (cert, key): (PathBuf, PathBuf) = files.extract()?;
                entries.push(format!("{host}={}:{}", cert.display(), key.display()));
            }
            entries.sort(); // a dict's order is not the point
            Value::List(entries)
        }
        Kind::Object => Value::None,
    })
}

/// The native rows' values of a `Config` (any object with its attributes).
pub fn values(config: &Bound<'_, PyAny>) -> PyResult<Values> {
    let mut values = Values::default();
    for setting in SETTINGS.iter().filter(|s| s.native) {
        let value = config.getattr(setting.name)?;
        values.set(setting, value_of(setting, &value)?);
    }
    Ok(values)
}

/// The server's settings from a `Config` whose values `Config` has already
/// validated; what no single row can check is a `ValueError` naming the
/// setting.
pub fn from_config(config: &Bound<'_, PyAny>) -> PyResult<ServerSettings> {
    ServerSettings::read(&values(config)?).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Read and check every file `settings` names: `FileNotFoundError` for a
/// file that is not there, `ValueError` for one that cannot be used; the
/// message (loop-tls' `ConfigError`) names the file.
pub fn load_tls(settings: &loop_tls::TlsSettings) -> PyResult<loop_tls::TlsConfig> {
    loop_tls::TlsConfig::load(settings).map_err(|e| tls_error(&e))
}

pub fn tls_error(e: &loop_tls::ConfigError) -> PyErr {
    match e {
        loop_tls::ConfigError::File { path, .. } if !path.exists() => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `_check_tls(config)`: the `ssl_*` settings checked together (no file
/// is read), a `ValueError` naming the setting.
#[pyfunction]
pub fn _check_tls(config: &Bound<'_, PyAny>) -> PyResult<()> {
    from_config(config).map(drop)
}

/// `_load_tls(config)`: the `ssl_*` files read and checked, as the server
/// will (`Server.serve` calls it before binding).
#[pyfunction]
pub fn _load_tls(config: &Bound<'_, PyAny>) -> PyResult<()> {
    match from_config(config)?.tls {
        Some(settings) => load_tls(&settings).map(drop),
        None => Ok(()),
    }
}
