//! The `ferroloop` command's argv, parsed by `loop-cli` and handed to the
//! Python entry point as plain values, and loop-cli's settings table as
//! Python data (`Config` takes its keywords, defaults and bounds from it).

use loop_cli::env::Env;
use loop_cli::table::{Item, Kind, Lit, Null, Setting, Status, Surface, Text, SETTINGS};
use loop_cli::{CliError, Command, Parsed, Value};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

/// The process environment (as `os.environb` gives it) with an env file's
/// variables under it: a variable already set wins, as python-dotenv's
/// default. uvicorn's own variables are read from the process only (uvicorn
/// reads them before it loads the file, which is for the app).
struct Layered<'a> {
    process: &'a HashMap<Vec<u8>, Vec<u8>>,
    file: &'a [(String, String)],
}

impl Env for Layered<'_> {
    fn var(&self, name: &str) -> Option<OsString> {
        match self.process.get(name.as_bytes()) {
            Some(v) => Some(OsString::from_vec(v.clone())),
            None if name.starts_with(loop_cli::table::uvicorn::PREFIX) => None,
            None => self
                .file
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| OsString::from(v)),
        }
    }
}

/// `(key, value)` pairs of a dotenv file, in order.
type EnvPairs = Vec<(String, String)>;

/// The `(key, value)` pairs of the dotenv file at `path`, expanded with
/// the process environment (python-dotenv's `load_dotenv()`).
fn read_env_file(path: &Path, process: &HashMap<Vec<u8>, Vec<u8>>) -> Result<EnvPairs, CliError> {
    let problem = |problem: String| CliError::Unusable {
        option: "--env-file",
        problem,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| problem(format!("cannot read '{}': {e}", path.display())))?;
    let lookup = |name: &str| {
        process
            .get(name.as_bytes())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    loop_cli::dotenv::parse(&text, &lookup)
        .map_err(|e| problem(format!("'{}' {e}", path.display())))
}

/// `--app-dir` must be a directory (empty: the working directory) and
/// `--log-config` a file that exists (uvicorn's `click.Path(exists=True)`).
fn check_paths(values: &loop_cli::Values) -> Result<(), CliError> {
    if let Some(Value::Str(dir)) = values.given("app_dir") {
        if !dir.is_empty() && !Path::new(dir).is_dir() {
            return Err(CliError::Unusable {
                option: "--app-dir",
                problem: format!("directory '{dir}' does not exist"),
            });
        }
    }
    if let Some(Value::Path(path)) = values.given("log_config") {
        if !path.exists() {
            return Err(CliError::Unusable {
                option: "--log-config",
                problem: format!("file '{}' does not exist", path.display()),
            });
        }
    }
    Ok(())
}

/// The command line with the environment: flags, then `FERROLOOP_*`
/// variables, from the process and from the `--env-file` (read once the
/// flags and the process environment named it; its own `FERROLOOP_ENV_FILE`
/// is not followed). Also the file's pairs, for the caller to load.
fn parse_with_env(
    prog: &str,
    args: &[OsString],
    process: &HashMap<Vec<u8>, Vec<u8>>,
) -> Result<(Command<Parsed>, EnvPairs), CliError> {
    let env = Layered { process, file: &[] };
    let command = loop_cli::parse_values_env(prog, args.iter().cloned(), &env)?;
    let (command, file) = match &command {
        Command::Run(parsed) => match parsed.values.given("env_file") {
            Some(Value::Path(path)) => {
                let file = read_env_file(path, process)?;
                let env = Layered {
                    process,
                    file: &file,
                };
                let command = loop_cli::parse_values_env(prog, args.iter().cloned(), &env)?;
                (command, file)
            }
            _ => (command, Vec::new()),
        },
        _ => (command, Vec::new()),
    };
    if let Command::Run(parsed) = &command {
        check_paths(&parsed.values)?;
    }
    Ok((command, file))
}

/// `parse_cli(prog, args, environ)` → `("run", {"app", "values",
/// "warnings", "env_file", "uvicorn_env"})`, `("help", text)`, `("version", text)` or
/// `("error", (report, exit_code))`. `values` holds the settings the
/// command line and the environment gave, by name (a path as `os.fsdecode`
/// gives it); `warnings` the options accepted but ignored; `env_file` the
/// `--env-file`'s `(key, value)` pairs to load; `uvicorn_env` the
/// `UVICORN_*` variables that set something. `args` are `os.fsencode`d
/// (and `environ` is `os.environb`) so non-UTF-8 paths survive.
#[pyfunction]
pub fn parse_cli(
    py: Python<'_>,
    prog: &str,
    args: Vec<Vec<u8>>,
    environ: HashMap<Vec<u8>, Vec<u8>>,
) -> PyResult<(String, Py<PyAny>)> {
    let args: Vec<OsString> = args.into_iter().map(OsString::from_vec).collect();
    let parsed = parse_with_env(prog, &args, &environ);
    let env_file = parsed.as_ref().map(|(_, f)| f.clone()).unwrap_or_default();
    let out = match parsed.map(|(command, _)| command) {
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
            d.set_item("env_file", env_file)?;
            d.set_item("uvicorn_env", uvicorn_variables(&parsed.values))?;
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

/// The `UVICORN_*` variables that gave a value (for the startup log).
fn uvicorn_variables(values: &loop_cli::Values) -> Vec<String> {
    values
        .iter()
        .filter_map(|(setting, _)| match values.source(setting.name) {
            Some(loop_cli::Source::Env(var))
                if var.starts_with(loop_cli::table::uvicorn::PREFIX) =>
            {
                Some(var.clone())
            }
            _ => None,
        })
        .collect()
}

/// `config_from_env(environ, prefix)` → `(values, warnings)`: the `Config`
/// settings that the variables `prefix` + NAME in `environ` (`os.environ`)
/// set, parsed as the command line parses them; a bad value raises
/// `ValueError` naming the variable.
#[pyfunction]
pub fn config_from_env<'py>(
    py: Python<'py>,
    environ: HashMap<String, String>,
    prefix: &str,
) -> PyResult<(Bound<'py, PyDict>, Vec<String>)> {
    let env = |name: &str| environ.get(name).map(OsString::from);
    let values = loop_cli::env::config_values(&env, prefix)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    for (setting, value) in values.iter() {
        out.set_item(setting.name, value_to_py(py, value)?)?;
    }
    Ok((out, values.warnings().to_vec()))
}

/// `parse_dotenv(text, environ=None)` → the `(key, value)` pairs of a
/// dotenv file, as `--env-file` reads it, `${VAR}` expanded from `environ`
/// and the file; a bad line raises `ValueError` naming it.
#[pyfunction]
#[pyo3(signature = (text, environ = None))]
pub fn parse_dotenv(
    text: &str,
    environ: Option<HashMap<String, String>>,
) -> PyResult<Vec<(String, String)>> {
    let environ = environ.unwrap_or_default();
    let lookup = |name: &str| environ.get(name).cloned();
    loop_cli::dotenv::parse(text, &lookup).map_err(|e| PyValueError::new_err(e.to_string()))
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
        Kind::Rate
        | Kind::Bool
        | Kind::Path
        | Kind::BoolOrText
        | Kind::Object
        | Kind::Headers
        | Kind::List(_) => (None, None, false, None, None, false),
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
            Text::Workers => "workers",
            Text::FileMode => "file_mode",
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
    d.set_item("uvicorn_env", s.uvicorn_env())?;
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
    d.set_item("refuse", s.refuse.map(|(values, _)| values.to_vec()))?;
    d.set_item("refuse_reason", s.refuse.map(|(_, reason)| reason))?;
    d.set_item("refuse_import", s.refuse_import)?;
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
        Kind::Headers => "headers",
        Kind::List(Item::Path) => "path_list",
        Kind::List(Item::Sni) => "sni_list",
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
        Value::Headers(fields) => fields.clone().into_pyobject(py)?.into_any(),
        Value::List(entries) => entries.clone().into_pyobject(py)?.into_any(),
    })
}
