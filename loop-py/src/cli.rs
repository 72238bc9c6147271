//! The `ferroloop` command's argv, parsed by `loop-cli` and handed to the
//! Python entry point as plain values, and loop-cli's settings table as
//! Python data (`Config` takes its keywords, defaults and bounds from it).

use loop_cli::table::{Kind, Lit, Null, Setting, Status, Surface, Text, SETTINGS};
use loop_cli::Value;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// `parse_cli(prog, args)` → `("run", {"app", "values", "warnings"})`,
/// `("help", text)`, `("version", text)` or `("error", (report,
/// exit_code))`. `values` holds the settings the command line gave, by
/// name (a path as `os.fsdecode` gives it); `warnings` the options accepted
/// but ignored. `args` are `os.fsencode`d so non-UTF-8 paths survive.
#[pyfunction]
pub fn parse_cli(py: Python<'_>, prog: &str, args: Vec<Vec<u8>>) -> PyResult<(String, Py<PyAny>)> {
    let args = args.into_iter().map(OsString::from_vec);
    let out = match loop_cli::parse_values(prog, args) {
        Ok(loop_cli::Command::Help(text)) => (
            "help".to_string(),
            text.into_pyobject(py)?.into_any().unbind(),
        ),
        Ok(loop_cli::Command::Version) => (
            "version".to_string(),
            loop_cli::VERSION.into_pyobject(py)?.into_any().unbind(),
        ),
        Ok(loop_cli::Command::Run(parsed)) => {
            let values = PyDict::new(py);
            for (setting, value) in parsed.values.iter() {
                values.set_item(setting.name, value_to_py(py, value)?)?;
            }
            let d = PyDict::new(py);
            d.set_item("app", &parsed.app)?;
            d.set_item("values", values)?;
            d.set_item("warnings", parsed.values.warnings())?;
            ("run".to_string(), d.into_any().unbind())
        }
        Err(err) => (
            "error".to_string(),
            (err.report(prog), err.exit_code())
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        ),
    };
    Ok(out)
}

/// `server_settings()` → one dict per row of loop-cli's settings table, in
/// table order (see `_native.pyi` for the keys).
#[pyfunction]
pub fn server_settings(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = PyList::empty(py);
    for s in SETTINGS {
        rows.append(setting_to_py(py, s)?)?;
    }
    Ok(rows)
}

fn setting_to_py<'py>(py: Python<'py>, s: &Setting) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", s.name)?;
    let (min, max, zero, rule, choices, ignore_case) = match s.kind {
        Kind::Int { min, max } => (Some(min), max, false, None, None, false),
        Kind::Seconds { zero } => (None, None, zero, None, None, false),
        Kind::Text(rule) => (None, None, false, Some(rule), None, false),
        Kind::Choice {
            values,
            ignore_case,
        } => (None, None, false, None, Some(values), ignore_case),
        Kind::Rate | Kind::Bool | Kind::Path | Kind::BoolOrText | Kind::Object => {
            (None, None, false, None, None, false)
        }
    };
    d.set_item("kind", kind_name(s.kind))?;
    d.set_item("min", min)?;
    d.set_item("max", max)?;
    d.set_item("zero", zero)?;
    d.set_item(
        "rule",
        rule.map(|r| match r {
            Text::Any => "any",
            Text::Host => "host",
            Text::RootPath => "root_path",
            Text::AccessLogFormat => "access_log_format",
        }),
    )?;
    d.set_item("choices", choices)?;
    d.set_item("ignore_case", ignore_case)?;
    d.set_item(
        "null",
        match s.null {
            Null::No => "no",
            Null::Unset => "unset",
            Null::Word => "word",
        },
    )?;
    d.set_item("default", lit_to_py(py, s.default)?)?;
    d.set_item("help", s.help)?;
    d.set_item("expected", s.expected_text())?;
    d.set_item("flag", s.flag.filter(|_| s.in_cli()).map(|f| f.long))?;
    d.set_item(
        "off_flag",
        s.flag.filter(|_| s.in_cli()).and_then(|f| f.off),
    )?;
    d.set_item("env", s.env())?;
    d.set_item("config", s.in_config())?;
    d.set_item("cli", s.in_cli())?;
    d.set_item(
        "surface",
        match s.surface {
            Surface::Both => "both",
            Surface::Config => "config",
            Surface::Cli => "cli",
        },
    )?;
    d.set_item("native", s.native)?;
    let (status, reason) = match s.status {
        Status::Supported => ("supported", None),
        Status::Ignored(r) => ("ignored", Some(r)),
        Status::Unsupported(r) => ("unsupported", Some(r)),
    };
    d.set_item("status", status)?;
    d.set_item("status_reason", reason)?;
    let (keyword_type, attribute_type) = s.py_types();
    d.set_item("py_type", keyword_type)?;
    d.set_item("py_attribute_type", attribute_type)?;
    d.set_item("py_default", s.py_default())?;
    Ok(d)
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Int { .. } => "int",
        Kind::Seconds { .. } => "seconds",
        Kind::Rate => "rate",
        Kind::Bool => "bool",
        Kind::Text(_) => "text",
        Kind::Path => "path",
        Kind::Choice { .. } => "choice",
        Kind::BoolOrText => "bool_or_text",
        Kind::Object => "object",
    }
}

fn lit_to_py(py: Python<'_>, lit: Lit) -> PyResult<Bound<'_, PyAny>> {
    value_to_py(py, &lit.into())
}

fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        // As `os.fsdecode`: undecodable bytes become surrogates.
        Value::Path(p) => p.as_os_str().into_pyobject(py)?.into_any(),
    })
}
