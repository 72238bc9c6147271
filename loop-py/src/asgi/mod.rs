//! The ASGI bridge: what of the server needs Python. Every connection —
//! accepting, TLS, HTTP/1.1 and WebSocket, timeouts, the end-of-tick
//! flush, drain and how a connection ends — is `loop_server`'s driver,
//! pure Rust; this module is its host in the loop (readiness through the
//! loop's `IoPort`s, its reactor updates as the loop's registrations) and
//! turns its events into the ASGI app's world: the scope, the `receive`
//! and `send` callables and their messages, the app's `AppTask`, lifespan
//! state, logging and the metrics' dicts.
//!
//! The modules, lowest first; each imports only modules listed before it
//! (`tests/test_module_layers.py` checks it):
//! - [`owner`]: what an app's task needs of the exchange it runs.
//! - [`settings`], [`scope`], [`messages`], [`logs`], [`stats`]: a
//!   `Config` as the server's settings, the scope and messages as Python
//!   objects, decoding the app's `send()` messages, the loggers and their
//!   levels, the stats as dicts.
//! - [`app_task`]: the task that steps the app's coroutine.
//! - [`bridge`]: the server object, its driver and the Python state the
//!   driver keeps, the loop's side of the driver (registrations, the
//!   end-of-tick hook), logging.
//! - [`http`]: an HTTP exchange as the app sees it.
//! - [`ws`]: a WebSocket session as the app sees it.
//! - [`server`]: the server's Python API and the driver's events handed to
//!   the app.

mod app_task;
mod bridge;
mod http;
mod logs;
mod messages;
mod owner;
mod scope;
mod server;
pub(crate) mod settings;
mod stats;
mod ws;

use pyo3::prelude::*;

pyo3::create_exception!(
    ferroloop,
    ClientDisconnected,
    pyo3::exceptions::PyOSError,
    "Raised by an ASGI `send()` after the client went away (an HTTP response's, or a WebSocket's after `websocket.disconnect`)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<bridge::HttpServer>()?;
    m.add_class::<http::Receive>()?;
    m.add_class::<http::Send>()?;
    m.add_class::<app_task::AppTask>()?;
    m.add_class::<ws::WsReceive>()?;
    m.add_class::<ws::WsSend>()?;
    m.add(
        "ClientDisconnected",
        m.py().get_type::<ClientDisconnected>(),
    )?;
    m.add("ASGI_SPEC_VERSION", scope::SPEC_VERSION)?;
    m.add_function(wrap_pyfunction!(_check_forwarded_allow_ips, m)?)?;
    m.add_function(wrap_pyfunction!(_check_access_log_format, m)?)?;
    m.add_function(wrap_pyfunction!(_check_headers, m)?)?;
    m.add_function(wrap_pyfunction!(settings::_check_tls, m)?)?;
    m.add_function(wrap_pyfunction!(settings::_load_tls, m)?)?;
    Ok(())
}

/// Validate an `access_log_format` the way the server will render it.
#[pyfunction]
fn _check_access_log_format(format: &str) -> PyResult<()> {
    loop_cli::access_format::AccessFormat::parse(format)
        .map(drop)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("access_log_format: {e}")))
}

/// Validate a `forwarded_allow_ips` list the way the server will read it.
#[pyfunction]
fn _check_forwarded_allow_ips(spec: &str) -> PyResult<()> {
    loop_server::proxy::Trust::parse(spec)
        .map(drop)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("forwarded_allow_ips: {e}")))
}

/// Validate `headers` (name, value pairs) the way the server will encode
/// them: a `ValueError` naming the problem.
#[pyfunction]
fn _check_headers(pairs: Vec<(String, String)>) -> PyResult<()> {
    loop_server::default_headers(&pairs)
        .map(drop)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("headers: {e}")))
}
