//! The native ASGI HTTP/1.1 server: a connection is a Rust state machine
//! (socket → `loop-http` codec → ASGI exchange) and Python sees only
//! `app(scope, receive, send)`.
//!
//! The modules, lowest first; each imports only modules listed before it
//! (`tests/test_module_layers.py` checks it):
//! - [`kind`]: what the server and an app task need of any connection kind.
//! - [`proxy`], [`settings`], [`scope`], [`messages`], [`logs`]: trusted
//!   proxy headers, configuration, the scope and messages as Python
//!   objects, decoding the app's `send()` messages, the loggers and their
//!   cached levels.
//! - [`counters`]: what `Server.stats()` and `Server.tls_stats()` report,
//!   one set per server, shared by its connections.
//! - [`tls`]: a TLS session as a connection's byte-stream layer and what a
//!   connection knows of it.
//! - [`shared`]: what a server's connections share, with the registry of
//!   live connections and the end-of-tick flush.
//! - [`app_task`]: the task that steps the app's coroutine.
//! - [`ws`]: the WebSocket connection kind, an ASGI `websocket` session
//!   (around `loop_ws::Connection`), reaching HTTP before its `101` only
//!   through a trait.
//! - [`http`]: the HTTP/1.1 connection kind, glue around
//!   `loop_http::ServerConnection`.
//! - [`server`]: listeners, accepting, the timeout sweep, drain and shutdown.

mod app_task;
mod counters;
mod http;
mod kind;
mod logs;
mod messages;
mod proxy;
mod scope;
mod server;
pub(crate) mod settings;
mod shared;
mod tls;
mod ws;

use pyo3::prelude::*;

pyo3::create_exception!(
    ferroloop,
    ClientDisconnected,
    pyo3::exceptions::PyOSError,
    "Raised by an ASGI `send()` after the client went away (an HTTP response's, or a WebSocket's after `websocket.disconnect`)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<server::HttpServer>()?;
    m.add_class::<http::HttpConnection>()?;
    m.add_class::<http::Receive>()?;
    m.add_class::<http::Send>()?;
    m.add_class::<app_task::AppTask>()?;
    m.add_class::<ws::WsSession>()?;
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
    proxy::Trust::parse(spec)
        .map(drop)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("forwarded_allow_ips: {e}")))
}

/// Validate `headers` (name, value pairs) the way the server will encode
/// them: a `ValueError` naming the problem.
#[pyfunction]
fn _check_headers(pairs: Vec<(String, String)>) -> PyResult<()> {
    settings::default_headers(&pairs).map(drop)
}
