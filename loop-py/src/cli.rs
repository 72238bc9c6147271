//! The `ferroloop` command's argv, parsed by `loop-cli` and handed to the
//! Python entry point as plain values.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// `parse_cli(prog, args)` → `("run", settings)`, `("help", text)`,
/// `("version", text)` or `("error", (report, exit_code))`. `args` are
/// `os.fsencode`d so non-UTF-8 paths survive.
#[pyfunction]
pub fn parse_cli(py: Python<'_>, prog: &str, args: Vec<Vec<u8>>) -> PyResult<(String, Py<PyAny>)> {
    let args = args.into_iter().map(OsString::from_vec);
    let out = match loop_cli::parse_with_prog(prog, args) {
        Ok(loop_cli::Command::Help(text)) => (
            "help".to_string(),
            text.into_pyobject(py)?.into_any().unbind(),
        ),
        Ok(loop_cli::Command::Version) => (
            "version".to_string(),
            loop_cli::VERSION.into_pyobject(py)?.into_any().unbind(),
        ),
        Ok(loop_cli::Command::Run(s)) => {
            let d = PyDict::new(py);
            d.set_item("app", &s.app)?;
            d.set_item("host", &s.host)?;
            d.set_item("port", s.port)?;
            d.set_item(
                "uds",
                s.uds
                    .as_ref()
                    .map(|p| PyBytes::new(py, p.as_os_str().as_bytes())),
            )?;
            d.set_item("fd", s.fd)?;
            d.set_item("root_path", &s.root_path)?;
            d.set_item("lifespan", s.lifespan.as_str())?;
            d.set_item("access_log", s.access_log)?;
            d.set_item("log_level", s.log_level.as_str())?;
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
